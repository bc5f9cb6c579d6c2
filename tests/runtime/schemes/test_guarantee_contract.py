"""Stated limits, refusals and fallback rules, checked at their boundaries
(docs/numerics.md): dfp refuses K·(2^r − 1)² ≥ 2^53 and takes the largest K below it;
ozaki2 refuses K > 2^30; fp16x2 has no part-overflow fallback (its range scaling keeps
FLT_MAX-scale inputs finite and exact); mixpert-fp64 accepts only float64 inputs,
recomputes K = 1 outputs it cannot certify, and refuses spans above 900 binades."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.dfp import executor as dfp_ex
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.dfp import DfpConfig


def test_dfp_takes_the_longest_exact_k_and_refuses_one_more():
    # bits=16: q_max = 32767, the largest K with K * 32767^2 < 2^53 is about 8.4 M
    bits = 16
    k = dfp_ex.max_k(bits)
    assert k * (2 ** (bits - 1) - 1) ** 2 < 2**53 <= (k + 1) * (2 ** (bits - 1) - 1) ** 2
    words = np.array(DfpConfig(bits, "tensor").words(), np.int64)
    stats = np.zeros(dfp_ex.N_STATS, np.int64)
    c = np.empty((1, 1), np.float32)
    a = np.ones((1, k + 1), np.float32)
    b = np.ones((k + 1, 1), np.float32)
    assert dfp_ex.dfp_gemm(a, b, c, words, stats) == dfp_ex.ERR_K
    assert dfp_ex.dfp_gemm(a[:, :k], b[:k], c, words, stats) == dfp_ex.OK
    assert c[0, 0] == np.float32(k)  # K products of 1 * 1 (mantissas 2^14 each): the sum is exact
    with pytest.raises(ValueError, match="K is too long"):
        get_scheme("dfp").run(a, b, DfpConfig(bits, "tensor"))


@pytest.mark.parametrize("config", ["products=3", "products=1"])
def test_fp16x2_has_no_part_overflow_fallback(config):
    s = get_scheme("fp16x2")
    big = np.finfo(np.float32).max
    a = np.array([[big, 1.0], [-big, 2.0**-20]], np.float32)
    b = np.array([[2.0**-10], [1.0]], np.float32)
    c, stats = s.run_with_stats(a, b, s.parse_config(config))
    assert stats.fallbacks == 0
    assert np.isfinite(c).all()
    if config == "products=3":  # hi + lo holds FLT_MAX exactly: RN32(FLT_MAX * 2^-10 + 1)
        assert c[0, 0] == np.float32(float(big) * 2.0**-10) and c[1, 0] == -c[0, 0]


def test_mixpert_fp64_accepts_only_float64():
    s = get_scheme("mixpert-fp64")
    a = np.ones((2, 3), np.float32)
    with pytest.raises((TypeError, ValueError), match="float64"):
        s.run(a, a.T.copy(), s.default_config())


@pytest.mark.parametrize("label,drops_pairs", [("segments=9,pairs=slices3sig2,tile=16x4096x8", True), ("pairs=sig7", True), ("segments=7,pairs=sig6", True),
                                               ("segments=8,pairs=sig14", False)])
@pytest.mark.parametrize("x", [1.0, 1.0 + 2.0**-52])
def test_mixpert_fp64_k1_is_recomputed_when_a_pair_is_dropped_or_an_input_is_off_its_grid(label, drops_pairs, x):
    # docs/numerics.md, mixpert-fp64 "Guarantee": at K = 1, gamma_1 - u is about u^2, so
    # any dropped pair or off-grid input leaves the bound unprovable: the output is
    # recomputed (and counted). segments=8,pairs=sig14 keeps every pair at W = 55 >= 53
    # bits: its split is exact and nothing is recomputed.
    s = get_scheme("mixpert-fp64")
    cfg = s.parse_config(label)
    a = np.array([[x], [-x]])
    b = np.array([[x, 3.0]])
    c, stats = s.run_with_stats(a, b, cfg)
    want = a @ b  # K = 1: one product, rounded once
    assert np.array_equal(c.view(np.uint64), want.view(np.uint64))
    w = cfg.seg0_bits + 7 * (cfg.segments - 1)
    off_grid = x != 1.0 and w < 53
    assert stats.fallbacks == (4 if drops_pairs or off_grid else 0), (label, x, stats.fallbacks)


@pytest.mark.parametrize("where", ["A", "A+B"])
def test_mixpert_fp64_span_limit_is_900_binades_of_a_row_and_a_column(where):
    # docs/numerics.md, mixpert-fp64 "Range limit": a span of 900 binades along K (one
    # element per k-tile here) is computed, 901 is refused with a ValueError, whether
    # the span lies in A alone or is shared by a row of A and a column of B
    from mixjit.runtime.mixpert.words import MAX_SPAN

    assert MAX_SPAN == 900
    s = get_scheme("mixpert-fp64")
    cfg = s.parse_config("tile=1x1x1")
    for span in (MAX_SPAN, MAX_SPAN + 1):
        ea = span if where == "A" else span // 2
        a = np.array([[1.0, 2.0**-ea]])
        b = np.array([[1.0], [2.0 ** -(span - ea)]])
        if span <= MAX_SPAN:
            assert s.run(a, b, cfg)[0, 0] == 1.0 + 2.0**-span
        else:
            with pytest.raises(ValueError, match="binades along K"):
                s.run(a, b, cfg)


def test_ozaki2_refuses_k_above_2_to_the_30():
    # docs/numerics.md, ozaki2 step 2: "A K above 2^30 is refused (W would overflow
    # int64)". Zero-stride views give the executor (any strides) a K of 2^30 + 1
    # without the memory: the refusal comes before any work
    from numpy.lib.stride_tricks import as_strided

    from mixjit.runtime.ozaki2 import executor as oz

    k = oz.MAX_K + 1
    assert oz.MAX_K == 2**30
    one = np.ones(1)
    a = as_strided(one, shape=(1, k), strides=(0, 0))
    b = as_strided(one, shape=(k, 1), strides=(0, 0))
    c = np.empty((1, 1))
    words = np.array(get_scheme("ozaki2").parse_config("moduli=14").words(), np.int64)
    stats = np.zeros(oz.N_STATS, np.int64)
    assert oz.ozaki2_gemm(a, b, c, words, stats) == oz.ERR_K_TOO_LONG
    assert "longer than" in oz.STATUS_MESSAGES[oz.ERR_K_TOO_LONG]
