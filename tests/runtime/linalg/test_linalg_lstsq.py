"""``lstsq``'s solution by the normal equations (runtime/linalg/lstsq.py) against its written
semantics (docs/numerics.md, "linalg", *Least squares*): bit for bit equal to the reference
(tests/runtime/reference_linalg.py) under several GEMM schemes and ragged panels; refinement
that makes FP32-class products' solution FP64-class; every call the normal equations cannot
vouch for (rank deficient, too ill-conditioned, underdetermined) recomputed by LAPACK, counted,
bit for bit what ``@njit`` gives; Numba's errors for what Numba refuses."""

from __future__ import annotations

import numpy as np
import pytest
import reference_linalg as ref
from numba import njit

from mixjit.runtime.linalg.config import LinalgConfig
from mixjit.runtime.linalg.factor import Products, cholesky_blocked, mirror_lower
from mixjit.runtime.linalg.lstsq import CONTRACTION_LIMIT, contraction_estimate
from mixjit.runtime.linalg.solve import run_linalg

RNG = np.random.default_rng(11)

CONFIGS = [
    (np.float64, "native", "accumulate=blas"),
    (np.float64, "mixpert", "level=I"),
    (np.float32, "mixpert", "level=IV"),
    (np.float64, "ozaki2", "moduli=8"),
]

# what @njit gives, compiled here apart from runtime/linalg's own LAPACK candidate
_numba_lstsq = njit(lambda a, b: np.linalg.lstsq(a, b)[0])


def _tall(m: int, n: int, dtype) -> np.ndarray:
    return (RNG.standard_normal((m, n)) + np.eye(m, n) * 3).astype(dtype)


@pytest.mark.parametrize("dtype, scheme, config", CONFIGS)
@pytest.mark.parametrize("refine", [False, True])
def test_lstsq_equals_the_reference(dtype, scheme, config, refine):
    m, n, nb = 41, 13, 5
    a = _tall(m, n, dtype)
    for b in (RNG.standard_normal(m).astype(dtype), RNG.standard_normal((m, 2)).astype(dtype)):
        got, stats = run_linalg("lstsq", a, b, LinalgConfig(nb, scheme, config, refine))
        want = ref.lstsq(a, b, nb, scheme, config, refine)
        assert want is not None and stats.fallbacks == 0, stats.fallback_reason
        assert got.dtype == a.dtype and got.shape == (n,) + b.shape[1:]
        np.testing.assert_array_equal(got, want[0])
        assert stats.extra["refine_steps"] == want[1]


def test_refinement_makes_fp32_class_products_fp64_class():
    """mixpert level I (FP32-class) normal equations of a float64 fit with a residual: unrefined
    far from LAPACK's solution, refined within a small factor of LAPACK's own error."""
    m, n = 400, 60
    a = RNG.standard_normal((m, n))
    x_true = RNG.standard_normal(n)
    b = a @ x_true + 1e-3 * RNG.standard_normal(m)
    best = np.linalg.lstsq(a, b, rcond=None)[0]  # the least-squares solution, to FP64 accuracy
    lapack = _numba_lstsq(a, b)
    rough, _ = run_linalg("lstsq", a, b, LinalgConfig(16, "mixpert", "level=I"))
    fine, stats = run_linalg("lstsq", a, b, LinalgConfig(16, "mixpert", "level=I", refine=True))
    err = lambda x: np.abs(x - best).max() / np.abs(best).max()  # noqa: E731
    assert err(rough) > 1e3 * max(err(lapack), 1e-16)
    assert err(fine) <= 10 * max(err(lapack), 1e-15) and stats.fallbacks == 0
    assert 1 <= stats.extra["refine_steps"] <= 10


@pytest.mark.parametrize("scheme, config", [("native", "accumulate=blas"), ("mixpert", "level=IV")])
def test_a_rank_deficient_matrix_is_handed_to_lapack_with_the_reason(scheme, config):
    a = RNG.standard_normal((60, 8))
    a[:, 5] = a[:, 2] - a[:, 1]  # rank 7: the least-squares solution is not unique
    b = RNG.standard_normal(60)
    got, stats = run_linalg("lstsq", a, b, LinalgConfig(4, scheme, config, refine=True))
    assert stats.fallbacks == 1
    assert "rank deficient" in stats.fallback_reason or "not positive" in stats.fallback_reason
    np.testing.assert_array_equal(got, _numba_lstsq(a, b))  # gelsd's minimum-norm solution, as @njit


def test_the_contraction_estimate_separates_full_rank_from_rank_deficient():
    """Full rank and well conditioned: far below the limit; a null vector: at least 1 (the
    estimator finds it)."""
    a = RNG.standard_normal((50, 6))
    cfg = LinalgConfig(4, "native", "accumulate=blas")

    def estimate(a):
        g = a.T @ a + 1e-9 * np.eye(a.shape[1])  # keep the factorization alive where A has a null vector
        return contraction_estimate(a, mirror_lower(cholesky_blocked(g, cfg, Products(cfg))))

    assert estimate(a) < 1e-6 < CONTRACTION_LIMIT
    a[:, 3] = 2 * a[:, 0]
    assert estimate(a) >= 1.0


def test_an_underdetermined_system_is_handed_to_lapack():
    a, b = RNG.standard_normal((5, 9)), RNG.standard_normal(5)
    got, stats = run_linalg("lstsq", a, b, LinalgConfig(4, "native", "accumulate=blas"))
    assert stats.fallbacks == 1 and "underdetermined" in stats.fallback_reason
    np.testing.assert_array_equal(got, _numba_lstsq(a, b))


def test_an_ill_conditioned_fit_is_never_returned_unrefined_where_refinement_fails():
    """Condition 1e7 (1e14 for the normal equations): FP32-class products cannot serve it; the
    call is LAPACK's, counted, whatever the reason given."""
    m, n = 80, 20
    u, _ = np.linalg.qr(RNG.standard_normal((m, n)))
    v, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    a = u @ np.diag(np.logspace(0, -7, n)) @ v.T
    b = RNG.standard_normal(m)
    got, stats = run_linalg("lstsq", a, b, LinalgConfig(8, "mixpert", "level=I", refine=True))
    assert stats.fallbacks == 1
    np.testing.assert_array_equal(got, _numba_lstsq(a, b))


@pytest.mark.parametrize("a, b, message", [
    (np.ones((4, 3)), np.ones(5), "dimensionally valid"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), np.ones(2), "infs or NaNs"),
])
def test_lstsq_raises_numbas_errors(a, b, message):
    with pytest.raises(np.linalg.LinAlgError, match=message):
        _numba_lstsq(a, b)
    with pytest.raises(np.linalg.LinAlgError, match=message):
        run_linalg("lstsq", a, b, LinalgConfig(4, "native", "accumulate=blas"))
