"""ozaki2 executor == scalar reference, bit for bit (hypothesis and fixed cases)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference_ozaki2 import GEMMUL8_MODULI, accurate_shifts, crt, modulus_product, scaled, shift
from reference_ozaki2 import ozaki2 as reference

from mixjit.runtime.ozaki2 import executor as ex
from mixjit.runtime.schemes import get_scheme

OZ = get_scheme("ozaki2")
F32MAX = float(np.finfo(np.float32).max)


def _check(a: np.ndarray, b: np.ndarray, label: str) -> np.ndarray:
    cfg = OZ.parse_config(label)
    got = OZ.run(a, b, cfg)
    want = reference(a, b, cfg.moduli, cfg.mode)
    assert got.dtype == a.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=f"config {label}")
    return got


def _f32(u: int) -> float:
    return float(np.array([u], dtype=np.uint32).view(np.float32)[0])


# tie-prone values (1 + j ulp, odd multiples of half an ulp), powers of two,
# subnormals, the largest finite value, zeros
_SPECIAL32 = [1.0, -1.0, 1.0 + 2.0**-23, 1.0 + 3 * 2.0**-23, 2.0**-24, -(2.0**-24), 3 * 2.0**-24, 0.5,
              2.0 - 2.0**-23, _f32(0x00000001), _f32(0x807FFFFF), _f32(0x00400000), F32MAX, -F32MAX, 0.0]
_NONFINITE = [math.inf, -math.inf, math.nan]


def _elements32(nonfinite: bool):
    wide = st.builds(
        lambda s, m, e: float(np.float32(s * m * 2.0**e)),
        st.sampled_from([-1.0, 1.0]),
        st.floats(1.0, 2.0, width=32, exclude_max=True),
        st.integers(-149, 127),
    )
    special = st.sampled_from(_SPECIAL32 + (_NONFINITE if nonfinite else []))
    return st.one_of(st.floats(-1, 1, width=32), wide, special, special)


def _elements64():
    wide = st.builds(
        lambda s, m, e: s * m * 2.0**e,
        st.sampled_from([-1.0, 1.0]),
        st.floats(1.0, 2.0, exclude_max=True),
        st.integers(-1074, 1023),
    )
    special = st.sampled_from([1.0, -1.0, 1.0 + 2.0**-52, 2.0**-53, 3 * 2.0**-53, 2.0 - 2.0**-52, 5e-324,
                               -2.0**-1022 * 0.75, 1.7976931348623157e308, -1.7976931348623157e308, 0.0])
    return st.one_of(st.floats(-1, 1), wide, special, special)


@st.composite
def _case(draw, dtype, elements, max_k: int = 13):
    m, k, n = draw(st.integers(1, 6)), draw(st.integers(1, max_k)), draw(st.integers(1, 6))
    a = draw(hnp.arrays(dtype, (m, k), elements=elements))
    b = draw(hnp.arrays(dtype, (k, n), elements=elements))
    return a, b


_SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


_MODES = st.sampled_from(["", ",mode=accurate"])


@_SETTINGS
@given(case=_case(np.float32, _elements32(False)), moduli=st.integers(1, 20), mode=_MODES,
       kblock=st.sampled_from([0, 1, 3, 4]))
def test_fp32_matches_reference(case, moduli, mode, kblock):
    a, b = case
    _check(a, b, f"moduli={moduli}{mode}" + (f",kblock={kblock}" if kblock else ""))


@_SETTINGS
@given(case=_case(np.float64, _elements64()), moduli=st.integers(1, 20), mode=_MODES,
       kblock=st.sampled_from([0, 1, 5]))
def test_fp64_matches_reference(case, moduli, mode, kblock):
    a, b = case
    _check(a, b, f"moduli={moduli}{mode}" + (f",kblock={kblock}" if kblock else ""))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_case(np.float32, _elements32(True)), moduli=st.sampled_from([3, 8, 20]), mode=_MODES)
def test_nonfinite_inputs_match_reference(case, moduli, mode):
    a, b = case
    _check(a, b, f"moduli={moduli}{mode}")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_case(np.float64, st.floats(-4, 4), max_k=40), kblock=st.integers(1, 9))
def test_k_blocks_never_change_the_result(case, kblock):
    a, b = case
    whole = OZ.run(a, b, OZ.parse_config("moduli=16"))
    c, stats = OZ.run_with_stats(a, b, OZ.parse_config(f"moduli=16,kblock={kblock}"))
    np.testing.assert_array_equal(c.view(np.uint64), whole.view(np.uint64))
    assert stats.extra["k_blocks"] == -(-a.shape[1] // kblock)
    assert stats.extra["residue_gemms"] == 16 * stats.extra["k_blocks"]


# ------------------------------------------------------------- fixed cases


@pytest.mark.parametrize(
    "row, want",
    [
        ([1.0, 2.0**-24], 1.0),  # tie between 1 and 1 + 2^-23: to even (down)
        ([1.0 + 2.0**-23, 2.0**-24], 1.0 + 2.0**-22),  # tie: to even (up)
        ([1.0, 2.0**-24, 2.0**-30], 1.0 + 2.0**-23),  # just above the tie: up
        ([1.0, 2.0**-24, 2.0**-40], 1.0),  # 2^-40 is below the row scale 2^-37: truncated to 0
        ([-1.0, -(2.0**-24)], -1.0),
    ],
)
def test_float32_ties_round_to_even(row, want):
    a = np.array([row], dtype=np.float32)
    b = np.ones((len(row), 1), dtype=np.float32)
    got = _check(a, b, "moduli=10")
    assert float(got[0, 0]) == want


def test_a_tie_of_the_float64_sum_is_not_rounded_twice():
    # S = 1 + 2^-24 + 2^-70: RN64(S) is a float32 tie, the exact S is above it
    a = np.array([[1.0, 2.0**-24, 2.0**-70]], dtype=np.float32)
    got = _check(a, np.ones((3, 1), dtype=np.float32), "moduli=20")
    assert float(got[0, 0]) == 1.0 + 2.0**-23
    # subnormal result 2.5 ulp + 2^-1130: above the tie, so 3 ulp (not the even 2)
    a64 = np.full((1, 3), 2.0**-500)
    b64 = np.array([[2.0**-573], [2.0**-575], [2.0**-630]])
    assert _check(a64, b64, "moduli=20")[0, 0] == 3 * 2.0**-1074


def test_float64_tie_and_subnormal_result():
    a = np.array([[1.0, 2.0**-53], [2.0**-1074, 0.0], [2.0**-600, 2.0**-600]])
    b = np.array([[1.0, 2.0**-500], [1.0, 0.5]])
    got = _check(a, b, "moduli=20")
    assert got[0, 0] == 1.0  # 1 + 2^-53 is a tie: to even
    assert got[1, 0] == 2.0**-1074 and got[1, 1] == 0.0  # 2^-1574 rounds to +0
    assert got[2, 1] == 2.0**-1100 + 2.0**-601  # exact subnormal sum


@pytest.mark.parametrize("moduli", range(1, 21))
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_reconstruction_is_exact_at_the_scaling_bound(moduli, sign):
    # rows of the largest mantissa: |S| comes within a factor (1 - 2^-22) of 2^G,
    # the largest product the scaling allows; a CRT off by a multiple of P shows here
    k = 16
    big = 2.0 - 2.0**-23
    a = np.full((2, k), big, dtype=np.float32)
    a[1, ::2] *= -1
    b = np.full((k, 2), sign * big, dtype=np.float32)
    b[1::3, 1] = 0.0
    _check(a, b, f"moduli={moduli}")
    _check(a, b, f"moduli={moduli},mode=accurate")
    g = ex.scale_bits(moduli)
    s = shift([big] * k, moduli)
    s_val = sum(x * x for x in scaled([big] * k, s))
    assert s_val < 2**g <= modulus_product(moduli) // 2
    assert moduli == 1 or s_val > 2 ** (g - 2)  # (one modulus: 2^G = 128, truncation dominates)


def test_scaled_products_stay_inside_the_crt_range():
    # the step-1 bound on random wide-range rows, checked with an independent CRT
    rng = np.random.default_rng(4)
    for moduli in (2, 8, 14, 20):
        for _ in range(20):
            k = int(rng.integers(1, 60))
            x = rng.choice([-1.0, 1.0], k) * np.exp2(rng.uniform(-40, 40, k))
            y = rng.choice([-1.0, 1.0], k) * np.exp2(rng.uniform(-40, 40, k))
            ix, iy = scaled(list(x), shift(list(x), moduli)), scaled(list(y), shift(list(y), moduli))
            s_val = sum(p * q for p, q in zip(ix, iy))
            assert abs(s_val) < 2 ** ex.scale_bits(moduli)
            mods = GEMMUL8_MODULI[:moduli]
            assert crt([s_val % q for q in mods], mods) == s_val
            # accurate mode bounds sum |a'||b'| itself, pair by pair
            (sa,), (sb,) = accurate_shifts([list(x)], [list(y)], moduli)
            bound = sum(abs(p * q) for p, q in zip(scaled(list(x), sa), scaled(list(y), sb)))
            assert bound < 2 ** ex.scale_bits(moduli)


def test_overflow_only_when_the_sum_overflows():
    a = np.array([[F32MAX, F32MAX], [F32MAX, -F32MAX]], dtype=np.float32)
    b = np.array([[1.0, 0.5], [1.0, 0.25]], dtype=np.float32)
    got = _check(a, b, "moduli=8")
    assert got[0, 0] == np.inf and np.isfinite(got[0, 1]) and got[1, 0] == 0.0
    big = 1.7976931348623157e308
    got64 = _check(np.array([[big, -big, big]]), np.array([[1.0], [1.0], [0.5]]), "moduli=20")
    assert got64[0, 0] == big / 2


def test_executor_refuses_bad_words_and_shapes():
    a = np.ones((2, 3))
    b = np.ones((3, 2))
    c = np.empty((2, 2))
    stats = np.zeros(ex.N_STATS, dtype=np.int64)
    for words in ([0, 8, 0], [21, 8, 0], [8, 0, 0], [8, ex.MAX_KBLOCK + 1, 0], [8, 8, 2], [8, 8]):
        assert ex.ozaki2_gemm(a, b, c, np.array(words, dtype=np.int64), stats) == ex.ERR_PARAMS
    w = np.array(OZ.parse_config("moduli=8").words(), dtype=np.int64)
    assert ex.ozaki2_gemm(a, b, np.empty((2, 3)), w, stats) == ex.ERR_SHAPE
    assert ex.ozaki2_gemm(a, b, np.empty((2, 2), dtype=np.float32), w, stats) == ex.ERR_SHAPE
    assert ex.ozaki2_gemm(a, b, c, w, stats) == ex.OK
    np.testing.assert_array_equal(c, a @ b)
