"""Grouping kept segment pairs into exact float64 GEMMs ("blocks").

A MixPert config keeps a set of segment pairs ``(i, j)`` (segment ``i`` of A times
segment ``j`` of B). Adjacent segments combine into one wider integer: segments
``i0..i1`` of A form ``a[i0:i1] = sum_i s_i 2^(b*(i1-i))`` (``b`` = 7 bits per
sign-magnitude segment, 8 per balanced digit), and the product
``a[i0:i1] * b[j0:j1]`` is exactly the sum of the pairs of the rectangle
``[i0..i1] x [j0..j1]`` with their relative weights. One float64 GEMM of two such
integer matrices is exact while every partial sum stays below 2^53, so a config's
INT8 products collapse into a few exact dgemms: level IV (8 products) into 2.

The planner covers the kept pairs with disjoint rectangles and splits a rectangle
while ``bits(A range) + bits(B range)`` exceeds the budget, so that the dgemms stay
exact on data whose exponents span up to ``SPAN_RESERVE`` binades along K (wider
data goes through the exact path; see runtime/executor_mixpert.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from mixjit.runtime.segments import BALANCED, MAGNITUDE, digit_bits

__all__ = ["Block", "SPAN_RESERVE", "range_bits", "plan_blocks", "k_bits"]

#: binades of exponent span along K (row of A + column of B) the plan keeps free
SPAN_RESERVE = 7


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


def k_bits(k: int) -> int:
    """``ceil(log2(k))``: bits a sum of ``k`` terms can add."""
    return max(0, (k - 1).bit_length())


def plan_blocks(
    pairs: tuple[tuple[int, int], ...], segments: int, seg0_bits: int, k: int, digits: int = MAGNITUDE
) -> tuple[Block, ...]:
    """Disjoint rectangles covering ``pairs`` whose dgemms over ``k`` terms are exact
    with ``SPAN_RESERVE`` binades to spare."""
    budget = 53 - k_bits(k) - SPAN_RESERVE
    if budget < 2 * 7:
        raise ValueError(
            f"mixpert: K={k} is too long for exact float64 accumulation of INT8 products; "
            "split the GEMM along K into chunks of at most 2^30"
        )
    rows: dict[int, tuple[int, ...]] = {}
    for i, j in sorted(set(pairs)):
        rows[i] = rows.get(i, ()) + (j,)
    rects: list[tuple[int, int, int, int]] = []
    i_sorted = sorted(rows)
    start = 0
    while start < len(i_sorted):
        end = start
        while (
            end + 1 < len(i_sorted)
            and i_sorted[end + 1] == i_sorted[end] + 1
            and rows[i_sorted[end + 1]] == rows[i_sorted[start]]
        ):
            end += 1
        js = rows[i_sorted[start]]
        run0 = js[0]
        for a, b in zip(js, js[1:] + (None,)):
            if b != a + 1:
                rects.append((i_sorted[start], i_sorted[end], run0, a))
                if b is not None:
                    run0 = b
        start = end + 1
    blocks: list[Block] = []
    todo = list(rects)
    while todo:
        i0, i1, j0, j1 = todo.pop(0)
        bits = range_bits(i0, i1, seg0_bits, digits) + range_bits(j0, j1, seg0_bits, digits)
        if bits <= budget or (i0 == i1 and j0 == j1):
            b = digit_bits(digits)
            shift = b * (segments - 1 - i1) + b * (segments - 1 - j1)
            blocks.append(Block(i0, i1, j0, j1, shift, bits))
        elif i1 - i0 >= j1 - j0:
            mid = (i0 + i1) // 2
            todo[:0] = [(i0, mid, j0, j1), (mid + 1, i1, j0, j1)]
        else:
            mid = (j0 + j1) // 2
            todo[:0] = [(i0, i1, j0, mid), (i0, i1, mid + 1, j1)]
    return tuple(blocks)
