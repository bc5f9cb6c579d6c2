"""The MixPert executors never lose an element silently (docs/numerics.md, step 6).

mixpert-fp64: every output meets native dgemm's componentwise bound
``|C - AB| <= gamma_K (|A||B|) + 2^-1075`` or is recomputed exactly and counted;
mixpert: outputs of a row / column holding an element aligned to 0 are recomputed
exactly. Checked against exact rational arithmetic (tests/runtime/reference_mixpert.py)
on adversarial exponent spreads inside one k-tile and across k-tiles.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference_mixpert import exact_rounded, gamma_bound_excess, rn
from test_mixpert_bitexact import _check

from mixjit.runtime.numerics.exactsum import exact_dot_round, exact_dot_scratch
from mixjit.runtime.schemes import get_scheme

MP = get_scheme("mixpert")
MP64 = get_scheme("mixpert-fp64")

FP64_LABELS = ["", "pairs=sig7", "segments=7,pairs=sig6,tile=2x4x3", "segments=8,pairs=sig14,tile=3x5x2",
               "segments=9,pairs=slices3sig2,tile=2x3x2"]


def test_issue_example_is_recomputed_and_counted():
    a = np.array([[1.0, 1e-20]])
    b = np.array([[1e-20], [1.0]])
    for label in FP64_LABELS:
        c, stats = MP64.run_with_stats(a, b, MP64.parse_config(label))
        assert c[0, 0] == 2e-20, label
        assert stats.fallbacks == 1 and stats.fallback_unit == "element"
        assert "recomputed exactly" in stats.fallback_reason


def test_fp32_element_aligned_to_zero_is_recomputed():
    # a 16x32 tile with one element 2^-60 below the rest: 1 of 512 shifted, no tile
    # fallback (1/8 rule), the element aligns to 0; its output must not be 0
    a = np.ones((16, 32), dtype=np.float32)
    a[0, 1] = np.float32(1e-20)
    a[0, 0] = 0.0
    b = np.zeros((32, 8), dtype=np.float32)
    b[1, 0] = 1.0
    c, stats = MP.run_with_stats(a, b, MP.parse_config("level=IV"))
    assert stats.fallbacks == 0
    assert c[0, 0] == np.float32(1e-20)
    assert stats.extra["recomputed_elements"] == 8  # the row of A touches all 8 outputs
    _check(MP, a, b, "level=IV")


def _spread64(draw, shape, base):
    """Float64 entries at exponent ``base`` with adversarial outliers: far below
    (shifted out of their group), just at the width, subnormal, or near overflow."""
    offsets = st.one_of(
        st.just(0), st.integers(-3, 3), st.integers(-70, -40), st.integers(-130, -50), st.sampled_from([-53, -55, -62])
    )
    el = st.builds(
        lambda s, m, off: s * m * 2.0 ** max(min(base + off, 1000), -1074),
        st.sampled_from([-1.0, 1.0]),
        st.one_of(st.floats(1.0, 2.0, exclude_max=True), st.sampled_from([1.0, 1.5, 1.0 + 2.0**-52])),
        offsets,
    )
    return draw(hnp.arrays(np.float64, shape, elements=st.one_of(el, st.just(0.0))))


@st.composite
def _adversarial64(draw):
    m, k, n = draw(st.integers(1, 4)), draw(st.integers(1, 40)), draw(st.integers(1, 4))
    base = draw(st.sampled_from([0, -1000, 1020, -300]))
    return _spread64(draw, (m, k), base), _spread64(draw, (k, n), -base // 2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_adversarial64(), label=st.sampled_from(FP64_LABELS))
def test_fp64_output_meets_native_bound_or_is_recomputed(case, label):
    # _check: each output is RN64(X) or RN64(AB) (counted), and meets gamma_K |A||B|
    a, b = case
    try:
        _check(MP64, a, b, label)
    except ValueError as err:  # spans beyond float64's range are refused, never computed wrongly
        assert "binades along K" in str(err)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_adversarial64())
def test_fp64_spread_across_k_tiles(case):
    # tk = 4: K of up to 40 spans up to 10 k-tiles, each with its own exponent
    a, b = case
    try:
        _check(MP64, a, b, "tile=1x4x1")
    except ValueError as err:
        assert "binades along K" in str(err)


def test_fp64_uniform_data_is_not_recomputed():
    # the check is not vacuous: ordinary data keeps the fast path
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (40, 200))
    b = rng.standard_normal((200, 30))
    c, stats = MP64.run_with_stats(a, b, MP64.default_config(np.float64))
    assert stats.fallbacks == 0
    assert gamma_bound_excess(c[:5, :5], a[:5], b[:, :5]) == []


def test_exact_dot_round_matches_rational_rounding():
    rng = np.random.default_rng(8)
    acc = exact_dot_scratch()
    from fractions import Fraction

    for trial in range(300):
        k = int(rng.integers(1, 6))
        x = rng.standard_normal(k) * 2.0 ** rng.integers(-1100, 1000, k).astype(float)
        y = rng.standard_normal(k) * 2.0 ** rng.integers(-1100, 1000, k).astype(float)
        if trial % 3 == 0:  # exact cancellation down to subnormal results
            x = np.array([1.0, -1.0, 2.0**-600])
            y = np.array([2.0**-500, 2.0**-500, 2.0**-474 * (1 + 2.0 * trial)])
        exact = sum(Fraction(p) * Fraction(q) for p, q in zip(x, y))
        for to32, fmt in ((False, "fp64"), (True, "fp32")):
            got = exact_dot_round(x, y, acc, to32)
            want = rn(exact, fmt)
            assert np.float64(got).view(np.uint64) == np.float64(want).view(np.uint64), (x, y, fmt)


def test_exact_rounded_reference_agrees():
    a = np.array([[1.0, 1e-20, -1.0]])
    b = np.array([[1e-20], [1.0], [1e-20]])
    assert exact_rounded(a, b, "fp64")[0, 0] == 1e-20
