"""The linalg executor (runtime/linalg/) against its written semantics (docs/numerics.md,
"linalg"): bit for bit equal to the reference (tests/runtime/reference_linalg.py) under
several GEMM schemes, block sizes that leave ragged panels, float32 and float64; Numba's
errors for what Numba refuses; the LAPACK fallback where the blocked algorithm breaks down
or refinement does not converge."""

from __future__ import annotations

import numpy as np
import pytest
import reference_linalg as ref
from numba import njit

from mixjit.runtime.linalg.config import LinalgConfig
from mixjit.runtime.linalg.solve import run_linalg

RNG = np.random.default_rng(5)

CONFIGS = [
    (np.float64, "native", "accumulate=blas"),
    (np.float64, "mixpert-fp64", "segments=6,pairs=sig2,tile=16x128x8"),
    (np.float64, "mixpert", "level=I"),
    (np.float32, "mixpert", "level=IV"),
    (np.float32, "tf32x3", "products=3"),
    (np.float64, "ozaki2", "moduli=8"),
]


def _spd(n: int, dtype) -> np.ndarray:
    x = RNG.standard_normal((n, n))
    return (x @ x.T + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype, scheme, config", CONFIGS)
@pytest.mark.parametrize("n, nb", [(29, 8), (16, 16), (5, 8)])
def test_cholesky_equals_the_reference(dtype, scheme, config, n, nb):
    a = _spd(n, dtype)
    got, stats = run_linalg("cholesky", a, None, LinalgConfig(nb, scheme, config))
    want = ref.cholesky(a, nb, scheme, config)
    assert want is not None and stats.fallbacks == 0
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype, scheme, config", CONFIGS)
@pytest.mark.parametrize("refine", [False, True])
def test_solve_and_inv_equal_the_reference(dtype, scheme, config, refine):
    n, nb = 27, 8
    a = (RNG.standard_normal((n, n)) + 4 * np.eye(n)).astype(dtype)
    for b in (RNG.standard_normal(n).astype(dtype), RNG.standard_normal((n, 3)).astype(dtype), None):
        op = "inv" if b is None else "solve"
        rhs = np.eye(n, dtype=dtype) if b is None else b
        got, stats = run_linalg(op, a, b, LinalgConfig(nb, scheme, config, refine))
        want = ref.solve(a, rhs, nb, scheme, config, refine)
        assert want is not None and stats.fallbacks == 0
        np.testing.assert_array_equal(got, want[0])
        assert got.shape == rhs.shape and stats.extra["refine_steps"] == want[1]


def test_refinement_makes_a_cheap_factorization_fp64_class():
    """mixpert level I products (float32-class) factor a float64 system; refined, the
    solution's error is that of LAPACK's within a small factor, unrefined far from it."""
    n = 120
    a = RNG.standard_normal((n, n)) + 2 * np.sqrt(n) * np.eye(n)
    x_true = RNG.standard_normal(n)
    b = a @ x_true
    lapack = np.linalg.solve(a, b)
    rough, _ = run_linalg("solve", a, b, LinalgConfig(32, "mixpert", "level=I"))
    fine, stats = run_linalg("solve", a, b, LinalgConfig(32, "mixpert", "level=I", refine=True))
    err = lambda x: np.abs(x - x_true).max() / np.abs(x_true).max()  # noqa: E731
    assert err(rough) > 1e3 * err(lapack)
    assert err(fine) <= 10 * max(err(lapack), 1e-15) and stats.fallbacks == 0
    assert 1 <= stats.extra["refine_steps"] <= 10


def test_refinement_that_does_not_converge_is_recomputed_by_lapack_and_counted():
    n = 40
    u, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    a = u @ np.diag(np.logspace(0, -13, n)) @ u.T  # condition 1e13: float32-class factors cannot refine it
    b = RNG.standard_normal(n)
    got, stats = run_linalg("solve", a, b, LinalgConfig(8, "mixpert", "level=I", refine=True))
    assert stats.fallbacks == 1 and "did not converge in 30" in stats.fallback_reason
    np.testing.assert_array_equal(got, _numba_solve(a, b))  # bit for bit what @njit gives


def test_a_breakdown_is_recomputed_by_lapack_and_counted():
    """Positive definite, but so close to singular that float32-class products make a
    pivot negative: LAPACK's factor, one fallback with the reason."""
    n = 24
    u, _ = np.linalg.qr(RNG.standard_normal((n, n)))
    a = u @ np.diag(np.logspace(0, -12, n)) @ u.T
    a = (a + a.T) / 2
    got, stats = run_linalg("cholesky", a, None, LinalgConfig(8, "mixpert", "level=I"))
    assert stats.fallbacks == 1 and "not positive" in stats.fallback_reason
    np.testing.assert_array_equal(got, _numba_cholesky(a))  # LAPACK factors it: what @njit gives


# what @njit gives, compiled here apart from runtime/linalg's own LAPACK candidate
_numba_solve = njit(lambda a, b: np.linalg.solve(a, b))
_numba_inv = njit(lambda a: np.linalg.inv(a))
_numba_cholesky = njit(lambda a: np.linalg.cholesky(a))


def _numba_error(fn, *args) -> str:
    with pytest.raises(np.linalg.LinAlgError) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.parametrize("case, ops", [("singular", ("solve", "inv")), ("nan", ("solve", "inv")),
                                       ("not square", ("inv",))])
def test_solve_and_inv_raise_numbas_errors(case, ops):
    n = 12
    a = RNG.standard_normal((n, n))
    if case == "singular":
        a[3] = a[5]
    elif case == "nan":
        a[2, 2] = np.nan
    else:
        a = a[:, :-1].copy()
    b = RNG.standard_normal(n)
    cfg = LinalgConfig(4, "mixpert-fp64", "segments=6,pairs=sig2,tile=16x128x8")
    for op, fn, args in (("solve", _numba_solve, (a, b)), ("inv", _numba_inv, (a,))):
        if op not in ops:
            continue
        want = _numba_error(fn, *args)
        with pytest.raises(np.linalg.LinAlgError, match=want.replace(".", r"\.")):
            run_linalg(op, a, b if op == "solve" else None, cfg)


def test_cholesky_of_a_matrix_that_is_not_positive_definite_raises_numbas_error():
    a = _spd(10, np.float64)
    a[4, 4] = -1.0
    want = _numba_error(_numba_cholesky, a)
    with pytest.raises(np.linalg.LinAlgError, match=want.replace(".", r"\.")):
        run_linalg("cholesky", a, None, LinalgConfig(4, "native", "accumulate=blas"))


def test_cholesky_reads_the_lower_triangle_as_numba_does():
    a = _spd(9, np.float64)
    junk = a + np.triu(RNG.standard_normal((9, 9)), 1)
    got, _ = run_linalg("cholesky", junk, None, LinalgConfig(4, "native", "accumulate=blas"))
    np.testing.assert_allclose(got, _numba_cholesky(junk), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, _numba_cholesky(a), rtol=1e-12, atol=1e-12)


def test_config_labels_round_trip_and_bad_ones_are_named():
    cfg = LinalgConfig(64, "mixpert", "level=IV", refine=True)
    assert cfg.label == "block=64,gemm=mixpert[level=IV],refine=on"
    assert LinalgConfig.parse(cfg.label) == cfg
    for bad, match in (("block=64,gemm=mixpert", "bad config"), ("block=0,gemm=native[accumulate=blas],refine=off",
                                                                 "block must be"),
                       ("block=99999999,gemm=native[accumulate=blas],refine=off", "block must be"),
                       ("block=8,gemm=mixpert[level=IX],refine=off", "unknown level")):
        with pytest.raises(ValueError, match=match):
            LinalgConfig.parse(bad)
    with pytest.raises(ValueError, match="refinement applies to solve, inv, lstsq, not to cholesky"):
        run_linalg("cholesky", _spd(4, np.float64), None, LinalgConfig(4, "native", "accumulate=blas", True))
