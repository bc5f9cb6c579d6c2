"""The MixPert executor's direct paths for small GEMMs: no block plan, one exact
product of the kept pairs, one rounding per output (issue 9, item 4); the float32
domain here, the float64 domain in executor_mixpert_direct64.

For a GEMM of a few thousand multiply-adds the small path's fixed work dominates:
the config-only planning (kept pairs, the exact and the wide block plans: several
small arrays), an integer split per element, one block operand and one product per
planned block, and the epilogue's TwoSum per output. The direct paths compute the
same exact sum X (docs/numerics.md, "mixpert", step 5) more directly, and hand every
call they cannot do exactly to the small path (:data:`NOT_TAKEN`, ``c`` untouched).

*Float32 domain* (:func:`direct_gemm`). Where the kept pairs are a *prefix
rectangle* ``[0..i1] x [0..j1]`` of the segment pairs, possibly without its corner
``(i1, j1)`` (the paper's levels ``I``, ``II``, ``III``, ``full``, and ``IV`` =
``full`` without ``(2, 2)``), with sign-magnitude digits, X of each output is, per k,

    sum_{(p, r) kept} s_p t_r 2^(7(s-1-p) + 7(s-1-r))
        = (x y - [corner] x_c y_c) 2^(7(s-1-i1) + 7(s-1-j1))

with ``x`` = segments ``0..i1`` of the aligned mantissa as one integer (``q``
itself when ``i1 = s - 1``) and ``x_c`` = segment ``i1`` (the corner digit), the
same for B. Each term is an integer times the k-tile's power-of-two scale
``2^(E - E_ref)``, so where

    bits(x) + bits(y) + 1 + ceil(log2 K) + span_A(i) + span_B(j) <= 53

(``bits``: pair_blocks.range_bits; ``span``: the row's / column's exponent span
along K) every partial sum of ``[x | x_c] . [y | -y_c]`` over 2K terms is exact in
float64, in any order, with or without FMA. It runs as two products: ``x . y`` in
float64 and, where there is a corner, ``x_c . (-y_c)`` in float32, exact where ``14 +
ceil(log2 K) + span_A + span_B <= 24`` (:func:`corner_exact32`; implied by the bound
above for the levels' 21-bit prefixes; a call that meets the one but not the other
goes to the small path), at twice float64's SIMD width; their sum is the exact value
(one order of the 2K terms). Above :data:`NARROW_WORK` multiply-adds B's digits keep
B's layout (K x n, :func:`_cols_operands`) and each product is one BLAS call of
``A B``'s shape (:func:`kept_products`: OpenBLAS's small-matrix kernels, about twice
as fast at 32 x 32 as loops or a BLAS call with a transposed operand); at or below
it B is transposed first and its digits and the products run as row loops
(:func:`exact_dot`), which cost less than a BLAS call there. The output is ``RN32``
of that exact value times a power of two: one float32 conversion. The same bound
makes the general
path's exact plan the pair rectangles (no cut), its wide plan no shorter, and puts
every row on its fast path, so the statistics are the small path's
(``STAT_SMALL_PATH = 1``, tiles, the widest span, nothing recomputed).
The split is float arithmetic only: step 1 (rounding a float32 value to W
significant bits, ties to even) is Veltkamp's splitting in float64 (:func:`_rounded`,
checked against the integer rounding for every float32 significand), step 2 is
``rint`` (or ``trunc``) of the rounded value times ``2^(W-1-E)`` (exact), the digits
are truncated quotients by powers of two; pass 1 takes only each group's largest
magnitude (the rounding is monotonic) and copies nothing: pass 2 reads the
operands (C-ordered ones as they are, :func:`c_ordered`); it counts each tile's
nonzero, zeroed and far-shifted elements in one packed int64 (:func:`_counts`).
Refused (to the small path): balanced digits, other pair sets, inf / NaN, magnitudes
from 2^127 up (where step 1 truncates instead of carrying), a fallback tile, an
element aligned to 0 (step 6), spans over the bound.

*Float64 domain*: runtime/mixpert/paths/direct64.py (``direct_gemm64``), which
shares this module's pair-set decoder, exact product and scratch size.

Only the code of the operands' dtype is compiled at a site (executor_mixpert_small's
``_direct`` overload).
"""

from __future__ import annotations

import numpy as np
from numba.extending import overload, register_jitable

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.jit.scratch_arrays import c_layout, carve, is_c_contiguous, stack_array
from mixjit.runtime.mixpert.pair_blocks import SPAN_RESERVE, k_bits, range_bits
from mixjit.runtime.mixpert.segments import MAGNITUDE, ROUND_TRUNC, ZERO_EXP, digit_bits, width
from mixjit.runtime.mixpert.words import (
    ALIGN_ROW,
    DOMAIN_FP32,
    OK,
    PAIR_STRIDE,
    STAT_SMALL_PATH,
    STAT_TILES,
    STAT_WIDEST_SPAN,
    W_ALIGN,
    W_DIGITS,
    W_DOMAIN,
    W_FALLBACK,
    W_PAIRS0,
    W_PAIRS1,
    W_ROUNDING,
    W_SEG0_BITS,
    W_SEGMENTS,
    W_TK,
    W_TM,
    W_TN,
)

#: :func:`direct_gemm`'s answer for a call it leaves to the small path
NOT_TAKEN = -1


@register_jitable
def _pair_row(params, p: int) -> int:
    """The kept pairs ``(p, 0..8)`` as 9 bits (bit r: pair ``(p, r)``); rows 0-6 lie in
    ``W_PAIRS0`` (bits 0-62), rows 7-8 in ``W_PAIRS1``."""
    word = params[W_PAIRS0] if p < 7 else params[W_PAIRS1]
    return (word >> (PAIR_STRIDE * (p % 7))) & ((1 << PAIR_STRIDE) - 1)


@register_jitable
def prefix_pairs(params) -> tuple[int, int, bool, bool]:
    """``(i1, j1, corner, ok)``: the kept pairs are the rectangle ``[0..i1] x [0..j1]``
    without its corner ``(i1, j1)`` where ``corner``, with it where not; ``ok`` is
    False for any other pair set (or none). One 9-bit row of the pair mask per
    segment: this runs on every call."""
    s = params[W_SEGMENTS]
    inside = (1 << s) - 1  # pairs (p, r) with r < s
    i1 = -1
    j1 = -1
    for p in range(s):
        row = _pair_row(params, p) & inside
        if row != 0:
            i1 = p
            for r in range(s):
                if (row >> r) & 1:
                    j1 = max(j1, r)
    if i1 < 0:
        return 0, 0, False, False
    full = (1 << (j1 + 1)) - 1
    corner = (_pair_row(params, i1) >> j1) & 1 == 0
    for p in range(s):
        want = full if p < i1 else (full ^ (1 << j1) if corner and p == i1 else (full if p == i1 else 0))
        if _pair_row(params, p) & inside != want:
            return i1, j1, corner, False
    return i1, j1, corner, True


@register_jitable
def direct_bits(i1: int, j1: int, seg0_bits: int, digits: int, K: int) -> int:
    """Bits of a direct dot product's terms and sum on its grid, spans aside:
    ``bits(x) + bits(y) + 1 + ceil(log2 K)`` (module docstring)."""
    return range_bits(0, i1, seg0_bits, digits) + range_bits(0, j1, seg0_bits, digits) + 1 + k_bits(K)


@register_jitable
def direct_exact(bits: int, widest: int, K: int) -> bool:
    """Does the bound of the module docstring hold for a call whose widest span
    (row of A + column of B) is ``widest``, and is the general path's exact plan
    feasible (a budget of two segments at least, pair_blocks.plan_block_array)?"""
    return bits + widest <= 53 and k_bits(K) + min(widest, SPAN_RESERVE) <= 53 - 2 * 7


@register_jitable
def corner_exact32(widest: int, K: int) -> bool:
    """Is the corner product ``x_c . (-y_c)`` (digits below 2^7, on the grid
    ``2^-widest``) exact in float32 in any order: ``14 + ceil(log2 K) + widest <= 24``?"""
    return 2 * 7 + k_bits(K) + widest <= 24


@register_jitable
def corner_shift(i1: int, j1: int, segments: int, digits: int) -> int:
    """The weight exponent of pair ``(i1, j1)``: ``b(s-1-i1) + b(s-1-j1)``."""
    b = digit_bits(digits)
    return b * (segments - 1 - i1) + b * (segments - 1 - j1)


@register_jitable
def _rounded(v: float, splitter: float) -> float:
    """Step 1's value ``M 2^(e-w+1)`` of the element ``v`` (a float32 value in
    float64): ``v`` rounded to ``w`` significant bits, ties to even, by Veltkamp's
    splitting with ``splitter = 2^(53-w) + 1`` in float64 (no FMA, no reassociation).
    Checked against the integer rounding of segments.split_element for every float32
    significand (tests/runtime/mixpert/test_mixpert_direct_paths.py); float32 subnormals are normal
    float64 values, so they are rounded relative to their own leading bit, as step 1
    says. A carry gives ``2^(e+1)``, the value of step 1's renormalised split; the
    truncation at 2^128 is not reproduced (the direct path refuses magnitudes from
    2^127 up)."""
    g = v * splitter
    return g - (g - v)


@register_jitable
def exponent_of(x: float) -> int:
    """``floor(log2 |x|)`` of a nonzero normal float64 (its exponent field)."""
    return np.int64((np.float64(x).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)) - 1023


#: magnitudes the direct path leaves to the small path: from 2^127 up (step 1's
#: rounding may reach 2^128 there and truncate instead), and inf / NaN
_TOO_BIG = 2.0**127


@register_jitable
def _group_exponent(top: float, splitter: float) -> int:
    """The largest element exponent of a group whose largest magnitude is ``top``
    (step 1's rounding is monotonic, so the largest exponent is the largest
    magnitude's); ``ZERO_EXP`` for a group of zeros."""
    return exponent_of(_rounded(top, splitter)) if top != 0.0 else np.int64(ZERO_EXP)


@register_jitable
def _splitter(w: int) -> float:
    """Veltkamp's constant for rounding to ``w <= 53`` bits: ``2^(53-w) + 1``."""
    return pow2(53 - w) + 1.0


#: the bits of a float64 (a float32) without its sign
_NO_SIGN = (1 << 63) - 1
_NO_SIGN32 = (1 << 31) - 1


@register_jitable
def magnitude_bits(v, to32: bool) -> int:
    """The bits of ``|v|`` as a float64 (rounded to float32 first where ``to32``): the
    same order as the magnitudes for finite values and inf, NaN above them all, so
    that an integer maximum (it vectorises) finds the largest magnitude."""
    x = np.float64(np.float32(v)) if to32 else np.float64(v)
    return np.float64(x).view(np.int64) & _NO_SIGN  # view of a new value: a phi node's cannot be viewed


@register_jitable
def row_top(x, i: int, k0: int, k1: int, to32: bool) -> float:
    """Row ``i``'s largest magnitude over ``k0:k1`` (a NaN kept; rounded to float32
    first where ``to32``): pass 1 of the direct paths over a row of A (an integer
    maximum: it vectorises; where ``to32`` on float32 bits, twice as many per vector
    instruction)."""
    if to32:
        top32 = np.int32(0)
        for k in range(np.uint64(k0), np.uint64(k1)):
            top32 = max(top32, np.float32(x[i, k]).view(np.int32) & np.int32(_NO_SIGN32))
        return np.float64(np.int32(top32).view(np.float32))
    top = np.int64(0)
    for k in range(np.uint64(k0), np.uint64(k1)):
        top = max(top, magnitude_bits(x[i, k], False))
    return np.int64(top).view(np.float64)


@register_jitable
def column_tops(x, k0: int, k1: int, top, to32: bool) -> None:
    """:func:`row_top` for every column of B (K x n) at once, read along B's rows
    (the maxima vectorise): ``top[j]`` the bits of column j's largest magnitude over
    rows ``k0:k1``: of its float32 value in an int32 ``top`` where ``to32``, else of
    its float64 value (:func:`magnitude_bits`) in an int64 one."""
    n = x.shape[1]
    for j in range(n):
        top[j] = 0
    if to32:
        for k in range(np.uint64(k0), np.uint64(k1)):
            for j in range(n):
                top[j] = max(top[j], np.float32(x[k, j]).view(np.int32) & np.int32(_NO_SIGN32))
    else:
        for k in range(np.uint64(k0), np.uint64(k1)):
            for j in range(n):
                top[j] = max(top[j], magnitude_bits(x[k, j], False))


@register_jitable
def _rows_exponents(x, splitter: float, tk: int, gexp) -> bool:
    """Pass 1 over the rows of A (m x K): each row's largest element exponent per
    k-tile (``gexp``, ``ZERO_EXP`` for none); False where a row holds an inf, a NaN
    or a magnitude of 2^127 or more. Maxima only: no copy, no work per element
    beyond a conversion."""
    m, K = x.shape
    for i in range(m):
        for t in range(gexp.shape[1]):
            top = row_top(x, i, t * tk, min(t * tk + tk, K), True)
            if not (top < _TOO_BIG):
                return False
            gexp[i, t] = _group_exponent(top, splitter)
    return True


@register_jitable
def _cols_exponents(x, splitter: float, tk: int, gexp, top) -> bool:
    """:func:`_rows_exponents` for the columns of B (K x n) (:func:`column_tops`);
    ``top`` is n int32 words of scratch."""
    K, n = x.shape
    for t in range(gexp.shape[1]):
        column_tops(x, t * tk, min(t * tk + tk, K), top, True)
        for j in range(n):
            v = np.float64(np.int32(top[j]).view(np.float32))
            if not (v < _TOO_BIG):
                return False
            gexp[j, t] = _group_exponent(v, splitter)
    return True


@register_jitable
def _groups(gexp, ref, span, group_rows: int) -> None:
    """Group exponents (the largest of each group's rows, sign-magnitude digits: no
    bump), then each row's reference exponent (its largest group exponent; 0 for a
    row of zeros) and span (reference minus its smallest group exponent)."""
    r, nkt = gexp.shape
    if group_rows > 1:
        for g0 in range(0, r, group_rows):
            g1 = min(g0 + group_rows, r)
            for t in range(nkt):
                top = np.int64(ZERO_EXP)
                for i in range(g0, g1):
                    top = max(top, gexp[i, t])
                for i in range(g0, g1):
                    gexp[i, t] = top
    for i in range(r):
        hi = np.int64(ZERO_EXP)
        lo = np.int64(-ZERO_EXP)
        for t in range(nkt):
            e = gexp[i, t]
            if e != ZERO_EXP:
                hi = max(hi, e)
                lo = min(lo, e)
        ref[i] = hi if hi != ZERO_EXP else 0
        span[i] = hi - lo if hi != ZERO_EXP else 0


@register_jitable
def pow2(n: int) -> float:
    """``2^n`` as a float64 for ``-1022 <= n <= 1023`` (from its bits: no libm call)."""
    return np.int64((n + 1023) << 52).view(np.float64)


@register_jitable
def _aligned_digits(x, splitter: float, to_int: float, trunc: bool, near: float, down: float, cut: float):
    """Steps 1 and 2 of one element ``x`` (rounded to float32) of a group: the digits
    ``0..i1`` of its aligned integer ``q`` as one integer (``trunc(q 2^-7(s-1-i1))``,
    ``down`` the power of two), and digit ``i1`` alone (``cut = 2^-7``; with ``cut =
    0`` that same integer: where ``i1 = 0`` it is the only digit); and as int64 0/1:
    is it nonzero, aligned to 0 although nonzero (step 6), shifted past the fallback
    threshold (``|x| < near``)?"""
    v = _rounded(np.float64(np.float32(x)), splitter)
    y = v * to_int
    q = np.trunc(y) if trunc else np.rint(y)
    use = v != 0.0
    hi = np.trunc(q * down)
    lo = hi - np.trunc(hi * cut) * 128.0
    return hi, lo, np.int64(use), np.int64(use & (q == 0.0)), np.int64(use & (abs(v) < near))


@register_jitable
def _group_scales(g: int, ref: int, w: int, threshold: int) -> tuple[float, float, float]:
    """For a group of exponent ``g`` (``ZERO_EXP``: none) in a row (column) of
    reference exponent ``ref``: step 2's factor ``2^(w-1-g)``, the exact scale
    ``2^(g - ref)`` of its digits, and the magnitude below which an element is
    shifted by more than ``threshold`` bits (0 where there is no threshold)."""
    zero = g == ZERO_EXP
    to_int = 0.0 if zero else pow2(w - 1 - g)
    sc = 0.0 if zero else pow2(g - ref)
    near = 0.0 if zero or threshold < 0 or g - threshold < -1000 else pow2(g - threshold)
    return to_int, sc, near


#: pass 2's counts of a tile packed into one int64 (one running sum vectorises at less
#: cost than three): nonzero elements in bits 0-20, those aligned to 0 in bits 21-41,
#: those shifted far from bit 42 up; a tile holds fewer than 2^21 elements (the direct
#: path checks)
_LOST_AT = 21
_FAR_AT = 42
_FIELD = (1 << 21) - 1


@register_jitable
def _counts(used: int, zeroed: int, far: int) -> int:
    """One element's flags (int64 0/1, :func:`_aligned_digits`) as packed counts."""
    return used | (zeroed << _LOST_AT) | (far << _FAR_AT)


@register_jitable
def _tile_refused(counts: int, threshold: int) -> bool:
    """Does a tile of packed ``counts`` go to the small path: a nonzero element aligned
    to 0 (step 6 recomputes its row), or a fallback tile (more than an eighth of its
    nonzero elements shifted past the threshold)?"""
    nz, lost, far = counts & _FIELD, (counts >> _LOST_AT) & _FIELD, counts >> _FAR_AT
    return lost != 0 or (threshold >= 0 and 8 * far > nz)


@register_jitable
def _digit_params(params, i1: int) -> tuple[int, float, bool, int, float, float]:
    """Pass 2's constants for a side whose kept segments are ``0..i1``: ``w``,
    Veltkamp's splitter, truncation or not, the fallback threshold, ``down`` and
    ``cut`` of :func:`_aligned_digits`."""
    segments = params[W_SEGMENTS]
    w = width(segments, params[W_SEG0_BITS], MAGNITUDE)
    down = pow2(-7 * (segments - 1 - i1))
    return w, _splitter(w), params[W_ROUNDING] == ROUND_TRUNC, params[W_FALLBACK], down, 1.0 / 128.0 if i1 > 0 else 0.0


@register_jitable
def _rows_operands(x, side_b: bool, gexp, ref, params, i1: int, out, outc) -> bool:
    """Pass 2 over the rows of A (m x K, any float dtype, rounded to float32), or of
    B's transposed copy where ``side_b``: each element aligned to its group exponent
    E (step 2), then ``out`` = segments ``0..i1`` of ``q`` and ``outc`` (float32) =
    segment ``i1`` (negated for B: the two products then add up to the kept pairs),
    each times ``2^(E - ref)`` (exact). False, for the small path, on a refused tile
    (:func:`_tile_refused`). Float arithmetic only, no branch: the loop vectorises."""
    m, K = x.shape
    w, splitter, trunc, threshold, down, cut = _digit_params(params, i1)
    tk, tile_rows = params[W_TK], params[W_TN] if side_b else params[W_TM]
    sign = -1.0 if side_b else 1.0
    for t0 in range(0, m, tile_rows):
        t1 = min(t0 + tile_rows, m)
        for t in range(gexp.shape[1]):
            k0, k1 = np.uint64(t * tk), np.uint64(min(t * tk + tk, K))
            counts = np.int64(0)  # an integer sum vectorises (a float sum would not)
            for i in range(t0, t1):
                to_int, sc, near = _group_scales(gexp[i, t], ref[i], w, threshold)
                for k in range(k0, k1):
                    hi, lo, used, zeroed, far = _aligned_digits(x[i, k], splitter, to_int, trunc, near, down, cut)
                    counts += _counts(used, zeroed, far)
                    outc[i, k] = np.float32(lo * (sign * sc))
                    out[i, k] = hi * sc
            if _tile_refused(counts, threshold):
                return False
    return True


@register_jitable
def _cols_operands(x, gexp, ref, params, j1: int, out, outc, fl, cnt) -> bool:
    """:func:`_rows_operands` for the columns of B (K x n), in B's layout: ``out`` and
    ``outc`` are K x n (the products are ``A B``-shaped, BLAS's fastest small case)
    and ``outc`` holds the corner digits negated. Read along B's rows with the
    groups' factors per column (``fl``: 3 x n floats of scratch) and each column's
    packed counts (``cnt``: n words, :func:`_counts`), so the loops vectorise."""
    K, n = x.shape
    w, splitter, trunc, threshold, down, cut = _digit_params(params, j1)
    tk, tile_cols = params[W_TK], params[W_TN]
    to_int, sc, near = fl[0], fl[1], fl[2]
    for t in range(gexp.shape[1]):
        for j in range(n):
            to_int[j], sc[j], near[j] = _group_scales(gexp[j, t], ref[j], w, threshold)
            cnt[j] = 0
        for k in range(np.uint64(t * tk), np.uint64(min(t * tk + tk, K))):
            for j in range(n):  # no branch, no float sum: the loop vectorises
                hi, lo, used, zeroed, far = _aligned_digits(x[k, j], splitter, to_int[j], trunc, near[j], down, cut)
                cnt[j] += _counts(used, zeroed, far)
                outc[k, j] = np.float32(lo * -sc[j])
                out[k, j] = hi * sc[j]
        for j0 in range(0, n, tile_cols):
            total = np.int64(0)
            for j in range(j0, min(j0 + tile_cols, n)):
                total += cnt[j]
            if _tile_refused(total, threshold):
                return False
    return True



#: the largest m*n*k whose products (:func:`exact_product`) run as compiled loops;
#: above it one BLAS dgemm / sgemm of ``A B``'s shape (no transposed operand: OpenBLAS's
#: small-matrix kernels), measured side by side on the development machine (quiet, 2
#: cores, 2026-11-29): float64 loops 0.020 / 0.034 / 0.046 / 0.136 µs against dgemm
#: 0.050 / 0.055 / 0.055 / 0.080 µs at 2x2x2 / 4x4x4 / 4x8x4 / 8x8x8; at 32x32x32 dgemm
#: 1.25 µs, sgemm 0.65 µs, against 2.7 and 1.2 µs for the loops
LOOPS_MAX_WORK = 128


def _zero_of(x):
    """A zero of the array ``x``'s dtype (compiled code only)."""


@overload(_zero_of)
def _zero_of_impl(x):
    dtype = x.dtype
    return lambda x: dtype(0)


# Reassociation and contraction are safe here, and only here: every term and every
# partial sum is an integer times a power of two below 2^53 of its grid (the bound of
# the module docstring, and the block plans' bound of executor_mixpert_small), so any
# order, fused or not, is exact.
@cached_njit(nogil=True, fastmath={"reassoc", "contract"})
def exact_dot(x, y, d) -> None:
    """``d = x @ y.T`` for operands whose every partial sum is exact in ``d``'s dtype:
    the value a dgemm (sgemm) gives, in any summation order. Four rows of ``x`` at a
    time share each load of ``y`` (about a quarter faster at 32 x 32); the small
    path's block products (its operands are rows of B^T)."""
    m, K = x.shape
    n = y.shape[0]
    zero = _zero_of(d)  # sums in d's dtype: float32 ones run at twice the SIMD width
    i = 0
    while i + 4 <= m:
        for j in range(n):
            s0 = zero
            s1 = zero
            s2 = zero
            s3 = zero
            for k in range(K):
                v = y[j, k]
                s0 += x[i, k] * v
                s1 += x[i + 1, k] * v
                s2 += x[i + 2, k] * v
                s3 += x[i + 3, k] * v
            d[i, j] = s0
            d[i + 1, j] = s1
            d[i + 2, j] = s2
            d[i + 3, j] = s3
        i += 4
    for r in range(i, m):
        for j in range(n):
            s = zero
            for k in range(K):
                s += x[r, k] * y[j, k]
            d[r, j] = s


@cached_njit(nogil=True)
def exact_product(x, y, d) -> None:
    """``d = x @ y`` (``y`` is K x n) for operands whose every partial sum is exact
    (module docstring), in ``d``'s dtype: :func:`exact_dot` on ``y``'s transpose up
    to :data:`LOOPS_MAX_WORK` multiply-adds, else one BLAS dgemm or sgemm (BLAS's
    order and FMA do not matter); the float64 direct path's slice products."""
    if x.shape[0] * y.shape[1] * x.shape[1] <= LOOPS_MAX_WORK:
        exact_dot(x, y.T, d)
    else:
        np.dot(x, y, d)


@register_jitable
def _b_exponents(b, narrow: bool, splitter: float, tk: int, gexp, top, bt) -> bool:
    """Pass 1 over B's columns (:func:`_rows_exponents`): in B's layout
    (:func:`_cols_exponents`), or, where ``narrow``, after copying B transposed into
    ``bt`` (n x K, float32: every element is rounded to float32 first anyway)."""
    if not narrow:
        return _cols_exponents(b, splitter, tk, gexp, top)
    K, n = b.shape
    for k in range(K):
        for j in range(n):
            bt[j, k] = b[k, j]
    return _rows_exponents(bt, splitter, tk, gexp)


@register_jitable
def _b_operands(b, narrow: bool, gexp, ref, params, j1: int, out, outc, fl, cnt, bt) -> bool:
    """Pass 2 over B's columns: :func:`_cols_operands` (``out``, ``outc`` K x n), or,
    where ``narrow``, :func:`_rows_operands` over :func:`_b_exponents`' copy ``bt``
    (``out``, ``outc`` n x K)."""
    if narrow:
        return _rows_operands(bt, True, gexp, ref, params, j1, out, outc)
    return _cols_operands(b, gexp, ref, params, j1, out, outc, fl, cnt)


@register_jitable
def kept_products(narrow: bool, corner: bool, xa, yb, d, xc, yc, dc) -> None:
    """The direct path's two exact products, ``d = x . y`` (float64) and ``dc = x_c .
    (-y_c)`` (float32; 0 without a corner): :func:`exact_dot`'s loops over B's
    transposed digits where ``narrow``, else one BLAS call each in B's layout (as
    :func:`exact_product`)."""
    if narrow:
        exact_dot(xa, yb, d)
        if corner:
            exact_dot(xc, yc, dc)
    else:  # above NARROW_WORK: BLAS (exact_product's loops are for smaller calls)
        np.dot(xa, yb, d)
        if corner:
            np.dot(xc, yc, dc)
    if not corner:
        dc[:, :] = 0.0


#: the largest m*n*k that :func:`direct_gemm` runs *narrow*: B transposed, row loops
#: and :func:`exact_dot`'s loops (faster there: B's rows are too short for
#: :func:`_cols_operands`' loops to vectorise, and a BLAS call costs more than the
#: loops); above it B's layout and BLAS (:func:`kept_products`). Measured side by side
#: (level IV, direct path alone, quiet machine, 2026-11-29): at n = 12 narrow 1.31 µs,
#: wide 1.46; at n = 16 narrow 1.84, wide 1.45
NARROW_WORK = 12**3


#: int64, float64 and float32 words of each of the direct paths' stack buffers (at most
#: 32 KiB each, so that a call inside a thread with a small stack still fits): a call
#: whose scratch fits allocates nothing on the heap (float32 32 x 32 x 32 takes 224,
#: 3232 and 4096 words)
DIRECT_STACK_WORDS = 4096
#: int32 words of the float32 direct path's stack buffer for B's column maxima (one per
#: column; more columns take a heap array)
TOP_STACK_WORDS = 1024


@register_jitable
def direct_scratch_words(m: int, n: int, K: int, nkt: int) -> tuple[int, int, int]:
    """int64, float64 and float32 words of :func:`direct_gemm`'s scratch: group
    exponents (nkt per row of A and column of B), ref and span (one each), B's column
    counts (one per column); A's and B's prefix operands (K per row
    of A and column of B), the output scales (m + n), three factors per column of B
    and the product (m x n); the corner operands (K per row / column) and their
    product (m x n)."""
    return (m + n) * (nkt + 2) + n, (m + n) * K + m + 4 * n + m * n, (m + 2 * n) * K + m * n


@register_jitable
def c_ordered(x):
    """``x`` (2-D) typed as C-ordered: itself where it is (a site's operands are
    typed as strided views; loops over a C-ordered type vectorise), else a C-ordered
    copy (on the heap: strided operands are the rare case)."""
    if is_c_contiguous(x):
        return c_layout(x)
    y = np.empty(x.shape, x.dtype)
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            y[i, k] = x[i, k]
    return y


@register_jitable
def _round_out(c, d, dc, fa, fb) -> None:
    """``c = RN32((d + dc) fa_i fb_j)``: ``d + dc`` is X on its grid (exact) and the
    scaling is exact, so one rounding per output."""
    m, n = d.shape
    for i in range(m):
        for j in range(n):
            c[i, j] = np.float32((d[i, j] + dc[i, j]) * fa[i] * fb[j]) + np.float32(0.0)


@register_jitable
def copy_out(c, src) -> None:
    """``c[:, :] = src`` (same shape), written as a C-ordered array where ``c`` is one
    (a site's C is typed as a strided view; the loop then vectorises)."""
    if is_c_contiguous(c):
        _copy(c_layout(c), src)
    else:
        _copy(c, src)


@register_jitable
def _copy(c, src) -> None:
    """``c[:, :] = src`` element by element."""
    for i in range(src.shape[0]):
        for j in range(src.shape[1]):
            c[i, j] = src[i, j]


@cached_njit(nogil=True)
def direct_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` by the direct path (module docstring) for float32 operands in the
    float32 domain: ``OK`` with ``c`` and ``stats`` written (``STAT_SMALL_PATH = 1``),
    or :data:`NOT_TAKEN` with ``c`` untouched, for the small path. ``params`` must have
    passed ``params_ok`` and the shapes must match (the driver checks both)."""
    if params[W_DOMAIN] != DOMAIN_FP32 or params[W_DIGITS] != MAGNITUDE:
        return NOT_TAKEN
    i1, j1, corner, ok = prefix_pairs(params)
    if not ok:
        return NOT_TAKEN
    m, K = a.shape
    n = b.shape[1]
    segments, seg0, tk = params[W_SEGMENTS], params[W_SEG0_BITS], params[W_TK]
    bits = direct_bits(i1, j1, seg0, MAGNITUDE, K)
    w = width(segments, seg0, MAGNITUDE)
    if m == 0 or n == 0 or K == 0 or bits > 53 or w > 53:  # Veltkamp's rounding needs w <= 53
        return NOT_TAKEN
    if min(tk, K) * max(min(params[W_TM], m), min(params[W_TN], n)) >= 1 << _LOST_AT:
        return NOT_TAKEN  # pass 2's counts of a tile would overflow their fields (_counts)
    nkt = (K + tk - 1) // tk
    n_ints, n_floats, n_singles = direct_scratch_words(m, n, K, nkt)
    ints = stack_array(DIRECT_STACK_WORDS, np.int64) if n_ints <= DIRECT_STACK_WORDS else np.empty(n_ints, np.int64)
    floats = (stack_array(DIRECT_STACK_WORDS, np.float64) if n_floats <= DIRECT_STACK_WORDS
              else np.empty(n_floats, np.float64))
    singles = (stack_array(DIRECT_STACK_WORDS, np.float32) if n_singles <= DIRECT_STACK_WORDS
               else np.empty(n_singles, np.float32))
    agexp = carve(ints, 0, m, nkt)
    bgexp = carve(ints, m * nkt, n, nkt)
    o = (m + n) * nkt
    aref, aspan = ints[o : o + m], ints[o + m : o + 2 * m]
    o += 2 * m
    bref, bspan = ints[o : o + n], ints[o + n : o + 2 * n]
    o += 2 * n
    cnt = ints[o : o + n]
    top = stack_array(TOP_STACK_WORDS, np.int32) if n <= TOP_STACK_WORDS else np.empty(n, np.int32)
    narrow = m * n * K <= NARROW_WORK
    xa = carve(floats, 0, m, K)
    yb = carve(floats, m * K, n, K) if narrow else carve(floats, m * K, K, n)
    o = (m + n) * K
    fa, fb = floats[o : o + m], floats[o + m : o + m + n]
    fl = carve(floats, o + m + n, 3, n)
    d = carve(floats, o + m + 4 * n, m, n)
    xc = carve(singles, 0, m, K)
    yc = carve(singles, m * K, n, K) if narrow else carve(singles, m * K, K, n)
    dc = carve(singles, (m + n) * K, m, n)
    bt = carve(singles, (m + n) * K + m * n, n, K)
    splitter = _splitter(w)
    ac = c_ordered(a)
    bc = c_ordered(b)
    if not _rows_exponents(ac, splitter, tk, agexp) or not _b_exponents(bc, narrow, splitter, tk, bgexp, top, bt):
        return NOT_TAKEN
    _groups(agexp, aref, aspan, 1 if params[W_ALIGN] == ALIGN_ROW else params[W_TM])
    _groups(bgexp, bref, bspan, 1 if params[W_ALIGN] == ALIGN_ROW else params[W_TN])
    widest = largest(aspan) + largest(bspan)
    if not direct_exact(bits, widest, K) or (corner and not corner_exact32(widest, K)):
        return NOT_TAKEN
    if not _rows_operands(ac, False, agexp, aref, params, i1, xa, xc):
        return NOT_TAKEN
    if not _b_operands(bc, narrow, bgexp, bref, params, j1, yb, yc, fl, cnt, bt):
        return NOT_TAKEN
    shift = corner_shift(i1, j1, segments, MAGNITUDE)
    for i in range(m):
        fa[i] = pow2(aref[i] - (w - 1) + shift)
    for j in range(n):
        fb[j] = pow2(bref[j] - (w - 1))
    kept_products(narrow, corner, xa, yb, d, xc, yc, dc)
    if is_c_contiguous(c):  # a site's C is typed as a strided view: write it as C-ordered where it is
        _round_out(c_layout(c), d, dc, fa, fb)
    else:
        _round_out(c, d, dc, fa, fb)
    for s in range(stats.shape[0]):
        stats[s] = 0
    stats[STAT_TILES] = nkt * (-(-m // params[W_TM]) + -(-n // params[W_TN]))
    stats[STAT_WIDEST_SPAN] = widest
    stats[STAT_SMALL_PATH] = 1
    return OK


@register_jitable
def largest(x) -> int:
    """The largest element of a nonempty 1-D array."""
    top = x[0]
    for v in x:
        top = max(top, v)
    return top
