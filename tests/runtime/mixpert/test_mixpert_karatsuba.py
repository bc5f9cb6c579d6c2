"""mixpert-fp64's Karatsuba dgemm (pair_blocks.karatsuba_products, executor_mixpert_fast
.blocks_path): ``A_0 B_1 + A_1 B_0`` from ``A_0 B_0``, ``A_1 B_1`` and one exact dgemm of
``(A_0 - A_1)(B_0 - B_1)``. The exact sum X, hence every output bit, must be the six
planned blocks' (the path before it): checked against those six dgemms' epilogue and
against X summed in Python integers, on data that drives the difference dgemm to its
exactness limit (largest slices, K at the planner's boundaries, sign mixes)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixjit.runtime.mixpert import words as W
from mixjit.runtime.mixpert.pack import pack_block, pack_product_into
from mixjit.runtime.mixpert.pair_blocks import (
    BLOCK_BITS,
    BLOCK_I0,
    BLOCK_I1,
    BLOCK_J0,
    BLOCK_J1,
    BLOCK_SHIFT,
    PROD_BITS,
    PROD_I0,
    PROD_I1,
    PROD_ID0,
    PROD_ID1,
    PROD_J0,
    PROD_J1,
    PROD_JD0,
    PROD_JD1,
    TERM_PROD,
    TERM_SHIFT,
    TERM_SIGN,
    k_bits,
    karatsuba_products,
    plan_block_array,
)
from mixjit.runtime.mixpert.paths.fast import blocks_path, epilogue_many
from mixjit.runtime.mixpert.segments import MAGNITUDE, width
from mixjit.runtime.mixpert.split import prepare_operand
from mixjit.runtime.schemes import get_scheme

MP64 = get_scheme("mixpert-fp64")
DEFAULT = MP64.default_config(np.float64).label

#: mantissas (in [1, 2)) that put the slices at their extremes for 9 segments of 62
#: bits: A_0 smallest with A_1 largest (|A_0 - A_1| near 2^21), all ones, A_1 = 0
EDGE_MANTISSAS = (1.0 + (2.0**21 - 1) * 2.0**-40, 2.0 - 2.0**-52, 2.0 - 2.0**-19, 1.0, 1.5 + 2.0**-41)


def _setup(a: np.ndarray, b: np.ndarray, label: str = DEFAULT):
    p = np.asarray(MP64.parse_config(label).words(), dtype=np.int64)
    pa, pb = prepare_operand(a, False, p), prepare_operand(b, True, p)
    assert pa.span.max() + pb.span.max() == 0  # one group per row / column: block results are integers
    blocks, ok = plan_block_array(W.kept_pairs(p), p[W.W_SEGMENTS], p[W.W_SEG0_BITS], a.shape[1], p[W.W_DIGITS], 0)
    assert ok
    w1 = width(p[W.W_SEGMENTS], p[W.W_SEG0_BITS], p[W.W_DIGITS]) - 1
    return p, pa, pb, blocks, pa.ref - w1, pb.ref - w1


def _block_operands(p, pa, pb, blocks, b: int):
    seg, dig, tk = p[W.W_SEGMENTS], p[W.W_DIGITS], p[W.W_TK]
    x = pack_block(pa.q, pa.scale, np.arange(pa.q.shape[0]), 0, pa.q.shape[1], blocks[b, BLOCK_I0],
                   blocks[b, BLOCK_I1], seg, dig, tk, False)
    y = pack_block(pb.q, pb.scale, np.arange(pb.q.shape[0]), 0, pb.q.shape[1], blocks[b, BLOCK_J0],
                   blocks[b, BLOCK_J1], seg, dig, tk, False)
    return x, y


def _six_dgemms(p, pa, pb, blocks, ea, eb) -> np.ndarray:
    """The path before Karatsuba: one exact dgemm per planned block, epilogue_many."""
    m, n, K = pa.q.shape[0], pb.q.shape[0], pa.q.shape[1]
    ds = np.empty((blocks.shape[0], m, n))
    for b in range(blocks.shape[0]):
        x, y = _block_operands(p, pa, pb, blocks, b)
        ds[b] = x @ y.T
    out = np.empty((m, n))
    epilogue_many(ds, blocks, ea, eb, out, False, 53 - k_bits(K) - int(blocks[:, BLOCK_BITS].max()))
    return out


def _exact_x(p, pa, pb, blocks, ea, eb) -> np.ndarray:
    """RN64(X) with X summed in Python integers from the blocks' operands."""
    m, n = pa.q.shape[0], pb.q.shape[0]
    x_sum = np.zeros((m, n), dtype=object)
    for b in range(blocks.shape[0]):
        x, y = _block_operands(p, pa, pb, blocks, b)
        xi = np.array([[int(v) for v in row] for row in x], dtype=object)
        yi = np.array([[int(v) for v in row] for row in y], dtype=object)
        x_sum = x_sum + xi.dot(yi.T) * (1 << int(blocks[b, BLOCK_SHIFT]))
    return np.array([[float(Fraction(int(x_sum[i, j])) * Fraction(2) ** int(ea[i] + eb[j])) for j in range(n)]
                     for i in range(m)])


def _karatsuba(a: np.ndarray, b: np.ndarray, label: str = DEFAULT):
    """(blocks_path's output, the six dgemms' output, RN64(X) from integers, prods)."""
    p, pa, pb, blocks, ea, eb = _setup(a, b, label)
    got = np.full((a.shape[0], b.shape[1]), np.nan)
    blocks_path(pa.q, pa.scale, pb.q, pb.scale, blocks, ea, eb, p, got, False, False, False, False)
    prods, _ = karatsuba_products(blocks, p[W.W_DIGITS] == MAGNITUDE, p[W.W_SEG0_BITS], p[W.W_DIGITS])
    return got, _six_dgemms(p, pa, pb, blocks, ea, eb), _exact_x(p, pa, pb, blocks, ea, eb), prods


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)


@pytest.mark.parametrize("k", [65, 512, 1024, 2048])
def test_default_config_runs_five_dgemms_at_k_65_to_2048(k):
    p = np.asarray(MP64.parse_config(DEFAULT).words(), dtype=np.int64)
    blocks, ok = plan_block_array(W.kept_pairs(p), p[W.W_SEGMENTS], p[W.W_SEG0_BITS], k, p[W.W_DIGITS], 0)
    assert ok and blocks.shape[0] == 6
    prods, terms = karatsuba_products(blocks, True, p[W.W_SEG0_BITS], p[W.W_DIGITS])
    assert prods.shape[0] == 5 and terms.shape[0] == 7
    assert (prods[:, PROD_ID0] >= 0).sum() == 1 and (terms[:, TERM_SIGN] < 0).sum() == 1
    # every product stays within the widest block's bits: as exact as the blocks
    assert prods[:, PROD_BITS].max() <= blocks[:, BLOCK_BITS].max()


def test_no_karatsuba_where_it_would_not_be_exact_or_the_signs_differ():
    p = np.asarray(MP64.parse_config(DEFAULT).words(), dtype=np.int64)
    seg0, dig = p[W.W_SEG0_BITS], p[W.W_DIGITS]
    # K = 4096: the 42-bit block A_1 B_1 is cut, so no diagonal for A_0 B_1 + A_1 B_0
    blocks, _ = plan_block_array(W.kept_pairs(p), p[W.W_SEGMENTS], seg0, 4096, dig, 0)
    prods, terms = karatsuba_products(blocks, True, seg0, dig)
    assert prods.shape[0] == blocks.shape[0] and (terms[:, TERM_SIGN] == 1).all()
    # balanced digits: a slice difference can have one bit more than either slice
    blocks, _ = plan_block_array(W.kept_pairs(p), p[W.W_SEGMENTS], seg0, 2048, dig, 0)
    prods, _ = karatsuba_products(blocks, False, seg0, dig)
    assert prods.shape[0] == blocks.shape[0] and (prods[:, PROD_ID0] < 0).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**62 - 1), st.integers(0, 2**62 - 1), st.booleans(), st.booleans())
def test_terms_are_the_blocks_exact_sum_in_integers(qa, qb, neg_a, neg_b):
    """The product/term algebra alone, on one pair of aligned mantissas: sum over terms
    of sign * (A side)(B side) * 2^shift == sum over blocks of A range * B range * 2^shift."""
    from mixjit.runtime.mixpert.segments import digit_range
    p = np.asarray(MP64.parse_config(DEFAULT).words(), dtype=np.int64)
    seg, seg0, dig = int(p[W.W_SEGMENTS]), int(p[W.W_SEG0_BITS]), int(p[W.W_DIGITS])
    qa, qb = (-qa if neg_a else qa), (-qb if neg_b else qb)
    blocks, _ = plan_block_array(W.kept_pairs(p), seg, seg0, 2048, dig, 0)
    prods, terms = karatsuba_products(blocks, True, seg0, dig)

    def side(q, r0, r1, d0, d1):
        v = int(digit_range(q, r0, r1, seg, dig))
        return v - (int(digit_range(q, d0, d1, seg, dig)) if d0 >= 0 else 0)

    want = sum(int(digit_range(qa, b[BLOCK_I0], b[BLOCK_I1], seg, dig)) * int(digit_range(qb, b[BLOCK_J0], b[BLOCK_J1],
               seg, dig)) << int(b[BLOCK_SHIFT]) for b in blocks)
    got = 0
    for t in terms:
        pr = prods[t[TERM_PROD]]
        va = side(qa, pr[PROD_I0], pr[PROD_I1], pr[PROD_ID0], pr[PROD_ID1])
        vb = side(qb, pr[PROD_J0], pr[PROD_J1], pr[PROD_JD0], pr[PROD_JD1])
        assert abs(va * vb) < 2 ** int(pr[PROD_BITS])  # the bound the dgemm's exactness rests on
        got += int(t[TERM_SIGN]) * va * vb << int(t[TERM_SHIFT])
    assert got == want


def test_difference_operand_is_exact():
    p = np.asarray(MP64.parse_config(DEFAULT).words(), dtype=np.int64)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 40))
    pa = prepare_operand(a, False, p)
    out = np.empty((5, 40))
    pack_product_into(out, pa.q, pa.scale, np.arange(5), 0, 40, 0, 2, 3, 5, p[W.W_SEGMENTS], p[W.W_DIGITS],
                      p[W.W_TK], False)
    q = pa.q.astype(object)
    sign = np.where(pa.q < 0, -1, 1).astype(object)
    mag = np.abs(q)
    want = sign * ((mag >> 42) - ((mag >> 21) & (2**21 - 1)))
    assert (out.astype(object) == want).all()
    assert np.abs(out).max() < 2.0**21


def _edge_operand(shape, mantissas, signs: str, rng) -> np.ndarray:
    x = rng.choice(np.asarray(mantissas), shape)
    if signs == "mixed":
        x = x * rng.choice([-1.0, 1.0], shape)
    elif signs == "negative":
        x = -x
    return x


@pytest.mark.parametrize("k", [2047, 2048])
@pytest.mark.parametrize("signs", ["positive", "negative", "mixed"])
def test_largest_slices_at_k_2048_keep_every_bit(k, signs):
    # |A_0 - A_1| near 2^21 in every element: the difference dgemm's partial sums
    # reach ~2^52.2 (the bound is 2^53), the blocks' A_1 B_1 as high
    rng = np.random.default_rng(k)
    a = _edge_operand((4, k), EDGE_MANTISSAS[:1], signs, rng)
    b = _edge_operand((k, 3), EDGE_MANTISSAS[:1], signs, rng)
    got, six, exact, prods = _karatsuba(a, b)
    assert prods.shape[0] == 5
    assert (_bits(got) == _bits(six)).all() and (_bits(got) == _bits(exact)).all()


_OPERAND_K = st.sampled_from([1, 2, 5, 64, 65, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049])


@st.composite
def _operands(draw):
    m, n, k = draw(st.integers(1, 5)), draw(st.integers(1, 5)), draw(_OPERAND_K)
    seed = draw(st.integers(0, 2**32 - 1))
    signs = draw(st.sampled_from(["positive", "negative", "mixed"]))
    pool = draw(st.lists(st.sampled_from(EDGE_MANTISSAS + (0.0, "random")), min_size=1, max_size=4))
    # exponents below the group's: elements that lose low slices (or all) to alignment
    offsets = draw(st.lists(st.sampled_from([0, 0, -1, -20, -21, -41, -42, -61, -62, -80]), min_size=1, max_size=3))
    rng = np.random.default_rng(seed)

    def operand(shape):
        choice = rng.integers(0, len(pool), shape)
        x = np.empty(shape)
        for c, v in enumerate(pool):
            sel = choice == c
            x[sel] = rng.uniform(1.0, 2.0, sel.sum()) if v == "random" else v
        x = x * 2.0 ** rng.choice(np.asarray(offsets), shape)
        if signs == "mixed":
            x = x * rng.choice([-1.0, 1.0], shape)
        elif signs == "negative":
            x = -x
        return x

    return operand((m, k)), operand((k, n))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_operands())
def test_karatsuba_path_gives_the_six_dgemms_bits(case):
    a, b = case
    got, six, exact, prods = _karatsuba(a, b)
    assert (_bits(got) == _bits(six)).all(), (got, six)
    assert (_bits(got) == _bits(exact)).all(), (got, exact)
    if 65 <= a.shape[1] <= 2048:
        assert prods.shape[0] == 5  # the Karatsuba path was taken (smaller K plans other blocks)


def test_whole_call_leaves_the_small_path_and_matches_the_exact_sum():
    # 24 x 2048 @ 2048 x 24 is above the small path's size limit: the general path,
    # its fast path with the Karatsuba dgemm, the guarantee check
    rng = np.random.default_rng(11)
    a = rng.uniform(-1, 1, (24, 2048))
    b = rng.uniform(-1, 1, (2048, 24))
    c, stats = MP64.run_with_stats(a, b, MP64.parse_config(DEFAULT))
    _, _, exact, _ = _karatsuba(a, b)
    assert stats.fallbacks == 0
    assert (_bits(c) == _bits(exact)).all()
