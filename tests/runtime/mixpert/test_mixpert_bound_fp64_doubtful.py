"""The faster mixpert-fp64 guarantee check recomputes what the plain check did, and
the row-wise many-block epilogue gives the plain epilogue's bits.

``mixpert_bound.fp64_doubtful`` sums Err per output where it has few columns (raised
by its rounding bound) and brackets the sequential dot product of absolute values by
a BLAS one. A pure-Python transcription of the plain check (Err from exact rationals,
taken at the low and at the high end of what any summation order gives; everything
else in the plain check's float operations and order) gives two sets: the faster
check must flag every output of the low one (it misses nothing the plain check
would recompute, whatever its GEMM's order) and nothing outside the high one (the
extra outputs are only those within rounding of the threshold). Data: adversarial
exponent spreads inside one k-tile and across k-tiles, with the computed product,
with zeros (every output goes to the dot products, and with more than m + n of
them, to the bracketed BLAS path) and with the product scaled down (cancellation).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_mixpert import rn
from test_mixpert_guarantee import _adversarial64

from mixjit.runtime.mixpert import words
from mixjit.runtime.mixpert.executor import prepare_operand
from mixjit.runtime.mixpert.guarantee.bound import dropped_weight, fp64_doubtful
from mixjit.runtime.mixpert.pair_blocks import BLOCK_SHIFT, plan_block_array
from mixjit.runtime.mixpert.paths.fast import epilogue_many
from mixjit.runtime.mixpert.segments import ZERO_EXP, width
from mixjit.runtime.schemes import get_scheme

MP64 = get_scheme("mixpert-fp64")
U = 2.0**-53
TINY = 2.0**-1074
# one k-tile (Err summed per output), two (still per output), several (BLAS GEMM)
LABELS = ["", "pairs=sig7", "segments=9,pairs=slices3sig2,tile=2x3x2", "segments=7,pairs=sig6,tile=1x4x1",
          "tile=1x16x1"]


def _bound_rows(raw, gexp, ref, tk, w, side_b, c):
    """The plain check's ``_bound_operand`` (math.ldexp for its powers of two)."""
    r, k = raw.shape
    nkt = gexp.shape[1]
    out = np.zeros((r, 4 * nkt))
    up = 1.0 + 2.0 * (tk + 2) * U
    for i in range(r):
        for t in range(nkt):
            e = int(gexp[i, t])
            if e == ZERO_EXP:
                continue
            k0, k1 = t * tk, min(t * tk + tk, k)
            grid = e - w + 1
            exact = True
            s = 0.0
            for kk in range(k0, k1):
                x = float(raw[i, kk])
                if x == 0.0 or not math.isfinite(x):
                    continue
                s += math.ldexp(abs(x), -int(ref[i]))
                if Fraction(x) % Fraction(2) ** grid != 0:  # off its group's grid
                    exact = False
            delta = 0.0 if exact else math.ldexp(1.0, e - int(ref[i]) - w + 2)
            sc = s * up + (k1 - k0) * TINY
            top = math.ldexp(1.0, e - int(ref[i]))
            cols = [sc, delta, delta, top] if side_b else [delta, sc, (k1 - k0) * delta, c * (k1 - k0) * top]
            out[i, 4 * t:4 * t + 4] = cols
    return out


def _plain_check(pa, pb, tk, w, dropped, c, high):
    """The plain check's decisions with Err at the low (``high=False``) or the high end
    of what any order of its GEMM gives."""
    m, k = pa.raw.shape
    n = pb.raw.shape[0]
    cd = math.ldexp(dropped, 2 - 2 * w)
    xa = _bound_rows(pa.raw, pa.gexp, pa.ref, tk, w, False, cd)
    yb = _bound_rows(pb.raw, pb.gexp, pb.ref, tk, w, True, cd)
    nb = xa.shape[1]
    err_up = (1.0 + 4.0 * (nb + 2) * U) * (1.0 + U)
    err_abs = 4.0 * (nb + 2) * TINY
    tol = (k * U / (1.0 - k * U) - U) * (1.0 - 2.0**-40)
    dot_down = 1.0 - 2.0 * (k + 2) * U / (1.0 - (k + 2) * U)
    slack = Fraction(8 * (nb + 2), 2**53)
    doubt = np.zeros((m, n), dtype=bool)
    for i in range(m):
        for j in range(n):
            exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(xa[i], yb[j]))
            bound = exact * (1 + slack) + 8 * (nb + 2) * Fraction(TINY) if high else exact * (1 - slack)
            err = float(bound)
            err = math.nextafter(err, math.inf) if high else math.nextafter(err, 0.0) if err > 0 else 0.0
            e = err * err_up + err_abs
            if e == 0.0:
                continue
            sc = int(pa.ref[i] + pb.ref[j])
            cs = math.ldexp(abs(float(c[i, j])), -sc) * (1.0 - 2.0 * U) - math.ldexp(1.0, -1075 - sc) - 2.0 * TINY
            if math.isfinite(cs) and e <= tol * (cs - e):
                continue
            low = 0.0
            for x, y in zip(pa.raw[i], pb.raw[j]):
                x, y = float(x), float(y)
                if x != 0.0 and y != 0.0 and math.isfinite(x) and math.isfinite(y):
                    low += math.ldexp(abs(x), -int(pa.ref[i])) * math.ldexp(abs(y), -int(pb.ref[j]))
            low = (low - (k + 2) * TINY) * dot_down
            doubt[i, j] = e > tol * low
    return doubt


def _both(a, b, label, c):
    cfg = MP64.parse_config(label) if label else MP64.default_config(np.float64)
    params = np.asarray(cfg.words(), dtype=np.int64)
    pa = prepare_operand(a, False, params)
    pb = prepare_operand(b, True, params)
    tk = int(params[words.W_TK])
    w = int(width(params[words.W_SEGMENTS], params[words.W_SEG0_BITS], params[words.W_DIGITS]))
    dropped = dropped_weight(words.kept_pairs(params), params[words.W_SEGMENTS], params[words.W_SEG0_BITS],
                             params[words.W_DIGITS])
    new = fp64_doubtful(pa.raw, pa.gexp, pa.ref, pb.raw, pb.gexp, pb.ref, tk, w, dropped, c)
    return new, _plain_check(pa, pb, tk, w, dropped, c, False), _plain_check(pa, pb, tk, w, dropped, c, True)


def _assert_between(a, b, label, c):
    new, low, high = _both(a, b, label, c)
    missed = np.argwhere(low & ~new)
    assert missed.size == 0, f"{label!r}: the faster check keeps {missed.tolist()}, the plain one recomputes them"
    extra = np.argwhere(new & ~high)
    assert extra.size == 0, f"{label!r}: the faster check recomputes {extra.tolist()} beyond the plain one's"
    return new


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_adversarial64(), label=st.sampled_from(LABELS), kind=st.sampled_from(["product", "zeros", "scaled"]))
def test_faster_check_recomputes_what_the_plain_check_does(case, label, kind):
    a, b = case
    with np.errstate(all="ignore"):
        prod = a @ b
    c = {"product": prod, "zeros": np.zeros_like(prod), "scaled": prod * 2.0**-30}[kind]
    c = np.where(np.isfinite(c), c, 0.0)
    try:
        _assert_between(a, b, label, c)
    except ValueError as err:  # spans beyond float64's range: prepare refuses none, the check may
        assert "binades" in str(err)


@pytest.mark.parametrize("label", LABELS)
def test_bracketed_dot_products_decide_as_the_sequential_ones(label):
    # wide-range data and c = 0: every output goes to the dot products, more than
    # m + n of them, so the BLAS bracket path runs; about half are doubtful
    rng = np.random.default_rng(3)
    m, k, n = 9, 40, 7
    a = rng.choice([-1.0, 1.0], (m, k)) * 2.0 ** rng.uniform(-30, 30, (m, k))
    b = rng.choice([-1.0, 1.0], (k, n)) * 2.0 ** rng.uniform(-30, 30, (k, n))
    a[0, :5] = 2.0**-1074 * np.arange(1, 6)  # subnormal inputs: products underflow
    new = _assert_between(a, b, label, np.zeros((m, n)))
    if label in ("", "segments=9,pairs=slices3sig2,tile=2x3x2"):  # both decisions occur (36 and 10 of 63)
        assert 0 < new.sum() < m * n


def test_epilogue_rows_give_the_plain_epilogue_bits():
    # block results with exact ties (Ziv's test fails), zeros, signed cancellations to
    # 0 and scales at the ends of the normal range (the row pass's certified branch
    # gives way to certain64's slow branch and the exact sum there)
    cfg = MP64.default_config(np.float64)
    params = np.asarray(cfg.words(), dtype=np.int64)
    k = 64
    blocks, ok = plan_block_array(words.kept_pairs(params), cfg.segments, cfg.seg0_bits, k, params[2], 0)
    assert ok
    nb = blocks.shape[0]
    rng = np.random.default_rng(11)
    m, n = 12, 10
    ds = rng.integers(-(2**40), 2**40, (nb, m, n)).astype(np.float64)
    ds[:, 0, :] = 0.0
    ds[:, 1, :] = rng.integers(-3, 4, (nb, n))  # small sums: ties after scaling
    ds[:, 2, :] = 0.0  # row 2: two blocks cancel exactly
    ds[0, 2, :] = rng.integers(-(2**30), 2**30, n)
    ds[1, 2, :] = -ds[0, 2, :] * 2.0 ** (blocks[0, BLOCK_SHIFT] - blocks[1, BLOCK_SHIFT])
    low = int(blocks[:, BLOCK_SHIFT].min())
    ea = np.array([-1100, -1000, 0, 850, -low - 1074, -low - 1022, 50, -60, 880, 3, -low - 1080, 0],
                  dtype=np.int64)
    eb = np.array([0, 1, -1, 5, -5, 10, -10, 0, 2, -2], dtype=np.int64)
    out = np.empty((m, n))
    epilogue_many(ds, blocks, ea, eb, out, False, 0)
    for i in range(m):
        for j in range(n):
            x = sum(Fraction(float(ds[b, i, j])) * Fraction(2) ** int(blocks[b, BLOCK_SHIFT]) for b in range(nb))
            x *= Fraction(2) ** int(ea[i] + eb[j])
            want = rn(x, "fp64")
            assert out[i, j] == want, (i, j, out[i, j], want)
