"""Level IV's fast path: one float64 GEMM of the whole aligned mantissas minus float32
GEMMs of the least significant digits, each output certified exact or recomputed.

Level IV keeps every segment pair of its 3 x 3 but the corner ``(2, 2)``. Its exact
blocks (runtime/mixpert/pair_blocks.py) are two dgemms (A's segments 0..1 times B's 0..2, A's
segment 2 times B's 0..1): ``2 n^3`` float64 flops. The same value is

    X = x · y - c_a · c_b

``x``, ``y``: the whole aligned mantissas (every segment, ``q``) times their k-tile
scales; ``c_a``, ``c_b``: the corner digits (segment ``s - 1``) times the same
scales. ``x · y`` is one dgemm, ``c_a · c_b`` float32 GEMMs (sgemm, about half a
dgemm's time) over chunks of K. Any kept set of this shape (every pair but the last
one, ``s`` segments) takes this path (:func:`corner_applies`).

Neither GEMM is exact for every input, so every output carries a certificate. A row
``i`` of ``x`` whose k-tile scales are at least ``g_i = 2^-span_i`` holds multiples
of ``g_i``; every partial sum of ``x_i · y_j``, in any order, with or without FMA,
is a multiple of ``g_i g_j`` no larger than ``sum_k |x_ik y_jk| <= ||x_i|| ||y_j||``
(Cauchy-Schwarz). Where ``||x_i|| ||y_j|| <= 2^53 g_i g_j`` each partial sum is an
integer multiple of ``g_i g_j`` below ``2^53`` of it, so the dgemm is exact; where
``||c_ai|| ||c_bj|| <= 2^24 g_i g_j`` on every chunk, so is the sgemm of that chunk,
and the float64 sum of the chunks. On centred data with few spans both hold for
nearly every output (the chunk length is chosen from the spans so they do:
:func:`corner_chunks`). An output that fails either is recomputed alone from the
planned exact blocks (dot products over K). The epilogue (executor_mixpert_fast)
then rounds ``RN32(X)`` from the two exact doubles ``x · y`` and ``-c_a · c_b``
exactly as it does from the two exact block results: the bits are the same.

Where more outputs fail than the recomputation can pay for (wide spans), the caller
runs the two exact dgemms instead (:func:`corner_products` returns False).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.pack import fresh64, huge_pages
from mixjit.runtime.mixpert.pair_blocks import (
    BLOCK_BITS,
    BLOCK_I0,
    BLOCK_I1,
    BLOCK_J0,
    BLOCK_J1,
    BLOCK_SHIFT,
    k_bits,
    range_bits,
)
from mixjit.runtime.mixpert.segments import digit_bits, digit_range

__all__ = ["CORNER_MAX_CHUNKS", "corner_applies", "corner_chunks", "corner_products"]

_U = 2.0**-53
#: exact float64 integers: the dgemm's certificate
_EXACT64 = 2.0**53
#: exact float32 integers: the sgemm's certificate
_EXACT32 = 2.0**24
#: most K-chunks of the float32 GEMMs worth running (each one more sgemm call and
#: one more pass over the m x n result); more needed: the two exact dgemms instead
CORNER_MAX_CHUNKS = 16


@cached_njit(nogil=True)
def corner_applies(pairs, segments: int, seg0_bits: int, digits: int) -> bool:
    """Is the kept set every pair but the corner ``(s - 1, s - 1)`` (level IV), with
    whole mantissas exact in float64? Then :func:`corner_products` can run it."""
    if segments < 2 or range_bits(0, segments - 1, seg0_bits, digits) > 53:
        return False
    for i in range(segments):
        for j in range(segments):
            if pairs[i, j] != (i < segments - 1 or j < segments - 1):
                return False
    return True


@cached_njit(nogil=True)
def _grid_spans(scale):
    """Per row: the exponent span of its nonzero k-tile scales (its grid is ``2^-span``)."""
    r, nkt = scale.shape
    span = np.zeros(r, dtype=np.int64)
    for i in range(r):
        lo = 1.0
        for t in range(nkt):
            s = scale[i, t]
            if s != 0.0 and s < lo:
                lo = s
        span[i] = -math.frexp(lo)[1] + 1  # lo = 2^-span
    return span


@cached_njit(nogil=True)
def corner_chunks(K: int, span_a, span_b, limit: int, digits: int, patch_limit: int) -> int:
    """How many K-chunks the float32 GEMMs of the corner digits take: the fewest for
    which the outputs whose sgemm certificate typical digits (uniform, ``E d^2 =
    4^b / 3``) would fail number at most ``patch_limit`` (outputs with
    ``span_a + span_b > limit`` do not count: another path computes them).
    Returns 0 when even :data:`CORNER_MAX_CHUNKS` chunks would not do."""
    hist_a = np.bincount(np.minimum(span_a, limit + 1))
    hist_b = np.bincount(np.minimum(span_b, limit + 1))
    d2 = 4.0 ** digit_bits(digits) / 3.0
    nc = max(1, int(math.ceil(K * d2 / _EXACT32)))
    while nc <= CORNER_MAX_CHUNKS:
        length = -(-K // nc)
        fails = 0
        for sa in range(hist_a.shape[0]):
            for sb in range(hist_b.shape[0]):
                if sa + sb <= limit and length * d2 * 2.0 ** (sa + sb) > _EXACT32:
                    fails += hist_a[sa] * hist_b[sb]
        if fails <= patch_limit:
            return nc
        nc *= 2
    return 0


@cached_njit(nogil=True)
def _pack_row(x, c, nx, nc_, q, scale, span, u: int, segments: int, digits: int, tk: int) -> None:
    """Row ``u``: whole mantissas times scales into ``x[u]``, corner digits times
    scales into ``c[:, u]`` (chunk-major, zero-padded), and upper bounds on the
    norms over the grid ``2^-span``: ``nx[u]`` of the row, ``nc_[u]`` of its
    largest chunk (sums of squares of exact squares, rounded up by a factor that
    covers every rounding)."""
    K = x.shape[1]
    nch, _, length = c.shape
    last = segments - 1
    ssx = 0.0
    big = 0.0
    t = 0  # the k-tile of k, followed without a division per element
    tile_end = tk
    sc = scale[u, 0] if K > 0 else 0.0
    for ch in range(nch):
        k0 = ch * length
        k1 = min(k0 + length, K)
        ssc = 0.0
        for k in range(k0, k1):
            if k == tile_end:
                t += 1
                tile_end += tk
                sc = scale[u, np.uint64(t)]
            v = q[u, np.uint64(k)]
            f = v * sc
            d = digit_range(v, last, last, segments, digits) * sc
            x[u, np.uint64(k)] = f
            c[ch, u, np.uint64(k - k0)] = d
            ssx += f * f
            ssc += d * d
        for k in range(max(k1, k0), k0 + length):
            c[ch, u, np.uint64(k - k0)] = 0.0
        big = max(big, ssc)
    up = 1.0 + 4.0 * (K + 4) * _U
    g = 2.0 ** span[u]
    nx[u] = math.sqrt(ssx * up) * up * g
    nc_[u] = math.sqrt(big * up) * up * g


@cached_njit(nogil=True)
def _pack(x, c, nx, nc_, q, scale, span, segments: int, digits: int, tk: int) -> None:
    for u in range(x.shape[0]):
        _pack_row(x, c, nx, nc_, q, scale, span, u, segments, digits, tk)


@cached_njit(nogil=True, parallel=True)
def _pack_threads(x, c, nx, nc_, q, scale, span, segments: int, digits: int, tk: int) -> None:
    """:func:`_pack`, rows spread over threads (the same values)."""
    for u in prange(x.shape[0]):
        _pack_row(x, c, nx, nc_, q, scale, span, u, segments, digits, tk)


@cached_njit(nogil=True)
def _pack_side(q, scale, span, nch: int, segments: int, digits: int, tk: int, threads: bool):
    """One side packed for :func:`corner_products`: ``(x, c, nx, nc)``."""
    r, K = q.shape
    x = fresh64(r, K)
    c = np.empty((nch, r, -(-K // nch)), dtype=np.float32)
    huge_pages(c)
    nx = np.empty(r)
    nc_ = np.empty(r)
    if threads:
        _pack_threads(x, c, nx, nc_, q, scale, span, segments, digits, tk)
    else:
        _pack(x, c, nx, nc_, q, scale, span, segments, digits, tk)
    return x, c, nx, nc_


@cached_njit(nogil=True)
def _drop_beyond(nx, nc_, span, limit: int) -> None:
    """Norms of rows whose span alone exceeds ``limit`` set to 0: their outputs are the
    exact / certified path's, so their certificates never fail (nor count)."""
    for u in range(span.shape[0]):
        if span[u] > limit:
            nx[u] = 0.0
            nc_[u] = 0.0


@cached_njit(nogil=True)
def _fails(na_i: float, nb_j: float, bound: float) -> bool:
    """Does ``na_i nb_j <= bound`` fail (both upper bounds; room left for the rounding
    of the test itself)? The one predicate both counting and patching use."""
    return na_i != 0.0 and nb_j > bound * (1.0 - 8.0 * _U) / na_i


@cached_njit(nogil=True)
def _failing(na, nb, bound: float):
    """For each row ``i``: how many columns ``j`` fail (:func:`_fails`), counted over
    the sorted ``nb``; also the columns in descending ``nb``: row ``i``'s failures
    are the first ``count[i]``."""
    order = np.argsort(-nb)
    asc = np.sort(nb)
    n = nb.shape[0]
    count = np.empty(na.shape[0], dtype=np.int64)
    for i in range(na.shape[0]):
        count[i] = 0 if na[i] == 0.0 else n - np.searchsorted(asc, bound * (1.0 - 8.0 * _U) / na[i], side="right")
    return count, order


@cached_njit(nogil=True)
def _exact_blocks(aq, ascale, bq, bscale, blocks, i: int, j: int, segments: int, digits: int, tk: int):
    """Output ``(i, j)`` of the two planned exact blocks, each times its weight
    ``2^shift``: exact doubles whose sum is ``X`` (the blocks' dgemms, one output)."""
    K = aq.shape[1]
    res = np.zeros(2)
    for b in range(2):
        s = 0.0
        for k in range(K):
            t = k // tk
            s += (digit_range(aq[i, k], blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], segments, digits) * ascale[i, t]
                  * digit_range(bq[j, k], blocks[b, BLOCK_J0], blocks[b, BLOCK_J1], segments, digits) * bscale[j, t])
        res[b] = s * 2.0 ** blocks[b, BLOCK_SHIFT]
    return res


@cached_njit(nogil=True)
def _patch_one(d1, d2, aq, ascale, bq, bscale, blocks, i: int, j: int, segments: int, digits: int, tk: int) -> None:
    """``d1 = u``, ``d2 = -v`` at ``(i, j)`` from the exact blocks ``u + v = X``."""
    uv = _exact_blocks(aq, ascale, bq, bscale, blocks, i, j, segments, digits, tk)
    d1[i, j] = uv[0]
    d2[i, j] = -uv[1]


@cached_njit(nogil=True)
def _patch(d1, d2, aq, ascale, bq, bscale, blocks, nxa, nyb, count64, order64, count32, order32, span_a, span_b,
           limit: int, segments: int, digits: int, tk: int) -> None:
    """Outputs whose certificate failed (row ``i``: the first ``count64[i]`` columns of
    ``order64``, then those of ``count32`` / ``order32`` the first did not take) from
    the exact blocks, except those beyond ``limit`` (the exact / certified path's)."""
    for i in range(d1.shape[0]):
        for t in range(count64[i]):
            j = order64[t]
            if span_a[i] + span_b[j] <= limit:
                _patch_one(d1, d2, aq, ascale, bq, bscale, blocks, i, j, segments, digits, tk)
        for t in range(count32[i]):
            j = order32[t]
            if span_a[i] + span_b[j] <= limit and not _fails(nxa[i], nyb[j], _EXACT64):
                _patch_one(d1, d2, aq, ascale, bq, bscale, blocks, i, j, segments, digits, tk)


@cached_njit(nogil=True)
def _add_chunks(d2, t32, count: int, first: bool) -> None:
    """``d2 (+)= t32[0] + ... + t32[count - 1]`` in float64, one pass (exact: each
    chunk result is exact and below 2^24 units of the output's grid)."""
    m, n = d2.shape
    for i in range(m):
        for j in range(n):
            s = 0.0 if first else d2[i, j]
            for c in range(count):
                s += t32[c, i, j]
            d2[i, j] = s


@cached_njit(nogil=True)
def corner_products(aq, ascale, bq, bscale, blocks, segments: int, digits: int, tk: int, patch_limit: int,
                    threads_a: bool, threads_b: bool):
    """``(ok, d1, d2)`` with ``X = d1 - d2`` exactly, both exact doubles, for every
    output whose row and column spans sum to at most the blocks' bound (the others are
    the exact / certified path's): ``d1 = x · y`` (one dgemm) and ``d2 = c_a · c_b``
    (float32 GEMMs per K-chunk) where certified, else the two exact ``blocks`` (the
    plan of the kept pairs, exactly two) of that output alone (module docstring).
    ``ok`` is False, and nothing computed, where more than ``patch_limit`` outputs
    would need recomputing: run the exact blocks instead."""
    m, K = aq.shape
    n = bq.shape[0]
    empty = np.empty((0, 0))
    limit = 53 - k_bits(K) - blocks[:, BLOCK_BITS].max()  # as the driver's exact_sets
    span_a = _grid_spans(ascale)
    span_b = _grid_spans(bscale)
    nch = corner_chunks(K, span_a, span_b, limit, digits, patch_limit)
    if nch == 0:
        return False, empty, empty
    x, ca, nxa, nca = _pack_side(aq, ascale, span_a, nch, segments, digits, tk, threads_a)
    y, cb, nyb, ncb = _pack_side(bq, bscale, span_b, nch, segments, digits, tk, threads_b)
    _drop_beyond(nxa, nca, span_a, limit)
    _drop_beyond(nyb, ncb, span_b, limit)
    count64, order64 = _failing(nxa, nyb, _EXACT64)
    count32, order32 = _failing(nca, ncb, _EXACT32)
    if np.minimum(count64 + count32, n).sum() > patch_limit:  # at most this many
        return False, empty, empty
    d1 = fresh64(m, n)
    np.dot(x, y.T, d1)
    # x and y are spent: their pages hold d2 and the chunk results where they fit
    # (fresh arrays cost their page faults, ~10 ms per 32 MB here)
    # (as many chunk results at a time as y holds, at least one: fewer passes over d2)
    d2 = x.reshape(-1)[: m * n].reshape((m, n)) if n <= K else np.empty((m, n))
    group = min(nch, 2 * K // m) if m > 0 else 1
    if group >= 1:
        t32 = y.reshape(-1).view(np.float32)[: group * m * n].reshape((group, m, n))
    else:
        group = 1
        t32 = np.empty((1, m, n), np.float32)
    for c0 in range(0, nch, group):
        count = min(group, nch - c0)
        for c in range(count):
            np.dot(ca[c0 + c], cb[c0 + c].T, t32[c])
        _add_chunks(d2, t32, count, c0 == 0)
    _patch(d1, d2, aq, ascale, bq, bscale, blocks, nxa, nyb, count64, order64, count32, order32, span_a, span_b,
           limit, segments, digits, tk)
    return True, d1, d2
