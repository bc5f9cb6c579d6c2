"""A reference implementation of the linalg semantics (docs/numerics.md, "linalg"), written
apart from runtime/linalg: element by element in Python floats rounded to the working
precision (``numpy`` scalars of the dtype), the GEMMs by the scheme's own ``run``. Slow:
small matrices only."""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.schemes.base import get_scheme


def _gemm(scheme: str, config: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    sch = get_scheme(scheme)
    return sch.run(np.ascontiguousarray(x), np.ascontiguousarray(y), sch.parse_config(config))


def _panels(n: int, nb: int) -> list[tuple[int, int]]:
    return [(j0, min(j0 + nb, n)) for j0 in range(0, n, nb)]


def cholesky(a: np.ndarray, nb: int, scheme: str, config: str) -> np.ndarray | None:
    """The lower factor, or None at a breakdown."""
    t = a.dtype.type
    n = a.shape[0]
    w = [[t(a[i, j]) for j in range(n)] for i in range(n)]
    for j0, j1 in _panels(n, nb):
        for j in range(j0, j1):
            s = w[j][j]
            for k in range(j0, j):
                s = t(s - t(w[j][k] * w[j][k]))
            if not s > 0:
                return None
            d = np.sqrt(s)
            w[j][j] = d
            for i in range(j + 1, n):
                u = w[i][j]
                for k in range(j0, j):
                    u = t(u - t(w[i][k] * w[j][k]))
                w[i][j] = t(u / d)
        if j1 < n:
            l21 = np.array([[w[i][k] for k in range(j0, j1)] for i in range(j1, n)], dtype=a.dtype)
            p = _gemm(scheme, config, l21, l21.T)
            for i in range(j1, n):
                for c in range(j1, n):
                    w[i][c] = t(w[i][c] - p[i - j1, c - j1])
    out = np.array(w, dtype=a.dtype)
    return np.tril(out)


def lu(a: np.ndarray, nb: int, scheme: str, config: str):
    """``(w, perm)``, or None at a breakdown."""
    t = a.dtype.type
    n = a.shape[0]
    w = [[t(a[i, j]) for j in range(n)] for i in range(n)]
    perm = list(range(n))
    for j0, j1 in _panels(n, nb):
        for j in range(j0, j1):
            p = max(range(j, n), key=lambda i: (abs(w[i][j]), -i))
            if not abs(w[p][j]) > 0:
                return None
            w[j], w[p] = w[p], w[j]
            perm[j], perm[p] = perm[p], perm[j]
            for i in range(j + 1, n):
                w[i][j] = t(w[i][j] / w[j][j])
            for i in range(j + 1, n):
                for c in range(j + 1, j1):
                    w[i][c] = t(w[i][c] - t(w[i][j] * w[j][c]))
        for c in range(j1, n):
            for i in range(j0 + 1, j1):
                s = w[i][c]
                for k in range(j0, i):
                    s = t(s - t(w[i][k] * w[k][c]))
                w[i][c] = s
        if j1 < n:
            x = np.array([[w[i][k] for k in range(j0, j1)] for i in range(j1, n)], dtype=a.dtype)
            y = np.array([[w[k][c] for c in range(j1, n)] for k in range(j0, j1)], dtype=a.dtype)
            p = _gemm(scheme, config, x, y)
            for i in range(j1, n):
                for c in range(j1, n):
                    w[i][c] = t(w[i][c] - p[i - j1, c - j1])
    return np.array(w, dtype=a.dtype), np.array(perm)


def triangular_solves(w: np.ndarray, y: np.ndarray, nb: int, scheme: str, config: str, unit: bool) -> np.ndarray:
    """``U⁻¹ L⁻¹ y``: L the lower triangle of ``w`` (unit when ``unit``), U its upper triangle."""
    t = w.dtype.type
    n, r = y.shape
    y = y.astype(w.dtype)
    panels = _panels(n, nb)
    for j0, j1 in panels:
        for i in range(j0, j1):
            for c in range(r):
                s = y[i, c]
                for k in range(j0, i):
                    s = t(s - t(w[i, k] * y[k, c]))
                y[i, c] = s if unit else t(s / w[i, i])
        if j1 < n:
            y[j1:] = y[j1:] - _gemm(scheme, config, w[j1:, j0:j1], y[j0:j1])
    for j0, j1 in reversed(panels):
        for i in range(j1 - 1, j0 - 1, -1):
            for c in range(r):
                s = y[i, c]
                for k in range(i + 1, j1):
                    s = t(s - t(w[i, k] * y[k, c]))
                y[i, c] = t(s / w[i, i])
        if j0 > 0:
            y[:j0] = y[:j0] - _gemm(scheme, config, w[:j0, j0:j1], y[j0:j1])
    return y


def lu_solve(w: np.ndarray, perm: np.ndarray, b: np.ndarray, nb: int, scheme: str, config: str) -> np.ndarray:
    return triangular_solves(w, b[perm], nb, scheme, config, unit=True)


def lstsq(a: np.ndarray, b: np.ndarray, nb: int, scheme: str, config: str, refine: bool):
    """``(x, corrections)`` by the normal equations, or None at a Cholesky breakdown or a
    refinement that does not converge (the contraction test is not modelled here: callers use
    well-conditioned A)."""
    b2 = b.reshape(b.shape[0], -1).astype(a.dtype)
    g = _gemm(scheme, config, a.T, a).astype(a.dtype)
    c = _gemm(scheme, config, a.T, b2).astype(a.dtype)
    l = cholesky(g, nb, scheme, config)
    if l is None:
        return None
    w = np.tril(l) + np.triu(l.T, 1)
    x = triangular_solves(w, c, nb, scheme, config, unit=False)
    steps = 0
    if refine:
        eps = float(np.finfo(a.dtype).eps) / 2
        norm_1, norm_inf = float(np.abs(a).sum(axis=0).max()), float(np.abs(a).sum(axis=1).max())
        while True:
            r = b2 - a @ x
            s = a.T @ r
            bound = norm_1 * (norm_inf * np.abs(x).max(axis=0) + np.abs(r).max(axis=0)) * eps * math.sqrt(a.shape[0])
            if (np.abs(s).max(axis=0) <= bound).all():
                break
            if steps == 30:
                return None
            x = x + triangular_solves(w, s, nb, scheme, config, unit=False)
            steps += 1
    return x.reshape((a.shape[1],) + b.shape[1:]), steps


def solve(a: np.ndarray, b: np.ndarray, nb: int, scheme: str, config: str, refine: bool):
    """``(x, corrections)``, or None where the semantics hand the call to LAPACK."""
    f = lu(a, nb, scheme, config)
    if f is None:
        return None
    w, perm = f
    b2 = b.reshape(b.shape[0], -1).astype(a.dtype)
    x = lu_solve(w, perm, b2, nb, scheme, config)
    steps = 0
    if refine:
        n = a.shape[0]
        cte = float(np.abs(a).sum(axis=1).max()) * (float(np.finfo(a.dtype).eps) / 2) * math.sqrt(n)
        while True:
            r = b2 - a @ x
            if (np.abs(r).max(axis=0) <= np.abs(x).max(axis=0) * cte).all():
                break
            if steps == 30:
                return None
            x = x + lu_solve(w, perm, r, nb, scheme, config)
            steps += 1
    return x.reshape(b.shape), steps


def slogdet(a: np.ndarray, nb: int, scheme: str, config: str):
    """``(sign, logdet)`` from the blocked LU, or None at a breakdown: the permutation's sign
    (its row swaps counted), then Numba's walk along U's diagonal."""
    f = lu(a, nb, scheme, config)
    if f is None:
        return None
    w, perm = f
    perm, swaps = list(perm), 0
    for i in range(len(perm)):  # sort the permutation back by swaps
        while perm[i] != i:
            j = perm[i]
            perm[i], perm[j] = perm[j], perm[i]
            swaps += 1
    sign, acc = (-1.0 if swaps % 2 else 1.0), 0.0
    for k in range(a.shape[0]):
        v = w[k, k]
        if v < 0:
            sign, v = -sign, -v
        acc = acc + float(np.log(v))
    return sign, acc
