"""The MixPert executor's direct path for tiny float32-domain GEMMs: no block plan,
one fused exact dot product per output, one rounding.

For a GEMM of a few thousand multiply-adds the small path's fixed work dominates:
the config-only planning (kept pairs, the exact and the wide block plans: several
small arrays), one block operand and one product per planned block, and the
epilogue's TwoSum per output. Where the kept pairs are a *prefix rectangle*
``[0..i1] x [0..j1]`` of the segment pairs, possibly without its corner
``(i1, j1)`` (the paper's levels ``I``, ``II``, ``III``, ``full``, and ``IV`` =
``full`` without ``(2, 2)``; any digit system), the exact sum of step 5
(docs/numerics.md, "mixpert") of each output is, per k,

    sum_{(p, r) kept} s_p t_r 2^(b(s-1-p) + b(s-1-r))
        = (x y - [corner] x_c y_c) 2^(b(s-1-i1) + b(s-1-j1))

with ``x = digit_range(q_a, 0, i1)`` (segments ``0..i1`` of the aligned mantissa as
one integer; ``q_a`` itself when ``i1 = s - 1``) and ``x_c = digit_range(q_a, i1,
i1)`` (the corner digit), the same for B. Each term is an integer times the
k-tile's power-of-two scale, so where

    bits(x) + bits(y) + 1 + ceil(log2 K) + span_A(i) + span_B(j) <= 53

(``bits``: pair_blocks.range_bits; ``span``: the row's / column's exponent span
along K) every partial sum of the dot product over K is exact in float64, in any
order and with or without FMA. The output is then ``RN32`` of that exact float64
value times ``2^(E_A(i) + E_B(j) - 2(W-1) + shift)``: a float32 conversion
(float32-domain values are far inside float64's range, so the power of two is
exact). That is the value the general path rounds (same X, rounded once): the same
bits. The same bound makes the general path's exact plan equal to the pair
rectangles (no cut) and its wide plan no shorter, and puts every row on the fast
path, so the statistics are the small path's: ``STAT_SMALL_PATH = 1``, tiles and
the widest span, nothing recomputed.

The operands are split and aligned by the small path's own ``_split``
(executor_mixpert_small: the same refusals: a non-finite element, a fallback tile,
an element aligned to 0). A call the bound does not cover is left, with ``c``
untouched, to the small path (:data:`NOT_TAKEN`). Float64 operands (and the float64
domain) are not taken: only float32 operands compile this path.
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from mixjit.runtime.executor_mixpert_words import PAIR_STRIDE, W_PAIRS0, W_PAIRS1, W_SEGMENTS
from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.pair_blocks import SPAN_RESERVE, k_bits, range_bits
from mixjit.runtime.scratch_arrays import carve
from mixjit.runtime.segments import digit_bits, digit_range

#: int64 and float64 words of each of the direct path's two stack buffers (64 KiB
#: each): a call whose scratch fits (32 x 32 x 32 takes 4352 and 6208) allocates
#: nothing on the heap
DIRECT_STACK_WORDS = 8192


@register_jitable
def _kept(params, p: int, r: int) -> bool:
    """Is segment pair ``(p, r)`` kept (the 81-bit pair mask of the config words)?"""
    bit = PAIR_STRIDE * p + r
    word = params[W_PAIRS0] if bit < 63 else params[W_PAIRS1]
    return (word >> (bit % 63)) & 1 == 1


@register_jitable
def prefix_pairs(params) -> tuple[int, int, bool, bool]:
    """``(i1, j1, corner, ok)``: the kept pairs are the rectangle ``[0..i1] x [0..j1]``
    without its corner ``(i1, j1)`` where ``corner``, with it where not; ``ok`` is
    False for any other pair set (or none)."""
    s = params[W_SEGMENTS]
    i1 = -1
    j1 = -1
    for p in range(s):
        for r in range(s):
            if _kept(params, p, r):
                i1 = max(i1, p)
                j1 = max(j1, r)
    if i1 < 0:
        return 0, 0, False, False
    corner = not _kept(params, i1, j1)
    for p in range(s):
        for r in range(s):
            inside = p <= i1 and r <= j1 and not (corner and p == i1 and r == j1)
            if _kept(params, p, r) != inside:
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
def corner_shift(i1: int, j1: int, segments: int, digits: int) -> int:
    """The weight exponent of pair ``(i1, j1)``: ``b(s-1-i1) + b(s-1-j1)``."""
    b = digit_bits(digits)
    return b * (segments - 1 - i1) + b * (segments - 1 - j1)


@register_jitable
def direct_scratch_words(m: int, n: int, K: int, nkt: int) -> tuple[int, int]:
    """int64 and float64 words of the direct path's scratch: per row of A and of B
    q, ex (K each), gexp (nkt), ref, span (one each); raw, the prefix and the corner
    operand (K each), scale (nkt) and the output scale (one)."""
    return (m + n) * (2 * K + nkt + 2), (m + n) * (3 * K + nkt + 1)


@register_jitable
def direct_views(ints, floats, io: int, fo: int, r: int, K: int, nkt: int):
    """One operand's scratch views (``r`` rows) from ``ints[io:]`` and ``floats[fo:]``:
    (q, ex, gexp, ref, span, raw, scale, x, xc, f), as :func:`direct_scratch_words`
    counts them."""
    q = carve(ints, io, r, K)
    ex = carve(ints, io + r * K, r, K)
    gexp = carve(ints, io + 2 * r * K, r, nkt)
    o = io + r * (2 * K + nkt)
    raw = carve(floats, fo, r, K)
    x = carve(floats, fo + r * K, r, K)
    xc = carve(floats, fo + 2 * r * K, r, K)
    scale = carve(floats, fo + 3 * r * K, r, nkt)
    f0 = fo + r * (3 * K + nkt)
    return q, ex, gexp, ints[o : o + r], ints[o + r : o + 2 * r], raw, scale, x, xc, floats[f0 : f0 + r]


@register_jitable
def prefix_operand(q, scale, i1: int, corner: bool, segments: int, digits: int, tk: int, x, xc) -> None:
    """``x`` = segments ``0..i1`` of the aligned mantissas ``q``, ``xc`` = segment
    ``i1`` (where ``corner``), each times its k-tile's power-of-two scale (exact)."""
    r, K = q.shape
    for i in range(r):
        for t in range(scale.shape[1]):
            sc = scale[i, t]
            for k in range(np.uint64(t * tk), np.uint64(min(t * tk + tk, K))):
                v = q[i, k]
                x[i, k] = digit_range(v, 0, i1, segments, digits) * sc
                if corner:
                    xc[i, k] = digit_range(v, i1, i1, segments, digits) * sc


# Reassociation and contraction are safe here, and only here: every term and every
# partial sum is an integer times 2^-(span_A + span_B) below 2^53 of that grid (the
# bound of the module docstring), so any order, fused or not, is exact.
@cached_njit(nogil=True, fastmath={"reassoc", "contract"})
def exact_dots(x, xc, fa, y, yc, fb, corner: bool, c) -> None:
    """``c[i, j] = RN32((x_i . y_j - [corner] xc_i . yc_j) * fa[i] * fb[j])``, the
    dot products exact (module docstring), the scaling exact; +0 for a zero."""
    m, K = x.shape
    n = y.shape[0]
    for i in range(m):
        for j in range(n):
            s = 0.0
            if corner:
                for k in range(K):
                    s += x[i, k] * y[j, k] - xc[i, k] * yc[j, k]
            else:
                for k in range(K):
                    s += x[i, k] * y[j, k]
            c[i, j] = np.float32(s * fa[i] * fb[j]) + np.float32(0.0)
