"""Packing for the MixPert executor's dgemms: integer-valued float64 block operands.

A block of kept segment pairs (runtime/pair_blocks.py) multiplies, on each side, the
sum of a range of segments of every element, times its group's power-of-two scale.
:func:`block_operand` builds that side as a float64 matrix; every value is an
integer times a power of two, so it is exact, and so is the dgemm over it
(pair_blocks bounds every partial sum below 2^53).
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.segments import digit_range


@cached_njit(nogil=True)
def block_operand(q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int, tk: int):
    """Float64 matrix of segments ``i0..i1`` of ``q[rows, k0:k1]``, each k-tile times
    its scale (integer-valued times a power of two: exact)."""
    out = np.empty((rows.shape[0], k1 - k0))
    for u in range(rows.shape[0]):
        i = rows[u]
        for t in range(k0 // tk, (k1 + tk - 1) // tk):
            sc = scale[i, t]
            for k in range(max(k0, t * tk), min(k1, t * tk + tk)):
                out[u, k - k0] = digit_range(q[i, k], i0, i1, segments, digits) * sc
    return out
