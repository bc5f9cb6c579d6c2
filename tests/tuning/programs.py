"""Small programs the tuning tests tune: a left-looking blocked Cholesky (2 dependent GEMM
sites), an in-place right-looking one (1 site, writes its argument, returns nothing) and a
3-layer MLP (3 dependent sites). Plain Python functions: each test wraps them in @mixjit."""

from __future__ import annotations

import math

import numpy as np


def cholesky_ll(a, nb):
    """Lower Cholesky factor of ``a``, left-looking by blocks of ``nb`` columns."""
    n = a.shape[0]
    L = np.zeros_like(a)
    for k in range(0, n, nb):
        e = min(k + nb, n)
        S = a[k:e, k:e] - L[k:e, :k] @ L[k:e, :k].T  # site: diagonal block update
        for j in range(e - k):
            d = S[j, j]
            for p in range(j):
                d -= L[k + j, k + p] * L[k + j, k + p]
            L[k + j, k + j] = math.sqrt(d)
            for i in range(j + 1, e - k):
                s = S[i, j]
                for p in range(j):
                    s -= L[k + i, k + p] * L[k + j, k + p]
                L[k + i, k + j] = s / L[k + j, k + j]
        R = a[e:, k:e] - L[e:, :k] @ L[k:e, :k].T  # site: panel update
        for i in range(n - e):
            for j in range(e - k):
                s = R[i, j]
                for p in range(j):
                    s -= L[e + i, k + p] * L[k + j, k + p]
                L[e + i, k + j] = s / L[k + j, k + j]
    return L


def cholesky_inplace(a, nb):
    """Overwrite the lower triangle of ``a`` with its Cholesky factor (right-looking); returns nothing."""
    n = a.shape[0]
    for k in range(0, n, nb):
        e = min(k + nb, n)
        for j in range(k, e):
            d = a[j, j]
            for p in range(k, j):
                d -= a[j, p] * a[j, p]
            a[j, j] = math.sqrt(d)
            for i in range(j + 1, n):
                s = a[i, j]
                for p in range(k, j):
                    s -= a[i, p] * a[j, p]
                a[i, j] = s / a[j, j]
        P = a[e:, k:e]
        a[e:, e:] -= P @ P.T  # site: trailing update


def mlp(x, w1, w2, w3):
    """Three dense layers with tanh between them."""
    h = np.tanh(x @ w1)
    g = np.tanh(h @ w2)
    return g @ w3


def spd(n: int, seed: int, dtype=np.float32) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


def mlp_inputs(batch: int, width: int, seed: int, dtype=np.float32) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, width)).astype(dtype)
    ws = [(rng.standard_normal((width, width)) / math.sqrt(width)).astype(dtype) for _ in range(3)]
    return (x, *ws)


def mlp64_inputs(seed: int, scale: float = 1.0) -> tuple[np.ndarray, ...]:
    """The float64 MLP inputs the online-tuning tests share (batch 48, width 96); ``scale``
    multiplies the last layer's weights (so the output, past the tanh)."""
    x, w1, w2, w3 = mlp_inputs(48, 96, seed, np.float64)
    return (x, w1, w2, w3 * scale)
