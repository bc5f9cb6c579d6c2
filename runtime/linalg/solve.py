"""``cholesky``, ``solve`` and ``inv`` under a linalg config, as Numba's ``np.linalg`` checks
and raises, with iterative refinement and the LAPACK fallback (docs/numerics.md, "linalg").

:func:`run_linalg` is the executor: ``(result, RunStats)``. A breakdown of the blocked
factorization, or a refinement that does not converge, is recomputed by LAPACK (Numba's own
``np.linalg``, compiled here) and counted as a fallback, so a call never returns a result its config could not vouch for, and a
singular or non-positive-definite matrix raises Numba's ``LinAlgError``.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.linalg.config import LAPACK, OPS, LinalgConfig, working_dtype
from mixjit.runtime.linalg.factor import Breakdown, Products, cholesky_blocked, lu_blocked, lu_solve_blocked
from mixjit.runtime.schemes.base import RunStats

__all__ = ["run_linalg", "REFINE_MAX_STEPS", "lapack"]

#: corrections iterative refinement makes at most before the LAPACK fallback (LAPACK's dsgesv: 30)
REFINE_MAX_STEPS = 30


def _check_square(a: np.ndarray) -> None:
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square.")


def _check_finite(*arrays: np.ndarray) -> None:
    for x in arrays:
        if not np.isfinite(x).all():
            raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")


@cached_njit
def _numba_cholesky(a):
    return np.linalg.cholesky(a)


@cached_njit
def _numba_solve(a, b):
    return np.linalg.solve(a, b)


@cached_njit
def _numba_inv(a):
    return np.linalg.inv(a)


def lapack(op: str, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """The ``lapack`` candidate: Numba's own ``np.linalg`` (potrf, gesv, getrf + getri), so
    the result and the errors are bit for bit what ``@njit`` gives."""
    if op == "cholesky":
        return _numba_cholesky(a)
    if op == "solve":
        return _numba_solve(a, b)
    if op == "inv":
        return _numba_inv(a)
    raise ValueError(f"linalg: unknown op {op!r}; ops are {', '.join(OPS)}")


def _refine(a: np.ndarray, b2: np.ndarray, x: np.ndarray, solve_lu) -> tuple[np.ndarray, int, bool]:
    """Iterative refinement of ``x`` (n x r) for ``a x = b2``: ``(x, corrections, converged)``."""
    n = a.shape[0]
    eps = float(np.finfo(a.dtype).eps) / 2.0  # unit roundoff
    cte = float(np.abs(a).sum(axis=1).max()) * eps * math.sqrt(n)
    for step in range(REFINE_MAX_STEPS + 1):
        r = b2 - a @ x
        if (np.abs(r).max(axis=0) <= np.abs(x).max(axis=0) * cte).all():
            return x, step, True
        if step == REFINE_MAX_STEPS:
            break
        x = x + solve_lu(r)
    return x, REFINE_MAX_STEPS, False


def run_linalg(op: str, a: np.ndarray, b: np.ndarray | None, config: LinalgConfig | str) -> tuple[np.ndarray, RunStats]:
    """``np.linalg.<op>(a[, b])`` under ``config`` (a :class:`LinalgConfig`, its label, or
    ``"lapack"``): the result in the working precision (``a``'s dtype) and what the call
    did (``fallbacks`` 1 when LAPACK recomputed it, with the reason; ``extra``: the GEMMs'
    calls and fallbacks, the refinement's corrections)."""
    if op not in OPS:
        raise ValueError(f"linalg: unknown op {op!r}; ops are {', '.join(OPS)}")
    a = np.asarray(a)
    _check_square(a)
    if op == "solve":
        if b is None:
            raise ValueError("linalg: solve takes a right-hand side b")
        b = np.asarray(b)
    if op != "cholesky":
        _check_finite(a, *(() if b is None else (b,)))
    if config == LAPACK:
        return lapack(op, a, b), RunStats(units=1, fallback_unit="call")
    cfg = config if isinstance(config, LinalgConfig) else LinalgConfig.parse(config)
    dt = working_dtype(a.dtype)
    if cfg.refine and op == "cholesky":
        raise ValueError("linalg: refinement applies to solve and inv, not to a factorization")
    products = Products(cfg)
    steps = 0
    try:
        if op == "cholesky":
            result = cholesky_blocked(a.astype(dt, copy=False), cfg, products)
            return result, _stats(products, None, steps)
        w, perm = lu_blocked(a.astype(dt, copy=False), cfg, products)
    except Breakdown as why:
        return lapack(op, a, b), _stats(products, f"the blocked factorization met {why}: recomputed by LAPACK", steps)
    rhs = np.eye(a.shape[0], dtype=dt) if op == "inv" else b.astype(dt, copy=False)
    b2 = rhs.reshape(rhs.shape[0], -1)

    def solve_lu(r: np.ndarray) -> np.ndarray:
        return lu_solve_blocked(w, perm, r, cfg, products)

    x = solve_lu(b2)
    if cfg.refine:
        x, steps, converged = _refine(a.astype(dt, copy=False), b2, x, solve_lu)
        if not converged:
            why = f"iterative refinement did not converge in {REFINE_MAX_STEPS} corrections: recomputed by LAPACK"
            return lapack(op, a, b), _stats(products, why, steps)
    return x.reshape(rhs.shape), _stats(products, None, steps)


def _stats(products: Products, fallback: str | None, refine_steps: int) -> RunStats:
    """One call's RunStats: a LAPACK recomputation (``fallback``: why) is one fallback of
    the whole call; the GEMMs' own fallbacks are listed in ``extra``."""
    stats = RunStats(fallbacks=1 if fallback else 0, units=1, fallback_unit="call", fallback_reason=fallback or "")
    stats.extra.update(gemm_calls=products.calls, gemm_fallbacks=products.fallbacks,
                       gemm_fallback_reasons=sorted(products.reasons), refine_steps=refine_steps)
    return stats
