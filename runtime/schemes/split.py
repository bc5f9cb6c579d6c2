"""split: the patent's split-precision GEMM (seed 000, [0058]–[0078]).

K is cut into slices of ``width`` columns; the slices are ranked by importance
(magnitude percentile of A's slice times that of B's slice, as in seed 002's
selective quantization); the most important ``fp16`` fraction runs as a range-scaled
FP16 sub-GEMM, the rest as a symmetric INT8 sub-GEMM; the INT8 result is
dequantized and the two are summed, exactly, then rounded once to float32.
``fp16=auto`` takes the fraction from the partition-size calculator
(runtime/partition.py) for the config's ``target`` GPU. docs/numerics.md, "split".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from mixjit.runtime.exactsum import round_exact_sum
from mixjit.runtime.hardware import HARDWARE, get_hardware
from mixjit.runtime.partition import partition_sizes
from mixjit.runtime.schemes.base import Config, RunStats, Scheme, Work, register
from mixjit.runtime.schemes.emulation import (
    PART_FORMATS,
    finite_or_zero,
    nonfinite_fixup,
    parse_label,
    split_parts,
    to_fp32,
)
from mixjit.runtime.schemes.int8 import dequantize, int_gemm_exact, quantize_int8

__all__ = ["SplitConfig", "slice_importance", "fp16_slices"]


@dataclass(frozen=True)
class SplitConfig(Config):
    """``fp16``: fraction of K slices run in FP16 (0..1) or ``"auto"`` (calculator);
    ``width``: slice width in K; ``rank``: ``"pQ"`` (Q-th magnitude percentile,
    0 < Q <= 100) or ``"index"`` (no ranking: the first slices go to FP16);
    ``target``: the GPU whose MMA shapes drive ``fp16=auto``."""

    fp16: float | str = "auto"
    width: int = 32
    rank: str = "p99"
    target: str = "a100"


def _check(config: Config) -> SplitConfig:
    if not isinstance(config, SplitConfig):
        raise TypeError(f"split: expected a SplitConfig, got {type(config).__name__}")
    f = config.fp16
    if isinstance(f, str):
        if f != "auto":
            raise ValueError(f"split: fp16={f!r}; use a fraction in [0, 1] or 'auto'")
    elif not 0.0 <= f <= 1.0:
        raise ValueError(f"split: fp16={f} is outside [0, 1]")
    if config.width < 1:
        raise ValueError(f"split: width={config.width}; the slice width must be >= 1")
    _percentile(config.rank)
    if config.target not in HARDWARE:
        raise ValueError(f"split: unknown target {config.target!r}; known: {', '.join(sorted(HARDWARE))}")
    return config


def _percentile(rank: str) -> float | None:
    """The percentile Q of a ``"pQ"`` rank rule, None for ``"index"``."""
    if rank == "index":
        return None
    try:
        q = float(rank[1:]) if rank.startswith("p") else math.nan
    except ValueError:
        q = math.nan
    if not 0.0 < q <= 100.0:
        raise ValueError(f"split: rank={rank!r}; use 'pQ' with 0 < Q <= 100 (e.g. 'p99', 'p100' = max) or 'index'")
    return q


def _nearest_rank(values: np.ndarray, q: float) -> float:
    """Nearest-rank percentile: the ``ceil(q/100·N)``-th smallest value (1-based)."""
    n = values.size
    r = min(n, max(1, math.ceil(q / 100.0 * n))) - 1
    return float(np.partition(values, r)[r])


def slice_importance(a: np.ndarray, b: np.ndarray, width: int, rank: str) -> np.ndarray:
    """Importance of each K slice: ``P_Q(|A[:, s]|) · P_Q(|B[s, :]|)`` in float64
    (``rank="pQ"``), or ``-s`` (``rank="index"``)."""
    k = a.shape[1]
    nsl = -(-k // width)
    q = _percentile(rank)
    if q is None:
        return -np.arange(nsl, dtype=np.float64)
    imp = np.empty(nsl)
    for s in range(nsl):
        sl = slice(s * width, (s + 1) * width)
        imp[s] = _nearest_rank(np.abs(a[:, sl]).ravel(), q) * _nearest_rank(np.abs(b[sl, :]).ravel(), q)
    return imp


def fp16_fraction(config: SplitConfig, m: int, n: int, k: int) -> Fraction:
    """The FP16 share of K: the config's number, or the calculator's for ``auto``."""
    if config.fp16 == "auto":
        return partition_sizes(m, n, k, get_hardware(config.target)).fp16_fraction
    return Fraction(config.fp16)


def fp16_slices(a: np.ndarray, b: np.ndarray, config: SplitConfig) -> np.ndarray:
    """Boolean mask over K: True for the columns of the slices that run in FP16.

    ``n16 = floor(f·nslices + 1/2)`` slices, the most important first, ties broken
    by the lower slice index.
    """
    m, k = a.shape
    nsl = -(-k // config.width)
    n16 = math.floor(fp16_fraction(config, m, b.shape[1], k) * nsl + Fraction(1, 2))
    imp = slice_importance(a, b, config.width, config.rank)
    order = np.lexsort((np.arange(nsl), -imp))
    chosen = np.zeros(nsl, dtype=bool)
    chosen[order[:n16]] = True
    return np.repeat(chosen, config.width)[:k]


@register
class Split(Scheme):
    name = "split"
    summary = "split-precision GEMM: important K slices in range-scaled FP16, the rest INT8 (patent)"

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [SplitConfig(fp16=f) for f in ("auto", 0.25, 0.125, 0.0625, 0.0)]

    def parse_config(self, text: str) -> Config:
        return _check(parse_label(text, SplitConfig, self.name))

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        cfg = _check(config)
        a32, b32 = to_fp32(a), to_fp32(b)
        a_fin, b_fin = finite_or_zero(a32), finite_or_zero(b32)
        f16 = fp16_slices(a_fin, b_fin, cfg)
        i8 = ~f16
        m, n = a32.shape[0], b32.shape[1]
        if i8.any():
            qa, sa = quantize_int8(a_fin[:, i8].astype(np.float64), axis=1)
            qb, sb = quantize_int8(b_fin[i8, :].astype(np.float64), axis=0)
            d_int = dequantize(int_gemm_exact(qa, qb), sa, sb)
        else:
            d_int = np.zeros((m, n))
        slow = 0
        if f16.any():
            fp16 = PART_FORMATS["fp16"]
            (a16,), _ = split_parts(a_fin[:, f16], fp16, 1, axis=1)
            (b16,), _ = split_parts(b_fin[f16, :], fp16, 1, axis=0)
            c, slow = round_exact_sum([a16], [b16], [(0, 0)], addend=d_int)
        else:
            with np.errstate(over="ignore"):  # |C| > FLT_MAX rounds to inf
                c = d_int.astype(np.float32) + np.float32(0.0)
        n_nf = nonfinite_fixup(c, a32, b32)
        stats = RunStats(
            fallbacks=n_nf,
            units=m * n,
            fallback_unit="element",
            fallback_reason="inf/NaN in its row of A or column of B: IEEE propagation" if n_nf else "",
            extra={"k_fp16": int(f16.sum()), "k_int8": int(i8.sum()), "slow_path_elements": slow},
        )
        return c.astype(a.dtype, copy=False), stats

    def products(self, config: Config) -> int:
        _check(config)
        return 1

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        cfg = _check(config)
        nsl = -(-k // cfg.width) if k else 0
        n16 = math.floor(fp16_fraction(cfg, m, n, k) * nsl + Fraction(1, 2))
        k16 = min(k, n16 * cfg.width)
        in_bytes = np.dtype(dtype).itemsize
        # ranking pass (read both operands), then per part a max pass and a convert
        # pass writing int8 (1 byte) or fp16 (2 bytes); combination fused in the epilogue
        elems16 = (m + n) * k16
        elems8 = (m + n) * (k - k16)
        packing = in_bytes * (m + n) * k + (2 * in_bytes + 2) * elems16 + (2 * in_bytes + 1) * elems8 + 8 * (m + n)
        return Work(ops={"int8": 2.0 * m * n * (k - k16), "fp16": 2.0 * m * n * k16}, bytes_moved=float(packing))
