"""The MixPert small-shape path (runtime/mixpert/paths/small.py) == the general
path, bit for bit and statistic for statistic, and the driver picks it.

The general path is ``multiply_into(prepare_operand(A), prepare_operand(B))``
(split, fast / certified / exact paths, step 6, non-finite rule); ``mixpert_gemm``
takes the small path first for calls it covers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixjit.runtime.mixpert import executor as ex
from mixjit.runtime.mixpert.paths.small import SMALL_MAX_WORK_FP32, SMALL_MAX_WORK_FP64
from mixjit.runtime.schemes import get_scheme

MP = get_scheme("mixpert")
MP64 = get_scheme("mixpert-fp64")

FP32_LABELS = [
    "level=IV",
    "level=I",
    "level=full",
    "level=IV,align=row",
    "level=IV,rounding=trunc",
    "level=IV,seg0_bits=6",
    "level=IV,digits=balanced",
    "level=IV,digits=balanced,align=row",
    "level=IV,tile=2x4x3",  # K over several k-tiles, several tiles per side
    "level=I,tile=3x5x2,fallback=2",
    "level=IV,fallback=off",
    "segments=4,pairs=sig6,align=row",  # wide blocks: always the general path
]
FP64_LABELS = [
    "",  # the most precise config
    "segments=9,pairs=sig8,align=tile",
    "segments=7,pairs=sig6",
    "segments=7,pairs=sig6,rounding=trunc,tile=4x8x4",
    "segments=7,pairs=sig6,digits=balanced",
]


def _words(scheme, label: str) -> np.ndarray:
    cfg = scheme.parse_config(label) if label else scheme.default_config(np.float64)
    return np.asarray(cfg.words(), dtype=np.int64)


def _general(a, b, params):
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    stats = np.zeros(ex.N_STATS, np.int64)
    status = ex.multiply_into(ex.prepare_operand(a, False, params), ex.prepare_operand(b, True, params), params, c,
                              stats)
    return status, c, stats


def _driver(a, b, params):
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    stats = np.zeros(ex.N_STATS, np.int64)
    status = ex.mixpert_gemm(a, b, c, params, stats)
    return status, c, stats


def _same(a, b, params) -> bool:
    """Driver and general path agree in status, bits and statistics; returns
    whether the driver took the small path."""
    s1, c1, st1 = _general(a, b, params)
    s2, c2, st2 = _driver(a, b, params)
    assert s1 == s2
    if s1 == ex.OK:
        np.testing.assert_array_equal(c1.view(np.uint8), c2.view(np.uint8))
        np.testing.assert_array_equal(st1[: ex.STAT_SMALL_PATH], st2[: ex.STAT_SMALL_PATH])
    assert st1[ex.STAT_SMALL_PATH] == 0
    return bool(st2[ex.STAT_SMALL_PATH])


_KINDS = ["normal", "integers", "spread", "subnormal", "nonfinite", "zeros"]


def _operand(rng, shape, dtype, kind: str, spread: int):
    x = rng.standard_normal(shape)
    if kind == "integers":  # exact products, sums with float32 ties
        x = rng.integers(-(1 << 13), 1 << 13, shape).astype(np.float64)
    elif kind == "spread":
        x = x * np.exp2(rng.integers(-spread, spread + 1, shape))
    elif kind == "subnormal":
        tiny = np.finfo(dtype).smallest_subnormal
        x = np.where(rng.random(shape) < 0.3, rng.integers(-50, 51, shape) * float(tiny), x * 2.0**-120)
    elif kind == "nonfinite":
        x.flat[rng.integers(0, x.size)] = rng.choice([np.inf, -np.inf, np.nan])
    elif kind == "zeros":
        x = np.where(rng.random(shape) < 0.5, 0.0, x)
    return x.astype(dtype)


@st.composite
def _cases(draw, labels, dtype):
    m, n, k = (draw(st.integers(1, 64)) for _ in range(3))
    kinds = (draw(st.sampled_from(_KINDS)), draw(st.sampled_from(_KINDS)))
    spread = draw(st.integers(1, 30))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    a = _operand(rng, (m, k), dtype, kinds[0], spread)
    b = _operand(rng, (k, n), dtype, kinds[1], spread)
    if draw(st.booleans()):
        a = np.asfortranarray(a)  # any strides
    return a, b, draw(st.sampled_from(labels))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases(FP32_LABELS, np.float32))
def test_small_path_float32_is_the_general_path(case):
    a, b, label = case
    _same(a, b, _words(MP, label))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_cases(FP64_LABELS, np.float64))
def test_small_path_float64_is_the_general_path(case):
    a, b, label = case
    _same(a, b, _words(MP64, label))


@pytest.mark.parametrize("label", ["level=IV", "level=IV,digits=balanced,align=row", "level=IV,tile=2x4x3"])
def test_float64_operands_in_the_float32_domain(label):
    """float64 operands under mixpert are rounded to float32 first, on both paths."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((9, 17))
    b = rng.standard_normal((17, 5))
    assert _same(a, b, _words(MP, label))


@pytest.mark.parametrize("size", [1, 4, 32, 64])
@pytest.mark.parametrize("scheme,label,dtype", [(MP, "level=IV", np.float32), (MP, "level=full", np.float32),
                                                (MP64, "", np.float64)])
def test_driver_picks_the_small_path(size, scheme, label, dtype):
    """Well-scaled small GEMMs (the benchmark's cases among them) take the small path;
    fails if the driver stops dispatching to it or the path starts refusing them."""
    rng = np.random.default_rng(size)
    a = rng.standard_normal((size, size)).astype(dtype)
    b = rng.standard_normal((size, size)).astype(dtype)
    assert _same(a, b, _words(scheme, label))


def test_float64_domain_limit_is_its_own():
    """mixpert-fp64 calls take the small path (its direct path or its loops) up to
    SMALL_MAX_WORK_FP64 multiply-adds and the general path above it (a smaller limit
    than the float32 domain's)."""
    rng = np.random.default_rng(11)
    side = round(SMALL_MAX_WORK_FP64 ** (1 / 3))
    assert side**3 == SMALL_MAX_WORK_FP64 < SMALL_MAX_WORK_FP32
    a = rng.standard_normal((side, side + 1))
    b = rng.standard_normal((side + 1, side))
    for label in ("", "segments=7,pairs=sig6"):  # the direct path's config, and one of the loops
        params = _words(MP64, label)
        assert _same(a[:, :side], b[:side], params)  # at the limit
        assert not _same(a, b, params)  # one more k: above it


def test_large_and_unusual_calls_take_the_general_path():
    rng = np.random.default_rng(7)
    params = _words(MP, "level=IV")
    side = 1
    while side**3 <= SMALL_MAX_WORK_FP32:
        side += 1
    a = rng.standard_normal((side, side)).astype(np.float32)
    assert not _same(a, a, params)  # above the threshold
    a = rng.standard_normal((8, 8)).astype(np.float32)
    a[2, 3] = np.nan
    assert not _same(a, a, params)  # non-finite rule
    a[2, 3] = 1e-30  # aligned to 0 beside ~1: step 6 recomputes its row
    assert not _same(a, a, params)
    assert not _same(a[:4], a, _words(MP, "segments=4,pairs=sig6,align=row"))  # wide blocks
    assert _same(a[:, :0], a[:0], params) is False  # K = 0


@pytest.mark.parametrize("w", [6, 13, 20, 21, 23, 24, 28, 40])
def test_float32_element_split_is_split_element(w):
    """The small path's branch-free split of normal float32 values (and its patch for
    zeros and subnormals) gives segments.split_element's M and e, carries at the
    largest exponent included."""
    from mixjit.runtime.mixpert.paths.small import _patch_special, _split32_normal
    from mixjit.runtime.mixpert.segments import split_element

    rng = np.random.default_rng(w)
    edges = [0x7F7FFFFF, 0xFF7FFFFF, 0x7EFFFFFF, 0x3FFFFFFF, 0x3F7FFFFF, 0x00800000, 0x80800000, 0x3F800004,
             0x3F80000C, 0x00000001, 0x807FFFFF, 0x00400000, 0x00000000, 0x80000000]
    bits = np.concatenate([rng.integers(0, 1 << 32, 4000, dtype=np.uint64).astype(np.uint32),
                           np.array(edges, dtype=np.uint32)])
    bits = bits[((bits >> 23) & 0xFF) != 0xFF]  # finite
    x = bits.view(np.float32).reshape(1, -1)
    q = np.zeros(x.shape, np.int64)
    e = np.zeros(x.shape, np.int64)
    for k, u in enumerate(bits):
        q[0, k], e[0, k] = _split32_normal(np.int64(u), w)
    assert _patch_special(x, False, 0, 0, x.shape[1], w, q, e)
    for k, u in enumerate(bits):
        if u & 0x7FFFFFFF == 0:
            assert q[0, k] == 0
            continue
        m, ee = split_element(np.float64(x[0, k]).view(np.uint64), w, 127)
        assert (q[0, k], e[0, k]) == (m, ee), hex(u)


def test_bound_powers_of_two_are_ldexp():
    """mixpert_bound._pow2 (built from bits down to the subnormals, 0 below) is
    math.ldexp(1.0, n) wherever ldexp is finite: the fp64 check's values did not move."""
    import math

    from mixjit.runtime.mixpert.guarantee.bound import _pow2

    for n in range(-1200, 1024):
        assert _pow2(n) == math.ldexp(1.0, n) and math.copysign(1.0, _pow2(n)) == 1.0, n
