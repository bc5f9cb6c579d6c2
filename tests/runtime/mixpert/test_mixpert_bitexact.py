"""mixpert / mixpert-fp64 executor == scalar reference, bit for bit (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference_mixpert import exact_rounded, gamma_bound_excess
from reference_mixpert import mixpert as reference

from mixjit.runtime.schemes import get_scheme

MP = get_scheme("mixpert")
MP64 = get_scheme("mixpert-fp64")

SMALL_TILES = ["tile=2x4x3", "tile=3x5x2", ""]
FP32_CONFIGS = [
    "level=I",
    "level=II",
    "level=III",
    "level=IV",
    "level=full",
    "level=IV,rounding=trunc",
    "level=IV,align=row",
    "level=III,align=row,rounding=trunc",
    "level=IV,fallback=2",
    "level=IV,align=row,fallback=1",
    "level=IV,seg0_bits=6",
    "segments=4,pairs=sig3",
    "segments=2,pairs=00.01.11",
    "level=IV,fallback=off",
    "level=IV,digits=balanced",
    "level=IV,digits=balanced,align=row",
    "level=full,digits=balanced,rounding=trunc",
    "level=I,digits=balanced,seg0_bits=5",
    "segments=2,pairs=00.01.10,digits=balanced",
    # wide (certified) fast path: one rectangle, sides cut above 53 bits, a staircase
    "segments=4,pairs=sig6,align=row",
    "segments=8,pairs=sig14,align=row",
    "segments=4,pairs=sig6,digits=balanced",
    "segments=4,pairs=sig3,align=row",
]
FP64_CONFIGS = [
    "",
    "segments=9,pairs=slices3sig2",
    "segments=8,pairs=sig14",
    "segments=7,pairs=sig6",
    "segments=9,pairs=sig8,align=tile",
    "segments=7,pairs=sig6,rounding=trunc",
    "segments=7,pairs=sig6,digits=balanced",
]

# float32 bit patterns worth hitting: carries out of the top segment (mantissa all
# ones), exact powers of two, the largest finite value, subnormals, +-0, inf, NaN
_SPECIAL32 = [
    0x3FFFFFFF, 0xBFFFFFFF, 0x3F7FFFF8, 0x3F7FFFFF, 0x3F800000, 0x40000000, 0x3F000008,
    0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x807FFFFF, 0x00400000, 0x00000000, 0x80000000,
    0x7F800000, 0xFF800000, 0x7FC00000, 0x3F800008, 0x3F800018,
]


def _bits32(u: int) -> np.float32:
    return np.array([u], dtype=np.uint32).view(np.float32)[0]


def _elements32(nonfinite: bool):
    wide = st.builds(
        lambda s, m, e: np.float32(s * m * 2.0**e),
        st.sampled_from([-1.0, 1.0]),
        st.floats(1.0, 2.0, width=32, exclude_max=True),
        st.integers(-149, 127),
    )
    special = st.sampled_from([u for u in _SPECIAL32 if nonfinite or (u & 0x7F800000) != 0x7F800000]).map(_bits32)
    return st.one_of(st.floats(-1, 1, width=32), wide, special, st.just(np.float32(0.0)))


@st.composite
def _case32(draw, nonfinite: bool):
    m, n = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    k = draw(st.one_of(st.integers(1, 13), st.integers(30, 70)))  # 70: three default k-tiles
    el = _elements32(nonfinite)
    a = draw(hnp.arrays(np.float32, (m, k), elements=el))
    b = draw(hnp.arrays(np.float32, (k, n), elements=el))
    return a, b


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Elementwise: identical bit patterns (float32 or float64, never cast)."""
    assert got.dtype == want.dtype
    return got.view(np.uint8).reshape(got.shape + (-1,)).__eq__(want.view(np.uint8).reshape(want.shape + (-1,))).all(-1)


def _check(scheme, a, b, label):
    """Bit for bit against the reference. Float64 domain: an output is RN64(X) or,
    where the executor recomputed it (step 6), RN64 of the exact product; no more
    of those than the stats count, and every output meets native dgemm's bound."""
    cfg = scheme.parse_config(label)
    got, stats = scheme.run_with_stats(a, b, cfg)
    want = reference(a, b, cfg)
    if cfg.domain == "fp32":
        assert _same_bits(got, want).all(), f"config {label}: {got} != {want}"
        return stats
    finite = np.isfinite(a).all(axis=1)[:, None] & np.isfinite(b).all(axis=0)[None, :]
    same = _same_bits(got, want)
    exact = exact_rounded(np.where(np.isfinite(a), a, 0.0), np.where(np.isfinite(b), b, 0.0), "fp64")
    recomputed = ~same & finite & _same_bits(got, exact)
    assert (same | recomputed).all(), f"config {label}: {got} is neither RN64(X) {want} nor RN64(AB) {exact}"
    assert recomputed.sum() <= stats.fallbacks, (label, recomputed.sum(), stats.fallbacks)
    rows, cols = np.nonzero(finite)
    sub = got[np.ix_(sorted(set(rows)), sorted(set(cols)))] if rows.size else got[:0, :0]
    if rows.size:
        ar = a[sorted(set(rows))]
        bc = b[:, sorted(set(cols))]
        assert gamma_bound_excess(sub, ar, bc) == [], f"config {label}: native bound broken"
    return stats


_SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(case=_case32(nonfinite=False), cfg=st.sampled_from(FP32_CONFIGS), tile=st.sampled_from(SMALL_TILES))
def test_fp32_configs_match_reference(case, cfg, tile):
    a, b = case
    _check(MP, a, b, ",".join(filter(None, [cfg, tile])))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_case32(nonfinite=True), cfg=st.sampled_from(["level=IV,tile=2x4x3", "level=I,align=row,tile=3x5x2"]))
def test_nonfinite_inputs_match_reference(case, cfg):
    a, b = case
    _check(MP, a, b, cfg)


@st.composite
def _case64(draw):
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    k = draw(st.one_of(st.integers(1, 11), st.integers(30, 70)))
    wide = st.builds(
        lambda s, m_, e: s * m_ * 2.0**e,
        st.sampled_from([-1.0, 1.0]),
        st.floats(1.0, 2.0, exclude_max=True),
        st.integers(-220, 220),
    )
    # spans along K stay below the executor's 900-binade limit (tested apart)
    special = st.sampled_from([0.0, 1.0, -2.0, 1.0 - 2.0**-53, 2.0 - 2.0**-52, 2.0**-200 * 1.5, 0.5 + 2.0**-53,
                               1.0 + 2.0**-52, 5e-324, -3 * 5e-324, 2.0**-1022, 1.5 * 2.0**-1060])
    el = st.one_of(st.floats(-1, 1).map(lambda v: v if abs(v) > 2.0**-300 else 0.0), wide, special)
    a = draw(hnp.arrays(np.float64, (m, k), elements=el))
    b = draw(hnp.arrays(np.float64, (k, n), elements=el))
    return a, b


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_case64(), cfg=st.sampled_from(FP64_CONFIGS), tile=st.sampled_from(["tile=2x4x3", "tile=3x5x2", ""]))
def test_fp64_configs_match_reference(case, cfg, tile):
    a, b = case
    try:
        _check(MP64, a, b, ",".join(filter(None, [cfg, tile])))
    except ValueError as err:  # subnormals next to 2^220: spans past 900 binades are refused
        assert "binades along K" in str(err)


@pytest.mark.parametrize("align", ["tile", "row"])
def test_balanced_top_digit_carry_bumps_the_group_exponent(align):
    # 1.9999 has M = 2^23 - 2^... > 127*R (the top balanced digit would round to
    # +128): its group takes E + 1; a group whose largest element is negative
    # (-1.9999) fits [-128*R, ...] and keeps E
    a = np.array([[1.9999, 0.75, -0.3], [-1.9999, 0.5, 1.25]], dtype=np.float32)
    b = np.array([[1.0, -2.0], [0.5, 1.5], [-1.0, 0.25]], dtype=np.float32)
    label = f"level=IV,digits=balanced,align={align},tile=1x3x1"
    cfg = MP.parse_config(label)
    pa = MP.prepare_a(a, cfg)
    assert pa.gexp[:, 0].tolist() == [1, 0]
    _check(MP, a, b, label)


def test_float64_inputs_to_mixpert_are_rounded_to_fp32_first():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 40))
    b = rng.standard_normal((40, 5))
    a[0, 0] = 1e39  # overflows float32: the non-finite rule applies to row 0
    got = MP.run(a, b, MP.parse_config("level=IV"))
    assert got.dtype == np.float64
    want = reference(a, b, MP.parse_config("level=IV"))
    np.testing.assert_array_equal(got, want.astype(np.float64))
    assert np.isinf(got[0]).all() or np.isnan(got[0]).any()


@pytest.mark.parametrize("side", ["A", "B"])
@pytest.mark.parametrize("label,wide", [("level=IV", False), ("level=full,align=row", True),
                                        ("segments=4,pairs=sig3,rounding=trunc", False),
                                        ("segments=4,pairs=sig6,align=row", True)])
def test_wide_span_takes_exact_path_and_matches(label, wide, side):
    # each row of A scaled by a different power of two per k-tile: spans of 65
    # binades along K, beyond the exact fast path's bound, so rows go the exact
    # path; configs whose pairs take fewer wide (certified) blocks than exact ones
    # keep them on the fast path, whose error bound holds for any span
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (20, 96)).astype(np.float32)
    a *= (np.float32(2.0) ** np.array([0.0, -40.0, 25.0], dtype=np.float32)).repeat(32)[None, :]
    b = rng.uniform(-1, 1, (96, 11)).astype(np.float32)
    if side == "B":
        a, b = np.ascontiguousarray(b.T), np.ascontiguousarray(a.T)
    cfg = MP.parse_config(label + ",fallback=off")
    c, stats = MP.run_with_stats(a, b, cfg)
    assert (stats.extra["exact_path_rows" if side == "A" else "exact_path_cols"] == 0) == wide
    np.testing.assert_array_equal(c, reference(a, b, cfg))


def test_fp64_subnormal_inputs_match_reference():
    # subnormal A times B near 2^1000: normal, nonzero results, so an input flushed
    # to zero shows (not zeros compared with zeros)
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (6, 40)) * 2.0**-1060  # subnormal (2^-1074 .. 2^-1060)
    a[0, :3] = [5e-324, -5e-324, 2.0**-1022]
    a[1, :] = 5e-324 * rng.integers(1, 9, 40)  # a row of the smallest subnormals only
    b = rng.uniform(-1, 1, (40, 4)) * 2.0**1000
    for label in ("", "segments=8,pairs=sig14", "segments=7,pairs=sig6,align=tile,tile=2x4x3"):
        got = MP64.run(a, b, MP64.parse_config(label))
        assert (np.abs(got) > 2.0**-100).all(), label
        _check(MP64, a, b, label)


_ALL64 = "segments=8,pairs=sig14"  # every pair kept: exact inputs give outputs the check never doubts


@pytest.mark.parametrize("label", [f"{_ALL64},tile=1x1x1", "segments=9,pairs=sig16,tile=1x2x1"])
def test_fp64_subnormal_result_is_rounded_once(label):
    # X = 2^-1075 + 2^-1135: half the smallest subnormal plus a little, so RN64 is
    # 2^-1074; rounding RN64(X) (= 2^-1075 at its own scale) again would tie to 0.
    # tk = 1: two k-tiles 60 binades apart (the exact path); W = 62 and tk = 2: one
    # group that holds 2^-535 exactly (the fast path's epilogue)
    a = np.array([[2.0**-600, 2.0**-600], [-(2.0**-600), -(2.0**-600)]])
    b = np.array([[2.0**-475], [2.0**-535]])
    got, stats = MP64.run_with_stats(a, b, MP64.parse_config(label))
    assert stats.fallbacks == 0
    assert got[:, 0].tolist() == [5e-324, -5e-324]
    _check(MP64, a, b, label)


@pytest.mark.parametrize("label,dtype", [("level=IV,tile=1x4x1", np.float32), ("level=IV,align=row", np.float32),
                                         (f"{_ALL64},tile=1x4x1", np.float64), (_ALL64, np.float64)])
def test_alignment_ties_round_to_even(label, dtype):
    # elements exactly half-way between two aligned integers, with even and odd
    # floors, under group maxima 1, 2, 4, 8 (shifts d = 1..4): RNE, not away from 0
    scheme = MP if dtype == np.float32 else MP64
    w = 21 if dtype == np.float32 else 55
    rows = []
    for top in (1.0, 2.0, 4.0, 8.0):
        for p in range(w - 1, w + 4):
            for odd in (0.0, 1.0):
                x = 0.5 + odd * 2.0 ** (-p + 1) + 2.0**-p
                if dtype(x) != x:
                    continue
                rows.append([top, x, -x] + [0.5] * 61)
    a = np.array(rows, dtype=dtype)
    b = np.zeros((64, 3), dtype=dtype)
    b[1, 0] = b[2, 1] = 1.0
    b[3:, 2] = 1.0
    b[1, 2] = 1.0
    got, stats = scheme.run_with_stats(a, b, scheme.parse_config(label))
    if dtype == np.float64:
        assert stats.fallbacks == 0
    _check(scheme, a, b, label)


@pytest.mark.parametrize("far,count", [(3, 1), (2, 2)])
def test_fallback_trigger_boundary(far, count):
    # a 1x8 tile with exactly 1/8 of its elements shifted by more than F = 2 bits
    # (far=3, count=1: 8*1 > 8 is false: no fallback), and one with two elements
    # shifted by exactly F (d > F is false: no fallback); the small elements carry
    # low bits that the INT8 path and the tf32x3 path round differently
    big = np.float32(1.0 + 2.0**-20 + 2.0**-23)
    small = np.float32(2.0**-far * (1.0 + 2.0**-22 + 2.0**-23))
    a = np.full((1, 8), big, dtype=np.float32)
    a[0, :count] = small
    b = np.ones((8, 1), dtype=np.float32)
    b[count:, 0] = 0.0
    label = "level=full,fallback=2,tile=1x8x1"
    stats = _check(MP, a, b, label)
    assert stats.fallbacks == 0
    a[0, :2] = np.float32(2.0**-3 * (1.0 + 2.0**-22 + 2.0**-23))  # two shifted by 3 > F: 16 > 8, falls back
    b[:2, 0] = 1.0
    stats = _check(MP, a, b, label)
    assert stats.fallbacks >= 1


def test_span_beyond_float64_range_is_refused():
    a = np.array([[1.0, 2.0**-1000]])
    b = np.array([[1.0], [1.0]])
    with pytest.raises(ValueError, match="binades along K"):
        MP64.run(a, b, MP64.parse_config("tile=1x1x1"))



def test_round32_is_rn32_of_hi_plus_its_residual():
    # round32's shortcut (hi not on a float32 midpoint: RN32(hi) is final) and its
    # midpoint repair, against exact rational rounding, from subnormals to overflow
    from fractions import Fraction

    from reference_mixpert import rn

    from mixjit.runtime.numerics.exactsum import round32

    rng = np.random.default_rng(13)
    cs = [np.float32(rng.uniform(0.5, 1.0) * 2.0 ** int(e)) for e in rng.integers(-150, 129, 200)]
    cs += [np.float32(2.0**-149), np.float32(2.0**-126), np.float32(1.0), np.finfo(np.float32).max]
    for c in cs:
        ulp = float(np.spacing(c)) if c < np.finfo(np.float32).max else 2.0**104
        for off in (0.0, 0.25, 0.5, 0.75, 0.5 + 2.0**-20, -0.25, -0.5):
            for sign in (1.0, -1.0):
                hi = sign * (float(c) + off * ulp)
                for lo in (-1e-300, 0.0, 1e-300):
                    exact = Fraction(hi) + (Fraction(1, 2**1100) if lo > 0 else -Fraction(1, 2**1100) if lo < 0 else 0)
                    want = np.float32(rn(exact, "fp32"))
                    got = np.float32(round32(hi, lo))
                    assert got.view(np.uint32) == want.view(np.uint32), (hi, lo)


def _wide32(rng, shape):
    """Entries ±2^U(-20, 20): every tile of such data falls back (its spread is wide)."""
    return (rng.choice([-1.0, 1.0], shape) * 2.0 ** rng.uniform(-20, 20, shape)).astype(np.float32)


@pytest.mark.parametrize("label,k", [("level=IV", 64), ("level=IV,align=row,tile=4x8x4", 80)])
def test_wide_range_data_is_certified_and_bit_exact(label, k):
    # wide-range data with some tiles that do not fall back (mixed rows and columns:
    # INT8 tile products and tf32x3 ones in one output), and one column of B whose
    # outputs cancel to exactly 0: Ziv's test cannot certify those, they must be
    # summed exactly. tile=4x8x4 makes the float64 GEMM more than one 256-chunk.
    rng = np.random.default_rng(21)
    m, n = 24, 12
    a = _wide32(rng, (m, k))
    b = _wide32(rng, (k, n))
    a[:16, :32] = rng.uniform(-1, 1, (16, 32))
    b[:, :8] = rng.uniform(-1, 1, (k, 8))
    a[:, 1::2] = -a[:, 0::2]
    b[1::2, 8] = b[0::2, 8]
    cfg = MP.parse_config(label)
    c, stats = MP.run_with_stats(a, b, cfg)
    assert 0 < stats.fallbacks < stats.units
    assert stats.extra["certified_elements"] == m * n  # every row of A touches a fallback tile
    slow = stats.extra["slow_path_elements"]
    assert m <= slow <= m + m * n // 10  # column 8, and few others
    assert (c[:, 8].view(np.uint32) == 0).all()  # +0
    np.testing.assert_array_equal(c.view(np.uint32), reference(a, b, cfg).view(np.uint32))


_F32MAX = np.finfo(np.float32).max
# the largest float32 whose split at W = 21 still rounds up without overflow: the top
# of 2^126's binade carries to 2^127
_F32_CARRY_OK = _bits32(0x7EFFFFFF)


@pytest.mark.parametrize("x", [_F32MAX, -_F32MAX, _F32_CARRY_OK])
@pytest.mark.parametrize("label", ["", "level=IV", "level=IV,digits=balanced", "level=full,align=row"])
def test_largest_finite_values_stay_finite(x, label):
    # RN of FLT_MAX's significand at the kept bit would carry to 2^128 (inf); the
    # split truncates there instead (docs/numerics.md, mixpert step 1)
    a = np.array([[x]], dtype=np.float32)
    b = np.array([[1.0]], dtype=np.float32)
    got = MP.run(a, b, MP.parse_config(label))
    assert np.isfinite(got).all()
    _check(MP, a, b, label)
    big = np.full((16, 64), _F32MAX, dtype=np.float32)
    got = MP.run(big, np.full((64, 1), 1 / 64, dtype=np.float32), MP.parse_config(label))
    assert np.isfinite(got).all()
    _check(MP, big, np.full((64, 1), 1 / 64, dtype=np.float32), label)


@pytest.mark.parametrize("label", ["segments=7,pairs=sig6", "segments=7,pairs=sig6,digits=balanced"])
def test_fp64_largest_finite_value_stays_finite(label):
    dmax = np.finfo(np.float64).max
    a = np.array([[dmax], [-dmax]])
    b = np.array([[1.0]])
    got = MP64.run(a, b, MP64.parse_config(label))
    assert np.isfinite(got).all()
    _check(MP64, a, b, label)
