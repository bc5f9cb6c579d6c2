"""Grouping kept segment pairs into exact float64 GEMMs ("blocks").

A MixPert config keeps a set of segment pairs ``(i, j)`` (segment ``i`` of A times
segment ``j`` of B). Adjacent segments combine into one wider integer: segments
``i0..i1`` of A form ``a[i0:i1] = sum_i s_i 2^(b*(i1-i))`` (``b`` = 7 bits per
sign-magnitude segment, 8 per balanced digit), and the product
``a[i0:i1] * b[j0:j1]`` is exactly the sum of the pairs of the rectangle
``[i0..i1] x [j0..j1]`` with their relative weights. One float64 GEMM of two such
integer matrices is exact while every partial sum stays below 2^53, so a config's
INT8 products collapse into a few exact dgemms: level IV (8 products) into 2.

The planner covers the kept pairs with disjoint rectangles and cuts a rectangle
while ``bits(A range) + bits(B range)`` exceeds the budget ``53 - ceil(log2 K) -
reserve``, so that the dgemms stay exact on data whose exponents span up to
``reserve`` binades along K. The executor passes the call's widest span, capped
at ``SPAN_RESERVE`` (wider rows and columns go through the exact path; see
runtime/mixpert/driver.py): the blocks, never the result, depend on it.

The planner is compiled (:func:`plan_block_array`, called by the compiled executor
for each GEMM's K); :func:`plan_blocks` is its Python face.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba.extending import register_jitable

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.segments import BALANCED, MAGNITUDE, digit_bits

__all__ = ["Block", "SPAN_RESERVE", "range_bits", "plan_blocks", "plan_block_array", "k_bits", "pair_matrix",
           "karatsuba_products"]

#: binades of exponent span along K (row of A + column of B) the plan keeps free
SPAN_RESERVE = 7

#: columns of a row of :func:`plan_block_array`'s result
BLOCK_I0, BLOCK_I1, BLOCK_J0, BLOCK_J1, BLOCK_SHIFT, BLOCK_BITS = range(6)


@dataclass(frozen=True)
class Block:
    """One exact dgemm: A segments ``i0..i1`` times B segments ``j0..j1``.

    ``shift`` is the power of two that gives the block's product its weight in the
    scale where pair ``(i, j)`` weighs ``2^(b*(2*(segments-1) - i - j))``.
    """

    i0: int
    i1: int
    j0: int
    j1: int
    shift: int
    bits: int


@register_jitable
def range_bits(i0: int, i1: int, seg0_bits: int, digits: int = MAGNITUDE) -> int:
    """Bits bounding the magnitude of the combined integer of segments ``i0..i1``
    (balanced digits: ``|sum| <= 128*(256^n - 1)/255 < 2^(8n)``; the top range adds
    one bit to ``seg0_bits`` for the rounding of the lower digits)."""
    b = digit_bits(digits)
    if digits == BALANCED:
        top = min(seg0_bits + 1, 8)
    else:
        top = seg0_bits
    return (top if i0 == 0 else b) + b * (i1 - i0)


@register_jitable
def k_bits(k: int) -> int:
    """``ceil(log2(k))``: bits a sum of ``k`` terms can add."""
    bits = 0
    while (1 << bits) < k:
        bits += 1
    return bits


@register_jitable
def _put_row(table, r: int, values) -> None:
    """Row ``r`` of an integer table = ``values``, a tuple of integers, one per column
    from column 0 on (a block array's ``BLOCK_*`` columns, a product array's ``PROD_*``)."""
    for col in range(len(values)):
        table[r, col] = values[col]


@register_jitable
def _put(rows, r: int, i0: int, i1: int, j0: int, j1: int) -> None:
    """Write rectangle ``r`` (``i0, i1, j0, j1``) of a rectangle array."""
    _put_row(rows, r, (i0, i1, j0, j1))


@register_jitable
def pair_rectangles(pairs):
    """The kept pairs (``pairs[i, j]`` true) as disjoint rectangles: runs of
    consecutive rows with one set of columns, cut into runs of columns. One row
    ``(i0, i1, j0, j1)`` per rectangle, inclusive bounds, rows first."""
    s = pairs.shape[0]
    rects = np.zeros((s * s, 4), np.int64)
    nr = 0
    i = 0
    while i < s:
        if not pairs[i].any():
            i += 1
            continue
        end = i
        while end + 1 < s and (pairs[end + 1] == pairs[i]).all():
            end += 1
        j = 0
        while j < s:
            if pairs[i, j]:
                j0 = j
                while j + 1 < s and pairs[i, j + 1]:
                    j += 1
                _put(rects, nr, i, end, j0, j)
                nr += 1
            j += 1
        i = end + 1
    return rects[:nr]


@register_jitable
def put_block(out, nb: int, i0: int, i1: int, j0: int, j1: int, shift: int, bits: int) -> None:
    """Write block ``nb`` (columns ``BLOCK_I0`` .. ``BLOCK_BITS``) of a block array."""
    _put_row(out, nb, (i0, i1, j0, j1, shift, bits))


@register_jitable
def _fit(i0: int, i1: int, budget: int, seg0_bits: int, digits: int) -> int:
    """Largest ``e`` in ``i0..i1`` with ``range_bits(i0, e) <= budget`` (``i0`` if none)."""
    e = i0
    while e < i1 and range_bits(i0, e + 1, seg0_bits, digits) <= budget:
        e += 1
    return e


@cached_njit(nogil=True)
def plan_block_array(pairs, segments: int, seg0_bits: int, k: int, digits: int, reserve: int = SPAN_RESERVE):
    """Disjoint rectangles covering the kept pairs (``pairs[i, j]`` true) whose
    dgemms over ``k`` terms are exact with ``reserve`` binades of span to spare.

    A rectangle over the budget is cut: the side with more bits keeps its longest
    prefix that fits beside the other side (so the slices of a slice-structured
    pair set become one block each); a single pair always is a block.

    Returns ``(blocks, ok)``: an int64 array, one row per block (columns
    ``BLOCK_I0`` .. ``BLOCK_BITS``), and False when ``k`` is too long for exact
    float64 accumulation (blocks is then empty)."""
    budget = 53 - k_bits(k) - reserve
    s = pairs.shape[0]
    if budget < 2 * 7:
        return np.zeros((0, 6), np.int64), False
    rects = pair_rectangles(pairs)
    nr = rects.shape[0]
    # cut depth first, first part before the rest (a stack, children pushed reversed)
    stack = np.zeros((4 * s * s + 4, 4), np.int64)
    top = 0
    for r in range(nr - 1, -1, -1):
        _put(stack, top, rects[r, 0], rects[r, 1], rects[r, 2], rects[r, 3])  # a row copy costs seconds of compile
        top += 1
    out = np.zeros((s * s, 6), np.int64)
    nb = 0
    b = digit_bits(digits)
    while top > 0:
        top -= 1
        i0, i1, j0, j1 = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
        ra = range_bits(i0, i1, seg0_bits, digits)
        rb = range_bits(j0, j1, seg0_bits, digits)
        if ra + rb <= budget or (i0 == i1 and j0 == j1):
            put_block(out, nb, i0, i1, j0, j1, b * (segments - 1 - i1) + b * (segments - 1 - j1), ra + rb)
            nb += 1
            continue
        # cut the side with more bits (one that is a single segment cannot be cut)
        # to its longest prefix that fits beside the other side
        if i1 > i0 and (ra >= rb or j0 == j1):
            mid = _fit(i0, i1, budget - rb, seg0_bits, digits)
            _put(stack, top, mid + 1, i1, j0, j1)
            _put(stack, top + 1, i0, mid, j0, j1)
        else:
            mid = _fit(j0, j1, budget - ra, seg0_bits, digits)
            _put(stack, top, i0, i1, mid + 1, j1)
            _put(stack, top + 1, i0, i1, j0, mid)
        top += 2
    return out[:nb].copy(), True


def pair_matrix(pairs: tuple[tuple[int, int], ...], segments: int) -> np.ndarray:
    """The kept pairs as a boolean ``segments x segments`` matrix."""
    m = np.zeros((segments, segments), dtype=np.bool_)
    for i, j in pairs:
        m[i, j] = True
    return m


def plan_blocks(
    pairs: tuple[tuple[int, int], ...],
    segments: int,
    seg0_bits: int,
    k: int,
    digits: int = MAGNITUDE,
    reserve: int = SPAN_RESERVE,
) -> tuple[Block, ...]:
    """Disjoint rectangles covering ``pairs`` whose dgemms over ``k`` terms are exact
    with ``reserve`` binades of span to spare (:func:`plan_block_array`)."""
    blocks, ok = plan_block_array(pair_matrix(pairs, segments), segments, seg0_bits, k, digits, reserve)
    if not ok:
        raise ValueError(K_TOO_LONG)
    return tuple(Block(*(int(v) for v in row)) for row in blocks)


K_TOO_LONG = (
    "mixpert: K is too long for exact float64 accumulation of INT8 products; "
    "split the GEMM along K into chunks of at most 2^30"
)
"""Why a GEMM whose K leaves the planner no exact block is refused."""


#: columns of a row of :func:`karatsuba_products`'s products: A's segment range, the
#: A range subtracted from it (``-1``: none), B's range, the B range subtracted, and
#: the bits bounding the product's terms
PROD_I0, PROD_I1, PROD_ID0, PROD_ID1, PROD_J0, PROD_J1, PROD_JD0, PROD_JD1, PROD_BITS = range(9)
#: columns of a row of its terms: product, shift, sign (``1`` or ``-1``)
TERM_PROD, TERM_SHIFT, TERM_SIGN = range(3)


@register_jitable
def _find_block(blocks, i0: int, i1: int, j0: int, j1: int) -> int:
    """Index of the block ``(i0..i1) x (j0..j1)``, or -1."""
    for b in range(blocks.shape[0]):
        if (blocks[b, BLOCK_I0] == i0 and blocks[b, BLOCK_I1] == i1 and blocks[b, BLOCK_J0] == j0
                and blocks[b, BLOCK_J1] == j1):
            return b
    return -1


@register_jitable
def _put_prod(prods, p: int, i0: int, i1: int, id0: int, id1: int, j0: int, j1: int, jd0: int, jd1: int,
              bits: int) -> None:
    """Write product ``p`` (columns ``PROD_I0`` .. ``PROD_BITS``) of a product array."""
    _put_row(prods, p, (i0, i1, id0, id1, j0, j1, jd0, jd1, bits))


@register_jitable
def _difference_bits(blocks, a: int, b: int, seg0_bits: int, digits: int) -> int:
    """Bits of ``(A_i - A_k)(B_l - B_j)`` for blocks ``a = A_i x B_j``, ``b = A_k x B_l``
    whose segments carry their element's sign (:func:`karatsuba_products`)."""
    ra = max(range_bits(blocks[a, BLOCK_I0], blocks[a, BLOCK_I1], seg0_bits, digits),
             range_bits(blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], seg0_bits, digits))
    rb = max(range_bits(blocks[a, BLOCK_J0], blocks[a, BLOCK_J1], seg0_bits, digits),
             range_bits(blocks[b, BLOCK_J0], blocks[b, BLOCK_J1], seg0_bits, digits))
    return ra + rb


@cached_njit(nogil=True)
def karatsuba_products(blocks, same_sign: bool, seg0_bits: int, digits: int):
    """The exact dgemms (products) and weighted terms that give the blocks' exact sum
    with fewer dgemms: Karatsuba on pairs of cross blocks.

    Two blocks ``a = A_i x B_j`` and ``b = A_k x B_l`` of one shift whose "diagonal"
    blocks ``A_i x B_l`` and ``A_k x B_j`` are blocks too give
    ``A_i B_j + A_k B_l = A_i B_l + A_k B_j - (A_i - A_k)(B_l - B_j)``: one dgemm
    instead of two, the diagonal results reused. Where every segment of an element
    carries its sign (``same_sign``: sign-magnitude digits), ``|A_i - A_k| <=
    max(|A_i|, |A_k|)``, so the difference product has at most
    ``max(bits A_i, bits A_k) + max(bits B_l, bits B_j)`` bits; it is taken only when
    that is at most the widest block's bits, so its dgemm is exact wherever the
    blocks' are (the same rows and columns, the same K). mixpert-fp64's
    ``slices3sig2`` blocks (6) become 5 products: ``A_0 B_1 + A_1 B_0`` from
    ``A_0 B_0``, ``A_1 B_1`` and ``(A_0 - A_1)(B_0 - B_1)``.

    Returns ``(prods, terms)``: one row per product (columns ``PROD_*``; a plain block
    has no subtracted ranges), in block order with a difference product at its later
    block's place; one row per term (``TERM_*``), the exact sum being
    ``sum_t sign_t * prods_result[prod_t] * 2^shift_t``. Without ``same_sign`` (or
    with no such pair) the products are the blocks and each has one term."""
    nb = blocks.shape[0]
    partner = np.full(nb, -1, np.int64)
    diagonal = np.zeros(nb, np.bool_)  # a block whose result a pair reuses stays plain
    bits_max = blocks[:, BLOCK_BITS].max() if nb else 0
    if same_sign:
        for a in range(nb):
            if partner[a] >= 0 or diagonal[a]:
                continue
            for b in range(a + 1, nb):
                if partner[b] >= 0 or diagonal[b] or blocks[b, BLOCK_SHIFT] != blocks[a, BLOCK_SHIFT]:
                    continue
                ai0, ai1, aj0, aj1 = blocks[a, BLOCK_I0], blocks[a, BLOCK_I1], blocks[a, BLOCK_J0], blocks[a, BLOCK_J1]
                bi0, bi1, bj0, bj1 = blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], blocks[b, BLOCK_J0], blocks[b, BLOCK_J1]
                d1 = _find_block(blocks, ai0, ai1, bj0, bj1)
                d2 = _find_block(blocks, bi0, bi1, aj0, aj1)
                if d1 < 0 or d2 < 0 or d1 == a or d1 == b or d2 == a or d2 == b or partner[d1] >= 0 or partner[d2] >= 0:
                    continue
                if _difference_bits(blocks, a, b, seg0_bits, digits) <= bits_max:
                    partner[a] = b
                    partner[b] = a
                    diagonal[d1] = True
                    diagonal[d2] = True
                    break
    npairs = 0
    for a in range(nb):
        npairs += partner[a] > a
    prods = np.zeros((nb - npairs, 9), np.int64)
    terms = np.zeros((nb + npairs, 3), np.int64)
    # plain blocks first get their product index; a pair's at its later block
    index = np.full(nb, -1, np.int64)
    p = 0
    for b in range(nb):
        if partner[b] < 0:
            _put_prod(prods, p, blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], -1, -1, blocks[b, BLOCK_J0],
                      blocks[b, BLOCK_J1], -1, -1, blocks[b, BLOCK_BITS])
            index[b] = p
            p += 1
        elif partner[b] < b:
            a = partner[b]
            ai0, ai1, aj0, aj1 = blocks[a, BLOCK_I0], blocks[a, BLOCK_I1], blocks[a, BLOCK_J0], blocks[a, BLOCK_J1]
            bi0, bi1, bj0, bj1 = blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], blocks[b, BLOCK_J0], blocks[b, BLOCK_J1]
            # (A_i - A_k)(B_l - B_j): A ranges of a and b, B ranges of b and a
            _put_prod(prods, p, ai0, ai1, bi0, bi1, bj0, bj1, aj0, aj1, _difference_bits(blocks, a, b, seg0_bits, digits))
            index[b] = p
            p += 1
    t = 0
    for b in range(nb):
        if partner[b] < 0:
            terms[t, TERM_PROD] = index[b]
            terms[t, TERM_SHIFT] = blocks[b, BLOCK_SHIFT]
            terms[t, TERM_SIGN] = 1
            t += 1
        elif partner[b] < b:
            a = partner[b]
            shift = blocks[b, BLOCK_SHIFT]
            d1 = _find_block(blocks, blocks[a, BLOCK_I0], blocks[a, BLOCK_I1], blocks[b, BLOCK_J0], blocks[b, BLOCK_J1])
            d2 = _find_block(blocks, blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], blocks[a, BLOCK_J0], blocks[a, BLOCK_J1])
            terms[t, TERM_PROD] = index[d1]
            terms[t + 1, TERM_PROD] = index[d2]
            terms[t + 2, TERM_PROD] = index[b]
            for u in range(3):
                terms[t + u, TERM_SHIFT] = shift
                terms[t + u, TERM_SIGN] = 1 if u < 2 else -1
            t += 3
    return prods, terms
