"""GPU specifications used by the partition-size calculator and the cost model.

Numbers are NVIDIA's published peak figures for *dense* (non-sparse) math, in
TFLOPS (TOPS for integers), multiply-add counted as 2 operations:

* A100 SXM4 80GB (sm_80): "NVIDIA A100 Tensor Core GPU Architecture" whitepaper
  (2020), Table 1 and Table 3 (108 SMs, 1410 MHz boost); memory bandwidth from the
  A100 80GB datasheet (2,039 GB/s). The MixPert paper's Table 1 quotes the same
  peaks (FP32 19.5, TF32 156, FP16/BF16 312, INT8 624).
* H100 SXM5 80GB (sm_90): "NVIDIA H100 Tensor Core GPU" datasheet (2023) and the
  "NVIDIA H100 Tensor Core GPU Architecture" whitepaper (132 SMs); the datasheet's
  tensor-core figures are with 2:4 sparsity, the dense ones are half of them.
* MMA shapes: PTX ISA, "Warp Level Matrix Multiply-Accumulate Instructions"
  (``mma.sync`` shapes m16n8k32 for s8, m16n8k16 for f16/bf16, m16n8k8 for tf32,
  m8n8k4 for f64; available on sm_80 and sm_90) and "Asynchronous Warpgroup Level
  Matrix Multiply-Accumulate" (sm_90 ``wgmma``: m64nNk32 s8, m64nNk16 f16/bf16,
  m64nNk8 tf32, N up to 256).
* ``patent-0066`` is the hypothetical device of the split-precision patent's worked
  example (seed 000, [0066]: 40 SMs, INT8 tensor unit 8×8×16, FP16 16×16×8). It is
  not a real GPU; it exists so that the calculator can be checked against the
  patent's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["MmaShape", "Hardware", "HARDWARE", "get_hardware"]


@dataclass(frozen=True)
class MmaShape:
    """One tensor-core instruction computes an m×n×k product."""

    m: int
    n: int
    k: int


@dataclass(frozen=True)
class Hardware:
    """Specs of one GPU. ``peak_tops`` maps a precision class (as in ``Work.ops``) to
    dense peak tera-operations per second; ``mma`` to the native warp-level MMA shape
    of that precision."""

    name: str
    arch: str
    sm_count: int
    mma: Mapping[str, MmaShape]
    peak_tops: Mapping[str, float]
    mem_bw_gbs: float
    real: bool = True
    #: warpgroup MMA shapes (sm_90 wgmma), largest N
    wgmma: Mapping[str, MmaShape] = field(default_factory=dict)


_MMA_SYNC = {
    "int8": MmaShape(16, 8, 32),
    "fp16": MmaShape(16, 8, 16),
    "bf16": MmaShape(16, 8, 16),
    "tf32": MmaShape(16, 8, 8),
    "fp64": MmaShape(8, 8, 4),
}

HARDWARE: dict[str, Hardware] = {
    "a100": Hardware(
        name="a100",
        arch="sm_80",
        sm_count=108,
        mma=_MMA_SYNC,
        peak_tops={"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "int8": 624.0},
        mem_bw_gbs=2039.0,
    ),
    "h100": Hardware(
        name="h100",
        arch="sm_90",
        sm_count=132,
        mma=_MMA_SYNC,
        peak_tops={"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "int8": 1978.9},
        mem_bw_gbs=3350.0,
        wgmma={
            "int8": MmaShape(64, 256, 32),
            "fp16": MmaShape(64, 256, 16),
            "bf16": MmaShape(64, 256, 16),
            "tf32": MmaShape(64, 256, 8),
        },
    ),
    "patent-0066": Hardware(
        name="patent-0066",
        arch="hypothetical",
        sm_count=40,
        mma={"int8": MmaShape(8, 8, 16), "fp16": MmaShape(16, 16, 8)},
        peak_tops={},
        mem_bw_gbs=0.0,
        real=False,
    ),
}


def get_hardware(name: str) -> Hardware:
    """Look up a GPU by name (``"a100"``, ``"h100"``); the error lists the known ones."""
    try:
        return HARDWARE[name]
    except KeyError:
        raise ValueError(f"unknown hardware {name!r}; known: {', '.join(sorted(HARDWARE))}") from None
