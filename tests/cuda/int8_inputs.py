"""Operands for the INT8-quantizing kernels' tests (int8, dfp): random, rows and columns over many
binades, and edge cases, in float64 before the caller's dtype."""

from __future__ import annotations

import numpy as np

__all__ = ["int8_inputs"]


def int8_inputs(kind: str, m: int, k: int, n: int, dtype, seed: int, *, row_binades: int = 100,
                rows: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``kind``: ``"random"``; ``"wide"`` (A's rows scaled over ``2^±row_binades`` and its elements
    up to 2^-20 below, B's columns over 2^±100, a zero row and column, tiny values); ``"edges"``
    (at least ``rows`` rows: results beyond FLT_MAX, negative underflow to +0, exact cancellation;
    rows from 3 on are the caller's to set)."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if kind == "wide":
        a *= np.exp2(rng.integers(-row_binades, row_binades, (m, 1))) * np.exp2(rng.integers(-20, 1, (m, k)))
        b *= np.exp2(rng.integers(-100, 100, (1, n)))
        a[0], b[:, -1] = 0.0, 0.0
    elif kind == "edges":
        a, b = np.resize(a, (max(m, rows), k)), np.resize(b, (k, max(n, 3)))
        a[0], b[:, 0] = 3e38, 10.0
        a[1], b[:, 1] = -1e-30, 1e-30
        a[2, : k // 2 * 2] = np.tile([1.0, -1.0], k // 2)
    return a.astype(dtype), b.astype(dtype)
