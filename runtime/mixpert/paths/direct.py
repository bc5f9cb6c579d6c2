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
float64, in any order, with or without FMA. It runs as two products (compiled loops
for small ones, BLAS above :data:`BLAS_MIN_WORK`, ``_32``): ``x . y`` in float64 and, where
there is a corner, ``x_c . (-y_c)`` in float32, exact where ``14 + ceil(log2 K) +
span_A + span_B <= 24`` (:func:`corner_exact32`; implied by the bound above for
the levels' 21-bit prefixes; a call that meets the one but not the other goes to
the small path), at twice float64's SIMD width; their sum is the exact value (one
order of the 2K terms). The output is ``RN32`` of that exact value times a power of
two: one float32 conversion. The same bound makes the general
path's exact plan the pair rectangles (no cut), its wide plan no shorter, and puts
every row on its fast path, so the statistics are the small path's
(``STAT_SMALL_PATH = 1``, tiles, the widest span, nothing recomputed).
The split is float arithmetic only: step 1 (rounding a float32 value to W
significant bits, ties to even) is Veltkamp's splitting in float64 (:func:`_rounded`,
checked against the integer rounding for every float32 significand), step 2 is
``rint`` (or ``trunc``) of the rounded value times ``2^(W-1-E)`` (exact), the digits
are truncated quotients by powers of two; pass 1 takes only each group's largest
magnitude (the rounding is monotonic). Refused (to the small path): balanced digits,
other pair sets, inf / NaN, magnitudes from 2^127 up (where step 1 truncates
instead of carrying), a fallback tile, an element aligned to 0 (step 6), spans over
the bound.

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
def direct_scratch_words(m: int, n: int, K: int, nkt: int) -> tuple[int, int, int]:
    """int64, float64 and float32 words of :func:`direct_gemm`'s scratch: group
    exponents (nkt per row of A and column of B), ref and span (one each); A's and
    B's prefix operands, copies of A and of B transposed (K per row each), the output
    scales (m + n), n words and the product (m x n); the corner operands (K per row)
    and their product (m x n)."""
    return (m + n) * (nkt + 2), (m + n) * 2 * K + m + 2 * n + m * n, (m + n) * K + m * n


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


#: the bits of a float64 without its sign
_NO_SIGN = (1 << 63) - 1


@register_jitable
def row_top(x, i: int, k0: int, k1: int, xt, to32: bool) -> float:
    """Row ``i``'s largest magnitude over ``k0:k1`` (a NaN kept), copying those
    elements into ``xt[i, k0:k1]`` (float64; rounded to float32 first where ``to32``):
    pass 1 of the direct paths over a row of A."""
    # the largest magnitude as the largest bit pattern without the sign: the same order
    # for finite values and inf, NaN above them all (kept); an integer maximum vectorises
    top = np.int64(0)
    for k in range(np.uint64(k0), np.uint64(k1)):
        v = np.float64(np.float32(x[i, k])) if to32 else np.float64(x[i, k])
        xt[i, k] = v
        top = max(top, np.float64(v).view(np.int64) & _NO_SIGN)
    return np.int64(top).view(np.float64)


@register_jitable
def column_tops(x, k0: int, k1: int, xt, top, to32: bool) -> None:
    """:func:`row_top` for every column of B (K x n) at once: ``top[j]`` the largest
    magnitude of column j over rows ``k0:k1``, the column copied into row j of ``xt``
    (n x K). B is read row by row (contiguous for a C-ordered B; the maxima vectorise)."""
    n = x.shape[1]
    for j in range(n):
        top[j] = 0.0
    for k in range(np.uint64(k0), np.uint64(k1)):
        for j in range(n):
            v = np.float64(np.float32(x[k, j])) if to32 else np.float64(x[k, j])
            xt[j, k] = v
            av = abs(v)
            tj = top[j]
            tj = av if av > tj else tj
            top[j] = av if av != av else tj


@register_jitable
def _rows_exponents(x, splitter: float, tk: int, gexp, xt) -> bool:
    """Pass 1 over the rows of A (m x K): each row's largest element exponent per
    k-tile (``gexp``, ``ZERO_EXP`` for none), copying A (as float32 values) into
    ``xt`` (m x K, float64, C-ordered) for the second pass; False where a row holds an
    inf, a NaN or a magnitude of 2^127 or more. Float maxima only: no integer work
    per element."""
    m, K = x.shape
    for i in range(m):
        for t in range(gexp.shape[1]):
            top = row_top(x, i, t * tk, min(t * tk + tk, K), xt, True)
            if not (top < _TOO_BIG):
                return False
            gexp[i, t] = _group_exponent(top, splitter)
    return True


@register_jitable
def _cols_exponents(x, splitter: float, tk: int, gexp, top, xt) -> bool:
    """:func:`_rows_exponents` for the columns of B (K x n) (:func:`column_tops`),
    copying B's columns into the rows of ``xt`` (n x K, float64: exact) for the
    second pass; ``top`` is n words of scratch."""
    K, n = x.shape
    for t in range(gexp.shape[1]):
        column_tops(x, t * tk, min(t * tk + tk, K), xt, top, True)
        for j in range(n):
            if not (top[j] < _TOO_BIG):
                return False
            gexp[j, t] = _group_exponent(top[j], splitter)
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
def _aligned_prefix(x: float, splitter: float, to_int: float, trunc: bool, near: float, down: float):
    """Steps 1 and 2 of one element ``x`` (a float32 value) of a group: the digits
    ``0..i1`` of its aligned integer ``q`` as one integer (``trunc(q 2^-7(s-1-i1))``,
    ``down`` the power of two), and as int64 0/1: is it nonzero, aligned to 0 although
    nonzero (step 6), shifted past the fallback threshold (``|x| < near``)?"""
    v = _rounded(x, splitter)
    y = v * to_int
    q = np.trunc(y) if trunc else np.rint(y)
    use = v != 0.0
    return np.trunc(q * down), np.int64(use), np.int64(use & (q == 0.0)), np.int64(use & (abs(v) < near))


@register_jitable
def _rows_operands(x, side_b: bool, gexp, ref, params, i1: int, corner: bool, out, outc) -> bool:
    """Pass 2 over the rows of A (or of B's transposed copy where ``side_b``): each
    element aligned to its group exponent E (step 2), then ``out`` = segments ``0..i1``
    of ``q`` and, where ``corner``, ``outc`` (float32) = segment ``i1`` (negated for B:
    the two products then add up to the kept pairs), each times ``2^(E - ref)`` (exact).
    False, for the small path, on a fallback tile or (step 6) a nonzero element
    aligned to 0. Float arithmetic only."""
    m, K = x.shape
    segments = params[W_SEGMENTS]
    w = width(segments, params[W_SEG0_BITS], MAGNITUDE)
    splitter = _splitter(w)
    tk = params[W_TK]
    tile_rows = params[W_TN] if side_b else params[W_TM]
    threshold = params[W_FALLBACK]
    trunc = params[W_ROUNDING] == ROUND_TRUNC
    down = pow2(-7 * (segments - 1 - i1))
    sign = -1.0 if side_b else 1.0
    for t0 in range(0, m, tile_rows):
        for t in range(gexp.shape[1]):
            nz = np.int64(0)  # integer counts: their sums vectorise (a float sum would not)
            far_n = np.int64(0)
            lost = np.int64(0)
            k0, k1 = np.uint64(t * tk), np.uint64(min(t * tk + tk, K))
            for i in range(t0, min(t0 + tile_rows, m)):
                g = gexp[i, t]
                zero = g == ZERO_EXP
                to_int = 0.0 if zero else pow2(w - 1 - g)
                sc = 0.0 if zero else pow2(g - ref[i])
                # an element is shifted by more than `threshold` bits where |v| < 2^(E - threshold)
                near = 0.0 if zero or threshold < 0 or g - threshold < -1000 else pow2(g - threshold)
                csc = sign * sc
                if corner:  # one loop per case, neither with a branch or a float sum: they vectorise
                    for k in range(k0, k1):
                        hi, used, zeroed, far = _aligned_prefix(x[i, k], splitter, to_int, trunc, near, down)
                        nz += used
                        lost += zeroed
                        far_n += far
                        lo = hi - np.trunc(hi * (1.0 / 128.0)) * 128.0 if i1 > 0 else hi
                        outc[i, k] = np.float32(lo * csc)
                        out[i, k] = hi * sc
                else:
                    for k in range(k0, k1):
                        hi, used, zeroed, far = _aligned_prefix(x[i, k], splitter, to_int, trunc, near, down)
                        nz += used
                        lost += zeroed
                        far_n += far
                        out[i, k] = hi * sc
            if lost:
                return False  # step 6 recomputes the element's row (column): general path
            if threshold >= 0 and 8 * far_n > nz:
                return False  # a fallback tile: general path
    return True


#: the smallest m*n*k whose products run as BLAS dgemms / sgemms: below it compiled
#: loops cost less than a BLAS call's fixed cost (measured side by side for square
#: K-long products on the development machine, 2 cores under load: loops 0.43 / 2.64 /
#: 8.58 µs against dgemm 0.63 / 3.05 / 8.29 µs at n = 16 / 32 / 48; float32 loops
#: 0.44 / 2.31 / 6.33 µs against sgemm 0.58 / 2.14 / 5.06 µs)
BLAS_MIN_WORK = 40**3
BLAS_MIN_WORK32 = 28**3


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
    time share each load of ``y`` (about a quarter faster at 32 x 32); the direct
    paths' small products and the small path's block products."""
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
    """``d = x @ y.T`` for operands whose every partial sum is exact (module
    docstring), in ``d``'s dtype: compiled loops for small products (below a BLAS
    call's overhead), else one BLAS dgemm or sgemm (BLAS's order and FMA do not
    matter)."""
    if x.shape[0] * y.shape[0] * x.shape[1] < (BLAS_MIN_WORK if d.itemsize == 8 else BLAS_MIN_WORK32):
        exact_dot(x, y, d)
    else:
        np.dot(x, y.T, d)


#: int64 and float64 words of each of the direct paths' two stack buffers (32 KiB
#: each, so that a call inside a thread with a small stack still fits): a call whose
#: scratch fits allocates nothing on the heap (float32 16 x 16 x 16 takes 64 and 1840
#: words; 32 x 32 x 32 needs 7264 floats: one heap array beside a call of about 12 µs)
DIRECT_STACK_WORDS = 4096


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
    if m == 0 or n == 0 or K == 0 or bits > 53:
        return NOT_TAKEN
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
    xa = carve(floats, 0, m, K)
    yb = carve(floats, m * K, n, K)
    o = (m + n) * K
    at = carve(floats, o, m, K)
    bt = carve(floats, o + m * K, n, K)
    o += (m + n) * K
    fa, fb, top = floats[o : o + m], floats[o + m : o + m + n], floats[o + m + n : o + m + 2 * n]
    d = carve(floats, o + m + 2 * n, m, n)
    xc = carve(singles, 0, m, K)
    yc = carve(singles, m * K, n, K)
    dc = carve(singles, (m + n) * K, m, n)
    w = width(segments, seg0, MAGNITUDE)
    if w > 53:
        return NOT_TAKEN  # Veltkamp's rounding needs w <= 53
    splitter = _splitter(w)
    # a site's operands are typed as strided views: read them as C-ordered arrays
    # where they are (the loops then vectorise)
    if is_c_contiguous(a):
        ok = _rows_exponents(c_layout(a), splitter, tk, agexp, at)
    else:
        ok = _rows_exponents(a, splitter, tk, agexp, at)
    if not ok:
        return NOT_TAKEN
    if is_c_contiguous(b):
        ok = _cols_exponents(c_layout(b), splitter, tk, bgexp, top, bt)
    else:
        ok = _cols_exponents(b, splitter, tk, bgexp, top, bt)
    if not ok:
        return NOT_TAKEN
    _groups(agexp, aref, aspan, 1 if params[W_ALIGN] == ALIGN_ROW else params[W_TM])
    _groups(bgexp, bref, bspan, 1 if params[W_ALIGN] == ALIGN_ROW else params[W_TN])
    widest = largest(aspan) + largest(bspan)
    if not direct_exact(bits, widest, K) or (corner and not corner_exact32(widest, K)):
        return NOT_TAKEN
    if not _rows_operands(at, False, agexp, aref, params, i1, corner, xa, xc):
        return NOT_TAKEN
    if not _rows_operands(bt, True, bgexp, bref, params, j1, corner, yb, yc):
        return NOT_TAKEN
    shift = corner_shift(i1, j1, segments, MAGNITUDE)
    for i in range(m):
        fa[i] = pow2(aref[i] - (w - 1) + shift)
    for j in range(n):
        fb[j] = pow2(bref[j] - (w - 1))
    exact_product(xa, yb, d)
    if corner:
        exact_product(xc, yc, dc)
    else:
        dc[:, :] = 0.0
    for i in range(m):  # d + dc is X on its grid (exact), the scaling is exact: one rounding
        for j in range(n):
            c[i, j] = np.float32((d[i, j] + dc[i, j]) * fa[i] * fb[j]) + np.float32(0.0)
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
