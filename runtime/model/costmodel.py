"""GPU cost model: the *modeled* time of one GEMM under a scheme and config on a target.

Pure Python (no numba): ``Scheme.work()`` says how many operations of each precision
class a GEMM costs and how many bytes its packing/epilogue passes move; the hardware
table (runtime/model/hardware.py) says how fast the target does each. The modeled time is

    seconds = compute + memory + launch

* ``compute``: one GEMM kernel per precision class in ``Work.ops``. The kernel runs
  ``ops / (2·m·n)`` as its effective inner size (the products of a multi-product scheme
  share one kernel and one epilogue) at ``peak × efficiency(class, part)`` and a shape
  efficiency: the output is cut into CTA tiles, the tiles run in waves of one tile per
  SM (*wave quantization*), each tile pays a fixed pipeline fill and epilogue worth
  ``K_FILL`` of inner size, small tiles reuse operands less (*tile efficiency*), and
  the inner size is padded to the MMA instruction's k (*tile quantization*). The best
  tile and split-K factor is taken, as cuBLAS's heuristics try to. The kernel cannot
  beat streaming its operands and result through DRAM once (roofline).
* ``memory``: ``Work.bytes_moved`` (packing operands, separate epilogues) at the
  part's DRAM bandwidth × :data:`MEMORY_EFFICIENCY`.
* ``launch``: ``launch_us`` per kernel: the GEMM kernels, plus one packing kernel per
  operand when the scheme packs.

A ``Work`` whose classes are ``concurrent`` (vitbit: tensor, INT and FP warps in one fused
kernel, seed 001) is one GEMM kernel whose compute time is its slowest class's, not their sum,
and never less than streaming the operands and C once. The ``int32`` class (packed IMADs) runs
at the part's INT32 rate (``Hardware.int32_tops``) with FP32's efficiency (the same SIMT GEMM
structure); where the INT32 lanes are shared with FP32 (``int32_shares_fp32``), a concurrent
``fp32`` class keeps only the FP32 rate the INT32 lanes leave. Issue-slot contention between
the warp roles is not modeled (an optimistic bound on the overlap).

Native float32 runs on FP32 SIMT (cuBLAS SGEMM), native float64 on FP64 tensor cores
where the part has them. Every figure this module produces is *modeled*, never
measured; print it with that word (``ModeledTime.__str__`` does). Calibration and
residuals: tools/calibrate_costmodel.py, docs/costmodel.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

import numpy as np

from mixjit.runtime.model.hardware import HARDWARE, Hardware, get_hardware
from mixjit.runtime.schemes.base import Config, Scheme, Work, resolve_scheme

__all__ = [
    "ModeledTime",
    "modeled_time",
    "modeled_speedup",
    "modeled_calls_time",
    "work_time",
    "class_efficiency",
    "DEFAULT_EFFICIENCY",
    "MEMORY_EFFICIENCY",
]

#: Sustained fraction of peak of a large, well-tiled GEMM on a part with no published
#: measurement (``Hardware.efficiency`` overrides it per class). The mean of the
#: measured values in the hardware table, by unit: tools/calibrate_costmodel.py
#: recomputes it and reports any drift from these constants.
DEFAULT_EFFICIENCY: Mapping[str, float] = {"simt": 0.76, "tensor": 0.75}

#: Fraction of the DRAM bandwidth a streaming pass sustains (modeling assumption:
#: STREAM-like copies reach 80-90% of the datasheet bandwidth on HBM parts).
MEMORY_EFFICIENCY = 0.85

#: Candidate CTA output tiles (tm, tn): the CUTLASS/cuBLAS tensor-op and SIMT families,
#: with the thin tiles their skinny-GEMM kernels use.
TILES: tuple[tuple[int, int], ...] = (
    (256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64),
    (128, 32), (32, 128), (32, 32), (128, 16), (16, 128),
)
#: Split-K factors tried when the output has fewer tiles than the part has SMs.
SPLIT_K = (1, 2, 4, 8, 16)
#: Pipeline fill + epilogue of one tile, in units of inner size (modeling assumption).
K_FILL = {"simt": 16, "tensor": 64}
#: Operand reuse ``tm·tn/(tm+tn)`` (multiply-adds per operand element loaded) at which
#: a tile reaches the class's sustained rate; tiles with less reuse run proportionally
#: slower, fed by L2 (modeling assumption: an A100 SM draws about 47 B/clk of L2
#: bandwidth and issues 2048 INT8 or 64 FP32 multiply-adds per clock, so tensor tiles
#: need reuse of about 43 (128×128 has 64; 128×256 with warpgroup MMA, 85), SIMT tiles
#: about 6, and FP64 tensor tiles (64 multiply-adds of 8-byte operands) about 11).
REUSE_SAT = {"simt": 8.0, "fp64_tensor": 16.0, "tensor": 64.0, "tensor-wgmma": 85.0}

_SIMT_CLASSES = ("fp32", "fp64", "int32")


@dataclass(frozen=True)
class ModeledTime:
    """Modeled time of one GEMM (seconds; never measured).

    ``compute``: GEMM kernels; ``memory``: packing and epilogue passes; ``launch``:
    kernel launch overhead; ``kernels``: kernels launched; ``flops``: ``2·m·n·k``, the
    useful work (for effective rates); ``detail``: per-class kernel times."""

    seconds: float
    compute: float
    memory: float
    launch: float
    kernels: int
    flops: float = 0.0
    target: str = ""
    scheme: str = ""
    config: str = ""
    detail: tuple[tuple[str, float], ...] = ()

    @property
    def tflops(self) -> float:
        """Modeled effective rate, ``2·m·n·k / seconds`` in TFLOPS."""
        return self.flops / self.seconds / 1e12 if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        return (
            f"modeled {self.seconds * 1e3:.4g} ms on {self.target} ({self.scheme}[{self.config}]: "
            f"compute {self.compute * 1e3:.4g} ms, memory {self.memory * 1e3:.4g} ms, "
            f"launch {self.launch * 1e6:.3g} us over {self.kernels} kernels)"
        )


def _rate_class(hw: Hardware, cls: str) -> str:
    """The hardware class that executes a ``Work.ops`` class (``fp64`` -> DGEMM's)."""
    return hw.dgemm_class() if cls == "fp64" else cls


def _unit(rate_class: str) -> str:
    """``simt`` or ``tensor``: which units run a hardware class."""
    return "simt" if rate_class in _SIMT_CLASSES else "tensor"


def class_efficiency(hw: Hardware, cls: str) -> float:
    """Sustained fraction of peak of a large GEMM of ``cls`` (a ``Work.ops`` class) on ``hw``."""
    rc = _rate_class(hw, cls)
    if rc in hw.efficiency:
        return hw.efficiency[rc]
    if rc == "int32":  # no part has a measured INT32 GEMM: FP32's, the same SIMT structure
        return class_efficiency(hw, "fp32")
    return DEFAULT_EFFICIENCY[_unit(rc)]


def _resolve_target(target: str | Hardware) -> Hardware:
    hw = target if isinstance(target, Hardware) else get_hardware(target)
    if not hw.peak_tops:
        real = ", ".join(sorted(n for n, h in HARDWARE.items() if h.real))
        raise ValueError(f"hardware {hw.name!r} has no peak rates (not a real GPU); model one of: {real}")
    return hw


def _rated(hw: Hardware, rc: str) -> float:
    """The peak of hardware class ``rc`` (``int32``: the SIMT INT32 rate)."""
    return hw.int32_tops if rc == "int32" else hw.peak_tops.get(rc, 0.0)


def _peak(hw: Hardware, cls: str, who: str, beside_int32: bool = False) -> float:
    """Peak of ``cls`` on ``hw``; ``beside_int32``: ``fp32`` running concurrently with INT32
    work keeps only the lanes INT32 leaves it where they are shared."""
    rc = _rate_class(hw, cls)
    peak = _rated(hw, rc)
    if peak > 0 and beside_int32 and rc == "fp32" and hw.int32_shares_fp32:
        peak -= hw.int32_tops
    if peak <= 0:
        having = sorted(n for n, h in HARDWARE.items() if _rated(h, _rate_class(h, cls)) > 0)
        raise ValueError(
            f"{who} needs {cls} math, which {hw.name!r} does not rate; pick a target that has it: {', '.join(having)}"
        )
    return peak


def _padded_inner(k: int, k_eff: float, gran: int) -> float:
    """``k_eff`` with the inner size of each product padded to the MMA k: a kernel of p
    whole products pads each one; a partial share of k (the split scheme) pads once."""
    p = round(k_eff / k) if k else 0
    if p >= 1 and abs(p * k - k_eff) <= 1e-9 * k_eff:
        return p * math.ceil(k / gran) * gran
    return math.ceil(k_eff / gran) * gran


def _kernel_seconds(hw: Hardware, cls: str, m: int, n: int, k: int, k_eff: float,
                    beside_int32: bool = False) -> float:
    """Math time of one GEMM kernel of ``cls``: m×n output, inner size ``k``, and
    ``k_eff = ops / (2·m·n)`` (several products in one kernel add up their k);
    ``beside_int32``: concurrent with INT32 work (see :func:`_peak`)."""
    if m == 0 or n == 0 or k_eff <= 0:
        return 0.0
    rc = _rate_class(hw, cls)
    unit = _unit(rc)
    per_sm = _peak(hw, cls, "this GEMM", beside_int32) * 1e12 * class_efficiency(hw, cls) / hw.sm_count
    mma = hw.mma.get(rc)
    gran = mma.k if mma is not None and unit == "tensor" else 1
    k_pad = _padded_inner(k, k_eff, gran)
    if unit == "simt":
        sat = REUSE_SAT["simt"]
    elif rc in REUSE_SAT:
        sat = REUSE_SAT[rc]
    else:
        sat = REUSE_SAT["tensor-wgmma" if rc in hw.wgmma else "tensor"]
    fill = K_FILL[unit]
    bw = hw.mem_bw_gbs * 1e9 * MEMORY_EFFICIENCY
    best = math.inf
    for tm, tn in TILES:
        tiles = math.ceil(m / tm) * math.ceil(n / tn)
        reuse = min(1.0, (tm * tn / (tm + tn)) / sat)
        for split in SPLIT_K:
            # split-K only while the split tiles fit in two waves (the output alone
            # leaves SMs idle); each split pays its own pipeline fill, which keeps
            # small inner sizes from splitting
            if split > 1 and tiles * split > 2 * hw.sm_count:
                break
            waves = math.ceil(tiles * split / hw.sm_count)
            t = waves * 2.0 * tm * tn * (k_pad / split + fill) / (per_sm * reuse)
            if split > 1:  # partial sums written and read back once
                t += 2.0 * split * m * n * 4 / bw
            best = min(best, t)
    return best


def work_time(work: Work, m: int, n: int, k: int, dtype: np.dtype | type, hw: Hardware,
              who: str = "this scheme") -> ModeledTime:
    """Modeled time of an m×n×k GEMM described by ``work`` on ``hw`` (the core of
    :func:`modeled_time`, for callers that build a ``Work`` themselves)."""
    hw = _resolve_target(hw)
    itemsize = np.dtype(dtype).itemsize
    bw = hw.mem_bw_gbs * 1e9 * MEMORY_EFFICIENCY
    total_ops = sum(work.ops.values())
    beside_int32 = work.concurrent and work.ops.get("int32", 0.0) > 0
    detail = []
    for cls, ops in work.ops.items():
        _peak(hw, cls, who)
        if ops <= 0:
            continue
        k_eff = ops / (2.0 * m * n) if m and n else 0.0
        math_t = _kernel_seconds(hw, cls, m, n, k, k_eff, beside_int32)
        # roofline: the kernel streams its share of the operands and writes C once
        k_share = k * ops / total_ops
        stream_t = ((m + n) * k_share * itemsize + m * n * itemsize) / bw
        detail.append((cls, max(math_t, stream_t)))
    if work.concurrent:  # one fused kernel: the slowest class, and at least one pass over A, B and C
        compute = max([t for _, t in detail] + [((m + n) * k + m * n) * itemsize / bw])
    else:
        compute = sum(t for _, t in detail)
    memory = work.bytes_moved / bw
    gemm_kernels = 1 if work.concurrent else max(1, len(detail))
    kernels = gemm_kernels + (2 if work.bytes_moved > 0 else 0)
    launch = kernels * hw.launch_us * 1e-6
    return ModeledTime(
        seconds=compute + memory + launch,
        compute=compute,
        memory=memory,
        launch=launch,
        kernels=kernels,
        flops=2.0 * m * n * k,
        target=hw.name,
        detail=tuple(detail),
    )


def _resolve(scheme: str, config: str | Config | None, dtype: np.dtype) -> tuple[Scheme, Config]:
    sch, fixed = resolve_scheme(scheme)
    if dtype not in sch.dtypes:
        ok = ", ".join(str(d) for d in sch.dtypes)
        raise ValueError(f"scheme {scheme!r} does not take {dtype} inputs; it accepts: {ok}")
    if config is None:
        cfg = fixed if fixed is not None else sch.default_config(dtype)
    elif isinstance(config, Config):
        cfg = config
    else:
        cfg = sch.parse_config(config)
    if fixed is not None and cfg != fixed:
        raise ValueError(
            f"{scheme!r} fixes config {fixed.label!r} of scheme {sch.name!r}; got {cfg.label!r}: "
            f"use scheme {sch.name!r} for other configs"
        )
    return sch, cfg


def modeled_time(scheme: str, config: str | Config | None, m: int, n: int, k: int,
                 dtype: np.dtype | type, target: str | Hardware) -> ModeledTime:
    """Modeled time of one m×n×k GEMM (C = A·B, A m×k) under ``scheme`` and ``config`` on
    ``target``, for inputs of ``dtype``. ``scheme`` may be an alias (``"bf16x6"``);
    ``config`` a label, a Config, or None for the alias's / scheme's most precise one.
    The result is *modeled*, not measured (see the module docstring)."""
    if min(m, n, k) < 0:
        raise ValueError(f"GEMM dimensions must be non-negative, got {m}x{n}x{k}")
    dt = np.dtype(dtype)
    hw = _resolve_target(target)
    sch, cfg = _resolve(scheme, config, dt)
    t = work_time(sch.work(cfg, m, n, k, dt), m, n, k, dt, hw, who=f"scheme {sch.name!r}")
    return ModeledTime(**{**t.__dict__, "scheme": sch.name, "config": cfg.label})


def modeled_speedup(scheme: str, config: str | Config | None, m: int, n: int, k: int,
                    dtype: np.dtype | type, target: str | Hardware) -> float:
    """Modeled speedup of ``scheme[config]`` over native BLAS in ``dtype`` on ``target``."""
    base = modeled_time("native", None, m, n, k, dtype, target)
    return base.seconds / modeled_time(scheme, config, m, n, k, dtype, target).seconds


def modeled_calls_time(scheme: str, config: str | Config | None, shapes: Iterable[tuple[int, int, int, int]],
                       dtype: np.dtype | type, target: str | Hardware) -> float:
    """Modeled seconds of a site's profiled calls: ``shapes`` lists ``(m, n, k, calls)``
    (the ``mix.profile`` form); the sum of ``calls × modeled_time(...)``."""
    total = 0.0
    for m, n, k, calls in shapes:
        if calls < 0:
            raise ValueError(f"a call count must be non-negative, got {calls} for {m}x{n}x{k}")
        if calls:
            total += calls * modeled_time(scheme, config, m, n, k, dtype, target).seconds
    return total
