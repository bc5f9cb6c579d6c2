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
        modeled_linalg_time("qr", 8, 1, "lapack", np.float64, "h100")
    with pytest.raises(ValueError, match="non-negative"):
        modeled_linalg_time("solve", -1, 1, "lapack", np.float64, "h100")


def test_lstsq_prices_gelsd_above_its_qr_and_the_normal_equations_by_their_parts():
    """gelsd costs more than a blocked Householder QR of A alone (its first step); the normal
    equations cost at least their two products AᵀA and AᵀB; an underdetermined system is
    priced as LAPACK (the candidate hands it over); refinement adds its corrections."""
    from mixjit.runtime.linalg.cost import ESTIMATOR_PROBES, _matvec

    m, n, dt, hw = 3000, 300, np.float64, "rtx4090"
    qr_gemm = modeled_time("native", None, m, n, n, dt, hw).seconds / 2  # below QR's 2mn² - 2n³/3 flops
    assert modeled_linalg_time("lstsq", n, 1, "lapack", dt, hw, rows=m) > qr_gemm
    cheap = LinalgConfig(64, "mixpert", "level=I")
    products = (modeled_time("mixpert", "level=I", n, n, m, dt, hw).seconds
                + modeled_time("mixpert", "level=I", n, 1, m, dt, hw).seconds)
    estimate = ESTIMATOR_PROBES * (2 * _matvec(m, n, np.dtype(dt), hw) + 2 * _matvec(n, n, np.dtype(dt), hw))
    unrefined = modeled_linalg_time("lstsq", n, 1, cheap, dt, hw, rows=m)
    assert unrefined > products + estimate
    refined = modeled_linalg_time("lstsq", n, 1, LinalgConfig(64, "mixpert", "level=I", refine=True), dt, hw, rows=m)
    residual = (modeled_time("native", None, m, 1, n, dt, hw).seconds
                + modeled_time("native", None, n, 1, m, dt, hw).seconds)
    assert refined > unrefined + (MODELED_REFINE_STEPS + 1) * residual * 0.999
    assert modeled_linalg_time("lstsq", 50, 1, cheap, dt, hw, rows=20) == \
        modeled_linalg_time("lstsq", 50, 1, "lapack", dt, hw, rows=20)


def test_refined_normal_equations_pay_on_weak_fp64_parts_and_not_on_an_h100():
    """What the tuner's lstsq candidates rest on: FP32-class normal equations, refined, are modeled
    faster than gelsd for a 1000 x 200 float64 fit on a Jetson AGX Orin (FP64 at 1/32 of FP32)
    and slower on an H100 (fast FP64 tensor cores, a few launches of LAPACK's kernels)."""
    cfg = LinalgConfig(64, "mixpert", "level=IV", refine=True)
    for hw, pays in (("jetson-agx-orin", True), ("h100", False)):
        lapack = modeled_linalg_time("lstsq", 200, 1, "lapack", np.float64, hw, rows=1000)
        assert (modeled_linalg_time("lstsq", 200, 1, cfg, np.float64, hw, rows=1000) < lapack) == pays
