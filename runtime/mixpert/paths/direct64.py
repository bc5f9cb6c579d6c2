"""The MixPert executor's direct path for ``mixpert-fp64``'s most precise config
(issue 9, item 4; the float32 domain's is runtime/mixpert/paths/direct.py).

``segments=9,pairs=slices3sig2``: slices of 20, 21 and 21 bits (segments 0-2, 3-5,
6-8), slice pairs I + J <= 2 kept. With one k-tile (K <= tk: every row and column has
span 0) and K <= 512, the three level sums of the kept slice pairs, ``L0 = A0.B0``,
``L1 = A0.B1 + A1.B0`` and ``L2 = A0.B2 + A1.B1 + A2.B0``, are exact in float64 (at
most 3K products of 21-bit slices, below 2^53), in any order: compiled loops or one
BLAS call of ``A B``'s shape each (direct.exact_product; B's slices are laid out
like B, K x n, :func:`_col_slices`); L1 by Karatsuba, ``(A0 + A1).(B0 + B1) -
L0 - A1.B1``, so five K-long products, not six, in four calls: ``A0.B0`` and
``A2.B0`` are one product of A's slices 0 and 2 stacked (each slice stored once).
Their combination ``L0 2^42 + L1 2^21
+ L2`` is rounded once exactly (:func:`_round_levels`): X of step 5 (docs/numerics.md,
"mixpert") rounded as the general path's epilogue rounds it. Then the float64
domain's guarantee: :func:`_surely_certified` proves, from upper bounds of
mixpert_bound.fp64_doubtful's error bound (constants per call: one k-tile, the
dropped pairs' weight :data:`_DROPPED` fixed by the config) and lower bounds of what
it compares them with, that fp64_doubtful would mark no output doubtful; where that
proof fails for some output, fp64_doubtful and recompute run as on the small and
general paths. The same bits and statistics either way.

Step 1 keeps every bit (W = 62 >= 53), step 2 is ``rint`` (or ``trunc``) of the
element times ``2^(W-1-E)`` (exact), the slices are truncated quotients by 2^42 and
2^21. Left to the small path's loops (:data:`NOT_TAKEN`, ``c`` untouched): other
configs, inf / NaN, more than one k-tile, K over 512, a row or column whose largest
magnitude is outside [2^-960, 2^500) (``2^(W-1-E)`` must stay finite, no output may
overflow).
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import register_jitable

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.jit.lazy_link import unlinked_lazy
from mixjit.runtime.jit.scratch_arrays import carve, stack_array
from mixjit.runtime.mixpert.guarantee.bound import dropped_weight, fp64_doubtful, recompute
from mixjit.runtime.mixpert.pair_blocks import k_bits
from mixjit.runtime.mixpert.paths.direct import (
    DIRECT_STACK_WORDS,
    NOT_TAKEN,
    c_ordered,
    column_tops,
    copy_out,
    exact_product,
    exponent_of,
    pow2,
    row_top,
)
from mixjit.runtime.mixpert.segments import MAGNITUDE, ROUND_TRUNC, ZERO_EXP, width
from mixjit.runtime.mixpert.words import (
    DOMAIN_FP32,
    OK,
    PAIR_STRIDE,
    STAT_RECOMPUTED,
    STAT_SMALL_PATH,
    STAT_TILES,
    W_DIGITS,
    W_DOMAIN,
    W_PAIRS0,
    W_PAIRS1,
    W_ROUNDING,
    W_SEG0_BITS,
    W_SEGMENTS,
    W_TK,
    W_TM,
    W_TN,
)
from mixjit.runtime.numerics.exactsum import round64_scaled


def _slice_words() -> tuple[int, int]:
    """The pair words (``W_PAIRS0``, ``W_PAIRS1``) of ``slices3sig2``: bit ``9p + r``
    set where the slices of segments p and r have ``p // 3 + r // 3 <= 2``."""
    bits = sum(1 << (PAIR_STRIDE * p + r) for p in range(9) for r in range(9) if p // 3 + r // 3 <= 2)
    return bits & ((1 << 63) - 1), bits >> 63


_SLICE_WORD0, _SLICE_WORD1 = _slice_words()
#: the bits of the pair words that hold pairs of a 9-segment config (63 + 18)
_MASK_WORD0 = (1 << 63) - 1
_MASK_WORD1 = (1 << (81 - 63)) - 1

#: mixpert_bound.dropped_weight of ``slices3sig2`` (the same sum, evaluated once, in
#: Python: the dropped pairs have p, r >= 3, so it does not depend on seg0_bits)
_DROPPED = dropped_weight.py_func(
    np.array([[p // 3 + r // 3 <= 2 for r in range(9)] for p in range(9)]), 9, 7, MAGNITUDE)


@register_jitable
def slice_pairs(params) -> bool:
    """Are the kept pairs those of ``segments=9,pairs=slices3sig2`` (segment pairs
    whose slices of 3 segments have ``I + J <= 2``)? Two word comparisons."""
    return (params[W_SEGMENTS] == 9 and (params[W_PAIRS0] & _MASK_WORD0) == _SLICE_WORD0
            and (params[W_PAIRS1] & _MASK_WORD1) == _SLICE_WORD1)


#: the smallest normal float64
_MIN_NORMAL64 = 2.0**-1022

#: the smallest and the largest row / column magnitude the float64 direct path
#: takes: ``2^(w-1-E)`` stays finite (w <= 62) and no output can overflow
_LOW64 = 2.0**-960
_HIGH64 = 2.0**500


@register_jitable
def _exponent64(top: float) -> tuple[int, bool]:
    """A row's exponent (``ZERO_EXP`` for a row of zeros) from its largest magnitude
    ``top`` (NaN kept), and False for an inf, a NaN, or a magnitude outside
    [2^-960, 2^500)."""
    if top == 0.0:
        return np.int64(ZERO_EXP), True
    if _LOW64 <= top < _HIGH64:
        return exponent_of(top), True
    return np.int64(ZERO_EXP), False


@register_jitable
def _rows_exponents64(x, gexp) -> bool:
    """Pass 1 over the rows of A: each row's exponent (``gexp[:, 0]``); False as
    :func:`_exponent64`."""
    ok = True
    for i in range(x.shape[0]):
        e, fine = _exponent64(row_top(x, i, 0, x.shape[1], False))
        gexp[i, 0] = e
        ok &= fine
    return ok


@register_jitable
def _cols_exponents64(x, gexp, top) -> bool:
    """Pass 1 over the columns of B (K x n), read along its rows
    (direct.column_tops; ``top``: n int64 words of scratch); False as
    :func:`_exponent64`."""
    column_tops(x, 0, x.shape[0], top, False)
    ok = True
    for j in range(x.shape[1]):
        e, fine = _exponent64(np.int64(top[j]).view(np.float64))
        gexp[j, 0] = e
        ok &= fine
    return ok


@register_jitable
def _slice3(x: float, to_int: float, trunc: bool):
    """Step 2 of one element ``x`` (``to_int = 2^(w-1-E)``, 0 for a row of zeros): its
    aligned integer ``q = x 2^(w-1-E)`` rounded (exact: step 1 keeps every bit at w >=
    53) cut into three sign-magnitude slices ``q = q0 2^42 + q1 2^21 + q2``, and as
    int64 0/1: is ``x`` off the grid ``2^(E-w+1)`` (``x 2^(w-1-E)`` not an integer, or
    a nonzero element aligned to 0: the alignment changed it; mixpert_bound's
    ``delta``)?"""
    y = x * to_int  # exact, but where it underflows (|y| < 1: then q = 0)
    q = np.trunc(y) if trunc else np.rint(y)
    moved = np.int64((q != y) | ((q == 0.0) & (x != 0.0)))
    q0 = np.trunc(q * 2.0**-42)
    rest = q - q0 * 2.0**42
    q1 = np.trunc(rest * 2.0**-21)
    return q0, q1, rest - q1 * 2.0**21, moved


@register_jitable
def _to_int(g: int, w: int) -> float:
    """Step 2's factor ``2^(w-1-g)`` of a row (column) of exponent ``g``; 0 for none."""
    return 0.0 if g == ZERO_EXP else pow2(w - 1 - g)


@register_jitable
def _row_slices(x, gexp, w: int, trunc: bool, s0, s1, s2, ssum, off) -> None:
    """Pass 2 over the rows of A (m x K, :func:`_slice3`): ``s0 = q0``, ``s1 = q1``,
    ``s2 = q2`` and ``ssum = q0 + q1`` (each m x K); ``off[i]``: how many elements of
    row ``i`` are off their grid (counted, not or-ed: integer sums vectorise)."""
    r, K = x.shape
    for i in range(r):
        to_int = _to_int(gexp[i, 0], w)
        moved = np.int64(0)
        for k in range(K):
            q0, q1, q2, mv = _slice3(x[i, k], to_int, trunc)
            moved += mv
            s0[i, k] = q0
            s1[i, k] = q1
            s2[i, k] = q2
            ssum[i, k] = q0 + q1
        off[i] = moved


@register_jitable
def _col_slices(x, gexp, w: int, trunc: bool, s0, s1, s2, ssum, off, to_int) -> None:
    """:func:`_row_slices` for the columns of B (K x n), in B's layout (each slice
    K x n: the products are then ``A B``-shaped, BLAS's fastest small case); read
    along B's rows with each column's factor in ``to_int`` (n floats of scratch), so
    the loops vectorise."""
    K, n = x.shape
    for j in range(n):
        to_int[j] = _to_int(gexp[j, 0], w)
        off[j] = 0
    for k in range(K):
        for j in range(n):
            q0, q1, q2, mv = _slice3(x[k, j], to_int[j], trunc)
            off[j] += mv
            s0[k, j] = q0
            s1[k, j] = q1
            s2[k, j] = q2
            ssum[k, j] = q0 + q1


@register_jitable
def _level_sum(l0: float, l1: float, l2: float) -> tuple[float, float]:
    """``S = l0 2^42 + l1 2^21 + l2`` of exact integer-valued level sums (|l| < 2^53) as
    ``RN64(S)`` and its exact residual: ``S = H 2^42 + L`` with ``H = l0 + floor(l1 2^-21)``
    and ``L = (l1 mod 2^21) 2^21 + l2`` (both exact in float64), one addition and its
    TwoSum residual. Float arithmetic only (the loop over outputs vectorises)."""
    t = np.floor(l1 * 2.0**-21)
    hi = (l0 + t) * 2.0**42
    lo = (l1 - t * 2.0**21) * 2.0**21 + l2
    s = hi + lo
    bb = s - hi
    return s, (hi - (s - bb)) + (lo - bb)


@register_jitable
def _round_levels(p00, p11, psum, p02, p20, aref, bref, e0: int, out) -> int:
    """``out = RN64((L0 2^42 + L1 2^21 + L2) 2^(ref_A + ref_B + e0))`` from the five
    slice products (Karatsuba: ``L1 = psum - p00 - p11``; ``L2 = (p02 + p20) + p11``,
    every sum exact): the
    level sum rounded once (:func:`_level_sum`), scaled exactly where the result is
    normal (no libm call, branch-free: the loop vectorises); the others (gradual
    underflow, the range's edges) rounded by exactsum.round64_scaled, as the general
    path's epilogue does. Returns how many took that second way."""
    m, n = out.shape
    rare = np.int64(0)
    for i in range(m):
        for j in range(n):
            s, _ = _level_sum(p00[i, j], (psum[i, j] - p00[i, j]) - p11[i, j],
                                     (p02[i, j] + p20[i, j]) + p11[i, j])
            e = aref[i] + bref[j] + e0
            r = s * pow2(min(max(e, -1022), 1023))
            ok = (e >= -1022) & (e <= 1023) & ((abs(r) >= _MIN_NORMAL64) | (s == 0.0))
            out[i, j] = r + 0.0
            rare += np.int64(not ok)
    if rare:
        for i in range(m):
            for j in range(n):
                e = aref[i] + bref[j] + e0
                s, err = _level_sum(p00[i, j], (psum[i, j] - p00[i, j]) - p11[i, j],
                                     (p02[i, j] + p20[i, j]) + p11[i, j])
                r = s * pow2(min(max(e, -1022), 1023))
                if not ((e >= -1022) & (e <= 1023) & ((abs(r) >= _MIN_NORMAL64) | (s == 0.0))):
                    out[i, j] = round64_scaled(s, err, e)
    return rare


#: mixpert_bound's unit roundoff and smallest subnormal
_U64 = 2.0**-53
_TINY = 2.0**-1074
#: the relative margin by which :func:`_surely_certified` widens every quantity it
#: compares with mixpert_bound.fp64_doubtful's (whose own roundings are below 2^-40)
_MARGIN = 2.0**-30
#: the absolute margin (scaled by 2^-(ref_A + ref_B)) it subtracts from lower bounds:
#: above every underflow term of fp64_doubtful for scales 2^-900 .. 2^900
_FLOOR = 2.0**-100


@register_jitable
def _surely_certified(araw, braw, agexp, bgexp, aref, bref, aoff, boff, tk: int, w: int, out, open_j) -> bool:
    """True when mixpert_bound.fp64_doubtful (one k-tile, ``slices3sig2``) would leave
    no output of ``out`` in doubt (``araw`` is A, ``braw`` B: K x n), proved from
    upper bounds of its error bound Err and lower bounds of the quantities it
    compares Err with; False when that proof fails for some output (the caller then
    runs fp64_doubtful itself: same decisions).

    fp64_doubtful's Err of output (i, j), scaled by ``2^-(ref_A + ref_B)``, sums four
    products of its bound columns; with one k-tile they are ``delta, S, K delta, c K``
    for A and ``S, delta, delta, 1`` for B (``delta = 2^(2-w)`` for a row holding an
    element off its grid, else 0: ``aoff`` / ``boff``; ``S`` the row's scaled sum of
    |x|, each term below 2, so ``S <= 2K``). Every column here is at least its value
    there, so Err here, computed with the same formula and widened by
    :data:`_MARGIN`, is at least Err there (every step rounds monotonically). An
    output is proved where ``Err <= tol (|c| (1 - margin) - floor - Err)`` (its pass 1,
    from |c|), or else where ``Err <= tol (|a_i| . |b_j| (1 - margin) - floor)`` (its
    pass 2, the dot product of absolute values: every output it does not mark
    doubtful in pass 1 is decided by that sum). Rows of zeros, and scales
    ``ref_A + ref_B`` outside [-900, 900], are left to fp64_doubtful. ``open_j``: n
    int64 words of scratch."""
    m, K = araw.shape
    n = braw.shape[1]
    lo_a, hi_a = aref[0], aref[0]
    for i in range(m):
        if agexp[i, 0] == ZERO_EXP:
            return False
        lo_a, hi_a = min(lo_a, aref[i]), max(hi_a, aref[i])
    lo_b, hi_b = bref[0], bref[0]
    for j in range(n):
        if bgexp[j, 0] == ZERO_EXP:
            return False
        lo_b, hi_b = min(lo_b, bref[j]), max(hi_b, bref[j])
    if lo_a + lo_b < -900 or hi_a + hi_b > 900:
        return False
    # the Err bound of fp64_doubtful (four columns: nb = 4), with S = 2K, for the four
    # cases of (off_A, off_B)
    nb = 4
    s_up = 2.0 * K * (1.0 + 2.0 * (tk + 2) * _U64) + K * _TINY
    delta = pow2(2 - w)
    cdk = _DROPPED * pow2(2 - 2 * w) * K
    err_up = (1.0 + 4.0 * (nb + 2) * _U64) * (1.0 + _U64)
    inl_up = 1.0 + 4.0 * (nb + 2) * _U64
    tiny = 4.0 * (nb + 2) * _TINY
    e_on = ((cdk * inl_up + tiny) * err_up + tiny) * (1.0 + _MARGIN)  # neither row off its grid
    v_one = delta * s_up + cdk
    e_one = ((v_one * inl_up + tiny) * err_up + tiny) * (1.0 + _MARGIN)  # one of them
    v_both = delta * s_up + s_up * delta + K * delta * delta + cdk
    e_both = ((v_both * inl_up + tiny) * err_up + tiny) * (1.0 + _MARGIN)
    tol = (K * _U64 / (1.0 - K * _U64) - _U64) * (1.0 - 2.0**-40) * (1.0 - _MARGIN)
    for i in range(m):
        fa = pow2(-aref[i])
        e_off, e_on_row = (e_both, e_one) if aoff[i] else (e_one, e_on)  # B's column off its grid or not
        open_n = np.int64(0)  # the outputs |c| does not prove, marked first: a branch-free loop vectorises
        for j in range(n):
            e = e_off if boff[j] else e_on_row
            unproved = np.int64(not _proved(e, abs(out[i, j]), e, fa, pow2(-bref[j]), tol))
            open_j[j] = unproved
            open_n += unproved
        if open_n == 0:
            continue
        for j in range(n):
            if open_j[j] == 0:
                continue
            e = e_off if boff[j] else e_on_row
            fb = pow2(-bref[j])
            if not _proved(e, _abs_dot(araw, braw, i, j), 0.0, fa, fb, tol):
                return False
    return True


@register_jitable
def _abs_dot(a, b, i: int, j: int) -> float:
    """``|a_i| . |b_j|`` (row i of A, column j of B) in four running sums (a chain of
    dependent additions is four times slower): any order of these nonnegative terms
    is within ``K u`` of the exact sum, far inside :data:`_MARGIN`."""
    K = a.shape[1]
    s0 = s1 = s2 = s3 = 0.0
    k = 0
    while k + 4 <= K:
        s0 += abs(a[i, k]) * abs(b[k, j])
        s1 += abs(a[i, k + 1]) * abs(b[k + 1, j])
        s2 += abs(a[i, k + 2]) * abs(b[k + 2, j])
        s3 += abs(a[i, k + 3]) * abs(b[k + 3, j])
        k += 4
    for r in range(k, K):
        s0 += abs(a[i, r]) * abs(b[r, j])
    return (s0 + s1) + (s2 + s3)


@register_jitable
def _proved(e: float, lower: float, less: float, fa: float, fb: float, tol: float) -> bool:
    """:func:`_surely_certified`'s test of one output of error bound ``e``: ``e <= tol
    (lower fa fb (1 - margin) - floor - less)``, with ``lower = |c|`` and ``less = e``
    for its pass 1, the dot product of absolute values and ``less = 0`` for its pass 2."""
    return e <= tol * (lower * fa * fb * (1.0 - _MARGIN) - _FLOOR - less)


@cached_njit(nogil=True)
def direct_gemm64(a, b, c, params, stats) -> int:
    """``C = A @ B`` under ``mixpert-fp64``'s most precise config for float64 operands
    with one k-tile (K <= tk) and K <= 512: the three level sums of the kept slice
    pairs (each exact in float64: products of at most 21-bit slices, three per k; five
    K-long products by Karatsuba), their exact combination rounded once, then the
    float64 domain's guarantee check and recomputation (mixpert_bound, as the small and
    general paths run them), skipped where :func:`_surely_certified` proves it would
    change nothing: the same bits and statistics. :data:`NOT_TAKEN` (``c`` untouched)
    otherwise."""
    if params[W_DOMAIN] == DOMAIN_FP32 or params[W_DIGITS] != MAGNITUDE or not slice_pairs(params):
        return NOT_TAKEN
    m, K = a.shape
    n = b.shape[1]
    if m == 0 or n == 0 or K == 0 or K > params[W_TK] or k_bits(K) > 9:
        return NOT_TAKEN  # one k-tile (span 0); 3 K 2^42 < 2^53
    w = width(9, params[W_SEG0_BITS], MAGNITUDE)
    trunc = params[W_ROUNDING] == ROUND_TRUNC
    n_ints = 4 * (m + n) + n
    ints = stack_array(DIRECT_STACK_WORDS, np.int64) if n_ints <= DIRECT_STACK_WORDS else np.empty(n_ints, np.int64)
    n_floats = 4 * (m + n) * K + 6 * m * n + n
    floats = (stack_array(DIRECT_STACK_WORDS, np.float64) if n_floats <= DIRECT_STACK_WORDS
              else np.empty(n_floats, np.float64))
    agexp = carve(ints, 0, m, 1)
    bgexp = carve(ints, m, n, 1)
    aref = ints[m + n : 2 * m + n]
    bref = ints[2 * m + n : 2 * (m + n)]
    aoff = ints[2 * (m + n) : 3 * m + 2 * n]
    boff = ints[3 * m + 2 * n : 4 * (m + n)]
    top = ints[4 * (m + n) : 4 * (m + n) + n]
    a02 = carve(floats, 0, 2 * m, K)  # [A0 ; A2]: one product with B0 gives A0 B0 and A2 B0
    a0 = carve(floats, 0, m, K)
    a2 = carve(floats, m * K, m, K)
    a1 = carve(floats, 2 * m * K, m, K)
    asum = carve(floats, 3 * m * K, m, K)
    o = 4 * m * K
    b0 = carve(floats, o, K, n)
    b1 = carve(floats, o + n * K, K, n)
    b2 = carve(floats, o + 2 * n * K, K, n)
    bsum = carve(floats, o + 3 * n * K, K, n)
    o += 4 * n * K
    p0020 = carve(floats, o, 2 * m, n)  # [A0 B0 ; A2 B0]
    p00 = carve(floats, o, m, n)
    p20 = carve(floats, o + m * n, m, n)
    p11 = carve(floats, o + 2 * m * n, m, n)
    psum = carve(floats, o + 3 * m * n, m, n)
    p02 = carve(floats, o + 4 * m * n, m, n)
    out = carve(floats, o + 5 * m * n, m, n)
    to_int = floats[o + 6 * m * n : o + 6 * m * n + n]
    # pass 1: each row's (column's) largest magnitude, B's read along its rows
    ac = c_ordered(a)
    bc = c_ordered(b)
    if not _rows_exponents64(ac, agexp) or not _cols_exponents64(bc, bgexp, top):
        return NOT_TAKEN
    _row_slices(ac, agexp, w, trunc, a0, a1, a2, asum, aoff)
    _col_slices(bc, bgexp, w, trunc, b0, b1, b2, bsum, boff, to_int)
    # Karatsuba on the slices: L1 = (A0 + A1)(B0 + B1) - A0 B0 - A1 B1, five K-long
    # products instead of six (A0 B0 and A2 B0 in one call); every product and
    # difference below is exact (|A0 + A1| < 3 2^20, so (A0 + A1)(B0 + B1) < 2^43.2
    # per k and below 2^53 over K <= 512)
    exact_product(a02, b0, p0020)
    exact_product(a0, b2, p02)
    exact_product(a1, b1, p11)
    exact_product(asum, bsum, psum)
    for i in range(m):
        aref[i] = agexp[i, 0] if agexp[i, 0] != ZERO_EXP else 0
    for j in range(n):
        bref[j] = bgexp[j, 0] if bgexp[j, 0] != ZERO_EXP else 0
    _round_levels(p00, p11, psum, p02, p20, aref, bref, 42 - 2 * (w - 1), out)
    for s in range(stats.shape[0]):
        stats[s] = 0
    if not _surely_certified(ac, bc, agexp, bgexp, aref, bref, aoff, boff, params[W_TK], w, out, top):
        stats[STAT_RECOMPUTED] = _check_lazy(ac, agexp, aref, bc, bgexp, bref, params[W_TK], w, out)
    copy_out(c, out)
    stats[STAT_TILES] = -(-m // params[W_TM]) + -(-n // params[W_TN])
    stats[STAT_SMALL_PATH] = 1
    return OK


@cached_njit(nogil=True)
def _check_and_recompute(araw, agexp, aref, b, bgexp, bref, tk: int, w: int, out) -> int:
    """mixpert_bound's guarantee check and exact recomputation for the outputs
    :func:`_surely_certified` could not prove (``b`` is B, K x n: mixpert_bound takes
    its columns as rows, so they are copied here): the count recomputed."""
    braw = np.ascontiguousarray(b.T)
    doubt = fp64_doubtful(araw, agexp, aref, braw, bgexp, bref, tk, w, _DROPPED, out)
    return recompute(araw, braw, doubt, out, False)


# reached through a lazy cell (runtime/jit/lazy_link.py): compiled at the first call whose
# outputs the proof leaves open, not with direct_gemm64 (about 6 s of a first call's
# compile, docs/results/first_use.md)
_check_lazy = unlinked_lazy(_check_and_recompute, types.int64)
