"""int8: plain symmetric INT8 quantization, per-row scale for A, per-column for B.

The cheap approximate scheme, for error-tolerant code (k-means assignment, kNN
candidate search). ``sa_i = max_k|a_ik| / 127``, ``qa_ik = rint(a_ik / sa_i)`` (and
likewise per column of B), the integer GEMM is exact, and
``C = RN32((S·sa_i)·sb_j)`` with float64 products. docs/numerics.md, section "int8".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mixjit.runtime.schemes.base import Config, RunStats, Scheme, Work, register
from mixjit.runtime.schemes.emulation import finite_or_zero, nonfinite_fixup, parse_label, to_fp32

__all__ = ["Int8Config", "quantize_int8", "int_gemm_exact", "dequantize"]

#: the largest K block whose int8×int8 sum is exact in a float32 accumulator:
#: 1024 · 127² = 16,516,096 < 2^24
EXACT_SGEMM_K = 1024


def quantize_int8(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric INT8 quantization of finite float64 ``x`` along ``axis``.

    Returns ``(q, s)``: ``q`` integer-valued float64 in [-127, 127] and the scales
    ``s = RN64(amax / 127)`` (keepdims; 0 for an all-zero row/column, whose q is 0).
    ``q = rint(RN64(x / s))``, ties to even. ``|x/s| <= 127(1+2^-52)``, so no clipping
    is needed.
    """
    amax = np.abs(x).max(axis=axis, keepdims=True)
    s = amax / 127.0
    q = np.rint(x / np.where(s > 0, s, 1.0))
    return q, s


def int_gemm_exact(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """Exact ``qa @ qb`` for integer-valued arrays in [-127, 127], as float64.

    Runs float32 BLAS on K blocks of at most :data:`EXACT_SGEMM_K` (each block's sum
    is exact in float32 whatever the order) and adds the blocks in float64 (exact:
    integers below 2^53 for K < 5·10^11).
    """
    m, k = qa.shape
    n = qb.shape[1]
    a32, b32 = qa.astype(np.float32), qb.astype(np.float32)
    s = np.zeros((m, n))
    for k0 in range(0, k, EXACT_SGEMM_K):
        s += a32[:, k0 : k0 + EXACT_SGEMM_K] @ b32[k0 : k0 + EXACT_SGEMM_K, :]
    return s


def dequantize(s: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """``RN64(RN64(S·sa_i)·sb_j)``: the dequantized INT8 result in float64."""
    return (s * sa) * sb


@dataclass(frozen=True)
class Int8Config(Config):
    """The one int8 config: per-row (A) / per-column (B) symmetric scales."""

    scale: str = "row-col"


@register
class Int8(Scheme):
    name = "int8"
    summary = "symmetric INT8 quantization (per-row A / per-column B scales), exact integer GEMM"

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [Int8Config()]

    def parse_config(self, text: str) -> Config:
        cfg = parse_label(text, Int8Config, self.name)
        self._check(cfg)
        return cfg

    def _check(self, config: Config) -> None:
        if config != Int8Config():
            raise ValueError(f"int8: unknown config {config!r}; the only config is {Int8Config().label!r}")

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        self._check(config)
        a32, b32 = to_fp32(a), to_fp32(b)
        qa, sa = quantize_int8(finite_or_zero(a32).astype(np.float64), axis=1)
        qb, sb = quantize_int8(finite_or_zero(b32).astype(np.float64), axis=0)
        with np.errstate(over="ignore"):  # |C| > FLT_MAX rounds to inf
            c = dequantize(int_gemm_exact(qa, qb), sa, sb).astype(np.float32) + np.float32(0.0)
        n_nf = nonfinite_fixup(c, a32, b32)
        stats = RunStats(
            fallbacks=n_nf,
            units=c.size,
            fallback_unit="element",
            fallback_reason="inf/NaN in its row of A or column of B: IEEE propagation" if n_nf else "",
        )
        return c.astype(a.dtype, copy=False), stats

    def products(self, config: Config) -> int:
        self._check(config)
        return 1

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        self._check(config)
        in_bytes = np.dtype(dtype).itemsize
        # packing: a max pass and a quantize pass over each operand, writing int8;
        # the dequantization is fused into the GEMM epilogue (scales: m + n floats)
        packing = (2 * in_bytes + 1) * (m * k + k * n) + 8 * (m + n)
        return Work(ops={"int8": 2.0 * m * n * k}, bytes_moved=float(packing))
