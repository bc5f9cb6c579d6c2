"""The MixPert direct paths (runtime/mixpert/paths/direct.py and
mixpert/paths/direct64.py) == the general path, bit for bit and statistic for
statistic, wherever they take a call; they take the well-scaled calls of the configs
they cover; the float rounding of step 1 is the integer rounding of
segments.split_element for every float32 significand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixjit.runtime.mixpert import executor as ex
from mixjit.runtime.mixpert.paths.direct import (
    NOT_TAKEN,
    _rounded,
    _splitter,
    direct_gemm,
    prefix_pairs,
)
from mixjit.runtime.mixpert.paths.direct64 import direct_gemm64, slice_pairs
from mixjit.runtime.mixpert.segments import split_element
from mixjit.runtime.schemes import get_scheme

MP = get_scheme("mixpert")
MP64 = get_scheme("mixpert-fp64")

#: configs the direct path covers (prefix pair rectangles, sign-magnitude digits) ...
COVERED = [
    "level=IV",
    "level=I",
    "level=II",
    "level=III",
    "level=full",
    "level=IV,align=row",
    "level=IV,rounding=trunc",
    "level=IV,seg0_bits=6",
    "level=IV,tile=2x4x3",  # K over several k-tiles, several tiles per side
    "level=I,tile=3x5x2,fallback=2",
    "level=IV,fallback=off",
    "level=full,tile=4x2x4,align=row,rounding=trunc",
]
#: ... and configs it leaves to the small path
NOT_COVERED = ["level=IV,digits=balanced", "segments=4,pairs=sig6,align=row", "pairs=00.11"]


def _words(label: str) -> np.ndarray:
    return np.asarray(MP.parse_config(label).words(), dtype=np.int64)


def _general(a, b, params):
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    stats = np.zeros(ex.N_STATS, np.int64)
    status = ex.multiply_into(ex.prepare_operand(a, False, params), ex.prepare_operand(b, True, params), params, c,
                              stats)
    return status, c, stats


def _strided(x: np.ndarray) -> np.ndarray:
    """``x``'s values in a view whose rows are not contiguous (typed with layout "A",
    as a site's operands and C are)."""
    y = np.full((x.shape[0], 2 * x.shape[1]), 7.0, x.dtype)[:, ::2]
    y[...] = x
    return y


def _direct(a, b, params, strided: bool = False):
    c = np.full((a.shape[0], b.shape[1]), 7.0, a.dtype)
    if strided:
        a, b, c = _strided(a), _strided(b), _strided(c)
    stats = np.zeros(ex.N_STATS, np.int64)
    run = direct_gemm64 if params[ex.W_DOMAIN] == ex.DOMAIN_FP64 else direct_gemm
    return run(a, b, c, params, stats), c, stats


def _check(a, b, params, strided: bool = False) -> bool:
    """Where the direct path takes the call, its bits and statistics are the general
    path's (and the small path's flag is set); where not, ``c`` is untouched.
    ``strided``: the direct path gets A, B and C as strided views (a site's types).
    Returns whether it took the call."""
    status, c, stats = _direct(a, b, params, strided)
    if strided:
        assert (c.base[:, 1::2] == 7.0).all()  # nothing written between C's elements
    if status == NOT_TAKEN:
        assert (c == 7.0).all()
        return False
    assert status == ex.OK
    s1, c1, st1 = _general(a, b, params)
    assert s1 == ex.OK
    np.testing.assert_array_equal(c1.view(np.uint8), np.ascontiguousarray(c).view(np.uint8))
    np.testing.assert_array_equal(st1[: ex.STAT_SMALL_PATH], stats[: ex.STAT_SMALL_PATH])
    assert stats[ex.STAT_SMALL_PATH] == 1
    return True


_KINDS = ["normal", "integers", "ties", "spread", "binades", "subnormal", "zeros", "huge", "top", "nonfinite"]


def _operand(rng, shape, kind: str, spread: int) -> np.ndarray:
    x = rng.standard_normal(shape)
    if kind == "integers":  # exact products, sums with float32 ties
        x = rng.integers(-(1 << 13), 1 << 13, shape).astype(np.float64)
    elif kind == "ties":  # 24-bit significands ending in ...1000 / ...0111: step 1's and 2's ties
        sig = rng.integers(1 << 23, 1 << 24, shape)
        sig = (sig & ~np.int64(0xF)) | rng.choice([0x8, 0x7, 0x9, 0x4, 0xC], shape)
        x = sig * np.exp2(rng.integers(-26, -22, shape).astype(np.float64)) * rng.choice([-1.0, 1.0], shape)
    elif kind == "spread":
        x = x * np.exp2(rng.integers(-spread, spread + 1, shape))
    elif kind == "binades":  # groups over many binades: shifts past the fallback threshold, aligned to 0
        x = x * np.exp2(rng.integers(-3 * spread, 1, shape))
    elif kind == "subnormal":  # float32 subnormals of 8 to 23 bits beside small normal values
        tiny = float(np.finfo(np.float32).smallest_subnormal)
        x = np.where(rng.random(shape) < 0.7, rng.integers(1 << 7, 1 << 23, shape) * tiny, x * 2.0**-126)
    elif kind == "zeros":
        x = np.where(rng.random(shape) < 0.5, 0.0, x) * rng.choice([1.0, -1.0], shape)
    elif kind == "huge":  # up to 2^127 (the direct path's limit: |x| < 16 here)
        x = x * 2.0**123
    elif kind == "top":  # some beyond, up to the float32 maximum: the small path's
        x = np.where(rng.random(shape) < 0.1, np.float32(np.finfo(np.float32).max) * rng.uniform(0.5, 1, shape),
                     x * 2.0**120)
    elif kind == "nonfinite":
        x.flat[rng.integers(0, x.size)] = rng.choice([np.inf, -np.inf, np.nan])
    return x.astype(np.float32)


@st.composite
def _cases(draw):
    m, n, k = (draw(st.integers(1, 40)) for _ in range(3))
    kinds = (draw(st.sampled_from(_KINDS)), draw(st.sampled_from(_KINDS)))
    spread = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = _operand(rng, (m, k), kinds[0], spread)
    b = _operand(rng, (k, n), kinds[1], spread)
    if draw(st.booleans()):
        a = np.asfortranarray(a)  # any strides
    if draw(st.booleans()):
        b = np.asfortranarray(b)
    return a, b, draw(st.sampled_from(COVERED + NOT_COVERED)), draw(st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases())
def test_direct_path_is_the_general_path(case):
    a, b, label, strided = case
    _check(a, b, _words(label), strided)


@pytest.mark.parametrize("label", COVERED)
@pytest.mark.parametrize("shape", [(1, 1, 1), (4, 4, 4), (32, 32, 32), (5, 40, 3), (16, 3, 24)])
def test_direct_path_takes_well_scaled_calls(label, shape):
    """Data within one binade (no span, no far shift) under a covered config: taken
    (above and below the BLAS threshold), and equal to the general path; fails if the
    direct path stops taking them."""
    m, n, k = shape
    rng = np.random.default_rng(m * n * k)
    a = (rng.uniform(1, 2, (m, k)) * rng.choice([-1.0, 1.0], (m, k))).astype(np.float32)
    b = (rng.uniform(1, 2, (k, n)) * rng.choice([-1.0, 1.0], (k, n))).astype(np.float32)
    assert _check(a, b, _words(label))


@pytest.mark.parametrize("size", [4, 32])
def test_direct_path_takes_the_benchmark_cases(size):
    """The benchmark's level IV cases (normal data, tools/bench_small_sites.py)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    assert _check(a, b, _words("level=IV"))


@pytest.mark.parametrize("side", ["a", "b"])
def test_direct_path_counts_of_the_largest_tiles(side):
    """Pass 2 packs a tile's counts into 21-bit fields: a tile of 2047 x 1024 elements
    of A, or 1024 x 2047 of B (counts just below 2^21), is taken with the general
    path's bits; one of 2048 x 1024 goes to the small path (its counts could fill a
    field)."""
    rng = np.random.default_rng(3)

    def one_binade(shape):  # nothing aligned to 0, nothing shifted far
        return (rng.uniform(1, 2, shape) * rng.choice([-1.0, 1.0], shape)).astype(np.float32)

    if side == "a":
        a, b, tile = one_binade((2048, 1024)), one_binade((1024, 1)), "2048x1024x1"
        fits, full = (a[:2047], b), (a, b)
    else:
        a, b, tile = one_binade((1, 1024)), one_binade((1024, 2048)), "1x1024x2048"
        fits, full = (a, b[:, :2047]), (a, b)
    params = _words(f"level=IV,tile={tile}")
    assert _check(*fits, params)
    assert not _check(*full, params)


@pytest.mark.parametrize("label", NOT_COVERED)
def test_direct_path_leaves_other_pair_sets(label):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 7)).astype(np.float32)
    assert not _check(a, a.T.copy(), _words(label))


def test_direct_path_refusals():
    """Non-finite data, a nonzero element aligned to 0 (step 6), magnitudes from
    2^127 up and the other domain's configs go elsewhere, ``c`` untouched; float64 operands
    in the float32 domain (rounded to float32 first) give the general path's bits
    (the small path sends only float32 operands here, to compile less)."""
    rng = np.random.default_rng(9)
    params = _words("level=IV")
    a = rng.standard_normal((8, 8)).astype(np.float32)
    for value in (np.nan, np.inf, 1e-30, 2.0**127):
        bad = a.copy()
        bad[2, 3] = value
        assert not _check(bad, a, params), value
        assert not _check(a, bad, params), value
    a64 = rng.standard_normal((8, 8))
    assert _check(a64, a64, params)
    fp64 = np.asarray(MP64.default_config(np.float64).words(), dtype=np.int64)
    assert direct_gemm(a64, a64, np.empty((8, 8)), fp64, np.zeros(ex.N_STATS, np.int64)) == NOT_TAKEN
    assert direct_gemm64(a64, a64, np.empty((8, 8)), params, np.zeros(ex.N_STATS, np.int64)) == NOT_TAKEN


def test_prefix_pairs():
    """The pair-set decoder: levels are prefix rectangles, IV without its corner."""
    assert prefix_pairs(_words("level=IV")) == (2, 2, True, True)
    assert prefix_pairs(_words("level=full")) == (2, 2, False, True)
    assert prefix_pairs(_words("level=I")) == (1, 1, False, True)
    assert prefix_pairs(_words("level=II")) == (1, 2, False, True)
    assert prefix_pairs(_words("pairs=00.01.10"))[3:] == (True,)  # [0..1]^2 without (1, 1)
    assert prefix_pairs(_words("pairs=00.11"))[3] is False


@pytest.mark.parametrize("w", [6, 13, 20, 21, 23, 24, 28])
def test_veltkamp_rounding_is_the_element_split(w):
    """Step 1 by Veltkamp's splitting in float64 equals the integer round-to-nearest-
    even at w bits for every float32 significand (one binade, both signs: float64
    arithmetic scales exactly for every float32 exponent), and split_element's value
    on sampled values over the whole range, subnormals included."""
    sig = np.arange(1 << 23, 1 << 24, dtype=np.int64)
    sh = max(24 - w, 0)
    q = sig >> sh
    rem = sig & ((1 << sh) - 1)
    if sh:
        q = q + ((rem > (1 << (sh - 1))) | ((rem == (1 << (sh - 1))) & (q & 1 == 1)))
    want = q.astype(np.float64) * 2.0 ** (sh - 23)
    v = sig.astype(np.float64) * 2.0**-23
    splitter = _splitter(w)
    np.testing.assert_array_equal(_rounded(v, splitter), want)
    np.testing.assert_array_equal(_rounded(-v, splitter), -want)
    rng = np.random.default_rng(w)
    bits = rng.integers(1, 0x7F000000, 2000, dtype=np.int64).astype(np.uint32)  # below 2^127
    for x in bits.view(np.float32):
        m, e = split_element(np.float64(x).view(np.uint64), w, 127)
        assert _rounded(np.float64(x), splitter) == m * 2.0 ** (e - w + 1), x


# ---- the float64 domain: mixpert-fp64's most precise config


def _words64(label: str) -> np.ndarray:
    cfg = MP64.parse_config(label) if label else MP64.default_config(np.float64)
    return np.asarray(cfg.words(), dtype=np.int64)


#: the config the float64 direct path covers (the default, and with truncation), and
#: ones it leaves: K over one k-tile, other pair sets
COVERED64 = ["", "segments=9,pairs=slices3sig2,tile=16x4096x8,rounding=trunc"]
NOT_COVERED64 = ["segments=9,pairs=slices3sig2,tile=4x8x4", "segments=9,pairs=sig8,align=tile", "segments=7,pairs=sig6"]


def _operand64(rng, shape, kind: str) -> np.ndarray:
    x = rng.standard_normal(shape)
    if kind == "integers":
        x = rng.integers(-(1 << 26), 1 << 26, shape).astype(np.float64)
    elif kind == "spread":  # elements far below their row's largest: shifted out, the guarantee recomputes
        x = x * np.exp2(rng.integers(-70, 1, shape).astype(np.float64))
    elif kind == "subnormal":
        x = np.where(rng.random(shape) < 0.3, rng.integers(-50, 51, shape) * 5e-324, x * 2.0**-940)
    elif kind == "tiny":  # products in the subnormal range: gradual underflow of the result
        x = x * 2.0**-530
    elif kind == "huge":
        x = x * 2.0 ** rng.choice([400, 520])
    elif kind == "zeros":
        x = np.where(rng.random(shape) < 0.5, 0.0, x) * rng.choice([1.0, -1.0], shape)
    elif kind == "cancel":  # rows and columns with cancellation: the check's dot products
        x = np.round(x * 4) / 4
    elif kind == "nonfinite":
        x.flat[rng.integers(0, x.size)] = rng.choice([np.inf, -np.inf, np.nan])
    return x


_KINDS64 = ["normal", "integers", "spread", "subnormal", "tiny", "huge", "zeros", "cancel", "nonfinite"]


@st.composite
def _cases64(draw):
    m, n = (draw(st.integers(1, 24)) for _ in range(2))
    k = draw(st.sampled_from([1, 2, 3, 7, 16, 33, 512, 513]))
    kinds = (draw(st.sampled_from(_KINDS64)), draw(st.sampled_from(_KINDS64)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = _operand64(rng, (m, k), kinds[0])
    b = _operand64(rng, (k, n), kinds[1])
    if draw(st.booleans()):
        a = np.asfortranarray(a)
    return a, b, draw(st.sampled_from(COVERED64 + NOT_COVERED64)), draw(st.booleans())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases64())
def test_direct_path_float64_is_the_general_path(case):
    a, b, label, strided = case
    _check(a, b, _words64(label), strided)


@pytest.mark.parametrize("label", COVERED64)
@pytest.mark.parametrize("shape", [(1, 1, 1), (4, 4, 4), (32, 32, 32), (3, 5, 512)])
def test_direct_path_float64_takes_well_scaled_calls(label, shape):
    m, n, k = shape
    rng = np.random.default_rng(m * n * k)
    assert _check(rng.standard_normal((m, k)), rng.standard_normal((k, n)), _words64(label))


def test_direct_path_float64_refusals():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 9))
    for label in NOT_COVERED64:
        assert not _check(a, a.T.copy(), _words64(label)), label
    long = rng.standard_normal((2, 513))
    assert not _check(long, long.T.copy(), _words64(""))  # K > 512: 3 K 2^42 may reach 2^53
    assert slice_pairs(_words64("")) and not slice_pairs(_words64("segments=9,pairs=sig8"))


@pytest.mark.parametrize("value", [2.0 - 2.0**-52, 1.5 - 2.0**-30, 1.0 + 2.0**-52])
def test_direct_path_float64_largest_sums(value):
    """K = 512 elements of one sign with full slices: the level sums (and Karatsuba's
    (A0 + A1)(B0 + B1)) come closest to 2^53 here; the bits are still the general
    path's."""
    a = np.full((3, 512), value)
    a[1] *= -1.0
    b = np.full((512, 2), value)
    assert _check(a, b, _words64(""))
    assert _check(a, b, _words64("segments=9,pairs=slices3sig2,tile=16x4096x8,rounding=trunc"))


# ---- at a @mixjit site: the entry hands strided views to the direct paths


def _product(a, b):
    return a @ b


@pytest.mark.parametrize("dtype,scheme,label", [(np.float32, "mixpert", "level=IV"), (np.float64, "mixpert-fp64", "")])
def test_sites_run_the_direct_paths_bit_for_bit(dtype, scheme, label):
    """A site's operands reach the kernel as strided views (C-ordered ones are read
    as such, the others element by element): the bits are mixjit.gemm's for C- and
    Fortran-ordered, row-strided and transposed operands."""
    from mixjit import gemm, mixjit
    from mixjit.plan import SitePlan, initial_plan, set_plan

    f = mixjit(schemes=("native",))(_product)
    rng = np.random.default_rng(8)
    a = rng.standard_normal((24, 20)).astype(dtype)
    b = rng.standard_normal((20, 12)).astype(dtype)
    cases = ((a, b), (np.asfortranarray(a), b), (a[::2], b), (a, np.asfortranarray(b)), (b.T, a.T[:, :7]))
    for x, y in cases:
        f(x, y)  # one specialization (and site) per layout
    label = label or get_scheme(scheme).default_config(dtype).label
    ids = [s.id for s in f.sites if s.taken]
    assert len(ids) == len(cases)
    for site in ids:
        set_plan(site, SitePlan(scheme, label, scheme))
    try:
        for x, y in cases:
            np.testing.assert_array_equal(f(x, y).view(np.uint8), gemm(x, y, scheme, label).view(np.uint8))
    finally:
        for site in ids:
            set_plan(site, initial_plan(["native"], dtype))
