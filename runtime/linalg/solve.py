"""``cholesky``, ``solve``, ``inv``, ``lstsq`` (its solution), ``det`` and ``slogdet`` under a linalg config, as Numba's
``np.linalg`` checks and raises, with iterative refinement and the LAPACK fallback
(docs/numerics.md, "linalg"; least squares: runtime/linalg/lstsq.py).

:func:`run_linalg` is the executor: ``(result, RunStats)``. A breakdown of the blocked
factorization, or a refinement that does not converge, is recomputed by LAPACK (Numba's own
``np.linalg``, compiled here) and counted as a fallback, so a call never returns a result its config could not vouch for, and a
singular or non-positive-definite matrix raises Numba's ``LinAlgError``.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.linalg.config import LAPACK, OPS, REFINABLE, LinalgConfig, working_dtype
from mixjit.runtime.linalg.factor import Breakdown, Products, cholesky_blocked, lu_blocked, lu_solve_blocked
from mixjit.runtime.linalg.lstsq import Handback, lstsq_normal
from mixjit.runtime.linalg.refine import REFINE_MAX_STEPS, refine
from mixjit.runtime.schemes.base import RunStats

__all__ = ["run_linalg", "REFINE_MAX_STEPS", "lapack", "slogdet_of_lu"]

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


@cached_njit
def _numba_lstsq(a, b):
    return np.linalg.lstsq(a, b)[0]


@cached_njit
def _numba_det(a):
    return np.linalg.det(a)


@cached_njit
def _numba_slogdet(a):
    return np.linalg.slogdet(a)


def lapack(op: str, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """The ``lapack`` candidate: Numba's own ``np.linalg`` (potrf, gesv, getrf + getri, gelsd, getrf), so
    the result and the errors are bit for bit what ``@njit`` gives."""
    if op == "cholesky":
        return _numba_cholesky(a)
    if op == "solve":
        return _numba_solve(a, b)
    if op == "inv":
        return _numba_inv(a)
    if op == "lstsq":
        return _numba_lstsq(a, b)
    if op == "det":
        return _numba_det(a)
    if op == "slogdet":
        return _numba_slogdet(a)
    raise ValueError(f"linalg: unknown op {op!r}; ops are {', '.join(OPS)}")


def _residual_test(a: np.ndarray, b2: np.ndarray):
    """The solve's residual and stopping test: ``R = B − A·X``, per column
    ``‖R_c‖∞ ≤ ‖X_c‖∞ · ‖A‖∞ · ε · √n``."""
    eps = float(np.finfo(a.dtype).eps) / 2.0  # unit roundoff
    cte = float(np.abs(a).sum(axis=1).max()) * eps * math.sqrt(a.shape[0])

    def residual(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = b2 - a @ x
        return r, np.abs(r).max(axis=0) <= np.abs(x).max(axis=0) * cte

    return residual


def run_linalg(op: str, a: np.ndarray, b: np.ndarray | None,
               config: LinalgConfig | str) -> tuple[np.ndarray | float | tuple[float, float], RunStats]:
    """``np.linalg.<op>(a[, b])`` under ``config`` (a :class:`LinalgConfig`, its label, or
    ``"lapack"``): the result (an array in the working precision, ``a``'s dtype; ``det`` a float,
    ``slogdet`` ``(sign, logdet)``, float64 as Numba's) and what the call
    did (``fallbacks`` 1 when LAPACK recomputed it, with the reason; ``extra``: the GEMMs'
    calls and fallbacks, the refinement's corrections)."""
    if op not in OPS:
        raise ValueError(f"linalg: unknown op {op!r}; ops are {', '.join(OPS)}")
    a = np.asarray(a)
    if op in ("solve", "lstsq"):
        if b is None:
            raise ValueError(f"linalg: {op} takes a right-hand side b")
        b = np.asarray(b)
    if op == "lstsq":
        if not _lstsq_operands_ok(a, b):  # LAPACK raises Numba's error for them
            return lapack(op, a, b), _stats(None, "operands the normal equations do not take: computed by LAPACK", 0)
    else:
        _check_square(a)
        if op != "cholesky" and a.size:  # det/slogdet of an empty matrix: Numba returns before its check
            _check_finite(a, *(() if b is None else (b,)))
    if config == LAPACK or (op in ("det", "slogdet") and a.shape[0] == 0):
        return lapack(op, a, b), RunStats(units=1, fallback_unit="call")
    cfg = config if isinstance(config, LinalgConfig) else LinalgConfig.parse(config)
    dt = working_dtype(a.dtype)
    if cfg.refine and op not in REFINABLE:
        raise ValueError(f"linalg: refinement applies to {', '.join(REFINABLE)}, not to {op}")
    products = Products(cfg)
    steps = 0
    try:
        if op == "lstsq":
            assert b is not None
            x, steps = lstsq_normal(a.astype(dt, copy=False), b.astype(dt, copy=False).reshape(b.shape[0], -1),
                                    cfg, products)
            return x.reshape((a.shape[1],) + b.shape[1:]), _stats(products, None, steps)
        if op == "cholesky":
            result = cholesky_blocked(a.astype(dt, copy=False), cfg, products)
            return result, _stats(products, None, steps)
        w, perm = lu_blocked(a.astype(dt, copy=False), cfg, products)
        if op in ("det", "slogdet"):
            sign, logdet = slogdet_of_lu(w, perm)
            result = (sign, logdet) if op == "slogdet" else sign * math.exp(logdet)
            return result, _stats(products, None, 0)
    except Breakdown as why:
        return lapack(op, a, b), _stats(products, f"the blocked factorization met {why}: recomputed by LAPACK", steps)
    except Handback as why:
        return lapack(op, a, b), _stats(products, f"{why}: recomputed by LAPACK", why.steps)
    rhs = np.eye(a.shape[0], dtype=dt) if op == "inv" else b.astype(dt, copy=False)
    b2 = rhs.reshape(rhs.shape[0], -1)

    def solve_lu(r: np.ndarray) -> np.ndarray:
        return lu_solve_blocked(w, perm, r, cfg, products)

    x = solve_lu(b2)
    if cfg.refine:
        x, steps, converged = refine(x, _residual_test(a.astype(dt, copy=False), b2), solve_lu)
        if not converged:
            why = f"iterative refinement did not converge in {REFINE_MAX_STEPS} corrections: recomputed by LAPACK"
            return lapack(op, a, b), _stats(products, why, steps)
    return x.reshape(rhs.shape), _stats(products, None, steps)


def _stats(products: Products | None, fallback: str | None, refine_steps: int) -> RunStats:
    """One call's RunStats: a LAPACK recomputation (``fallback``: why) is one fallback of
    the whole call; the GEMMs' own fallbacks are listed in ``extra``."""
    stats = RunStats(fallbacks=1 if fallback else 0, units=1, fallback_unit="call", fallback_reason=fallback or "")
    stats.extra.update(gemm_calls=products.calls if products else 0, gemm_fallbacks=products.fallbacks if products else 0,
                       gemm_fallback_reasons=sorted(products.reasons) if products else [], refine_steps=refine_steps)
    return stats


def slogdet_of_lu(w: np.ndarray, perm: np.ndarray) -> tuple[float, float]:
    """``(sign, log|det|)`` from :func:`lu_blocked`'s factors, as Numba's slogdet walks LAPACK's:
    the sign of the row permutation (the parity of its cycles), then along the diagonal of U in
    order a negative ``u_kk`` flips the sign and ``log|u_kk|`` (in the working precision) is added
    to a float64 sum."""
    n = perm.size
    seen = np.zeros(n, dtype=bool)
    swaps = 0
    for start in range(n):  # a cycle of length L is L - 1 transpositions
        length = 0
        k = start
        while not seen[k]:
            seen[k] = True
            k = int(perm[k])
            length += 1
        swaps += max(length - 1, 0)
    sign = -1.0 if swaps % 2 else 1.0
    acc = 0.0
    for k in range(n):
        v = w[k, k]
        if v < 0:
            sign, v = -sign, -v
        acc = acc + float(np.log(v))
    return sign + 0.0, acc


def _lstsq_operands_ok(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``lstsq(a, b)`` has operands Numba accepts: A 2-D, B 1-D or 2-D with A's rows, one
    float dtype, nothing empty, every element finite."""
    return (a.ndim == 2 and b.ndim in (1, 2) and a.dtype == b.dtype and a.size > 0 and b.size > 0
            and b.shape[0] == a.shape[0] and bool(np.isfinite(a).all()) and bool(np.isfinite(b).all()))
