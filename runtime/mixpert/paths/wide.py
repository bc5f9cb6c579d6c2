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

from mixjit.runtime.jit.blas import gemm_accumulate
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

__all__ = ["EXACT_SIDE_BITS", "WIDE_LIMIT", "PANEL_BYTES", "K_PANEL", "plan_wide_blocks", "panel_rows",
           "fast32_certified"]

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


#: bytes the block products of a panel of A's rows (``nb x rows x n`` float64) may take: the
#: rows of A are taken in panels of that size, so the path's memory does not grow with ``m``
PANEL_BYTES = 16 << 20
#: fewest rows of A in a panel (the dgemms stay efficient; B's K-panels are packed once per panel)
PANEL_MIN_ROWS = 256
#: columns of K packed and multiplied at a time (a K-panel of B: ``n x K_PANEL`` float64)
K_PANEL = 256


@cached_njit(nogil=True)
def _add_squares(x, sums) -> None:
    """``sums[i] += x[i] . x[i]`` (float64) for every row of ``x``."""
    for i in range(x.shape[0]):
        sums[i] += np.dot(x[i], x[i])


@cached_njit(nogil=True)
def _norms_up(sums, k: int):
    """Upper bounds on Euclidean norms from float64 sums of squares ``sums`` of rows
    ``k`` long (summed in any order, in any number of parts): each rounded up by a
    safety factor that covers every rounding."""
    up = 1.0 + 4.0 * (k + 4) * _U
    out = np.empty(sums.shape[0])
    for i in range(sums.shape[0]):
        out[i] = math.sqrt(sums[i] * up) * up
    return out


@cached_njit(nogil=True)
def panel_rows(m: int, n: int, nb: int) -> int:
    """Rows of A in one panel of :func:`fast32_certified` for an ``m x n`` result and ``nb``
    wide blocks: as many as :data:`PANEL_BYTES` of block products hold, at least
    :data:`PANEL_MIN_ROWS`, at most ``m``."""
    return max(1, min(m, max(PANEL_MIN_ROWS, PANEL_BYTES // (8 * max(n, 1) * max(nb, 1)))))


@cached_njit(nogil=True)
def fast32_certified(aq, ascale, bq, bscale, blocks, ea, eb, segments: int, digits: int, tk: int, out,
                     mp: int, kp: int):
    """``out = RN32(X)`` for every output Ziv's test certifies from one float64 GEMM
    per wide block (module docstring); returns the doubtful outputs as flat indices
    ``i * n + j`` (``out`` is unspecified there), for the caller to sum exactly.

    By panels: rows of A in panels of ``mp`` rows (:func:`panel_rows`), K in panels of
    ``kp`` columns (:data:`K_PANEL`), each K-panel's dgemm added to the panel's
    block product by BLAS (``beta = 1``, runtime/jit/blas.py) (B's K-panels packed again for each row panel: a little packing
    for memory that does not grow with the GEMM). A sum in parts is a float64 sum of
    the same products in another order: the bound below holds for any order."""
    m, K = aq.shape
    n = bq.shape[0]
    nb = blocks.shape[0]
    mp = max(1, min(mp, m))
    kp = max(1, min(kp, K))
    rows_b = np.arange(n)
    ds = np.empty((nb, mp, n))
    huge_pages(ds)
    sx = np.empty(mp)
    sy = np.zeros((nb, n))
    nx = np.empty((nb, mp))
    ny = np.empty((nb, n))
    w = np.empty(nb)
    for b in range(nb):
        w[b] = 2.0 ** blocks[b, BLOCK_SHIFT]
    threads_b = threads_pay(n * kp * PACK_NS)  # decided once per call
    # |fl(x.y) - x.y| <= gamma_K ||x|| ||y||, times a factor for the rounding of the bound itself
    g = (K * _U / (1.0 - K * _U)) * (1.0 + 8.0 * (nb + 4) * _U)
    slack = 1.0 + 2.0 * (nb + 4) * _U
    doubt = np.empty(m * n, dtype=np.int64)
    nd = 0
    w0 = w[0]
    for p0 in range(0, m, mp):
        r = min(mp, m - p0)
        rows_a = np.arange(p0, p0 + r)
        threads_a = threads_pay(r * kp * PACK_NS)
        for b in range(nb):
            sx[:r] = 0.0
            for k0 in range(0, K, kp):
                k1 = min(k0 + kp, K)
                x = pack_block(aq, ascale, rows_a, k0, k1, blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], segments,
                               digits, tk, threads_a)
                y = pack_block(bq, bscale, rows_b, k0, k1, blocks[b, BLOCK_J0], blocks[b, BLOCK_J1], segments,
                               digits, tk, threads_b)
                if k0 == 0:
                    np.dot(x, y.T, ds[b, :r])
                else:
                    gemm_accumulate(x, y, ds[b, :r])
                _add_squares(x, sx)
                if p0 == 0:
                    _add_squares(y, sy[b])
            # element loops, not row assignments: Numba's shape-mismatch message for those costs 2 s of compile
            nxb = _norms_up(sx[:r], K)
            for i in range(r):
                nx[b, i] = nxb[i]
            if p0 == 0:
                nyb = _norms_up(sy[b], K)
                for j in range(n):
                    ny[b, j] = nyb[j]
        for li in range(r):
            i = p0 + li
            for j in range(n):
                # executor_mixpert_fast.block_sum's chain over the blocks, through its scalar
                # steps: block_sum itself takes the arrays, and that call's reference counting
                # cost ~70 ns per output (0.3 s, 1.4x numpy's sgemm, at n = 2048)
                hi = ds[0, li, j] * w0
                lo = 0.0
                mag = 0.0
                for b in range(1, nb):
                    hi, lo, mag = two_sum_add(hi, lo, mag, ds[b, li, j] * w[b])
                t, e2 = two_sum_end(hi, lo)
                bound = w0 * nx[0, li] * ny[0, j]
                for b in range(1, nb):
                    bound += w[b] * nx[b, li] * ny[b, j]
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
