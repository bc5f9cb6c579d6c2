"""The exact reference of the accuracy tools: a double-double GEMM.

``dd_gemm(A, B)`` returns ``hi + lo`` per element for float64 inputs (float32
inputs widened exactly): every product split exactly (Dekker's TwoProduct, no FMA)
and accumulated with TwoSum, the partial errors summed in ``lo``. Its relative
error is far below 2^-100 of ``sum |a||b|``, so it is exact for every error the
tables print, independent of every scheme and of BLAS. Vectorised along the
columns of B (no dependency between them), a 2048³ product takes seconds.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["dd_gemm", "dd_errors"]

_SPLIT = 134217729.0  # 2^27 + 1: Dekker's splitter for float64
#: rows of A per pass over B
_ROWS = 8


@numba.njit(nogil=True)
def _halves(x):
    c = _SPLIT * x
    h = c - (c - x)
    return h, x - h


@numba.njit(nogil=True)
def dd_gemm(a, b):
    """Double-double ``A @ B`` of float64 arrays: ``(hi, lo)`` with ``hi = RN64(hi + lo)``.
    Inputs must be finite and below 2^996 in magnitude (Dekker's split)."""
    m, k = a.shape
    n = b.shape[1]
    bh = np.empty((k, n))
    bl = np.empty((k, n))
    for q in range(k):
        for j in range(n):
            bh[q, j], bl[q, j] = _halves(b[q, j])
    hi = np.zeros((m, n))
    lo = np.zeros((m, n))
    # rows of A in blocks, so that each row of B is read once per block
    for i0 in range(0, m, _ROWS):
        for q in range(k):
            for i in range(i0, min(i0 + _ROWS, m)):
                x = a[i, q]
                if x == 0.0:
                    continue
                xh, xl = _halves(x)
                s = hi[i]
                t = lo[i]
                for j in range(n):
                    p = x * b[q, j]
                    e = ((xh * bh[q, j] - p) + xh * bl[q, j] + xl * bh[q, j]) + xl * bl[q, j]
                    y = s[j] + p
                    z = y - s[j]
                    t[j] += (s[j] - (y - z)) + (p - z) + e
                    s[j] = y
    for i in range(m):
        for j in range(n):
            h = hi[i, j] + lo[i, j]
            lo[i, j] = lo[i, j] - (h - hi[i, j])
            hi[i, j] = h
    return hi, lo


def dd_errors(c: np.ndarray, hi: np.ndarray, lo: np.ndarray, absab: np.ndarray) -> tuple[float, float]:
    """(relative Frobenius error ``||C - R||_F / ||R||_F``, largest componentwise error
    ``max_ij |C - R|_ij / (|A||B|)_ij``) of ``c`` against ``R = hi + lo``; ``absab`` is
    ``|A||B|`` (entries where it is 0 are left out of the componentwise maximum)."""
    d = (c.astype(np.float64) - hi) - lo
    norm = np.linalg.norm(hi)
    frob = float(np.linalg.norm(d) / norm) if norm > 0 else float(np.linalg.norm(d))
    nz = absab > 0
    comp = float(np.max(np.abs(d[nz]) / absab[nz])) if nz.any() else 0.0
    return frob, comp
