"""The modeled time of linalg candidates (runtime/linalg/cost.py): LAPACK is the fastest
blocked algorithm with native products, the parts add up, refinement costs its corrections."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.linalg.config import BLOCK_SIZES, LinalgConfig
from mixjit.runtime.linalg.cost import MODELED_REFINE_STEPS, modeled_linalg_time
from mixjit.runtime.model.costmodel import modeled_time


@pytest.mark.parametrize("op", ["cholesky", "solve", "inv"])
def test_lapack_is_the_fastest_blocked_algorithm_with_native_products(op):
    lapack = modeled_linalg_time(op, 2048, 4, "lapack", np.float64, "h100")
    natives = [modeled_linalg_time(op, 2048, 4, LinalgConfig(nb, "native", "accumulate=blas"), np.float64, "h100")
               for nb in BLOCK_SIZES]
    assert lapack == pytest.approx(min(natives))


def test_one_panel_is_the_panel_step_alone():
    """n <= block: no GEMM at all, the panel priced as a native GEMM of its flops."""
    t = modeled_linalg_time("cholesky", 64, 0, LinalgConfig(64, "mixpert", "level=IV"), np.float32, "a100")
    assert t == pytest.approx(modeled_time("native", None, 64, 64, 32, np.float32, "a100").seconds)


def test_a_cheaper_gemm_scheme_makes_a_cheaper_factorization_and_refinement_adds_its_corrections():
    n = 8192
    exact = LinalgConfig(256, "mixpert-fp64", "segments=8,pairs=sig3,tile=16x128x8")
    cheap = LinalgConfig(256, "mixpert", "level=I")
    refined = LinalgConfig(256, "mixpert", "level=I", refine=True)
    t = {c: modeled_linalg_time("solve", n, 1, c, np.float64, "h100") for c in (exact, cheap, refined)}
    assert t[cheap] < t[exact]
    residual = modeled_time("native", None, n, 1, n, np.float64, "h100").seconds
    assert t[refined] > t[cheap] + (MODELED_REFINE_STEPS + 1) * residual * 0.999


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown op"):
        modeled_linalg_time("lstsq", 8, 1, "lapack", np.float64, "h100")
    with pytest.raises(ValueError, match="non-negative"):
        modeled_linalg_time("solve", -1, 1, "lapack", np.float64, "h100")
