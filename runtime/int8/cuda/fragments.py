"""A CPU model of the int8 scheme's kernels (int8_quant.cu around int8_gemm.cu): the quantizers'
arithmetic, the INT8 GEMM at the level of warps and lanes (ozaki2's model of int8_gemm.cu, shared)
and the dequantization. Tests compare it bit for bit with the CPU executor. NumPy only; no numba."""

from __future__ import annotations

import numpy as np

from mixjit.runtime.int8.cuda.desc import Int8Desc
from mixjit.runtime.mixpert.cuda.fragments import STATUS_NONFINITE
from mixjit.runtime.ozaki2.cuda.fragments import int8_gemm

__all__ = ["quantize_rows", "run_int8"]


def quantize_rows(rows_k: np.ndarray, rows_pad: int, k_pad: int) -> tuple[np.ndarray, np.ndarray, int]:
    """int8_quant.cu quantize_rows for an operand's rows × K view: (plane rows_pad × k_pad int8,
    scales rows_pad float64, status): s = RN64(amax/127), q = rint(RN64(v/s)) of the float32-rounded
    values, 0 for an all-zero row, padding and an inf/NaN (which sets the status)."""
    x = np.zeros((rows_pad, k_pad))
    with np.errstate(over="ignore"):  # float64 inputs beyond float32's range round to inf, as on the device
        x[: rows_k.shape[0], : rows_k.shape[1]] = rows_k.astype(np.float32)
    finite = np.isfinite(x)
    status = 0 if finite.all() else STATUS_NONFINITE
    x = np.where(finite, x, 0.0)
    s = np.abs(x).max(axis=1) / 127.0
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(s[:, None] != 0.0, np.rint(x / s[:, None]), 0.0)
    return q.astype(np.int8), s, status


def run_int8(a: np.ndarray, b: np.ndarray, desc: Int8Desc) -> tuple[np.ndarray, int]:
    """The four kernels of ``desc`` on ``a`` (m×k) and ``b`` (k×n): (C in the input dtype, status)."""
    (m, k), n = a.shape, b.shape[1]
    m_pad, n_pad, k_pad = desc.padded(m, n, k)
    pa, sa, status_a = quantize_rows(a, m_pad, k_pad)
    pb, sb, status_b = quantize_rows(b.T, n_pad, k_pad)
    sums = int8_gemm(pa[None], pb[None], desc, m, n)[0]
    d = (sums.astype(np.float64) * sa[:m, None]) * sb[None, :n]
    with np.errstate(over="ignore"):
        c = d.astype(np.float32) + np.float32(0.0)  # a zero result +0; beyond FLT_MAX: inf
    return c.astype(a.dtype), status_a | status_b
