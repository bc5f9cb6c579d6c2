"""``np.linalg.lstsq(A, B)[0]`` by the normal equations under a linalg config (docs/numerics.md,
"linalg", *Least squares*).

``G = GEMM(Aᵀ, A)`` and ``C = GEMM(Aᵀ, B)`` under the config's scheme, the blocked Cholesky
factor ``L`` of ``G``, ``X = L⁻ᵀ L⁻¹ C`` by the blocked triangular solves, then (``refine=on``)
iterative refinement on the normal equations with working-precision residuals. The normal
equations serve ``A`` of full column rank only, where the least-squares solution is unique and
gelsd's (the ``lapack`` candidate's) minimum-norm solution is that solution: before solving,
:func:`contraction_estimate` estimates ``‖I − (L Lᵀ)⁻¹ AᵀA‖₁`` (the factor and Aᵀ·A in the
working precision), which exceeds 1 when ``A`` is rank deficient whatever the scheme's
precision; above :data:`CONTRACTION_LIMIT` the call is handed to LAPACK. So is an
underdetermined system (``m < n``).
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.linalg.config import LinalgConfig
from mixjit.runtime.linalg.factor import Products, cholesky_blocked, cholesky_solve_blocked, mirror_lower
from mixjit.runtime.linalg.panel import backward_block, forward_block
from mixjit.runtime.linalg.refine import REFINE_MAX_STEPS, refine

__all__ = ["lstsq_normal", "contraction_estimate", "CONTRACTION_LIMIT", "ESTIMATOR_STEPS", "Handback"]

#: the largest estimated ``‖I − (L Lᵀ)⁻¹ AᵀA‖₁`` the normal equations accept (a contraction
#: of at most 1/2: every refinement step at least halves the error of the unique solution)
CONTRACTION_LIMIT = 0.5
#: the estimator's iterations at most (LAPACK's dlacn2: 5)
ESTIMATOR_STEPS = 5


class Handback(Exception):
    """The normal equations cannot vouch for this call (``str(self)``: why; ``steps``: the
    refinement's corrections made): LAPACK computes it."""

    def __init__(self, why: str, steps: int = 0) -> None:
        super().__init__(why)
        self.steps = steps


def _factor_solve(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``(L Lᵀ)⁻¹ v`` (``v`` of length n) with L in ``w``'s lower triangle, Lᵀ above it: the
    working-precision substitutions over the whole matrix (no GEMM)."""
    y = np.array(v.reshape(-1, 1), order="C", dtype=w.dtype, copy=True)
    n = w.shape[0]
    forward_block(w, y, 0, n, False)
    backward_block(w, y, 0, n)
    return y[:, 0]


def contraction_estimate(a: np.ndarray, w: np.ndarray) -> float:
    """An estimate (a lower bound, usually within a factor 3, as LAPACK's condition estimators)
    of ``‖I − (L Lᵀ)⁻¹ AᵀA‖₁``, L the Cholesky factor in ``w`` (:func:`mirror_lower`): Hager's
    1-norm estimator with Higham's refinements (LAPACK's dlacn2), in the working precision.
    It is the factor's error relative to the normal equations: refinement contracts by about
    this much per step, and it is at least 1 when ``A`` has a null vector (which the estimator
    finds unless the vector is orthogonal to every probe it tries)."""
    n = w.shape[0]
    dt = w.dtype

    def apply(v: np.ndarray) -> np.ndarray:  # (I − M⁻¹G) v
        return v - _factor_solve(w, a.T @ (a @ v))

    def apply_t(v: np.ndarray) -> np.ndarray:  # (I − G M⁻¹) v, M and G symmetric
        return v - a.T @ (a @ _factor_solve(w, v))

    x = np.full(n, 1.0 / n, dtype=dt)
    est = 0.0
    for step in range(ESTIMATOR_STEPS):
        y = apply(x)
        new = float(np.abs(y).sum())
        if step > 0 and not new > est:
            est = max(est, new)
            break
        est = new
        z = apply_t(np.where(y >= 0, 1.0, -1.0).astype(dt))
        j = int(np.argmax(np.abs(z)))
        if step > 0 and not abs(z[j]) > float(z @ x):
            break
        x = np.zeros(n, dtype=dt)
        x[j] = 1.0
    # Higham's extra probe: an alternating vector catches what the unit vectors miss
    alt = np.array([(-1.0) ** i * (1.0 + i / max(n - 1, 1)) for i in range(n)], dtype=dt)
    est = max(est, 2.0 * float(np.abs(apply(alt)).sum()) / (3.0 * n))
    return est if math.isfinite(est) else math.inf


def _normal_residual_test(a: np.ndarray, b2: np.ndarray):
    """Least squares' residual and stopping test: ``R = B − A·X``, ``S = Aᵀ·R`` (working
    precision), per column ``‖S_c‖∞ ≤ ‖A‖₁ · (‖A‖∞ · ‖X_c‖∞ + ‖R_c‖∞) · ε · √m``."""
    eps = float(np.finfo(a.dtype).eps) / 2.0
    norm_1 = float(np.abs(a).sum(axis=0).max())
    norm_inf = float(np.abs(a).sum(axis=1).max())
    root_m = math.sqrt(a.shape[0])

    def residual(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = b2 - a @ x
        s = a.T @ r
        bound = norm_1 * (norm_inf * np.abs(x).max(axis=0) + np.abs(r).max(axis=0)) * eps * root_m
        return s, np.abs(s).max(axis=0) <= bound

    return residual


def lstsq_normal(a: np.ndarray, b2: np.ndarray, config: LinalgConfig, products: Products) -> tuple[np.ndarray, int]:
    """``(X, corrections)`` for the m x n ``a`` (m >= n, working precision) and the m x r ``b2``;
    raises :class:`Handback` where the normal equations cannot vouch for the result, and
    :class:`~mixjit.runtime.linalg.factor.Breakdown` where the Cholesky factorization breaks down."""
    m, n = a.shape
    if m < n:
        raise Handback(f"an underdetermined system ({m} x {n}: fewer rows than columns)")
    dt = a.dtype
    at = a.T
    g = products.product(at, a, dt)
    c = products.product(at, b2, dt)
    w = mirror_lower(cholesky_blocked(g, config, products))
    rho = contraction_estimate(a, w)
    if not rho <= CONTRACTION_LIMIT:
        raise Handback(f"the normal equations' factor is too far from AᵀA (estimated contraction {rho:.3g} > "
                       f"{CONTRACTION_LIMIT}): A is rank deficient or too ill-conditioned for this config")
    x = cholesky_solve_blocked(w, c, config, products)
    steps = 0
    if config.refine:
        x, steps, converged = refine(x, _normal_residual_test(a, b2),
                                     lambda s: cholesky_solve_blocked(w, s, config, products))
        if not converged:
            raise Handback(f"iterative refinement did not converge in {REFINE_MAX_STEPS} corrections", steps)
    return x, steps
