"""runtime/numerics/exactsum.py: exact sums rounded once, on the cases where a float64 GEMM
alone gets the bits wrong (double rounding, cancellation, overflow, signed zero)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from reference_schemes import rn

from mixjit.runtime.numerics.exactsum import round_exact_sum, round_to_f32_exact

F32MAX = float(np.finfo(np.float32).max)
THRESHOLD = F32MAX + 2.0**103  # overflow threshold: midpoint of FLT_MAX and 2^128


def _dot(terms: list[float]) -> tuple[float, int]:
    a = np.array([terms], dtype=np.float64)
    b = np.ones((len(terms), 1))
    c, slow = round_exact_sum([a], [b], [(0, 0)])
    return float(c[0, 0]), slow


@pytest.mark.parametrize(
    "terms",
    [
        [1.0, 2.0**-24, 2.0**-80],  # RN64 gives the float32 midpoint 1+2^-24; true sum is above
        [1.0, 2.0**-24, -(2.0**-80)],  # ... and below
        [1.0, 2.0**-24],  # an exact tie: to even
        [1.0 + 2.0**-23, 2.0**-24],  # an exact tie: to even, upward
        [2.0**60, 1.0, -(2.0**60), 2.0**-30],  # cancellation: float64 order loses the 1
        [F32MAX, 2.0**103],  # exactly the overflow threshold: inf
        [F32MAX, 2.0**103, -(2.0**-20)],  # just below it: FLT_MAX
        [F32MAX, 2.0**103, 2.0**-20],
        [-(2.0**-149), 2.0**-151],  # subnormal result
        [-(2.0**-160)],  # underflows to zero: +0
    ],
)
def test_round_exact_sum_is_correctly_rounded(terms):
    got, _ = _dot(terms)
    want = rn(sum(Fraction(t) for t in terms), "fp32")
    want = want if isinstance(want, float) else float(want)
    assert np.float32(got).view(np.uint32) == np.float32(want).view(np.uint32), (terms, got, want)


def test_near_boundary_elements_take_the_slow_path_and_easy_ones_do_not():
    assert _dot([1.0, 2.0**-24, 2.0**-80])[1] == 1
    assert _dot([2.0**60, 1.0, -(2.0**60)])[1] == 1
    assert _dot([1.0, 0.25, 0.5])[1] == 0


def test_zero_results_are_positive_zero():
    got, _ = _dot([-0.0, -0.0])
    assert got == 0.0 and not np.signbit(got)
    assert not np.signbit(round_to_f32_exact(np.array([-1.0, 1.0])))


def test_addend_is_part_of_the_exact_sum():
    a = np.array([[1.0]])
    b = np.array([[2.0**-24]])
    c, _ = round_exact_sum([a], [b], [(0, 0)], addend=np.array([[1.0 + 2.0**-40]]))
    assert c[0, 0] == np.float32(1 + 2.0**-23)


def test_random_wide_span_block_matches_exact_rounding():
    rng = np.random.default_rng(7)
    a = np.ldexp(rng.standard_normal((5, 40)), rng.integers(-60, 60, (5, 40))).astype(np.float32).astype(np.float64)
    b = np.ldexp(rng.standard_normal((40, 6)), rng.integers(-60, 60, (40, 6))).astype(np.float32).astype(np.float64)
    b[:, 0] = a[0, :] * 0  # an exact zero column
    c, slow = round_exact_sum([a], [b], [(0, 0)])
    for i in range(5):
        for j in range(6):
            want = rn(sum(Fraction(x) * Fraction(y) for x, y in zip(a[i], b[:, j])), "fp32")
            assert c[i, j] == np.float32(float(want))
