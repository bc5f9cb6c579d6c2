"""The float32-domain fast path of the MixPert executor: wide blocks, a rigorous
error bound and Ziv's rounding test instead of exact dgemms.

A float32-domain output is ``RN32(X)`` (docs/numerics.md, "mixpert"): ``X`` need
not be known exactly, only closely enough to round it. So the kept pairs are
covered with as few rectangles as possible (:func:`plan_wide_blocks`: a side is
cut only where its combined integer would not be exact in float64, above 53
bits), and each rectangle is one float64 GEMM over the whole K, *not* exact. For
block ``b`` (weight ``2^shift_b``), rows ``x_b`` of A's and ``y_b`` of B's
combined segments,

    |fl(x_b · y_b) - x_b · y_b| <= gamma_K sum_k |x_bk| |y_bk| <= gamma_K ||x_b|| ||y_b||

(any summation order, FMA or not; no underflow: float32-domain values times their
k-tile scales stay above 2^-300). A TwoSum chain over the blocks adds its own
bound. Where Ziv's test certifies ``RN32`` of the sum, it is the result; the
others (about 0.2 % of the outputs of a 2048-deep GEMM of centred data) are
returned as *doubtful* and summed exactly by the caller, k-tile by k-tile with
exact blocks. The bits are those of ``RN32(X)`` either way.

For the most precise float32 config (4 segments, every pair: one rectangle) this
is a single float64 GEMM of the aligned mantissas, where exact blocks would need
four.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.guarantee.ziv import certain32, times_pow2
from mixjit.runtime.mixpert.pack import PACK_NS, huge_pages, pack_block, threads_pay
from mixjit.runtime.mixpert.pair_blocks import (
    BLOCK_I0,
    BLOCK_I1,
    BLOCK_J0,
    BLOCK_J1,
    BLOCK_SHIFT,
    pair_rectangles,
    put_block,
    range_bits,
)
from mixjit.runtime.mixpert.paths.fast import two_sum_add, two_sum_end
from mixjit.runtime.mixpert.segments import digit_bits

__all__ = ["EXACT_SIDE_BITS", "WIDE_LIMIT", "plan_wide_blocks", "fast32_certified"]

#: widest combined integer a float64 holds exactly
EXACT_SIDE_BITS = 53
#: the span bound of the wide path: none (its error bound holds for any span)
WIDE_LIMIT = 1 << 30
_U = 2.0**-53


@cached_njit(nogil=True)
def _longest_prefix(i0: int, i1: int, seg0_bits: int, digits: int) -> int:
    """Largest ``e`` in ``i0..i1`` with ``range_bits(i0, e) <= 53`` (``i0`` if none)."""
    e = i0
    while e < i1 and range_bits(i0, e + 1, seg0_bits, digits) <= EXACT_SIDE_BITS:
        e += 1
    return e


@cached_njit(nogil=True)
def plan_wide_blocks(pairs, segments: int, seg0_bits: int, digits: int):
    """Disjoint rectangles covering the kept pairs (``pairs[i, j]`` true): runs of
    rows with one set of columns, cut into runs of columns, each side then cut into
    its longest prefixes of at most 53 bits (so every combined integer is exact in
    float64; its products need not be). Rows as :func:`pair_blocks.plan_block_array`
    returns them (``BLOCK_I0`` .. ``BLOCK_BITS``)."""
    s = pairs.shape[0]
    b = digit_bits(digits)
    out = np.zeros((s * s, 6), np.int64)
    nb = 0
    rects = pair_rectangles(pairs)
    for r in range(rects.shape[0]):
        i0, end, j0, j1 = rects[r, 0], rects[r, 1], rects[r, 2], rects[r, 3]
        a0 = i0
        while a0 <= end:
            a1 = _longest_prefix(a0, end, seg0_bits, digits)
            c0 = j0
            while c0 <= j1:
                c1 = _longest_prefix(c0, j1, seg0_bits, digits)
                put_block(out, nb, a0, a1, c0, c1, b * (segments - 1 - a1) + b * (segments - 1 - c1),
                          range_bits(a0, a1, seg0_bits, digits) + range_bits(c0, c1, seg0_bits, digits))
                nb += 1
                c0 = c1 + 1
            a0 = a1 + 1
    return out[:nb].copy()


@cached_njit(nogil=True)
def _norms_up(x):
    """Upper bounds on the Euclidean norms of the rows of ``x`` (float64 sums of
    squares rounded up by a safety factor that covers every rounding)."""
    r, k = x.shape
    up = 1.0 + 4.0 * (k + 4) * _U
    out = np.empty(r)
    for i in range(r):
        out[i] = math.sqrt(np.dot(x[i], x[i]) * up) * up
    return out


@cached_njit(nogil=True)
def fast32_certified(aq, ascale, bq, bscale, blocks, ea, eb, segments: int, digits: int, tk: int, out):
    """``out = RN32(X)`` for every output Ziv's test certifies from one float64 GEMM
    per wide block (module docstring); returns the doubtful outputs as flat indices
    ``i * n + j`` (``out`` is unspecified there), for the caller to sum exactly."""
    m, K = aq.shape
    n = bq.shape[0]
    nb = blocks.shape[0]
    rows_a = np.arange(m)
    rows_b = np.arange(n)
    ds = np.empty((nb, m, n))
    huge_pages(ds)
    nx = np.empty((nb, m))
    ny = np.empty((nb, n))
    w = np.empty(nb)
    threads_a = threads_pay(m * K * PACK_NS)  # decided once per call
    threads_b = threads_pay(n * K * PACK_NS)
    for b in range(nb):
        x = pack_block(aq, ascale, rows_a, 0, K, blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], segments, digits, tk,
                       threads_a)
        y = pack_block(bq, bscale, rows_b, 0, K, blocks[b, BLOCK_J0], blocks[b, BLOCK_J1], segments, digits, tk,
                       threads_b)
        np.dot(x, y.T, ds[b])
        # element loops, not row assignments: Numba's shape-mismatch message for those costs 2 s of compile
        nxb = _norms_up(x)
        for i in range(m):
            nx[b, i] = nxb[i]
        nyb = _norms_up(y)
        for j in range(n):
            ny[b, j] = nyb[j]
        w[b] = 2.0 ** blocks[b, BLOCK_SHIFT]
    # |fl(x.y) - x.y| <= gamma_K ||x|| ||y||, times a factor for the rounding of the bound itself
    g = (K * _U / (1.0 - K * _U)) * (1.0 + 8.0 * (nb + 4) * _U)
    slack = 1.0 + 2.0 * (nb + 4) * _U
    doubt = np.empty(m * n, dtype=np.int64)
    nd = 0
    w0 = w[0]
    for i in range(m):
        for j in range(n):
            # executor_mixpert_fast.block_sum's chain over the blocks, through its scalar
            # steps: block_sum itself takes the arrays, and that call's reference counting
            # cost ~70 ns per output (0.3 s, 1.4x numpy's sgemm, at n = 2048)
            hi = ds[0, i, j] * w0
            lo = 0.0
            mag = 0.0
            for b in range(1, nb):
                hi, lo, mag = two_sum_add(hi, lo, mag, ds[b, i, j] * w[b])
            t, e2 = two_sum_end(hi, lo)
            bound = w0 * nx[0, i] * ny[0, j]
            for b in range(1, nb):
                bound += w[b] * nx[b, i] * ny[b, j]
            # |X - t| <= |e2| + (rounding of the float sum lo) + the blocks' dgemm errors
            err = (abs(e2) + nb * _U * mag) * slack + g * bound
            ex = ea[i] + eb[j]
            val = times_pow2(t, ex)
            if certain32(val, times_pow2(err, ex)):
                out[i, j] = np.float64(np.float32(val)) + 0.0
            else:
                doubt[nd] = i * n + j
                nd += 1
    return doubt[:nd].copy()
