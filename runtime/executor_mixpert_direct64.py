"""The MixPert executor's direct path for ``mixpert-fp64``'s most precise config
(issue 9, item 4; the float32 domain's is runtime/executor_mixpert_direct.py).

``segments=9,pairs=slices3sig2``: slices of 20, 21 and 21 bits (segments 0-2, 3-5,
6-8), slice pairs I + J <= 2 kept. With one k-tile (K <= tk: every row and column has
span 0) and K <= 512, the three level sums of the kept slice pairs, ``L0 = A0.B0``,
``L1 = A0.B1 + A1.B0`` and ``L2 = A0.B2 + A1.B1 + A2.B0``, are exact in float64 (at
most 3K products of 21-bit slices, below 2^53), in any order: compiled loops or BLAS
(executor_mixpert_direct.exact_product); L1 by Karatsuba, ``(A0 + A1).(B0 + B1) -
L0 - A1.B1``, so five K-long products, not six. Their combination ``L0 2^42 + L1 2^21
+ L2`` is rounded once exactly (:func:`_round_levels`): X of step 5 (docs/numerics.md,
"mixpert") rounded as the general path's epilogue rounds it. Then the float64
domain's guarantee check and recomputation run as on the small and general paths
(mixpert_bound.fp64_doubtful, recompute): the same bits and statistics.

Step 1 keeps every bit (W = 62 >= 53), step 2 is ``rint`` (or ``trunc``) of the
element times ``2^(W-1-E)`` (exact), the slices are truncated quotients by 2^42 and
2^21. Left to the small path's loops (:data:`NOT_TAKEN`, ``c`` untouched): other
configs, inf / NaN, more than one k-tile, K over 512, a row or column whose largest
magnitude is outside [2^-960, 2^500) (``2^(W-1-E)`` must stay finite, no output may
overflow).
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from mixjit.runtime.exactsum import round64_scaled
from mixjit.runtime.executor_mixpert_direct import (
    DIRECT_STACK_WORDS,
    NOT_TAKEN,
    exact_product,
    exponent_of,
    pair_kept,
    pow2,
)
from mixjit.runtime.executor_mixpert_words import (
    DOMAIN_FP32,
    OK,
    STAT_RECOMPUTED,
    STAT_SMALL_PATH,
    STAT_TILES,
    W_DIGITS,
    W_DOMAIN,
    W_ROUNDING,
    W_SEG0_BITS,
    W_SEGMENTS,
    W_TK,
    W_TM,
    W_TN,
    kept_pairs,
)
from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.mixpert_bound import dropped_weight, fp64_doubtful, recompute
from mixjit.runtime.pair_blocks import k_bits
from mixjit.runtime.scratch_arrays import c_layout, carve, is_c_contiguous, stack_array
from mixjit.runtime.segments import MAGNITUDE, ROUND_TRUNC, ZERO_EXP, width


@register_jitable
def slice_pairs(params) -> bool:
    """Are the kept pairs those of ``segments=9,pairs=slices3sig2`` (segment pairs
    whose slices of 3 segments have ``I + J <= 2``)?"""
    if params[W_SEGMENTS] != 9:
        return False
    for p in range(9):
        for r in range(9):
            if pair_kept(params, p, r) != (p // 3 + r // 3 <= 2):
                return False
    return True


#: the smallest normal float64
_MIN_NORMAL64 = 2.0**-1022

#: the smallest and the largest row / column magnitude the float64 direct path
#: takes: ``2^(w-1-E)`` stays finite (w <= 62) and no output can overflow
_LOW64 = 2.0**-960
_HIGH64 = 2.0**500


@register_jitable
def _rows_exponents64(x, side_b: bool, gexp, xt) -> bool:
    """Pass 1 of the float64 direct path over the rows of A (columns of B where
    ``side_b``): each row's largest exponent (``gexp[:, 0]``; one k-tile), copying
    the row into ``xt`` (float64 rows: the guarantee check's raw operand); False
    for an inf, a NaN, or a largest magnitude outside [2^-960, 2^500)."""
    r, K = xt.shape
    for i in range(r):
        top = 0.0
        if side_b:
            for k in range(K):
                v = x[k, i]
                xt[i, k] = v
                av = abs(v)
                top = av if av > top else top
                top = av if av != av else top
        else:
            for k in range(K):
                v = x[i, k]
                xt[i, k] = v
                av = abs(v)
                top = av if av > top else top
                top = av if av != av else top
        if top == 0.0:
            gexp[i, 0] = ZERO_EXP
        elif _LOW64 <= top < _HIGH64:
            gexp[i, 0] = exponent_of(top)
        else:
            return False
    return True


@register_jitable
def _slices(xt, gexp, w: int, trunc: bool, side_b: bool, s0, s1, ssum, s02) -> None:
    """Pass 2: each element aligned to its row's exponent E (step 2: ``q = x 2^(w-1-E)``
    rounded to an integer, exact: step 1 keeps every bit at w >= 53) and cut into its
    three slices ``q = q0 2^42 + q1 2^21 + q2`` (sign-magnitude), laid out for the
    four products of :func:`direct_gemm64`: ``s0 = q0``, ``s1 = q1``, ``ssum = q0 + q1``
    and ``s02 = [q0 | q2]`` for A, ``[q2 | q0]`` for B."""
    r, K = xt.shape
    for i in range(r):
        g = gexp[i, 0]
        to_int = 0.0 if g == ZERO_EXP else pow2(w - 1 - g)
        for k in range(K):
            y = xt[i, k] * to_int
            q = np.trunc(y) if trunc else np.rint(y)
            q0 = np.trunc(q * 2.0**-42)
            rest = q - q0 * 2.0**42
            q1 = np.trunc(rest * 2.0**-21)
            q2 = rest - q1 * 2.0**21
            s0[i, k] = q0
            s1[i, k] = q1
            ssum[i, k] = q0 + q1
            s02[i, K + k if side_b else k] = q0
            s02[i, k if side_b else K + k] = q2


@register_jitable
def _round_levels(l0: float, l1: float, l2: float, e: int) -> float:
    """``RN64((l0 2^42 + l1 2^21 + l2) 2^e)`` for exact integer-valued level sums
    (|l| < 2^53): the sum as ``H 2^42 + L`` in int64 (both exact in float64), one
    addition (RN64 of the exact sum) and its TwoSum residual, then the scaling with
    gradual underflow (exactsum.round64_scaled, as the general path's epilogue)."""
    i0, i1, i2 = np.int64(l0), np.int64(l1), np.int64(l2)
    hi = np.float64(i0 + (i1 >> 21)) * 2.0**42
    lo = np.float64((i1 & ((1 << 21) - 1)) * (1 << 21) + i2)
    s = hi + lo
    bb = s - hi
    err = (hi - (s - bb)) + (lo - bb)
    if -1022 <= e <= 1023:
        r = s * pow2(e)  # exact where the result is normal: no libm call
        if abs(r) >= _MIN_NORMAL64 or s == 0.0:
            return r + 0.0
    return round64_scaled(s, err, e)


@cached_njit(nogil=True)
def direct_gemm64(a, b, c, params, stats) -> int:
    """``C = A @ B`` under ``mixpert-fp64``'s most precise config for float64 operands
    with one k-tile (K <= tk) and K <= 512: the three level sums of the kept slice
    pairs (each exact in float64: products of at most 21-bit slices, three per k; five
    K-long products by Karatsuba),
    their exact combination rounded once, then the float64 domain's guarantee check
    and recomputation (mixpert_bound, as the small and general paths run them): the
    same bits and statistics. :data:`NOT_TAKEN` (``c`` untouched) otherwise."""
    if params[W_DOMAIN] == DOMAIN_FP32 or params[W_DIGITS] != MAGNITUDE or not slice_pairs(params):
        return NOT_TAKEN
    m, K = a.shape
    n = b.shape[1]
    if m == 0 or n == 0 or K == 0 or K > params[W_TK] or k_bits(K) > 9:
        return NOT_TAKEN  # one k-tile (span 0); 3 K 2^42 < 2^53
    w = width(9, params[W_SEG0_BITS], MAGNITUDE)
    trunc = params[W_ROUNDING] == ROUND_TRUNC
    ints = stack_array(DIRECT_STACK_WORDS, np.int64) if 2 * (m + n) <= DIRECT_STACK_WORDS else np.empty(
        2 * (m + n), np.int64)
    n_floats = 6 * (m + n) * K + 5 * m * n
    floats = (stack_array(DIRECT_STACK_WORDS, np.float64) if n_floats <= DIRECT_STACK_WORDS
              else np.empty(n_floats, np.float64))
    agexp = carve(ints, 0, m, 1)
    bgexp = carve(ints, m, n, 1)
    aref = ints[m + n : 2 * m + n]
    bref = ints[2 * m + n : 2 * (m + n)]
    araw = carve(floats, 0, m, K)
    a0 = carve(floats, m * K, m, K)
    a1 = carve(floats, 2 * m * K, m, K)
    asum = carve(floats, 3 * m * K, m, K)
    a02 = carve(floats, 4 * m * K, m, 2 * K)
    o = 6 * m * K
    braw = carve(floats, o, n, K)
    b0 = carve(floats, o + n * K, n, K)
    b1 = carve(floats, o + 2 * n * K, n, K)
    bsum = carve(floats, o + 3 * n * K, n, K)
    b20 = carve(floats, o + 4 * n * K, n, 2 * K)
    o += 6 * n * K
    p00 = carve(floats, o, m, n)
    p11 = carve(floats, o + m * n, m, n)
    psum = carve(floats, o + 2 * m * n, m, n)
    p02 = carve(floats, o + 3 * m * n, m, n)
    out = carve(floats, o + 4 * m * n, m, n)
    if is_c_contiguous(a):
        ok = _rows_exponents64(c_layout(a), False, agexp, araw)
    else:
        ok = _rows_exponents64(a, False, agexp, araw)
    if not ok:
        return NOT_TAKEN
    if is_c_contiguous(b):
        ok = _rows_exponents64(c_layout(b), True, bgexp, braw)
    else:
        ok = _rows_exponents64(b, True, bgexp, braw)
    if not ok:
        return NOT_TAKEN
    _slices(araw, agexp, w, trunc, False, a0, a1, asum, a02)
    _slices(braw, bgexp, w, trunc, True, b0, b1, bsum, b20)
    # Karatsuba on the slices: L1 = (A0 + A1)(B0 + B1) - A0 B0 - A1 B1, five K-long
    # products instead of six; every product and difference below is exact (|A0 + A1|
    # < 3 2^20, so (A0 + A1)(B0 + B1) < 2^43.2 per k and below 2^53 over K <= 512)
    exact_product(a0, b0, p00)
    exact_product(a1, b1, p11)
    exact_product(asum, bsum, psum)
    exact_product(a02, b20, p02)
    for i in range(m):
        aref[i] = agexp[i, 0] if agexp[i, 0] != ZERO_EXP else 0
    for j in range(n):
        bref[j] = bgexp[j, 0] if bgexp[j, 0] != ZERO_EXP else 0
    for i in range(m):
        for j in range(n):
            l1 = (psum[i, j] - p00[i, j]) - p11[i, j]
            out[i, j] = _round_levels(p00[i, j], l1, p02[i, j] + p11[i, j], aref[i] + bref[j] - 2 * (w - 1) + 42)
    for s in range(stats.shape[0]):
        stats[s] = 0
    dropped = dropped_weight(kept_pairs(params), 9, params[W_SEG0_BITS], MAGNITUDE)
    doubt = fp64_doubtful(araw, agexp, aref, braw, bgexp, bref, params[W_TK], w, dropped, out)
    stats[STAT_RECOMPUTED] = recompute(araw, braw, doubt, out, False)
    for i in range(m):
        for j in range(n):
            c[i, j] = out[i, j]
    stats[STAT_TILES] = -(-m // params[W_TM]) + -(-n // params[W_TN])
    stats[STAT_SMALL_PATH] = 1
    return OK
