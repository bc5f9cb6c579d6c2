"""The MixPert executor's fast path: one exact dgemm per block over the whole K,
then one rounding per output.

The blocks (runtime/pair_blocks.py) are chosen so that every partial sum of every
block's dgemm stays below 2^53 on the finest grid of its output: each dgemm is
exact. With at most two blocks one TwoSum gives ``RN64(X)`` and its residual
(:func:`epilogue`); with more, a TwoSum chain and Ziv's test give the result, and
the outputs it leaves in doubt are summed exactly in integer limbs
(:func:`epilogue_many`). Rows and columns whose exponent span is too wide for the
blocks' bound take the certified or exact path instead (executor_mixpert_driver).
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.exactsum import acc_add, acc_round, round32, round64_scaled
from mixjit.runtime.executor_mixpert_pack import block_operand
from mixjit.runtime.executor_mixpert_words import W_DIGITS, W_SEGMENTS, W_TK
from mixjit.runtime.executor_mixpert_ziv import certain32, certain64
from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.pair_blocks import BLOCK_I0, BLOCK_I1, BLOCK_J0, BLOCK_J1, BLOCK_SHIFT


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
        x = block_operand(aq, ascale, rows_a, 0, K, blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], segments, digits, tk)
        y = block_operand(bq, bscale, rows_b, 0, K, blocks[b, BLOCK_J0], blocks[b, BLOCK_J1], segments, digits, tk)
        return np.dot(x, y.T)

    if nb <= 2:
        d1 = dot(0)
        d2 = dot(1) if nb == 2 else d1
        w2 = 2.0 ** blocks[1, BLOCK_SHIFT] if nb == 2 else 0.0
        epilogue(d1, 2.0 ** blocks[0, BLOCK_SHIFT], d2, w2, nb == 2, ea, eb, out, to32)
        return
    m, n = out.shape
    ds = np.empty((nb, m, n))
    for b in range(nb):
        ds[b] = dot(b)
    epilogue_many(ds, blocks, ea, eb, out, to32)


#: 32-bit limbs of an output's exact accumulator when the epilogue's rounding test
#: fails: block shifts reach 2*8*(segments-1) <= 128 bits, block values 2^53, sums
#: of up to 81 blocks 7 bits more
_BLOCK_LIMBS = 8


@cached_njit(nogil=True)
def epilogue_many(ds, blocks, ea, eb, out, to32: bool):
    """``out = RN(X)``, ``X = sum_b ds[b] 2^shift_b`` exactly (each ``ds[b]`` an exact
    block result): a TwoSum chain gives ``s`` and a bound on ``|X - s|``; where
    Ziv's test certifies ``RN(s)`` it is the result, else ``X`` is summed exactly
    in integer limbs and rounded once (:func:`acc_round`). Same bits either way."""
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
                    a = np.int64(abs(v))
                    pos = blocks[b, BLOCK_SHIFT] - low
                    acc_add(acc, pos, a & np.int64(0x3FFFFFF), v < 0.0)
                    acc_add(acc, pos + 26, a >> 26, v < 0.0)
            base = ex + low
            if to32:
                out[i, j] = np.float64(np.float32(acc_round(acc, 24, -149, base))) + 0.0
            else:
                out[i, j] = acc_round(acc, 53, -1074, base) + 0.0
