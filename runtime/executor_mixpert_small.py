"""The MixPert executor's small-shape path: one fused compiled call, no BLAS.

For a GEMM of at most ``SMALL_MAX_WORK`` multiply-adds (m*n*k), the general driver's
fixed costs dominate: a dozen scratch arrays per operand, two passes of the packer
over separate arrays, and a BLAS call per block on operands of a few dozen
elements. :func:`small_gemm` computes the same ``X`` (the exact sum of the kept
segment products, docs/numerics.md "mixpert") with the same blocks
(pair_blocks.plan_block_array: every block sum is exact in float64, so a plain
loop gives the value the dgemm gives) and rounds it with the same epilogues
(executor_mixpert_fast.epilogue / epilogue_many) and, in the float64 domain, the
same guarantee check (mixpert_bound.fp64_doubtful) and exact recomputation: the
bits are those of the general path. The operand split is fused (one pass splits
every element, the second aligns it) and every temporary is a view of one int64
and one float64 scratch buffer per call (one more for more than two blocks).

It takes only the common case, the calls the general path runs entirely on its
fast path: no non-finite element, no fallback tile, no element aligned to 0 (step 6,
float32 domain), exponent spans within the fast path's bound, and in the float32
domain a config whose exact blocks the general path uses (not the wide blocks of
runtime/mixpert_wide.py, whose doubtful-output count it could not reproduce). For
anything else it returns :data:`NOT_TAKEN` before writing ``c``, and the driver
runs the general path. A call it takes reports ``STAT_SMALL_PATH = 1`` and the
same statistics as the general path would.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.executor_mixpert_fast import epilogue, epilogue_many
from mixjit.runtime.executor_mixpert_words import (
    ALIGN_ROW,
    DOMAIN_FP32,
    MAX_SPAN,
    OK,
    STAT_RECOMPUTED,
    STAT_SMALL_PATH,
    STAT_TILES,
    STAT_WIDEST_SPAN,
    W_ALIGN,
    W_DIGITS,
    W_DOMAIN,
    W_FALLBACK,
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
from mixjit.runtime.mixpert_wide import plan_wide_blocks
from mixjit.runtime.pair_blocks import (
    BLOCK_BITS,
    BLOCK_I0,
    BLOCK_I1,
    BLOCK_J0,
    BLOCK_J1,
    BLOCK_SHIFT,
    SPAN_RESERVE,
    k_bits,
    plan_block_array,
)
from mixjit.runtime.segments import ZERO_EXP, _shift_branchless, digit_range, max_aligned, split_element, width

#: largest m*n*k the small path takes (chosen by tools/bench_small_sites.py --threshold)
SMALL_MAX_WORK = 64 * 64 * 64

#: :func:`small_gemm`'s answer for a call it leaves to the general path
NOT_TAKEN = -1

#: per-element exponent of a zero element in the split scratch
_NO_EXP = -32768


@cached_njit(nogil=True)
def _split(x, side_b: bool, params, raw, q, ex, gexp, scale, ref, span) -> bool:
    """Split and align operand ``x`` (A, or B when ``side_b``) in row form into the
    scratch views (``raw``, ``q`` rows x K; ``gexp``, ``scale`` rows x k-tiles;
    ``ref``, ``span`` per row; ``ex`` rows x K holds each element's exponent), as
    executor_mixpert_split.prepare_operand does.
    False where the call must take the general path: a non-finite element, a
    fallback tile, or (float32 domain) a nonzero element aligned to 0."""
    r, K = q.shape
    nkt = gexp.shape[1]
    to32 = params[W_DOMAIN] == DOMAIN_FP32
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tk = params[W_TK]
    tile_rows = params[W_TN] if side_b else params[W_TM]
    group_rows = 1 if params[W_ALIGN] == ALIGN_ROW else tile_rows
    threshold = params[W_FALLBACK]
    mode = params[W_ROUNDING]
    w = width(segments, params[W_SEG0_BITS], digits)
    emax = 127 if to32 else 1023
    qmax = max_aligned(segments, digits)
    check_over = qmax < (np.int64(1) << 62) - 1
    expmask = np.uint64(0x7FF0000000000000)
    # pass 1: split every element (q holds M, ex its exponent); gexp first holds
    # each row's largest exponent per k-tile
    for i in range(r):
        for kt in range(nkt):
            mx = np.int64(_NO_EXP)
            for k in range(kt * tk, min(kt * tk + tk, K)):
                v = x[k, i] if side_b else x[i, k]
                f = np.float64(np.float32(v)) if to32 else np.float64(v)
                raw[i, k] = f
                u = np.float64(f).view(np.uint64)
                if (u & expmask) == expmask:
                    return False
                if f == 0.0:
                    q[i, k] = 0
                    ex[i, k] = _NO_EXP
                else:
                    m, e = split_element(u, w, emax)
                    q[i, k] = m
                    ex[i, k] = e
                    mx = max(mx, e)
            gexp[i, kt] = mx if mx != _NO_EXP else ZERO_EXP
    # group exponents: the largest of the group's rows, one more where an element
    # at it exceeds the balanced digits' range (segments.pack_groups)
    for g0 in range(0, r, group_rows):
        g1 = min(g0 + group_rows, r)
        for kt in range(nkt):
            top = ZERO_EXP
            for i in range(g0, g1):
                top = max(top, gexp[i, kt])
            bump = False
            if check_over and top != ZERO_EXP:
                for i in range(g0, g1):
                    for k in range(kt * tk, min(kt * tk + tk, K)):
                        bump |= (ex[i, k] == top) & (q[i, k] > qmax)
            for i in range(g0, g1):
                gexp[i, kt] = top + 1 if bump else top
    # pass 2: align; count per tile the nonzero elements and those shifted far
    far = threshold if threshold >= 0 else 1 << 20
    for t0 in range(0, r, tile_rows):
        t1 = min(t0 + tile_rows, r)
        for kt in range(nkt):
            nz = 0
            sh = 0
            for i in range(t0, t1):
                g = gexp[i, kt]
                lim = (np.int64(1) << (w - 1)) - 1 if g > emax else (np.int64(1) << 62)
                for k in range(kt * tk, min(kt * tk + tk, K)):
                    e = np.int64(ex[i, k])
                    if e == _NO_EXP:
                        continue
                    d = g - e
                    v = min(max(_shift_branchless(q[i, k], d, mode), -lim), lim)
                    q[i, k] = v
                    if to32 and v == 0:
                        return False  # step 6 would recompute its row: general path
                    nz += 1
                    sh += np.int64(d > far)
            if threshold >= 0 and 8 * sh > nz:
                return False  # a fallback tile: general path
    # reference exponent, span and the exact power-of-two scale of each group
    for i in range(r):
        hi = ZERO_EXP
        lo = -ZERO_EXP
        for t in range(nkt):
            e = gexp[i, t]
            if e != ZERO_EXP:
                hi = max(hi, e)
                lo = min(lo, e)
        ref[i] = hi if hi != ZERO_EXP else 0
        span[i] = hi - lo if hi != ZERO_EXP else 0
        for t in range(nkt):
            e = gexp[i, t]
            scale[i, t] = math.ldexp(1.0, e - hi) if e != ZERO_EXP else 0.0
    return True


@cached_njit(nogil=True)
def _block_dot(aq, ascale, bq, bscale, i0: int, i1: int, j0: int, j1: int, segments: int, digits: int, tk: int,
               xa, yb, d) -> None:
    """``d = X_A @ Y_B^T`` of one block (segments ``i0..i1`` of A against ``j0..j1``
    of B, each k-tile times its scale), exact: the block plan keeps every partial
    sum below 2^53, so any order gives the dgemm's value. ``xa`` (m x K) and ``yb``
    (K x n) are scratch."""
    m, K = aq.shape
    n = bq.shape[0]
    for i in range(m):
        for k in range(K):
            xa[i, k] = digit_range(aq[i, k], i0, i1, segments, digits) * ascale[i, k // tk]
    for j in range(n):
        for k in range(K):
            yb[k, j] = digit_range(bq[j, k], j0, j1, segments, digits) * bscale[j, k // tk]
    for i in range(m):
        for j in range(n):
            d[i, j] = 0.0
        for k in range(K):
            a = xa[i, k]
            if a != 0.0:
                for j in range(n):
                    d[i, j] += a * yb[k, j]


@cached_njit(nogil=True)
def small_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the MixPert semantics for a small call, the same bits and
    statistics as the general driver; :data:`NOT_TAKEN` (``c`` and ``stats``
    untouched) for a call it leaves to the general path. ``params`` must have passed
    ``params_ok`` and the shapes must match (the driver checks both)."""
    m, K = a.shape
    n = b.shape[1]
    if m == 0 or n == 0 or K == 0 or m * n * K > SMALL_MAX_WORK:
        return NOT_TAKEN
    to32 = params[W_DOMAIN] == DOMAIN_FP32
    tk = params[W_TK]
    nkt = (K + tk - 1) // tk
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    # scratch: one int64 and one float64 buffer, cut into the views below
    ints = np.empty((m + n) * (2 * K + 2 * nkt + 2), dtype=np.int64)
    floats = np.empty((m + n) * (2 * K + nkt) + 3 * m * n, dtype=np.float64)
    o = 0
    aq = ints[o : o + m * K].reshape((m, K))
    o += m * K
    bq = ints[o : o + n * K].reshape((n, K))
    o += n * K
    aex = ints[o : o + m * K].reshape((m, K))
    o += m * K
    bex = ints[o : o + n * K].reshape((n, K))
    o += n * K
    agexp = ints[o : o + m * nkt].reshape((m, nkt))
    o += m * nkt
    bgexp = ints[o : o + n * nkt].reshape((n, nkt))
    o += n * nkt
    aref = ints[o : o + m]
    o += m
    bref = ints[o : o + n]
    o += n
    aspan = ints[o : o + m]
    o += m
    bspan = ints[o : o + n]
    o = 0
    araw = floats[o : o + m * K].reshape((m, K))
    o += m * K
    braw = floats[o : o + n * K].reshape((n, K))
    o += n * K
    ascale = floats[o : o + m * nkt].reshape((m, nkt))
    o += m * nkt
    bscale = floats[o : o + n * nkt].reshape((n, nkt))
    o += n * nkt
    xa = floats[o : o + m * K].reshape((m, K))
    o += m * K
    yb = floats[o : o + K * n].reshape((K, n))
    o += K * n
    out = floats[o : o + m * n].reshape((m, n))
    o += m * n
    d1 = floats[o : o + m * n].reshape((m, n))
    o += m * n
    d2 = floats[o : o + m * n].reshape((m, n))
    if not _split(a, False, params, araw, aq, aex, agexp, ascale, aref, aspan):
        return NOT_TAKEN
    if not _split(b, True, params, braw, bq, bex, bgexp, bscale, bref, bspan):
        return NOT_TAKEN
    widest = aspan.max() + bspan.max()
    if widest > MAX_SPAN:
        return NOT_TAKEN
    pairs = kept_pairs(params)
    blocks, ok = plan_block_array(pairs, segments, params[W_SEG0_BITS], K, digits, min(widest, SPAN_RESERVE))
    if not ok:
        return NOT_TAKEN
    nb = blocks.shape[0]
    if to32 and plan_wide_blocks(pairs, segments, params[W_SEG0_BITS], digits).shape[0] < nb:
        return NOT_TAKEN  # the general path takes the wide blocks
    if widest > 53 - k_bits(K) - blocks[:, BLOCK_BITS].max():
        return NOT_TAKEN  # some rows or columns take the certified / exact path
    w = width(segments, params[W_SEG0_BITS], digits)
    ea = aref - (w - 1)
    eb = bref - (w - 1)
    if nb <= 2:
        _block_dot(aq, ascale, bq, bscale, blocks[0, BLOCK_I0], blocks[0, BLOCK_I1], blocks[0, BLOCK_J0],
                   blocks[0, BLOCK_J1], segments, digits, tk, xa, yb, d1)
        if nb == 2:
            _block_dot(aq, ascale, bq, bscale, blocks[1, BLOCK_I0], blocks[1, BLOCK_I1], blocks[1, BLOCK_J0],
                       blocks[1, BLOCK_J1], segments, digits, tk, xa, yb, d2)
        w1 = 2.0 ** blocks[0, BLOCK_SHIFT]
        w2 = 2.0 ** blocks[1, BLOCK_SHIFT] if nb == 2 else 0.0
        epilogue(d1, w1, d2, w2, nb == 2, ea, eb, out, to32)
    else:
        ds = np.empty((nb, m, n))
        for bl in range(nb):
            _block_dot(aq, ascale, bq, bscale, blocks[bl, BLOCK_I0], blocks[bl, BLOCK_I1], blocks[bl, BLOCK_J0],
                       blocks[bl, BLOCK_J1], segments, digits, tk, xa, yb, ds[bl])
        epilogue_many(ds, blocks, ea, eb, out, to32)
    stats[:] = 0
    if not to32:
        dropped = dropped_weight(pairs, segments, params[W_SEG0_BITS], digits)
        doubt = fp64_doubtful(araw, agexp, aref, braw, bgexp, bref, tk, w, dropped, out)
        stats[STAT_RECOMPUTED] = recompute(araw, braw, doubt, out, False)
    for i in range(m):
        for j in range(n):
            c[i, j] = out[i, j]
    stats[STAT_TILES] = nkt * (-(-m // params[W_TM]) + -(-n // params[W_TN]))
    stats[STAT_WIDEST_SPAN] = widest
    stats[STAT_SMALL_PATH] = 1
    return OK
