"""The compiled panel steps of the blocked factorizations and triangular solves.

Working precision only, no GEMM: each is one loop nest in the order docs/numerics.md
("linalg") writes, every product and difference rounded on its own (no fused
multiply-add: Numba does not contract them). ``w`` is the n x n working matrix (C order),
``y`` the right-hand sides (n x r, C order). Each returns a status: -1, or the column
where the step broke down (a zero pivot, a Cholesky pivot that is not positive).
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.jit.cache import cached_njit

__all__ = ["cholesky_panel", "lu_panel", "u_block_row", "forward_block", "backward_block", "zero_upper"]


@cached_njit(nogil=True)
def cholesky_panel(w, j0: int, j1: int) -> int:
    """Columns ``j0 .. j1-1`` of the Cholesky factor, rows ``j0 ..`` (the trailing
    updates of earlier panels already applied to them)."""
    n = w.shape[0]
    for j in range(j0, j1):
        s = w[j, j]
        for k in range(j0, j):
            s = s - w[j, k] * w[j, k]
        if not s > 0.0:
            return j
        d = np.sqrt(s)  # in the working precision (float32 stays float32)
        w[j, j] = d
        for i in range(j + 1, n):
            t = w[i, j]
            for k in range(j0, j):
                t = t - w[i, k] * w[j, k]
            w[i, j] = t / d
    return -1


@cached_njit(nogil=True)
def lu_panel(w, perm, j0: int, j1: int) -> int:
    """Columns ``j0 .. j1-1`` of LU with partial pivoting: pivot search (first largest
    ``|w_ij|``, ``i >= j``), row swap over all columns (and of ``perm``), multipliers,
    the update of the panel's later columns."""
    n = w.shape[0]
    for j in range(j0, j1):
        p = j
        best = abs(w[j, j])
        for i in range(j + 1, n):
            v = abs(w[i, j])
            if v > best:
                best = v
                p = i
        if not best > 0.0:  # zero, or NaN from an update that overflowed
            return j
        if p != j:
            for c in range(n):
                t = w[j, c]
                w[j, c] = w[p, c]
                w[p, c] = t
            t2 = perm[j]
            perm[j] = perm[p]
            perm[p] = t2
        piv = w[j, j]
        for i in range(j + 1, n):
            w[i, j] = w[i, j] / piv
        for i in range(j + 1, n):
            lij = w[i, j]
            for c in range(j + 1, j1):
                w[i, c] = w[i, c] - lij * w[j, c]
    return -1


@cached_njit(nogil=True)
def u_block_row(w, j0: int, j1: int) -> None:
    """The block row of U: ``w[j0:j1, j1:] = L11^-1 w[j0:j1, j1:]`` (unit lower ``L11``),
    each element's products subtracted in increasing ``k``."""
    n = w.shape[0]
    for i in range(j0 + 1, j1):
        for k in range(j0, i):
            lik = w[i, k]
            for c in range(j1, n):
                w[i, c] = w[i, c] - lik * w[k, c]


@cached_njit(nogil=True)
def forward_block(w, y, j0: int, j1: int, unit: bool) -> None:
    """In-block forward substitution with the lower ``w[j0:j1, j0:j1]`` on rows ``j0 .. j1-1``
    of ``y`` (every column), top row first (each row's products subtracted in increasing ``k``),
    then, unless ``unit`` (LU's unit lower L), the row divided by ``w_ii`` (a Cholesky factor)."""
    r = y.shape[1]
    for i in range(j0, j1):
        for k in range(j0, i):
            lik = w[i, k]
            for c in range(r):
                y[i, c] = y[i, c] - lik * y[k, c]
        if not unit:
            d = w[i, i]
            for c in range(r):
                y[i, c] = y[i, c] / d


@cached_njit(nogil=True)
def backward_block(w, y, j0: int, j1: int) -> None:
    """In-block back substitution with the upper ``w[j0:j1, j0:j1]`` on rows ``j0 .. j1-1``
    of ``y``, bottom row first (each row's products subtracted in increasing ``k``)."""
    r = y.shape[1]
    for i in range(j1 - 1, j0 - 1, -1):
        for k in range(i + 1, j1):
            uik = w[i, k]
            for c in range(r):
                y[i, c] = y[i, c] - uik * y[k, c]
        d = w[i, i]
        for c in range(r):
            y[i, c] = y[i, c] / d


@cached_njit(nogil=True)
def zero_upper(w) -> None:
    """Zeros above the diagonal (the Cholesky factor's upper triangle)."""
    n = w.shape[0]
    for i in range(n):
        for c in range(i + 1, n):
            w[i, c] = 0.0
