"""runtime/mixpert/segments.py and runtime/mixpert/pair_blocks.py: the packer and the dgemm planner."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixjit.runtime.mixpert.pair_blocks import SPAN_RESERVE, k_bits, plan_blocks, range_bits
from mixjit.runtime.mixpert.segments import (
    BALANCED,
    ROUND_NEAREST,
    ROUND_TRUNC,
    ZERO_EXP,
    digit_range,
    max_aligned,
    pack_groups,
    segment_digits,
    shift_magnitude,
    split_element,
)
from mixjit.runtime.schemes.mixpert import LEVELS, significance_pairs


def _bits(x: float) -> np.uint64:
    return np.array([x], dtype=np.float64).view(np.uint64)[0]


def _split(x: float, w: int = 20, emax: int = 1023) -> tuple[int, int]:
    return split_element(_bits(x), w, emax)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != 0), st.sampled_from([11, 20, 27, 48, 55, 62]))
def test_split_is_round_to_nearest_even_with_carry(x, w):
    m, e = _split(x, w)
    assert 2 ** (w - 1) <= abs(m) < 2**w
    assert (m < 0) == (x < 0)
    approx = Fraction(m) * Fraction(2) ** (e - w + 1)
    ulp = Fraction(2) ** (e - w + 1)
    err = abs(approx - Fraction(x))
    if err > ulp / 2:  # only a carry past float64's largest exponent truncates instead
        assert e == 1023 and abs(m) == 2**w - 1 and abs(approx) < abs(Fraction(x)) < abs(approx) + ulp
        return
    if err == ulp / 2 and err != 0:  # a tie: the kept mantissa is even
        assert m % 2 == 0 or abs(m) == 2 ** (w - 1)


def test_split_carry_out_of_top_segment():
    x = float(np.array([0x3FFFFFFF], dtype=np.uint32).view(np.float32)[0])  # 1.99999988
    assert _split(x) == (2**19, 1)  # rounds up to 2.0: M = 2^19, exponent + 1
    assert _split(-x) == (-(2**19), 1)
    assert _split(1.0) == (2**19, 0)
    assert _split(2.0**-149) == (2**19, -149)  # float32 subnormal, normalised exactly
    assert _split(5e-324, 55) == (2**54, -1074)  # float64 subnormal


@pytest.mark.parametrize("w", [11, 24, 53, 62])
def test_split_normalises_subnormals_of_every_bit_length(w):
    """split_element reads a subnormal's bit length off float64(frac): check it at both
    ends of every length (frac = 2^j and 2^(j+1) - 1) against exact arithmetic."""
    for j in range(52):
        for frac in (1 << j, (1 << (j + 1)) - 1):
            x = float(np.array([frac], dtype=np.uint64).view(np.float64)[0])
            m, e = split_element(np.uint64(frac), w, 1023)
            assert e == -1074 + j + (1 if m == 2 ** (w - 1) and frac != 1 << j else 0)
            assert 2 ** (w - 1) <= m < 2**w
            err = abs(Fraction(m) * Fraction(2) ** (e - w + 1) - Fraction(x))
            assert err <= Fraction(2) ** (e - w)  # within half an ulp of the kept width


def test_split_carry_past_the_largest_exponent_truncates():
    f32max = float(np.finfo(np.float32).max)  # (2 - 2^-23) * 2^127: RN at 21 bits carries
    assert _split(f32max, 21, 127) == (2**21 - 1, 127)
    assert _split(-f32max, 21, 127) == (-(2**21 - 1), 127)
    assert _split(f32max, 21, 1023) == (2**20, 128)  # in float64's range the carry stays
    below = float(np.array([0x7EFFFFFF], dtype=np.uint32).view(np.float32)[0])  # top of 2^126's binade
    assert _split(below, 21, 127) == (2**20, 127)  # still carries: 2^127 is finite
    assert _split(np.finfo(np.float64).max, 49, 1023) == (2**49 - 1, 1023)
    assert _split(np.finfo(np.float64).max, 55, 1023) == ((2**53 - 1) << 2, 1023)  # w >= 53: exact


def test_shift_rounds_ties_to_even_on_the_magnitude():
    assert shift_magnitude(0b1011, 1, ROUND_TRUNC) == 0b101
    assert shift_magnitude(0b1011, 1, ROUND_NEAREST) == 0b110  # 5.5 -> 6
    assert shift_magnitude(0b1001, 1, ROUND_NEAREST) == 0b100  # 4.5 -> 4
    assert shift_magnitude(-0b1011, 1, ROUND_NEAREST) == -0b110
    assert shift_magnitude(-0b1011, 2, ROUND_TRUNC) == -0b10
    assert shift_magnitude(2**19, 20, ROUND_NEAREST) == 0  # exactly half: tie to even 0
    assert shift_magnitude(2**19 + 1, 20, ROUND_NEAREST) == 1
    assert shift_magnitude(2**61, 70, ROUND_NEAREST) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**20) + 1, 2**20 - 1))
def test_segments_are_sign_magnitude_int8_and_reconstruct(q):
    s = segment_digits(np.array([q], dtype=np.int64), 3)[:, 0].astype(int)
    assert abs(s[0]) < 64 and abs(s[1]) < 128 and abs(s[2]) < 128
    assert all(d == 0 or (d < 0) == (q < 0) for d in s)
    assert s[0] * 2**14 + s[1] * 2**7 + s[2] == q
    assert digit_range(q, 0, 1, 3, 0) == s[0] * 2**7 + s[1]
    assert digit_range(q, 1, 2, 3, 0) == s[1] * 2**7 + s[2]
    assert digit_range(q, 2, 2, 3, 0) == s[2]


@settings(max_examples=300, deadline=None)
@given(st.integers(-128 * 65793, 127 * 65793), st.sampled_from([None, 0, 1, 2]))
def test_balanced_digits_are_int8_and_reconstruct(q, edge):
    if edge is not None:  # the ends of the range and the +-128 / +127 digit edges
        q = [-128 * 65793, 127 * 65793, 127 * 65536 + 128, -128 * 256][edge]
    d = segment_digits(np.array([q], dtype=np.int64), 3, BALANCED)[:, 0].astype(int)
    assert all(-128 <= x <= 127 for x in d)
    assert d[0] * 2**16 + d[1] * 2**8 + d[2] == q
    assert digit_range(q, 0, 1, 3, BALANCED) == d[0] * 2**8 + d[1]
    assert digit_range(q, 1, 2, 3, BALANCED) == d[1] * 2**8 + d[2]
    assert digit_range(q, 0, 2, 3, BALANCED) == q
    assert digit_range(q, 2, 2, 3, BALANCED) == d[2]
    assert max_aligned(3, BALANCED) == 127 * 65793 < 2**23


def test_pack_groups_shares_the_group_max_exponent():
    x = np.array([[1.0, 0.25, 0.0, -3.0], [0.5, np.inf, 2.0**-30, 0.0]], dtype=np.float32)
    q, gexp, nonzero, shifted, bad = pack_groups(x, 2, 2, 20, ROUND_NEAREST, 8, 2**62 - 1, 127)
    # k-tile 0 (cols 0-1): exponents 0, -2, -1 -> E = 0 (inf counts as 0)
    # k-tile 1 (cols 2-3): exponents of -3.0 (1) and 2^-30 (-30) -> E = 1
    assert gexp.tolist() == [[0, 1], [0, 1]]
    assert q[0].tolist() == [2**19, 2**17, 0, -3 * 2**18]
    assert q[1].tolist() == [2**18, 0, 0, 0]  # 2^-30 shifted by 31 bits: rounds to 0
    assert nonzero.tolist() == [[2, 1], [1, 1]]
    assert shifted.tolist() == [[0, 0], [0, 1]]
    assert bad.tolist() == [False, True]
    _, g, _, _, _ = pack_groups(np.zeros((1, 3), np.float32), 1, 2, 20, ROUND_NEAREST, 8, 2**62 - 1, 127)
    assert (g == ZERO_EXP).all()


@pytest.mark.parametrize("level,dgemms", [("I", 1), ("II", 1), ("III", 1), ("IV", 2), ("full", 2)])
def test_levels_collapse_into_few_exact_dgemms(level, dgemms):
    blocks = plan_blocks(LEVELS[level], 3, 7, 2048)  # the paper's 7+7+7 layout
    assert len(blocks) == dgemms
    _check_cover(blocks, LEVELS[level], 3, 7, 2048)


@pytest.mark.parametrize("segments,limit,k", [(8, 7, 2048), (9, 8, 64), (4, 3, 10**6), (3, 4, 2**20)])
def test_significance_pairs_are_covered_once_within_budget(segments, limit, k):
    pairs = significance_pairs(segments, limit)
    _check_cover(plan_blocks(pairs, segments, 6, k), pairs, segments, 6, k)


@pytest.mark.parametrize("level", ["IV", "full"])
def test_balanced_blocks_use_radix_256(level):
    blocks = plan_blocks(LEVELS[level], 3, 7, 1024, BALANCED)
    covered = [(i, j) for b in blocks for i in range(b.i0, b.i1 + 1) for j in range(b.j0, b.j1 + 1)]
    assert sorted(covered) == sorted(LEVELS[level])
    for b in blocks:
        assert b.shift == 8 * (2 - b.i1) + 8 * (2 - b.j1)
        assert b.bits + k_bits(1024) <= 53 - SPAN_RESERVE


def _check_cover(blocks, pairs, segments, seg0_bits, k):
    covered = [(i, j) for b in blocks for i in range(b.i0, b.i1 + 1) for j in range(b.j0, b.j1 + 1)]
    assert sorted(covered) == sorted(pairs)  # every kept pair exactly once, nothing else
    for b in blocks:
        assert b.bits == range_bits(b.i0, b.i1, seg0_bits) + range_bits(b.j0, b.j1, seg0_bits)
        assert b.bits + k_bits(k) <= 53 - SPAN_RESERVE
        assert b.shift == 7 * (segments - 1 - b.i1) + 7 * (segments - 1 - b.j1)


def test_too_long_k_is_refused():
    with pytest.raises(ValueError, match="too long"):
        plan_blocks(LEVELS["IV"], 3, 6, 2**40)
