"""The MixPert executor's small-shape path: one fused compiled call, no BLAS.

For a GEMM of at most ``SMALL_MAX_WORK_FP32`` / ``_FP64`` multiply-adds (m*n*k),
the general driver's fixed costs dominate: a dozen scratch arrays per operand, two
passes of the packer over separate arrays, and a BLAS call per block on operands of
a few dozen elements. :func:`small_gemm` computes the same ``X`` (the exact sum of the kept
segment products, docs/numerics.md "mixpert") with the same blocks
(pair_blocks.plan_block_array: every block sum is exact in float64, so a plain
loop gives the value the dgemm gives) and rounds it with the same epilogues
(executor_mixpert_fast.epilogue / epilogue_many) and, in the float64 domain, the
same guarantee check (mixpert_bound.fp64_doubtful) and exact recomputation: the
bits are those of the general path. The operand split is fused (one pass splits
every element, the second aligns it) and every temporary is a view of one int64
and one float64 scratch buffer (:func:`scratch_words`), on the stack for calls
whose scratch fits :data:`STACK_WORDS` (no heap allocation of its own), else on
the heap (and one more array for more than two blocks). Only the code of the
operands' dtype is compiled (Numba overloads on the dtype): float32 operands run
the float32 domain only, so their kernel holds neither the float64 split nor
step 6's guarantee check nor the many-block epilogue (float32 operands with more
than two blocks go to the general path: no config of the scheme's list plans
that many); float64 operands hold no float32 bit-level split.

Before any of that, :func:`small_gemm` offers the call to the direct paths
(runtime/mixpert/paths/direct.py, mixpert/paths/direct64.py: no block plan,
one exact product of the kept pairs, float arithmetic only), which take the common configs (the paper's levels in
the float32 domain, mixpert-fp64's most precise config) on well-scaled data and
leave everything else here.

It takes only the common case, the calls the general path runs entirely on its
fast path: no non-finite element, no fallback tile, no element aligned to 0 (step 6,
float32 domain), exponent spans within the fast path's bound, and in the float32
domain a config whose exact blocks the general path uses (not the wide blocks of
runtime/mixpert/paths/wide.py, whose doubtful-output count it could not reproduce). For
anything else it returns :data:`NOT_TAKEN` before writing ``c``, and the driver
runs the general path. A call it takes reports ``STAT_SMALL_PATH = 1`` and the
same statistics as the general path would.
"""

from __future__ import annotations

import math

import numpy as np
from numba.core import types
from numba.extending import overload, register_jitable

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.jit.lazy_link import unlinked, unlinked_lazy
from mixjit.runtime.jit.scratch_arrays import carve, stack_array
from mixjit.runtime.mixpert.guarantee.bound import dropped_weight, fp64_doubtful, recompute
from mixjit.runtime.mixpert.pair_blocks import (
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
from mixjit.runtime.mixpert.paths.direct import direct_gemm, exact_dot, largest
from mixjit.runtime.mixpert.paths.direct64 import direct_gemm64
from mixjit.runtime.mixpert.paths.fast import epilogue, epilogue_many
from mixjit.runtime.mixpert.paths.wide import plan_wide_blocks
from mixjit.runtime.mixpert.segments import (
    NO_EXP as _NO_EXP,
)
from mixjit.runtime.mixpert.segments import (
    ZERO_EXP,
    _shift_branchless,
    digit_range,
    max_aligned,
    split_element,
    split_into,
    width,
)
from mixjit.runtime.mixpert.words import (
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

#: largest m*n*k the driver sends to the small path, float32 and float64 domain: the
#: largest square size of the threshold table of tools/bench_small_sites.py
#: (docs/results/executor_speed.md, "Small sites") where the small path's loops (which every
#: config can reach; the direct paths are faster still) are faster than the general
#: path (128 and 64 when they were set; 160 and 64 before the general path's own
#: speed-ups and the loops' four-row block products)
SMALL_MAX_WORK_FP32 = 128**3
SMALL_MAX_WORK_FP64 = 64**3


@cached_njit(nogil=True)
def small_max_work(params) -> int:
    """The size limit of the small path for the config words ``params``."""
    return SMALL_MAX_WORK_FP32 if params[W_DOMAIN] == DOMAIN_FP32 else SMALL_MAX_WORK_FP64


#: :func:`small_gemm`'s answer for a call it leaves to the general path
NOT_TAKEN = -1

@cached_njit(nogil=True)
def _split32_normal(u, w: int):
    """:func:`segments.split_element` at ``emax = 127`` of the *normal* float32 with
    bits ``u`` (int64 holding the uint32), from its own bits and without branches,
    so that the split loop vectorises; subnormals, zeros and non-finite values give
    garbage here and are patched by the caller (``_patch_special``)."""
    be = (u >> 23) & 0xFF
    mant = (u & 0x7FFFFF) | (np.int64(1) << 23)
    e = be - 127
    # one of the two shifts is 0: widen (w >= 24) or round to nearest even at bit w
    # (w < 24); selects, not a branch on w, so that the caller's loop vectorises
    up = max(w - 24, 0)
    sh = max(24 - w, 0)
    m = (mant << up) >> sh
    rem = mant & ((np.int64(1) << sh) - 1)
    half = (np.int64(1) << sh) >> 1
    m += np.int64((sh > 0) & ((rem > half) | ((rem == half) & ((m & 1) == 1))))
    carry = m == (np.int64(1) << w)
    top = carry & (e >= 127)  # 2^128 would overflow float32: truncate instead
    m = m - 1 if top else ((np.int64(1) << (w - 1)) if carry else m)
    e += np.int64(carry & ~top)
    return -m if (u >> 31) != 0 else m, e


@cached_njit(nogil=True)
def _patch_special(x, side_b: bool, i: int, k0: int, k1: int, w: int, q, ex) -> bool:
    """Redo the split of the zeros and subnormals of row ``i``, ``k0:k1`` of a float32
    operand (``_split32_normal`` handles normal values only); False if it holds an
    inf or NaN."""
    for k in range(k0, k1):
        v = np.float32(x[k, i] if side_b else x[i, k])
        u = np.int64(v.view(np.uint32))
        be = (u >> 23) & 0xFF
        if be == 255:
            return False
        if be == 0:
            if (u & 0x7FFFFFFF) == 0:
                q[i, k] = 0
                ex[i, k] = _NO_EXP
            else:
                m, e = split_element(np.float64(v).view(np.uint64), w, 127)
                q[i, k] = m
                ex[i, k] = e
    return True


@cached_njit(nogil=True)
def _split_pass32(x, w: int, tk: int, q, ex, gexp) -> bool:
    """Pass 1 of :func:`_split` for float32 operands in the float32 domain, given as
    float64 rows (``_split_rows`` copies them): ``q`` = M, ``ex`` = e of every
    element (``_NO_EXP`` for zeros), ``gexp`` = each row's largest e per k-tile
    (``ZERO_EXP`` if none); False on an inf or NaN."""
    r, K = q.shape
    for i in range(r):
        for kt in range(gexp.shape[1]):
            k0 = kt * tk
            k1 = min(k0 + tk, K)
            mx = np.int64(_NO_EXP)
            lo = np.int64(255)  # smallest and largest biased exponent (min / max vectorise; |= does not)
            hi = np.int64(0)
            for k in range(np.uint64(k0), np.uint64(k1)):  # unsigned: no wraparound test per index
                u = np.int64(np.float32(x[i, k]).view(np.uint32))
                m, e = _split32_normal(u, w)
                be = (u >> 23) & 0xFF
                lo = min(lo, be)
                hi = max(hi, be)
                q[i, k] = m
                ex[i, k] = e
                mx = max(mx, e)
            if lo == 0 or hi == 255:  # a zero, subnormal, inf or NaN
                if not _patch_special(x, False, i, k0, k1, w, q, ex):
                    return False
                mx = np.int64(_NO_EXP)
                for k in range(np.uint64(k0), np.uint64(k1)):
                    mx = max(mx, ex[i, k])
            gexp[i, kt] = mx if mx != _NO_EXP else ZERO_EXP
    return True


@cached_njit(nogil=True)
def _split_pass64(x, side_b: bool, to32: bool, w: int, tk: int, raw, q, ex, gexp) -> bool:
    """Pass 1 of :func:`_split` for the other cases (float64 operands; ``raw`` gets
    the row form, rounded to float32 first in the float32 domain), through
    segments.split_element; as :func:`_split_pass32` otherwise."""
    r, K = q.shape
    emax = 127 if to32 else 1023
    for i in range(r):
        for kt in range(gexp.shape[1]):
            k0 = kt * tk
            k1 = min(k0 + tk, K)
            mx = np.int64(_NO_EXP)
            bad = False
            for k in range(np.uint64(k0), np.uint64(k1)):
                v = x[k, i] if side_b else x[i, k]
                f = np.float64(np.float32(v)) if to32 else np.float64(v)
                raw[i, k] = f
                e, fin = split_into(np.float64(f).view(np.uint64), w, emax, q, ex, i, k)
                mx = max(mx, e)
                bad |= not fin
            if bad:
                return False
            gexp[i, kt] = mx if mx != _NO_EXP else ZERO_EXP
    return True


def _split_rows(x, side_b, to32, w, tk, raw, q, ex, gexp):
    """Pass 1 of :func:`_split`: :func:`_split_pass32` for float32 operands (the
    float32 domain: params_ok), :func:`_split_pass64` for float64 ones; only the
    variant of the operands' dtype is compiled."""


@overload(_split_rows)
def _split_rows_impl(x, side_b, to32, w, tk, raw, q, ex, gexp):
    if x.dtype == types.float32:
        def impl32(x, side_b, to32, w, tk, raw, q, ex, gexp):
            # both operands copied to rows of ``raw`` first (exact): the split then reads
            # one contiguous layout (a site's operands are strided views, and a select
            # between two loads would not vectorise), and compiles once
            r, K = q.shape
            if side_b:
                for k in range(K):
                    for j in range(r):
                        raw[j, k] = x[k, j]
            else:
                for i in range(r):
                    for k in range(K):
                        raw[i, k] = x[i, k]
            return _split_pass32(raw, w, tk, q, ex, gexp)

        return impl32
    return lambda x, side_b, to32, w, tk, raw, q, ex, gexp: _split_pass64(x, side_b, to32, w, tk, raw, q, ex, gexp)


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
    # pass 1: split every element (q holds M, ex its exponent); gexp first holds
    # each row's largest exponent per k-tile
    if not _split_rows(x, side_b, to32, w, tk, raw, q, ex, gexp):
        return False
    # group exponents: the largest of the group's rows, one more where an element
    # at it exceeds the balanced digits' range (segments.pack_groups)
    for g0 in range(0, r, group_rows):
        g1 = min(g0 + group_rows, r)
        for kt in range(nkt):
            top = ZERO_EXP
            for i in range(np.uint64(g0), np.uint64(g1)):
                top = max(top, gexp[i, kt])
            bump = False
            if check_over and top != ZERO_EXP:
                for i in range(np.uint64(g0), np.uint64(g1)):
                    for k in range(np.uint64(kt * tk), np.uint64(min(kt * tk + tk, K))):
                        bump |= (ex[i, k] == top) & (q[i, k] > qmax)
            for i in range(np.uint64(g0), np.uint64(g1)):
                gexp[i, kt] = top + 1 if bump else top
    # pass 2: align; count per tile the nonzero elements and those shifted far
    far = threshold if threshold >= 0 else 1 << 20
    for t0 in range(0, r, tile_rows):
        t1 = min(t0 + tile_rows, r)
        for kt in range(nkt):
            nz = np.int64(0)
            sh = np.int64(0)
            lost = np.int64(0)  # integer counts, not bool |=: the loop vectorises
            for i in range(np.uint64(t0), np.uint64(t1)):
                g = gexp[i, kt]
                lim = (np.int64(1) << (w - 1)) - 1 if g > emax else (np.int64(1) << 62)
                for k in range(np.uint64(kt * tk), np.uint64(min(kt * tk + tk, K))):
                    e = ex[i, k]
                    use = np.int64(e != _NO_EXP)
                    d = (g - e) * use
                    v = min(max(_shift_branchless(q[i, k], d, mode), -lim), lim)
                    q[i, k] = v
                    lost += use & np.int64(v == 0)
                    nz += use
                    sh += use & np.int64(d > far)
            if to32 and lost:
                return False  # step 6 would recompute the element's row: general path
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
def _block_operand(q, scale, i0: int, i1: int, segments: int, digits: int, tk: int, out) -> None:
    """``out`` (rows x K) = segments ``i0..i1`` of ``q``, each k-tile times its scale
    (integer-valued times a power of two: exact), as executor_mixpert_pack builds it."""
    r, K = q.shape
    for i in range(r):
        for t in range(scale.shape[1]):
            sc = scale[i, t]
            for k in range(np.uint64(t * tk), np.uint64(min(t * tk + tk, K))):
                out[i, k] = digit_range(q[i, k], i0, i1, segments, digits) * sc


@cached_njit(nogil=True)
def _block_dot(aq, ascale, bq, bscale, blocks, bl: int, segments: int, digits: int, tk: int, xa, yb, d) -> None:
    """``d`` = the exact product of block ``bl`` of ``blocks`` (a plan_block_array
    result): segments ``i0..i1`` of A against ``j0..j1`` of B. ``xa`` (m x K) and
    ``yb`` (n x K) are scratch; ``xa`` is kept when block ``bl - 1`` had the same
    segments of A (mixpert-fp64's six blocks use three ranges of A, in order)."""
    i0, i1 = blocks[bl, BLOCK_I0], blocks[bl, BLOCK_I1]
    if bl == 0 or blocks[bl - 1, BLOCK_I0] != i0 or blocks[bl - 1, BLOCK_I1] != i1:
        _block_operand(aq, ascale, i0, i1, segments, digits, tk, xa)
    _block_operand(bq, bscale, blocks[bl, BLOCK_J0], blocks[bl, BLOCK_J1], segments, digits, tk, yb)
    exact_dot(xa, yb, d)


#: int64 words of each of :func:`small_gemm`'s two stack buffers: a call whose scratch
#: fits in them (m = n = K = 8 takes 320 and 464) allocates nothing on the heap
STACK_WORDS = 1024


@register_jitable
def scratch_words(m: int, n: int, K: int, nkt: int) -> tuple[int, int]:
    """int64 and float64 words of :func:`small_gemm`'s scratch: per row of A and of B
    (:func:`_operand_views`) q, ex (K each), gexp (nkt), ref, span, e (one each); raw,
    the block operand (K each) and scale (nkt); then three m x n results."""
    return (m + n) * (2 * K + nkt + 3), (m + n) * (2 * K + nkt) + 3 * m * n


@register_jitable
def _operand_views(ints, floats, io: int, fo: int, r: int, K: int, nkt: int):
    """One operand's scratch views, ``r`` rows, from ``ints[io:]`` and ``floats[fo:]``:
    (q, ex, gexp, ref, span, e, raw, scale, x), as :func:`scratch_words` counts them."""
    q = carve(ints, io, r, K)
    ex = carve(ints, io + r * K, r, K)
    gexp = carve(ints, io + 2 * r * K, r, nkt)
    o = io + r * (2 * K + nkt)
    raw = carve(floats, fo, r, K)
    scale = carve(floats, fo + r * K, r, nkt)
    x = carve(floats, fo + r * (K + nkt), r, K)
    return q, ex, gexp, ints[o : o + r], ints[o + r : o + 2 * r], ints[o + 2 * r : o + 3 * r], raw, scale, x


def _float64_domain_check(a, to32, params, pairs, araw, agexp, aref, braw, bgexp, bref, out):
    """Step 6 of the float64 domain (mixpert_bound.fp64_doubtful, then recompute) on
    ``out``; returns the number of outputs recomputed (0 in the float32 domain)."""


@overload(_float64_domain_check)
def _float64_domain_check_impl(a, to32, params, pairs, araw, agexp, aref, braw, bgexp, bref, out):
    # float32 operands run the float32 domain only (params_ok): no guarantee check to compile
    if a.dtype == types.float32:
        return lambda a, to32, params, pairs, araw, agexp, aref, braw, bgexp, bref, out: 0

    def impl(a, to32, params, pairs, araw, agexp, aref, braw, bgexp, bref, out):
        if to32:
            return 0
        segments, seg0, digits = params[W_SEGMENTS], params[W_SEG0_BITS], params[W_DIGITS]
        dropped = dropped_weight(pairs, segments, seg0, digits)
        doubt = _fp64_doubtful_far(araw, agexp, aref, braw, bgexp, bref, params[W_TK], width(segments, seg0, digits),
                              dropped, out)
        if not doubt.any():
            return 0
        return _recompute_lazy(araw, braw, doubt, out, False)  # rare: compiled on first need

    return impl


def _many_blocks(a, aq, ascale, bq, bscale, blocks, segments, digits, tk, xa, yb, ea, eb, out, to32, frac):
    """``out = RN(X)`` from more than two blocks (executor_mixpert_fast.epilogue_many);
    False, for the general path, for float32 operands: no float32-domain config of
    the scheme's list plans more than two exact blocks, so the float32 small path does
    not compile the many-block epilogue."""


@overload(_many_blocks)
def _many_blocks_impl(a, aq, ascale, bq, bscale, blocks, segments, digits, tk, xa, yb, ea, eb, out, to32, frac):
    if a.dtype == types.float32:
        return lambda a, aq, ascale, bq, bscale, blocks, segments, digits, tk, xa, yb, ea, eb, out, to32, frac: False

    def impl(a, aq, ascale, bq, bscale, blocks, segments, digits, tk, xa, yb, ea, eb, out, to32, frac):
        nb = blocks.shape[0]
        ds = np.empty((nb, out.shape[0], out.shape[1]))
        for bl in range(nb):
            _block_dot(aq, ascale, bq, bscale, blocks, bl, segments, digits, tk, xa, yb, ds[bl])
        _epilogue_many_far(ds, blocks, ea, eb, out, to32, frac)
        return True

    return impl


def _direct(a, b, c, params, stats):
    """The direct paths: ``direct_gemm`` (runtime/mixpert/paths/direct.py) for
    float32 operands, ``direct_gemm64`` (mixpert/paths/direct64.py) for float64 ones (only the dtype's compiles);
    ``OK`` with ``c`` and ``stats`` written, or :data:`NOT_TAKEN` with ``c`` untouched."""


@overload(_direct)
def _direct_impl(a, b, c, params, stats):
    if a.dtype == types.float32 and b.dtype == types.float32:
        return lambda a, b, c, params, stats: _direct_gemm_far(a, b, c, params, stats)
    if a.dtype == types.float64 and b.dtype == types.float64:
        return lambda a, b, c, params, stats: _direct_gemm64_far(a, b, c, params, stats)
    return lambda a, b, c, params, stats: NOT_TAKEN


# The larger kernels the small path calls, through address cells (runtime/jit/lazy_link.py): each
# compiled once, not again inside small_gemm (docs/results/first_use.md)
_split_far = unlinked(_split)
_plan_block_array_far = unlinked(plan_block_array)
_epilogue_many_far = unlinked(epilogue_many)
_fp64_doubtful_far = unlinked(fp64_doubtful)
_direct_gemm_far = unlinked(direct_gemm)
_direct_gemm64_far = unlinked(direct_gemm64)


@cached_njit(nogil=True)
def small_gemm(a, b, c, params, stats, max_work: int) -> int:
    """``C = A @ B`` under the MixPert semantics for a call of at most ``max_work``
    multiply-adds (the driver passes :func:`small_max_work`), by a direct path where
    one takes it (:func:`_direct`), else by the loops of this module
    (:func:`small_loops_gemm`, compiled the first time a call needs it: a call that a
    direct path takes compiles only the direct path): the same bits and statistics as the general driver;
    :data:`NOT_TAKEN` (``c`` untouched) for a call it leaves to the general path.
    ``params`` must have passed ``params_ok`` and the shapes must match (the driver
    checks both)."""
    m, K = a.shape
    n = b.shape[1]
    if 0 < m * n * K <= max_work:
        status = _direct(a, b, c, params, stats)
        if status != NOT_TAKEN:
            return status
    return _small_loops_lazy(a, b, c, params, stats, max_work)  # compiled at the first call that needs it


@cached_njit(nogil=True)
def small_loops_gemm(a, b, c, params, stats, max_work: int) -> int:
    """:func:`small_gemm` without its direct paths: the block plan's products as
    loops, for a call of at most ``max_work`` multiply-adds; :data:`NOT_TAKEN`
    (``c`` untouched) for a call it leaves to the general path."""
    m, K = a.shape
    n = b.shape[1]
    if m == 0 or n == 0 or K == 0 or m * n * K > max_work:
        return NOT_TAKEN
    to32 = params[W_DOMAIN] == DOMAIN_FP32
    tk = params[W_TK]
    nkt = (K + tk - 1) // tk
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    n_ints, n_floats = scratch_words(m, n, K, nkt)
    ints = stack_array(STACK_WORDS, np.int64) if n_ints <= STACK_WORDS else np.empty(n_ints, np.int64)
    floats = stack_array(STACK_WORDS, np.float64) if n_floats <= STACK_WORDS else np.empty(n_floats, np.float64)
    aq, aex, agexp, aref, aspan, ea, araw, ascale, xa = _operand_views(ints, floats, 0, 0, m, K, nkt)
    bq, bex, bgexp, bref, bspan, eb, braw, bscale, yb = _operand_views(ints, floats, m * (2 * K + nkt + 3),
                                                                      m * (2 * K + nkt), n, K, nkt)
    o = (m + n) * (2 * K + nkt)
    out = carve(floats, o, m, n)
    d1 = carve(floats, o + m * n, m, n)
    d2 = carve(floats, o + 2 * m * n, m, n)
    if not _split_far(a, False, params, araw, aq, aex, agexp, ascale, aref, aspan):
        return NOT_TAKEN
    if not _split_far(b, True, params, braw, bq, bex, bgexp, bscale, bref, bspan):
        return NOT_TAKEN
    widest = largest(aspan) + largest(bspan)
    if widest > MAX_SPAN:
        return NOT_TAKEN
    pairs = kept_pairs(params)
    blocks, ok = _plan_block_array_far(pairs, segments, params[W_SEG0_BITS], K, digits, min(widest, SPAN_RESERVE))
    if not ok:
        return NOT_TAKEN
    nb = blocks.shape[0]
    if to32 and plan_wide_blocks(pairs, segments, params[W_SEG0_BITS], digits).shape[0] < nb:
        return NOT_TAKEN  # the general path takes the wide blocks
    bits = 0
    for bl in range(nb):
        bits = max(bits, blocks[bl, BLOCK_BITS])
    frac = 53 - k_bits(K) - bits  # the fast path's widest span
    if widest > frac:
        return NOT_TAKEN  # some rows or columns take the certified / exact path
    w = width(segments, params[W_SEG0_BITS], digits)
    for i in range(m):
        ea[i] = aref[i] - (w - 1)
    for j in range(n):
        eb[j] = bref[j] - (w - 1)
    if nb <= 2:
        _block_dot(aq, ascale, bq, bscale, blocks, 0, segments, digits, tk, xa, yb, d1)
        if nb == 2:
            _block_dot(aq, ascale, bq, bscale, blocks, 1, segments, digits, tk, xa, yb, d2)
        w1 = 2.0 ** blocks[0, BLOCK_SHIFT]
        w2 = 2.0 ** blocks[1, BLOCK_SHIFT] if nb == 2 else 0.0
        epilogue(d1, w1, d2, w2, nb == 2, ea, eb, out, to32)
    elif not _many_blocks(a, aq, ascale, bq, bscale, blocks, segments, digits, tk, xa, yb, ea, eb, out, to32, frac):
        return NOT_TAKEN
    for s in range(stats.shape[0]):
        stats[s] = 0
    stats[STAT_RECOMPUTED] = _float64_domain_check(a, to32, params, pairs, araw, agexp, aref, braw, bgexp, bref, out)
    for i in range(m):
        for j in range(n):
            c[i, j] = out[i, j]
    stats[STAT_TILES] = nkt * (-(-m // params[W_TM]) + -(-n // params[W_TN]))
    stats[STAT_WIDEST_SPAN] = widest
    stats[STAT_SMALL_PATH] = 1
    return OK


# small_gemm reaches the loops through an address cell filled at the first call that needs
# them (runtime/jit/lazy_link.py): a call a direct path takes compiles only the direct path
_small_loops_lazy = unlinked_lazy(small_loops_gemm, types.int64)
# step 6's exact recomputation, which the float64 guarantee check rarely asks for
_recompute_lazy = unlinked_lazy(recompute, types.int64)
