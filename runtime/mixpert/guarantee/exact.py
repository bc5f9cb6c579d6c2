"""The MixPert executor's choice of exact rows and columns, and its exact path
(float64 domain).

:func:`exact_sets` picks the rows of A and columns of B that leave the fast path:
those touching a fallback tile, and those whose exponent span along K exceeds the
fast path's exactness bound (split between rows and columns so that the fewest
outputs are recomputed). In the float64 domain :func:`exact_rows` recomputes
their outputs k-tile by k-tile (each k-tile dgemm is exact) and sums them exactly;
the float32 domain takes the certified path (executor_mixpert_certified).
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.pack import block_operand
from mixjit.runtime.mixpert.pair_blocks import BLOCK_I0, BLOCK_I1, BLOCK_J0, BLOCK_J1, BLOCK_SHIFT
from mixjit.runtime.mixpert.words import W_DIGITS, W_SEGMENTS, W_TK
from mixjit.runtime.numerics.exactsum import MAX_PARTIALS, add_pieces, finish_all

#: rows (or columns) recomputed together on the exact path
_EXACT_CHUNK = 32


@cached_njit(nogil=True)
def exact_rows(pa, pb, blocks, ea, eb, params, rows, out, transposed: bool, to32: bool):
    """Recompute the outputs of ``rows`` of ``pa`` (rows of A; columns of B when
    ``transposed``, with ``pa``/``pb`` and the blocks' sides swapped) k-tile by
    k-tile with an exact sum: the wide spans of the float64 domain, which has no
    fallback tiles (the float32 domain takes :func:`certified`)."""
    aq, agexp, ascale = pa.q, pa.gexp, pa.scale
    bq, bscale = pb.q, pb.scale
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tk = params[W_TK]
    K = aq.shape[1]
    n = bq.shape[0]
    nkt = agexp.shape[1]
    ones_n = np.ones(n)
    all_b = np.arange(n)
    ia0, ia1, jb0, jb1 = (BLOCK_J0, BLOCK_J1, BLOCK_I0, BLOCK_I1) if transposed else (BLOCK_I0, BLOCK_I1, BLOCK_J0, BLOCK_J1)
    for c0 in range(0, rows.shape[0], _EXACT_CHUNK):
        rs = rows[c0 : c0 + _EXACT_CHUNK]
        r = rs.shape[0]
        parts = np.zeros((r, n, MAX_PARTIALS))
        counts = np.zeros((r, n), dtype=np.int64)
        for t in range(nkt):
            k0 = t * tk
            k1 = min(k0 + tk, K)
            for b in range(blocks.shape[0]):
                x = block_operand(aq, ascale, rs, k0, k1, blocks[b, ia0], blocks[b, ia1], segments, digits, tk)
                y = block_operand(bq, bscale, all_b, k0, k1, blocks[b, jb0], blocks[b, jb1], segments, digits, tk)
                add_pieces(parts, counts, np.dot(x, y.T), np.full(r, 2.0 ** blocks[b, BLOCK_SHIFT]), ones_n)
        sub = np.empty((r, n))
        ea_rs = np.empty(r, dtype=np.int64)
        for u in range(r):
            ea_rs[u] = ea[rs[u]]
        finish_all(parts, counts, ea_rs, eb, sub, to32)
        for u in range(r):
            for j in range(n):
                if transposed:
                    out[j, rs[u]] = sub[u, j]
                else:
                    out[rs[u], j] = sub[u, j]


@cached_njit(nogil=True)
def exact_sets(sa, sb, fa, fb, limit: int):
    """Rows and columns that must take the exact path: touching a fallback tile, or
    with ``span_a[i] + span_b[j]`` above the fast path's exactness bound ``limit``
    (the split between rows and columns that recomputes the fewest outputs)."""
    m = sa.shape[0]
    n = sb.shape[0]
    bad_a = np.zeros(m, dtype=np.bool_)
    bad_b = np.zeros(n, dtype=np.bool_)
    for i in range(m):
        bad_a[i] = fa[i].any()
    for j in range(n):
        bad_b[j] = fb[j].any()
    if m and n and sa.max() + sb.max() > limit:
        best = -1
        best_ta = 0
        for ta in range(limit + 1):
            cost = int((sa > ta).sum()) * n + int((sb > limit - ta).sum()) * m
            if best < 0 or cost < best:
                best = cost
                best_ta = ta
        bad_a |= sa > best_ta
        bad_b |= sb > limit - best_ta
    return np.flatnonzero(bad_a), np.flatnonzero(bad_b)
