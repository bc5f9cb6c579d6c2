"""The MixPert executor's fast path: one exact dgemm per block over the whole K,
then one rounding per output.

The blocks (runtime/pair_blocks.py) are chosen so that every partial sum of every
block's dgemm stays below 2^53 on the finest grid of its output: each dgemm is
exact. With at most two blocks one TwoSum gives ``RN64(X)`` and its residual
(:func:`epilogue`); with more, a TwoSum chain and Ziv's test give the result, and
the outputs it leaves in doubt are summed exactly in integer limbs
(:func:`epilogue_many`). Rows and columns whose exponent span is too wide for the
blocks' bound take the certified or exact path instead (executor_mixpert_driver).

From ``executor_mixpert_pack.PARALLEL_MIN`` outputs on (``use_threads``), the block
operands are packed and the epilogue rounds chunks of rows on threads; every output is rounded alone by the same
arithmetic, so the bits are those of the serial run.
"""

from __future__ import annotations

import math

import numpy as np

from numba import prange

from mixjit.runtime.exactsum import acc_add, acc_round, round32, round64_scaled
from mixjit.runtime.executor_mixpert_pack import pack_block, use_threads
from mixjit.runtime.executor_mixpert_words import W_DIGITS, W_SEGMENTS, W_TK
from mixjit.runtime.executor_mixpert_ziv import certain32, certain64
from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.pair_blocks import BLOCK_BITS, BLOCK_I0, BLOCK_I1, BLOCK_J0, BLOCK_J1, BLOCK_SHIFT, k_bits


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
    """The fast path: one dgemm per block over the whole K, rounded once."""
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tk = params[W_TK]
    K = aq.shape[1]
    rows_a = np.arange(aq.shape[0])
    rows_b = np.arange(bq.shape[0])
    nb = blocks.shape[0]

    def dot(b):
        x = pack_block(aq, ascale, rows_a, 0, K, blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], segments, digits, tk)
        y = pack_block(bq, bscale, rows_b, 0, K, blocks[b, BLOCK_J0], blocks[b, BLOCK_J1], segments, digits, tk)
        return np.dot(x, y.T)

    m, n = out.shape
    threads = use_threads(m * n)
    if nb <= 2:
        d1 = dot(0)
        d2 = dot(1) if nb == 2 else d1
        w1 = 2.0 ** blocks[0, BLOCK_SHIFT]
        w2 = 2.0 ** blocks[1, BLOCK_SHIFT] if nb == 2 else 0.0
        if threads:
            _epilogue_threads(d1, w1, d2, w2, nb == 2, ea, eb, out, to32)
        else:
            epilogue(d1, w1, d2, w2, nb == 2, ea, eb, out, to32)
        return
    ds = np.empty((nb, m, n))
    for b in range(nb):
        ds[b] = dot(b)
    # the widest span the fast path takes (executor_mixpert_exact.exact_sets)
    frac = 53 - k_bits(K) - blocks[:, BLOCK_BITS].max()
    if threads:
        _epilogue_many_threads(ds, blocks, ea, eb, out, to32, frac)
    else:
        epilogue_many(ds, blocks, ea, eb, out, to32, frac)


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
def _epilogue_many_threads(ds, blocks, ea, eb, out, to32: bool, frac: int):
    """:func:`epilogue_many` on chunks of rows, spread over threads (the same bits)."""
    m = out.shape[0]
    for c in prange((m + _ROW_CHUNK - 1) // _ROW_CHUNK):
        r0 = c * _ROW_CHUNK
        r1 = min(r0 + _ROW_CHUNK, m)
        epilogue_many(ds[:, r0:r1], blocks, ea[r0:r1], eb, out[r0:r1], to32, frac)


#: 32-bit limbs of an output's exact accumulator when the epilogue's rounding test
#: fails: block shifts reach 2*8*(segments-1) <= 128 bits, block values 2^53, sums
#: of up to 81 blocks 7 bits more
_BLOCK_LIMBS = 8


@cached_njit(nogil=True)
def epilogue_many(ds, blocks, ea, eb, out, to32: bool, frac: int):
    """``out = RN(X)``, ``X = sum_b ds[b] 2^shift_b`` exactly (each ``ds[b]`` an exact
    block result): a TwoSum chain gives ``s`` and a bound on ``|X - s|``; where
    Ziv's test certifies ``RN(s)`` it is the result, else ``X`` is summed exactly
    in integer limbs and rounded once (:func:`acc_round`). Same bits either way.

    A block result is an integer only where its row and column have span 0: each
    k-tile is scaled by ``2^(E - E_ref) <= 1``, so it is a multiple of
    ``2^-(span_A + span_B)``. The limbs hold it in units of ``2^-frac``, ``frac``
    the widest span the fast path takes (``53 - ceil(log2 K) - max block bits``,
    which also keeps every ``|ds[b]| 2^frac < 2^53``)."""
    nb, m, n = ds.shape
    w = np.empty(nb)
    low = blocks[:, BLOCK_SHIFT].min()
    for b in range(nb):
        w[b] = 2.0 ** blocks[b, BLOCK_SHIFT]
    acc = np.zeros(_BLOCK_LIMBS, dtype=np.int64)
    slack = 1.0 + 2.0 * (nb + 2) * 2.0**-53
    for i in range(m):
        for j in range(n):
            hi = ds[0, i, j] * w[0]
            lo = 0.0
            mag = 0.0
            for b in range(1, nb):
                y = ds[b, i, j] * w[b]
                t = hi + y
                bb = t - hi
                e = (hi - (t - bb)) + (y - bb)
                hi = t
                lo += e
                mag += abs(e)
            t = hi + lo
            bb = t - hi
            e2 = (hi - (t - bb)) + (lo - bb)
            # X = t + e2 + (error of the float sum lo), the latter <= nb u sum|e|
            err = (abs(e2) + nb * 2.0**-53 * mag) * slack
            ex = ea[i] + eb[j]
            if to32:
                val = math.ldexp(t, ex)  # float32-domain sums are far inside float64's range
                if (t != 0.0 or mag == 0.0) and certain32(val, math.ldexp(err, ex)):
                    out[i, j] = np.float64(np.float32(val)) + 0.0
                    continue
            else:
                if t == 0.0 and mag == 0.0:
                    out[i, j] = 0.0
                    continue
                if certain64(t, err, ex):
                    out[i, j] = math.ldexp(t, ex) + 0.0
                    continue
            acc[:] = 0
            for b in range(nb):
                v = ds[b, i, j]
                if v != 0.0:
                    a = np.int64(abs(v) * 2.0**frac)
                    pos = blocks[b, BLOCK_SHIFT] - low
                    acc_add(acc, pos, a & np.int64(0x3FFFFFF), v < 0.0)
                    acc_add(acc, pos + 26, a >> 26, v < 0.0)
            base = ex + low - frac
            if to32:
                out[i, j] = np.float64(np.float32(acc_round(acc, 24, -149, base))) + 0.0
            else:
                out[i, j] = acc_round(acc, 53, -1074, base) + 0.0
