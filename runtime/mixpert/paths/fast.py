"""The MixPert executor's fast path: one exact dgemm per block over the whole K,
then one rounding per output.

The blocks (runtime/mixpert/pair_blocks.py) are chosen so that every partial sum of every
block's dgemm stays below 2^53 on the finest grid of its output: each dgemm is
exact. With at most two blocks one TwoSum gives ``RN64(X)`` and its residual
(:func:`epilogue`); with more, a TwoSum chain and Ziv's test give the result, and
the outputs it leaves in doubt are summed exactly in integer limbs
(:func:`epilogue_terms`). In the float64 domain a pair of cross blocks runs as one
Karatsuba dgemm of slice differences, exact within the same bound
(pair_blocks.karatsuba_products: mixpert-fp64's six blocks in five dgemms); the
epilogue then sums signed terms of the dgemm results, the same exact sum. Rows and
columns whose exponent span is too wide for the blocks' bound take the certified
or exact path instead (executor_mixpert_driver).

Level IV's pair set (every pair but the corner) runs instead as one wide dgemm
minus the corner digits' sgemms, exact where per-output certificates say so and
recomputed from the blocks where not (runtime/mixpert/paths/corner.py,
:func:`corner_path`): one dgemm and half a dgemm's time of sgemms for the two
exact dgemms, the same bits.

The dgemms run in an order where consecutive ones share a side where they can, so
that a side is packed once per run of them into one of two buffers (no fresh array
per side), and the last one writes into the output array.
:func:`fast_path` decides once per call, from each step's work and the thread
count (``executor_mixpert_pack.threads_pay``), whether A's packing, B's packing
and the epilogue run on threads; every element and output is computed by the same
arithmetic either way, so the bits are those of the serial run.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.guarantee.ziv import _MANTISSA64, certain32, certain64, scaled_normal, times_pow2
from mixjit.runtime.mixpert.pack import (
    EPILOGUE_NS_PER_BLOCK,
    PACK_NS,
    fresh64,
    huge_pages,
    pack_product_into,
    threads_pay,
)
from mixjit.runtime.mixpert.pair_blocks import (
    BLOCK_BITS,
    BLOCK_SHIFT,
    PROD_I0,
    PROD_I1,
    PROD_ID0,
    PROD_ID1,
    PROD_J0,
    PROD_J1,
    PROD_JD0,
    PROD_JD1,
    TERM_PROD,
    TERM_SHIFT,
    TERM_SIGN,
    k_bits,
    karatsuba_products,
)
from mixjit.runtime.mixpert.paths.corner import corner_applies, corner_products
from mixjit.runtime.mixpert.segments import MAGNITUDE
from mixjit.runtime.mixpert.words import W_DIGITS, W_SEG0_BITS, W_SEGMENTS, W_TK, kept_pairs
from mixjit.runtime.numerics.exactsum import acc_add, acc_round, round32, round64_scaled


@cached_njit(nogil=True)
def epilogue(d1, w1: float, d2, w2: float, two: bool, ea, eb, out, to32: bool):
    """``out = RN(X)`` from one or two exact block results (TwoSum gives the residual)."""
    m, n = out.shape
    fb = np.empty(n)
    for j in range(n):
        fb[j] = math.ldexp(1.0, eb[j]) if to32 else 0.0
    for i in range(m):
        fa = math.ldexp(1.0, ea[i]) if to32 else 0.0
        for j in range(n):
            x = d1[i, j] * w1
            if two:
                y = d2[i, j] * w2
                s = x + y
                bb = s - x
                err = (x - (s - bb)) + (y - bb)
            else:
                s = x
                err = 0.0
            if to32:
                out[i, j] = round32(s * fa * fb[j], err)
            else:
                out[i, j] = round64_scaled(s, err, ea[i] + eb[j])


@cached_njit(nogil=True)
def fast_path(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32: bool):
    """The fast path: one dgemm per block over the whole K, rounded once; which steps
    run on threads is decided here, once (:func:`fast_path_threads`)."""
    m, K = aq.shape
    n = bq.shape[0]
    fast_path_threads(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32,
                      threads_pay(m * K * PACK_NS), threads_pay(n * K * PACK_NS),
                      threads_pay(m * n * blocks.shape[0] * EPILOGUE_NS_PER_BLOCK))


#: which computation :func:`fast_path_threads` ran: the planned exact blocks, or
#: level IV's wide dgemm minus the corner's sgemms (runtime/mixpert/paths/corner.py)
PATH_BLOCKS = 0
PATH_CORNER = 1

#: outputs the corner path may recompute alone, as a fraction 1/PATCH_DIVISOR of
#: m x n. Estimate: one such output (two scalar dot products over K with digit
#: extraction, ~6 ns per k) costs what ~30 outputs of a BLAS dgemm do, and the path
#: saves about half a dgemm output per output (2048: 900 -> 720 ms), so recomputing
#: 1/64 of the outputs still leaves most of the saving
PATCH_DIVISOR = 64


@cached_njit(nogil=True)
def fast_path_threads(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32: bool, threads_a: bool,
                      threads_b: bool, threads_epilogue: bool) -> int:
    """:func:`fast_path` with the thread decisions given: A's packing, B's packing and
    the epilogue each on threads or not (the same bits either way). Level IV's pair
    set (every pair but the corner, two planned blocks, float32 domain) runs as one
    wide dgemm minus the corner's sgemms where its certificates hold for nearly every
    output (runtime/mixpert/paths/corner.py), else the planned blocks run
    (:func:`blocks_path`). Returns which: ``PATH_CORNER`` or ``PATH_BLOCKS``."""
    patch_limit = aq.shape[0] * bq.shape[0] // PATCH_DIVISOR
    if to32 and corner_path(aq, ascale, bq, bscale, blocks, ea, eb, params, out, threads_a, threads_b,
                            threads_epilogue, patch_limit):
        return PATH_CORNER
    blocks_path(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32, threads_a, threads_b, threads_epilogue)
    return PATH_BLOCKS


@cached_njit(nogil=True)
def corner_path(aq, ascale, bq, bscale, blocks, ea, eb, params, out, threads_a: bool, threads_b: bool,
                threads_epilogue: bool, patch_limit: int) -> bool:
    """Float32 domain: ``out = RN32(X)`` from one wide dgemm minus the corner digits'
    sgemms (runtime/mixpert/paths/corner.py) where the kept pairs are level IV's shape, the
    plan has two blocks and at most ``patch_limit`` outputs fail their certificates;
    returns False, with ``out`` untouched, where not. The epilogue rounds the exact
    ``d1 - d2`` as it rounds the two blocks' exact sum: the same bits."""
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    if blocks.shape[0] != 2 or not corner_applies(kept_pairs(params), segments, params[W_SEG0_BITS], digits):
        return False
    ok, d1, d2 = corner_products(aq, ascale, bq, bscale, blocks, segments, digits, params[W_TK], patch_limit,
                                 threads_a, threads_b)
    if not ok:
        return False
    if threads_epilogue:
        _epilogue_threads(d1, 1.0, d2, -1.0, True, ea, eb, out, True)
    else:
        epilogue(d1, 1.0, d2, -1.0, True, ea, eb, out, True)
    return True


@cached_njit(nogil=True, inline="always")
def _same_side(prods, p: int, c: int, col: int) -> bool:
    """Do products ``p`` and ``c`` have the same operand on the side whose four
    columns start at ``col`` (``PROD_I0`` for A, ``PROD_J0`` for B)?"""
    return (prods[p, col] == prods[c, col] and prods[p, col + 1] == prods[c, col + 1]
            and prods[p, col + 2] == prods[c, col + 2] and prods[p, col + 3] == prods[c, col + 3])


@cached_njit(nogil=True)
def product_order(prods):
    """The order in which :func:`run_products` runs the products: consecutive products
    that share a side pack it once, so the order with the fewest side changes packs
    the fewest operands into its two buffers. Greedy from every start (the next
    product shares a side with the last where one does); the cheapest wins, the
    first on ties."""
    npr = prods.shape[0]
    best = np.arange(npr)
    best_cost = 2 * npr + 1
    order = np.empty(npr, np.int64)
    used = np.zeros(npr, np.bool_)
    for s in range(npr):
        used[:] = False
        order[0] = s
        used[s] = True
        cost = 2
        for t in range(1, npr):
            last = order[t - 1]
            pick = -1
            pick_cost = 3
            for c in range(npr):
                if used[c]:
                    continue
                cc = np.int64(not _same_side(prods, c, last, PROD_I0)) + np.int64(not _same_side(prods, c, last,
                                                                                                  PROD_J0))
                if cc < pick_cost:
                    pick = c
                    pick_cost = cc
            order[t] = pick
            used[pick] = True
            cost += pick_cost
        if cost < best_cost:
            best_cost = cost
            best[:] = order
    return best


@cached_njit(nogil=True)
def run_products(aq, ascale, bq, bscale, prods, params, ds, last, threads_a: bool, threads_b: bool) -> None:
    """``ds[p]`` = the exact dgemm of product ``p`` (pair_blocks.karatsuba_products)
    over the whole K; the last product's goes to ``last`` (``ds`` holding one
    product fewer: the caller's output array serves, one fresh m x n array fewer).

    The products run in :func:`product_order`; A's side is packed into one buffer
    and B's into another, each again only where it changes (a fresh array costs
    about as much as packing it: its first-touch page faults)."""
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tk = params[W_TK]
    m, K = aq.shape
    n = bq.shape[0]
    rows_a = np.arange(m)
    rows_b = np.arange(n)
    x = fresh64(m, K)  # scratch on huge pages: fewer first-touch page faults
    y = fresh64(n, K)
    order = product_order(prods)
    for t in range(order.shape[0]):
        p = order[t]
        if t == 0 or not _same_side(prods, p, order[t - 1], PROD_I0):
            pack_product_into(x, aq, ascale, rows_a, 0, K, prods[p, PROD_I0], prods[p, PROD_I1], prods[p, PROD_ID0],
                              prods[p, PROD_ID1], segments, digits, tk, threads_a)
        if t == 0 or not _same_side(prods, p, order[t - 1], PROD_J0):
            pack_product_into(y, bq, bscale, rows_b, 0, K, prods[p, PROD_J0], prods[p, PROD_J1], prods[p, PROD_JD0],
                              prods[p, PROD_JD1], segments, digits, tk, threads_b)
        np.dot(x, y.T, ds[p] if p < ds.shape[0] else last)


@cached_njit(nogil=True)
def blocks_path(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32: bool, threads_a: bool, threads_b: bool,
                threads_epilogue: bool) -> None:
    """The planned exact blocks: one exact dgemm each over the whole K, then one
    rounding per output (thread decisions as :func:`fast_path_threads`).

    In the float64 domain with sign-magnitude digits, pairs of cross blocks run as
    one Karatsuba dgemm (pair_blocks.karatsuba_products; mixpert-fp64's six blocks
    in five dgemms), its exact result combined with the two diagonal blocks' in the
    epilogue's terms: the same exact sum, the same bits. The dgemms:
    :func:`run_products`."""
    digits = params[W_DIGITS]
    nb = blocks.shape[0]
    m, K = aq.shape
    n = bq.shape[0]
    prods, terms = karatsuba_products(blocks, not to32 and digits == MAGNITUDE, params[W_SEG0_BITS], digits)
    # the last product's dgemm writes into out: every epilogue reads an output's
    # terms before it writes that output
    ds = np.empty((prods.shape[0] - 1, m, n))
    huge_pages(ds)
    run_products(aq, ascale, bq, bscale, prods, params, ds, out, threads_a, threads_b)
    if nb <= 2:
        d1 = ds[0] if nb == 2 else out
        d2 = out
        w1 = 2.0 ** blocks[0, BLOCK_SHIFT]
        w2 = 2.0 ** blocks[1, BLOCK_SHIFT] if nb == 2 else 0.0
        if threads_epilogue:
            _epilogue_threads(d1, w1, d2, w2, nb == 2, ea, eb, out, to32)
        else:
            epilogue(d1, w1, d2, w2, nb == 2, ea, eb, out, to32)
        return
    # the widest span the fast path takes (executor_mixpert_exact.exact_sets)
    frac = 53 - k_bits(K) - blocks[:, BLOCK_BITS].max()
    if threads_epilogue:
        _epilogue_terms_threads(ds, out, terms, ea, eb, out, to32, frac)
    else:
        epilogue_terms(ds, out, terms, ea, eb, out, to32, frac)


@cached_njit(nogil=True, inline="always")
def _term(ds, last, p: int, i: int, j: int) -> float:
    """Product ``p``'s result at ``(i, j)``: ``ds[p]``, or ``last`` for ``p = len(ds)``."""
    return ds[p, i, j] if p < ds.shape[0] else last[i, j]


@cached_njit(nogil=True)
def two_sum_add(hi: float, lo: float, mag: float, y: float):
    """One step of :func:`block_sum`'s TwoSum chain: ``hi + y`` rounded, its rounding
    error added to ``lo`` and its magnitude to ``mag``. Scalars only, so a caller's
    per-output loop pays no reference counting (a helper taking the arrays did)."""
    t = hi + y
    bb = t - hi
    e = (hi - (t - bb)) + (y - bb)
    return t, lo + e, mag + abs(e)


@cached_njit(nogil=True)
def two_sum_end(hi: float, lo: float):
    """The chain's last step: ``t = hi + lo`` rounded and its rounding error ``e2``."""
    t = hi + lo
    bb = t - hi
    return t, (hi - (t - bb)) + (lo - bb)


@cached_njit(nogil=True)
def block_sum(ds, last, prod, w, i: int, j: int):
    """TwoSum chain over the weighted terms ``ds[prod[t], i, j] * w[t]`` (``last``
    holding product ``len(ds)``, :func:`_term`): returns
    ``(t, e2, mag)``, the float64 sum ``t``, the rounding error ``e2`` of its last
    step and ``mag``, the sum of the chain's error magnitudes; the exact sum lies
    within ``|e2| + nt u mag`` of ``t`` (times a small slack for the bound's own
    roundings)."""
    nt = w.shape[0]
    hi = _term(ds, last, prod[0], i, j) * w[0]
    lo = 0.0
    mag = 0.0
    for b in range(1, nt):
        hi, lo, mag = two_sum_add(hi, lo, mag, _term(ds, last, prod[b], i, j) * w[b])
    t, e2 = two_sum_end(hi, lo)
    return t, e2, mag


#: output rows one thread rounds at a time in the threaded epilogues
_ROW_CHUNK = 16


@cached_njit(nogil=True, parallel=True)
def _epilogue_threads(d1, w1: float, d2, w2: float, two: bool, ea, eb, out, to32: bool):
    """:func:`epilogue` on chunks of rows, spread over threads (the same bits)."""
    m = out.shape[0]
    for c in prange((m + _ROW_CHUNK - 1) // _ROW_CHUNK):
        r0 = c * _ROW_CHUNK
        r1 = min(r0 + _ROW_CHUNK, m)
        epilogue(d1[r0:r1], w1, d2[r0:r1], w2, two, ea[r0:r1], eb, out[r0:r1], to32)


@cached_njit(nogil=True, parallel=True)
def _epilogue_terms_threads(ds, last, terms, ea, eb, out, to32: bool, frac: int):
    """:func:`epilogue_terms` on chunks of rows, spread over threads (the same bits)."""
    m = out.shape[0]
    for c in prange((m + _ROW_CHUNK - 1) // _ROW_CHUNK):
        r0 = c * _ROW_CHUNK
        r1 = min(r0 + _ROW_CHUNK, m)
        epilogue_terms(ds[:, r0:r1], last[r0:r1], terms, ea[r0:r1], eb, out[r0:r1], to32, frac)


#: 32-bit limbs of an output's exact accumulator when the epilogue's rounding test
#: fails: block shifts reach 2*8*(segments-1) <= 128 bits, block values 2^53, sums
#: of up to 81 blocks 7 bits more
_BLOCK_LIMBS = 8


@cached_njit(nogil=True)
def _round_exact(ds, last, terms, i: int, j: int, acc, low: int, frac: int, ex: int, to32: bool) -> float:
    """``RN(X[i, j])`` from the terms summed exactly in integer limbs
    (:func:`epilogue_terms`'s path for the outputs Ziv's test leaves in doubt)."""
    acc[:] = 0
    for t in range(terms.shape[0]):
        v = _term(ds, last, terms[t, TERM_PROD], i, j)
        if v != 0.0:
            a = np.int64(abs(v) * 2.0**frac)
            pos = terms[t, TERM_SHIFT] - low
            neg = (v < 0.0) != (terms[t, TERM_SIGN] < 0)
            acc_add(acc, pos, a & np.int64(0x3FFFFFF), neg)
            acc_add(acc, pos + 26, a >> 26, neg)
    base = ex + low - frac
    if to32:
        return np.float64(np.float32(acc_round(acc, 24, -149, base))) + 0.0
    return acc_round(acc, 53, -1074, base) + 0.0


@cached_njit(nogil=True)
def epilogue_many(ds, blocks, ea, eb, out, to32: bool, frac: int):
    """``out = RN(X)``, ``X = sum_b ds[b] 2^shift_b`` exactly (each ``ds[b]`` an exact
    block result): :func:`epilogue_terms` with one term per block."""
    nb = blocks.shape[0]
    terms = np.empty((nb, 3), np.int64)
    for b in range(nb):
        terms[b, TERM_PROD] = b
        terms[b, TERM_SHIFT] = blocks[b, BLOCK_SHIFT]
        terms[b, TERM_SIGN] = 1
    epilogue_terms(ds, ds[0], terms, ea, eb, out, to32, frac)  # ds[0]: never read as the last product


@cached_njit(nogil=True)
def epilogue_terms(ds, last, terms, ea, eb, out, to32: bool, frac: int):
    """``out = RN(X)``, ``X = sum_t sign_t ds[prod_t] 2^shift_t`` exactly (each
    ``ds[p]`` an exact product result, ``last`` product ``len(ds)``'s, which may be
    ``out`` itself: an output's terms are read before it is written; ``terms`` as
    pair_blocks.karatsuba_products returns them): a TwoSum chain gives ``s`` and a
    bound on ``|X - s|``; where
    Ziv's test certifies ``RN(s)`` it is the result, else ``X`` is summed exactly
    in integer limbs and rounded once (:func:`acc_round`). Same bits either way.

    A block result is an integer only where its row and column have span 0: each
    k-tile is scaled by ``2^(E - E_ref) <= 1``, so it is a multiple of
    ``2^-(span_A + span_B)``. The limbs hold it in units of ``2^-frac``, ``frac``
    the widest span the fast path takes (``53 - ceil(log2 K) - max block bits``,
    which also keeps every ``|ds[b]| 2^frac < 2^53``).

    Float64 domain, one output row at a time: the TwoSum chain (:func:`block_sum`'s
    arithmetic, in its order) and Ziv's test on the exponent bits
    (:func:`certain64`'s branch for ``s`` of biased exponent 54 to 2046) run as
    branch-free loops over the row, so that they vectorise; the outputs that branch
    does not certify (zero or tiny sums, ranges near the limits, doubt) take the
    scalar path after it, the same code as before."""
    m, n = out.shape
    nb = terms.shape[0]
    prod = terms[:, TERM_PROD].copy()
    w = np.empty(nb)
    low = terms[:, TERM_SHIFT].min()
    for b in range(nb):
        w[b] = terms[b, TERM_SIGN] * 2.0 ** terms[b, TERM_SHIFT]
    acc = np.zeros(_BLOCK_LIMBS, dtype=np.int64)
    slack = 1.0 + 2.0 * (nb + 2) * 2.0**-53
    if to32:
        for i in range(m):
            for j in range(n):
                t, e2, mag = block_sum(ds, last, prod, w, i, j)
                # X = t + e2 + (error of the float sum lo), the latter <= nb u sum|e|
                err = (abs(e2) + nb * 2.0**-53 * mag) * slack
                ex = ea[i] + eb[j]
                val = times_pow2(t, ex)  # float32-domain sums are far inside float64's range
                if (t != 0.0 or mag == 0.0) and certain32(val, times_pow2(err, ex)):
                    out[i, j] = np.float64(np.float32(val)) + 0.0
                    continue
                out[i, j] = _round_exact(ds, last, terms, i, j, acc, low, frac, ex, to32)
        return
    hi = np.empty(n)
    lo = np.empty(n)
    mag = np.empty(n)
    done = np.empty(n, dtype=np.bool_)
    for i in range(m):
        w0 = w[0]
        r0 = ds[prod[0], i] if prod[0] < ds.shape[0] else last[i]
        for j in range(n):
            hi[j] = r0[j] * w0
            lo[j] = 0.0
            mag[j] = 0.0
        for b in range(1, nb):
            wb = w[b]
            rb = ds[prod[b], i] if prod[b] < ds.shape[0] else last[i]
            for j in range(n):
                y = rb[j] * wb
                h = hi[j]
                t = h + y
                bb = t - h
                e = (h - (t - bb)) + (y - bb)
                hi[j] = t
                lo[j] += e
                mag[j] += abs(e)
        for j in range(n):
            h = hi[j]
            lw = lo[j]
            t = h + lw
            bb = t - h
            e2 = (h - (t - bb)) + (lw - bb)
            err = (abs(e2) + nb * 2.0**-53 * mag[j]) * slack
            ex = ea[i] + eb[j]
            # certain64's exponent-bit branch, as selects
            u = np.float64(t).view(np.uint64) & np.uint64(0x7FFFFFFFFFFFFFFF)
            be = np.int64(u >> np.uint64(52))
            half = np.uint64(np.uint64(max(be - 53, 1)) << np.uint64(52)).view(np.float64)
            half = half * 0.5 if (u & _MANTISSA64) == 0 else half
            ok = (be >= 54) & (be != 2047) & (be + ex >= 2) & (be + ex <= 2045) & (err < half)
            hi[j] = np.uint64(np.float64(t).view(np.uint64) + np.uint64(np.uint64(ex) << np.uint64(52))).view(
                np.float64) if ok else t
            lo[j] = err
            done[j] = ok
        for j in range(n):
            if done[j]:
                out[i, j] = hi[j]
                continue
            # certain64 with its other branches, and the exact sum: the code before
            t = hi[j]
            if t == 0.0 and mag[j] == 0.0:
                out[i, j] = 0.0
                continue
            ex = ea[i] + eb[j]
            if certain64(t, lo[j], ex):
                out[i, j] = scaled_normal(t, ex)
                continue
            out[i, j] = _round_exact(ds, last, terms, i, j, acc, low, frac, ex, to32)
