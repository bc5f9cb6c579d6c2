"""The blocked drivers: Cholesky, LU with partial pivoting and the blocked triangular
solves, their products run by the configured GEMM scheme (docs/numerics.md, "linalg").

Python loops over the panels, as the MixPert general path's driver: each panel step is a
compiled kernel (runtime/linalg/panel.py) and each product the scheme's executor
(``scheme.run``), so a few tens of microseconds per panel are all Python adds.
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.linalg.config import LinalgConfig
from mixjit.runtime.linalg.panel import (
    backward_block,
    cholesky_panel,
    forward_block,
    lu_panel,
    u_block_row,
    zero_upper,
)

__all__ = ["Breakdown", "Products", "cholesky_blocked", "lu_blocked", "triangular_solves", "lu_solve_blocked",
           "cholesky_solve_blocked", "mirror_lower"]


class Breakdown(Exception):
    """A blocked factorization met a zero pivot or a Cholesky pivot that is not positive
    (at ``column``): the caller recomputes with LAPACK."""

    def __init__(self, column: int, what: str) -> None:
        super().__init__(f"{what} at column {column}")
        self.column = column
        self.what = what


class Products:
    """The GEMMs of one call under ``config``'s scheme: ``subtract(w, x, y)`` is
    ``w ← w − GEMM(x, y)``; ``stats`` sums the GEMMs' fallbacks (their units and reasons)."""

    def __init__(self, config: LinalgConfig) -> None:
        self.scheme, self.config = config.gemm()
        self.calls = 0
        self.fallbacks = 0
        self.reasons: set[str] = set()

    def product(self, x: np.ndarray, y: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """``GEMM(x, y)`` in the scheme's semantics, as a ``dtype`` array (its fallbacks counted)."""
        # C-ordered operands: a native (BLAS) product's bits can depend on their layout
        p, stats = self.scheme.run_with_stats(np.ascontiguousarray(x), np.ascontiguousarray(y), self.config)
        self.calls += 1
        if stats.fallbacks:
            self.fallbacks += stats.fallbacks
            self.reasons.add(f"{stats.fallbacks} {stats.fallback_unit}(s) of a product: {stats.fallback_reason}")
        return p.astype(dtype, copy=False)

    def subtract(self, w: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        """``w ← w − GEMM(x, y)``: the product in the scheme's semantics, one rounding per
        element for the difference."""
        if w.size == 0 or x.shape[1] == 0:
            return
        np.subtract(w, self.product(x, y, w.dtype), out=w)


def _panels(n: int, nb: int) -> list[tuple[int, int]]:
    return [(j0, min(j0 + nb, n)) for j0 in range(0, n, nb)]


def cholesky_blocked(a: np.ndarray, config: LinalgConfig, products: Products) -> np.ndarray:
    """The lower Cholesky factor of ``a`` (lower triangle read; zeros above); raises
    :class:`Breakdown` where a pivot is not positive."""
    w = np.array(a, order="C", copy=True)
    n = w.shape[0]
    for j0, j1 in _panels(n, config.block):
        status = cholesky_panel(w, j0, j1)
        if status >= 0:
            raise Breakdown(status, "a Cholesky pivot that is not positive")
        l21 = w[j1:, j0:j1]
        products.subtract(w[j1:, j1:], l21, l21.T)
    zero_upper(w)
    return w


def lu_blocked(a: np.ndarray, config: LinalgConfig, products: Products) -> tuple[np.ndarray, np.ndarray]:
    """``(w, perm)``: L (unit lower, below the diagonal) and U of ``a[perm]`` in one
    array; raises :class:`Breakdown` at a zero pivot."""
    w = np.array(a, order="C", copy=True)
    n = w.shape[0]
    perm = np.arange(n, dtype=np.int64)
    for j0, j1 in _panels(n, config.block):
        status = lu_panel(w, perm, j0, j1)
        if status >= 0:
            raise Breakdown(status, "a zero pivot")
        u_block_row(w, j0, j1)
        products.subtract(w[j1:, j1:], w[j1:, j0:j1], w[j0:j1, j1:])
    return w, perm


def triangular_solves(w: np.ndarray, y: np.ndarray, config: LinalgConfig, products: Products,
                      unit_lower: bool) -> np.ndarray:
    """``Y ← U⁻¹ L⁻¹ Y`` (``y`` n x r, C order, overwritten and returned) with L the lower triangle
    of ``w`` (unit when ``unit_lower``: LU's) and U its upper triangle: the blocked forward and
    back substitutions."""
    panels = _panels(w.shape[0], config.block)
    for j0, j1 in panels:
        forward_block(w, y, j0, j1, unit_lower)
        products.subtract(y[j1:], w[j1:, j0:j1], y[j0:j1])
    for j0, j1 in reversed(panels):
        backward_block(w, y, j0, j1)
        products.subtract(y[:j0], w[:j0, j0:j1], y[j0:j1])
    return y


def lu_solve_blocked(w: np.ndarray, perm: np.ndarray, b: np.ndarray, config: LinalgConfig,
                     products: Products) -> np.ndarray:
    """``X`` with ``A X = B`` from :func:`lu_blocked`'s factors (``b`` n x r)."""
    y = np.array(b[perm], order="C", dtype=w.dtype, copy=True)
    return triangular_solves(w, y, config, products, unit_lower=True)


def cholesky_solve_blocked(w: np.ndarray, b: np.ndarray, config: LinalgConfig, products: Products) -> np.ndarray:
    """``X`` with ``L Lᵀ X = B`` (``b`` n x r) where ``w`` holds L (:func:`cholesky_blocked`) in its
    lower triangle and Lᵀ above it (:func:`mirror_lower`)."""
    y = np.array(b, order="C", dtype=w.dtype, copy=True)
    return triangular_solves(w, y, config, products, unit_lower=False)


def mirror_lower(l: np.ndarray) -> np.ndarray:
    """``L`` in the lower triangle and ``Lᵀ`` above it (one array for :func:`cholesky_solve_blocked`)."""
    return np.ascontiguousarray(np.tril(l) + np.triu(l.T, 1))
