"""``det`` and ``slogdet`` under a linalg config (docs/numerics.md, "linalg", *Determinants*): the
blocked LU's sign and log-magnitude, bit for bit the reference's, Numba's result types; a singular
matrix recomputed by LAPACK (Numba's (0, -inf) and 0.0); Numba's errors; no refinement."""

from __future__ import annotations

import math

import numpy as np
import pytest
import reference_linalg as ref
from numba import njit

from mixjit.runtime.linalg.config import LinalgConfig
from mixjit.runtime.linalg.cost import modeled_linalg_time
from mixjit.runtime.linalg.solve import run_linalg

RNG = np.random.default_rng(21)
_numba_slogdet = njit(lambda a: np.linalg.slogdet(a))
_numba_det = njit(lambda a: np.linalg.det(a))


@pytest.mark.parametrize("dtype, scheme, config", [(np.float64, "native", "accumulate=blas"),
                                                   (np.float64, "mixpert", "level=I"),
                                                   (np.float32, "mixpert", "level=IV")])
@pytest.mark.parametrize("n, nb", [(29, 8), (5, 8)])
def test_slogdet_and_det_equal_the_reference(dtype, scheme, config, n, nb):
    a = (RNG.standard_normal((n, n)) + 2 * np.eye(n)).astype(dtype)
    cfg = LinalgConfig(nb, scheme, config)
    (sign, logdet), stats = run_linalg("slogdet", a, None, cfg)
    want = ref.slogdet(a, nb, scheme, config)
    assert want is not None and stats.fallbacks == 0
    assert (sign, logdet) == want and type(sign) is float and type(logdet) is float
    det, _ = run_linalg("det", a, None, cfg)
    assert det == want[0] * math.exp(want[1])
    lapack_sign, lapack_logdet = _numba_slogdet(a)
    assert sign == lapack_sign and abs(logdet - lapack_logdet) <= 1e-4 * max(1.0, abs(lapack_logdet))


def test_the_sign_follows_the_row_swaps():
    a = np.eye(6)[[1, 0, 3, 2, 5, 4]] * 2.0  # three swaps: det = -64
    (sign, logdet), _ = run_linalg("slogdet", a, None, LinalgConfig(2, "native", "accumulate=blas"))
    assert sign == -1.0 and logdet == pytest.approx(6 * math.log(2.0))
    a[0] *= -1  # a negative pivot flips it back
    assert run_linalg("slogdet", a, None, LinalgConfig(2, "native", "accumulate=blas"))[0][0] == 1.0


def test_a_singular_matrix_is_recomputed_by_lapack_as_numba_returns_it():
    a = np.ones((6, 6))
    (sign, logdet), stats = run_linalg("slogdet", a, None, LinalgConfig(2, "native", "accumulate=blas"))
    assert (sign, logdet) == _numba_slogdet(a) == (0.0, -math.inf) and stats.fallbacks == 1
    assert run_linalg("det", a, None, LinalgConfig(2, "native", "accumulate=blas"))[0] == _numba_det(a) == 0.0
    assert run_linalg("det", np.zeros((0, 0)), None, LinalgConfig(2, "native", "accumulate=blas"))[0] == 1.0


def test_numbas_errors_and_no_refinement():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        run_linalg("det", np.ones((2, 3)), None, LinalgConfig(2, "native", "accumulate=blas"))
    with pytest.raises(np.linalg.LinAlgError, match="infs or NaNs"):
        run_linalg("slogdet", np.array([[1.0, np.inf], [0.0, 1.0]]), None, LinalgConfig(2, "native", "accumulate=blas"))
    with pytest.raises(ValueError, match="refinement applies to solve, inv, lstsq, not to det"):
        run_linalg("det", np.eye(3), None, LinalgConfig(2, "native", "accumulate=blas", refine=True))


def test_a_determinant_costs_its_lu_alone():
    cfg = LinalgConfig(64, "mixpert", "level=IV")
    lu = modeled_linalg_time("slogdet", 1024, 0, cfg, np.float32, "a100")
    assert lu == modeled_linalg_time("det", 1024, 0, cfg, np.float32, "a100")
    assert lu < modeled_linalg_time("inv", 1024, 1024, cfg, np.float32, "a100")
