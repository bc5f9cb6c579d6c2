"""Bit-exact CPU executor of the MixPert schemes (``mixpert``, ``mixpert-fp64``).

Semantics: docs/numerics.md, sections "mixpert" and "mixpert-fp64". Every output is
the exact value ``X[i,j]`` of the kept INT8 segment products (each k-tile scaled by
its A and B group exponents), plus the fallback tile products, rounded once to the
target format. The executor gets that exact value three ways, all giving the same
bits:

* fast path: segments are combined into a few integer-valued float64 matrices
  (runtime/pair_blocks.py) whose dgemms over the whole K are exact, because every
  partial sum stays below 2^53 on the finest grid of the (i, j) pair; with at most
  two blocks one TwoSum gives ``RN64(X)`` and its residual, and ``round32``
  finishes; with more blocks a TwoSum chain and Ziv's rounding test give the
  result, and the outputs it leaves in doubt are summed exactly in integer limbs
  (:func:`_epilogue_many`, runtime/exactsum.acc_round);
* certified path (float32 domain): rows of A / columns of B whose exponent span
  along K is too wide for the fast path's bound, or that touch a fallback tile
  (whose tile products contribute their exact tf32x3 products instead), get ``S'``
  from one float64 GEMM over exactly representable columns (INT8 block values and
  tf32 parts) with a rigorous error bound; Ziv's rounding test accepts
  ``RN32(S')`` or sends the output to an exact k-tile-by-k-tile sum
  (:func:`_certified`);
* exact path (float64 domain, wide spans): those rows / columns are recomputed
  k-tile by k-tile (each k-tile dgemm is exact) and summed exactly.

Then step 6 (runtime/mixpert_bound.py): outputs the executor cannot vouch for
(float64: error bound above native dgemm's ``gamma_K |A||B|``; float32: a row /
column holding an element aligned to 0) are recomputed as ``RN(A·B)`` exactly and
counted (``STAT_RECOMPUTED``).

Non-finite inputs: those elements count as 0 for the computation and the
affected outputs are set by the non-finite rule (Common conventions).

The whole executor is compiled (``@cached_njit(nogil=True)``: Numba, disk-cached), so the
Python API (``scheme.run``) and compiled callers (the @mixjit entry) run one code
path:

* :func:`mixpert_gemm` ``(a, b, c, params, stats) -> status``: ``C = A @ B`` for
  2-D float32/float64 arrays with any strides; ``params`` is the config as int64
  words (``MixPertConfig.words()``, layout ``W_*`` below), ``stats`` an int64
  array of ``N_STATS`` (``STAT_*``) it fills; status 0 or an ``ERR_*`` code
  (``STATUS_MESSAGES``). It never raises and never takes the GIL.
* :func:`prepare_operand` / :func:`multiply_into`: the same in two steps, so an
  operand split once (a tuple of arrays, wrapped by :class:`Prepared` on the
  Python side) serves several GEMMs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mixjit.runtime.executor_common import nonfinite_rule
from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.mixpert_bound import dropped_weight, fp64_doubtful, lost_rows, recompute
from mixjit.runtime.exactsum import _ACC_LIMBS, MAX_PARTIALS, acc_add, acc_round, add_piece, add_pieces, exact_dot_round, finish, finish_all, round32, round64_scaled
from mixjit.runtime.pair_blocks import (
    BLOCK_BITS,
    BLOCK_I0,
    BLOCK_I1,
    BLOCK_J0,
    BLOCK_J1,
    BLOCK_SHIFT,
    K_TOO_LONG,
    SPAN_RESERVE,
    k_bits,
    plan_block_array,
)
from mixjit.runtime.segments import ZERO_EXP, digit_range, max_aligned, pack_groups, width

__all__ = [
    "N_WORDS",
    "N_LAYOUT_WORDS",
    "N_STATS",
    "STATUS_MESSAGES",
    "Prepared",
    "ExecStats",
    "mixpert_gemm",
    "prepare_operand",
    "multiply_into",
    "prepare",
    "run_mixpert",
]

# ---- the config as int64 words (written by MixPertConfig.words) -----------------
W_SEGMENTS = 0  # INT8 segments per element, 1..9
W_SEG0_BITS = 1  # significant bits of segment 0, implied one included, 1..7
W_DIGITS = 2  # segments.MAGNITUDE | segments.BALANCED
W_ALIGN = 3  # ALIGN_TILE | ALIGN_ROW
W_ROUNDING = 4  # segments.ROUND_TRUNC | segments.ROUND_NEAREST
W_TM = 5  # A tile rows
W_TK = 6  # k-tile length
W_TN = 7  # B tile columns
W_FALLBACK = 8  # spread threshold in bits, -1: never
W_DOMAIN = 9  # DOMAIN_FP32 | DOMAIN_FP64
W_PAIRS0 = 10  # kept pairs: bit 9*i + j of the 81-bit word pair (PAIRS0 low 63 bits)
W_PAIRS1 = 11
N_WORDS = 12
#: words 0..N_LAYOUT_WORDS-1 fix how an operand is split (what a prepared operand fixes)
N_LAYOUT_WORDS = 10
PAIR_STRIDE = 9
ALIGN_TILE = 0
ALIGN_ROW = 1
DOMAIN_FP32 = 0
DOMAIN_FP64 = 1

# ---- what a call did (the stats array) ---------------------------------------
STAT_FALLBACK_TILES = 0
STAT_TILES = 1
STAT_NONFINITE = 2
STAT_EXACT_ROWS = 3
STAT_EXACT_COLS = 4
STAT_WIDEST_SPAN = 5
STAT_CERTIFIED = 6  # outputs computed by the certified path (float64 GEMM + Ziv's test)
STAT_SLOW_ELEMENTS = 7  # of those, outputs Ziv's test left in doubt: summed exactly
STAT_RECOMPUTED = 8  # outputs the guarantee check left in doubt: RN(exact A·B) (runtime/mixpert_bound.py)
N_STATS = 9

# ---- status codes ----------------------------------------------------------
OK = 0
ERR_SPAN = 1
ERR_K_TOO_LONG = 2
ERR_PARAMS = 3
ERR_SHAPE = 4
STATUS_MESSAGES: dict[int, str] = {
    ERR_SPAN: "a row of A and a column of B span too many binades along K (at most 900); "
    "scale the operands or use the native scheme for this GEMM",
    ERR_K_TOO_LONG: K_TOO_LONG,
    ERR_PARAMS: "the config words are invalid, or a float64-domain config was given float32 "
    "operands or a tile fallback (encode configs with MixPertConfig.words(); mixpert-fp64 "
    "takes float64 only and has no fallback)",
    ERR_SHAPE: "shapes do not match: A is m x k, B must be k x n and C m x n",
}
"""What each non-zero status of the compiled executor means."""

#: rows (or columns) recomputed together on the exact path
_EXACT_CHUNK = 32
#: widest exponent span (row of A + column of B) whose pieces stay in float64's range
_MAX_SPAN = 900
_F32MAX = float(np.finfo(np.float32).max)


# ------------------------------------------------------------------ parameters


@cached_njit(nogil=True)
def _params_ok(params, out_itemsize: int) -> bool:
    if params.shape[0] < N_WORDS:
        return False
    s = params[W_SEGMENTS]
    return (
        1 <= s <= 9
        and 1 <= params[W_SEG0_BITS] <= 7
        and 0 <= params[W_DIGITS] <= 1
        and 0 <= params[W_ALIGN] <= 1
        and 0 <= params[W_ROUNDING] <= 1
        and min(params[W_TM], params[W_TK], params[W_TN]) >= 1
        and params[W_FALLBACK] >= -1
        and 0 <= params[W_DOMAIN] <= 1
        and not (params[W_DOMAIN] == DOMAIN_FP64 and (out_itemsize == 4 or params[W_FALLBACK] != -1))
        and width(s, params[W_SEG0_BITS], params[W_DIGITS]) <= 62
    )


@cached_njit(nogil=True)
def _pairs(params):
    """The kept pairs as a boolean segments x segments matrix."""
    s = params[W_SEGMENTS]
    out = np.zeros((s, s), dtype=np.bool_)
    for i in range(s):
        for j in range(s):
            bit = PAIR_STRIDE * i + j
            word = params[W_PAIRS0] if bit < 63 else params[W_PAIRS1]
            out[i, j] = (word >> (bit % 63)) & 1 == 1
    return out


# ------------------------------------------------------------- operand split


@cached_njit(nogil=True)
def _row_form(x, transpose: bool, to32: bool):
    """Contiguous float64 copy of ``x`` (or ``x.T``), rounded to float32 first when
    the domain is FP32 (overflow gives inf; float32 values widen exactly)."""
    r = x.shape[1] if transpose else x.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    out = np.empty((r, kk))
    for i in range(r):
        for k in range(kk):
            v = x[k, i] if transpose else x[i, k]
            out[i, k] = np.float64(np.float32(v)) if to32 else np.float64(v)
    return out


@cached_njit(nogil=True)
def _fallback_flags(nonzero, shifted, tile_rows: int, threshold: int):
    """Per row and k-tile: does the row's tile fall back (more than 1/8 of its nonzero
    elements shifted by more than ``threshold`` bits)? Also the number of such tiles."""
    r, nkt = nonzero.shape
    fb = np.zeros((r, nkt), dtype=np.bool_)
    count = 0
    if threshold < 0:
        return fb, count
    for t0 in range(0, r, tile_rows):
        t1 = min(t0 + tile_rows, r)
        for kt in range(nkt):
            sh = 0
            nz = 0
            for i in range(t0, t1):
                sh += shifted[i, kt]
                nz += nonzero[i, kt]
            if 8 * sh > nz:
                count += 1
                for i in range(t0, t1):
                    fb[i, kt] = True
    return fb, count


@cached_njit(nogil=True)
def _scales(gexp, fb):
    """Per row: reference exponent (max over valid groups), span, and the exact
    power-of-two factor ``2^(E - ref)`` of each group (0 for zero/fallback groups)."""
    r, nkt = gexp.shape
    ref = np.zeros(r, dtype=np.int64)
    span = np.zeros(r, dtype=np.int64)
    scale = np.zeros((r, nkt))
    for i in range(r):
        hi = ZERO_EXP
        lo = -ZERO_EXP
        for t in range(nkt):
            e = gexp[i, t]
            if e != ZERO_EXP and not fb[i, t]:
                hi = max(hi, e)
                lo = min(lo, e)
        if hi == ZERO_EXP:
            continue
        ref[i] = hi
        span[i] = hi - lo
        for t in range(nkt):
            e = gexp[i, t]
            if e != ZERO_EXP and not fb[i, t]:
                scale[i, t] = math.ldexp(1.0, e - hi)
    return ref, span, scale


@cached_njit(nogil=True)
def _split_rows(raw, side_b: bool, params):
    """Split and align a row-form operand (A, or Bᵀ when ``side_b``): the tuple
    ``(raw, bad, q, gexp, fb, ref, span, scale, fb_tiles)`` the multiply takes."""
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tile_rows = params[W_TN] if side_b else params[W_TM]
    group_rows = 1 if params[W_ALIGN] == ALIGN_ROW else tile_rows
    threshold = params[W_FALLBACK]
    far = threshold if threshold >= 0 else 1 << 20
    w = width(segments, params[W_SEG0_BITS], digits)
    emax = 127 if params[W_DOMAIN] == DOMAIN_FP32 else 1023  # raw holds float32 values in FP32
    q, gexp, nonzero, shifted, bad = pack_groups(
        raw, group_rows, params[W_TK], w, params[W_ROUNDING], far, max_aligned(segments, digits), emax
    )
    fb, fb_tiles = _fallback_flags(nonzero, shifted, tile_rows, threshold)
    ref, span, scale = _scales(gexp, fb)
    return raw, bad, q, gexp, fb, ref, span, scale, fb_tiles


@cached_njit(nogil=True)
def prepare_operand(x, side_b: bool, params):
    """Split operand ``x`` (A, or B when ``side_b``; any strides, float32/float64)
    under the config words ``params``; the result feeds :func:`multiply_into`."""
    return _split_rows(_row_form(x, side_b, params[W_DOMAIN] == DOMAIN_FP32), side_b, params)


# ------------------------------------------------------------------ multiply


@cached_njit(nogil=True)
def _operand(q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int, tk: int):
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


@cached_njit(nogil=True)
def _epilogue(d1, w1: float, d2, w2: float, two: bool, ea, eb, out, to32: bool):
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
def _tf32(v: float) -> float:
    """RN_tf32 of the float32 value ``v`` (given as float64; finite), ties to even,
    on the bit pattern (docs/numerics.md, tf32x3); overflow gives inf."""
    u = np.float32(v).view(np.uint32)
    lsb = (u >> np.uint32(13)) & np.uint32(1)
    r = np.uint32((u + (np.uint32(0xFFF) + lsb)) & np.uint32(0xFFFFE000))
    return np.float64(r.view(np.float32))


@cached_njit(nogil=True)
def _tf32_split(raw):
    """The tf32x3 split of a row-form operand (float32 values): ``big = RN_tf32(x)``,
    ``small = RN_tf32(x - big)``; non-finite inputs count as 0, and an element whose
    big part overflows is kept whole (big = x, small = 0)."""
    r, kk = raw.shape
    big = np.zeros((r, kk))
    small = np.zeros((r, kk))
    for i in range(r):
        for k in range(kk):
            x = raw[i, k]
            if not math.isfinite(x):
                continue
            hi = _tf32(x)
            if math.isinf(hi):
                hi = x
            big[i, k] = hi
            small[i, k] = _tf32(np.float64(np.float32(x - hi)))
    return big, small


# kinds of a column run of the certified path's float64 GEMM (besides block b = 0..nb-1)
_KIND_TF_A = -1  # tf32 parts of A's fallback tiles times all of B
_KIND_TF_B = -2  # tf32 parts of A's other tiles times B's fallback tiles
#: inner size of one float64 GEMM of the certified path (the error bound's n)
_CHUNK = 256
_U = 2.0**-53


@cached_njit(nogil=True)
def _runs(afb, ascale, bfb, bscale, rows, others, nb: int, tk: int, K: int):
    """The column runs of the certified path's GEMM, as rows ``(kind, k-tile)``:
    for each k-tile, the blocks where some listed row and some other row have a
    non-fallback group, and the tf32 runs where some fallback tile product occurs
    (``X[i,j] = Σ_κ INT8·[no fallback] + Σ_κ TF·(fa + (1-fa)·fb)``)."""
    nkt = afb.shape[1]
    out = np.empty((nkt * (nb + 2), 2), dtype=np.int64)
    count = 0
    for t in range(nkt):
        a_int = False
        a_fb = False
        a_nfb = False
        for u in range(rows.shape[0]):
            i = rows[u]
            a_int |= ascale[i, t] != 0.0
            a_fb |= afb[i, t]
            a_nfb |= not afb[i, t]
        b_int = False
        b_fb = False
        for v in range(others.shape[0]):
            j = others[v]
            b_int |= bscale[j, t] != 0.0
            b_fb |= bfb[j, t]
        if a_int and b_int:
            for b in range(nb):
                out[count, 0] = b
                out[count, 1] = t
                count += 1
        if a_fb:
            out[count, 0] = _KIND_TF_A
            out[count, 1] = t
            count += 1
        if a_nfb and b_fb:
            out[count, 0] = _KIND_TF_B
            out[count, 1] = t
            count += 1
    return out[:count]


@cached_njit(nogil=True)
def _fill(dst, sel, q, scale, fb, big, small, inv, runs, r0: int, r1: int, s0: int, s1: int,
          blocks, segments: int, digits: int, tk: int, K: int, side_b: bool):
    """Columns of runs ``r0..r1`` for the rows ``sel`` of one side (A: ``side_b``
    false, digits ``s0..s1`` of each block; B: true) into ``dst`` (len(sel) × width).
    Every value is exact in float64: an integer times powers of two, or a tf32 part
    (B's side holds big + small, exact: both parts of one float32) times one."""
    for u in range(sel.shape[0]):
        i = sel[u]
        c = 0
        for r in range(r0, r1):
            kind = runs[r, 0]
            t = runs[r, 1]
            k0 = t * tk
            k1 = min(k0 + tk, K)
            if kind >= 0:
                sc = scale[i, t]
                if side_b:
                    w = sc
                else:
                    w = sc * 2.0 ** blocks[kind, BLOCK_SHIFT]
                for k in range(k0, k1):
                    dst[u, c] = digit_range(q[i, k], blocks[kind, s0], blocks[kind, s1], segments, digits) * w
                    c += 1
                continue
            # tf32 runs: A side [big | small], B side [big + small | big]
            if side_b:
                on = kind == _KIND_TF_A or fb[i, t]
            else:
                on = fb[i, t] if kind == _KIND_TF_A else not fb[i, t]
            sc = inv[i] if on else 0.0
            for k in range(k0, k1):
                if side_b:
                    dst[u, c] = (big[i, k] + small[i, k]) * sc
                    dst[u, c + k1 - k0] = big[i, k] * sc
                else:
                    dst[u, c] = big[i, k] * sc
                    dst[u, c + k1 - k0] = small[i, k] * sc
                c += 1
            c += k1 - k0


@cached_njit(nogil=True)
def _certain32(s: float, err: float) -> bool:
    """Ziv's rounding test: does every value within ``err`` of ``s`` round to the
    float32 ``RN32(s)``? Half an ulp on each side (a quarter at a power of two);
    never at ``FLT_MAX`` or beyond (the exact path rounds those)."""
    c = np.float32(s)
    ac = abs(np.float64(c))
    if not ac < _F32MAX:
        return False
    bits = np.float32(ac).view(np.uint32)
    ulp = np.float64(np.uint32(bits + np.uint32(1)).view(np.float32)) - ac
    half = ulp * (0.25 if (bits & np.uint32(0x7FFFFF)) == 0 else 0.5)
    return abs(s - np.float64(c)) + err < half


@cached_njit(nogil=True)
def _exact_element(pa, pb, parts_a, parts_b, blocks, i: int, j: int, e: int, ia0: int, ia1: int,
                   jb0: int, jb1: int, params, p) -> float:
    """RN32 of the exact ``X[i, j]`` (row ``i`` of ``pa`` times row ``j`` of ``pb``,
    result scale ``2^e``), k-tile by k-tile as step 5 defines it: tile products
    with a fallback tile add their tf32x3 products, the others their INT8 block
    sums (each exact in int64). ``p`` is partials scratch."""
    _, _, aq, _, afb, _, _, ascale, _ = pa
    _, _, bq, _, bfb, _, _, bscale, _ = pb
    abig, asmall = parts_a
    bbig, bsmall = parts_b
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tk = params[W_TK]
    K = aq.shape[1]
    inv = math.ldexp(1.0, -e)
    n = 0
    for t in range(afb.shape[1]):
        k0 = t * tk
        k1 = min(k0 + tk, K)
        if afb[i, t] or bfb[j, t]:
            for k in range(k0, k1):
                ab = abig[i, k]
                bb = bbig[j, k]
                for v in (ab * bb, ab * bsmall[j, k], asmall[i, k] * bb):
                    if v != 0.0:
                        n = add_piece(p, n, v * inv)
            continue
        sc = ascale[i, t] * bscale[j, t]
        if sc == 0.0:
            continue
        for b in range(blocks.shape[0]):
            acc = np.int64(0)
            for k in range(k0, k1):
                acc += digit_range(aq[i, k], blocks[b, ia0], blocks[b, ia1], segments, digits) * digit_range(
                    bq[j, k], blocks[b, jb0], blocks[b, jb1], segments, digits
                )
            if acc != 0:
                n = add_piece(p, n, np.float64(acc) * 2.0 ** blocks[b, BLOCK_SHIFT] * sc)
    hi, lo = finish(p, n)
    return round32(math.ldexp(hi, e), lo)


@cached_njit(nogil=True)
def _certified(pa, pb, parts_a, parts_b, blocks, ea, eb, params, rows, others, out, transposed: bool) -> int:
    """The outputs ``rows × others`` of ``pa`` times ``pb`` (rows of A times
    columns of B; columns of B times rows of A when ``transposed``, the blocks'
    sides swapped), float32 domain, for rows and columns the fast path cannot take
    (fallback tiles, wide spans). One float64 GEMM over runs of exactly
    representable columns (INT8 block values of the tile products without
    fallback, tf32 parts of those with) gives ``S'`` within
    ``2(w + c + 2)·u·‖x_i‖‖y_j‖ + 2u|S'|`` of ``X`` (w: chunk size, c: chunks);
    where Ziv's test certifies ``RN32(S')`` it is the result, the rest is summed
    exactly (:func:`_exact_element`). Returns the number of exact sums."""
    araw, _, aq, _, afb, _, _, ascale, _ = pa
    _, _, bq, _, bfb, _, _, bscale, _ = pb
    abig, asmall = parts_a
    bbig, bsmall = parts_b
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tk = params[W_TK]
    K = aq.shape[1]
    nb = blocks.shape[0]
    ia0, ia1, jb0, jb1 = (BLOCK_J0, BLOCK_J1, BLOCK_I0, BLOCK_I1) if transposed else (BLOCK_I0, BLOCK_I1, BLOCK_J0, BLOCK_J1)
    r = rows.shape[0]
    n = others.shape[0]
    if r == 0 or n == 0:
        return 0
    inv_a = np.empty(araw.shape[0])
    for i in range(inv_a.shape[0]):
        inv_a[i] = math.ldexp(1.0, -ea[i])
    inv_b = np.empty(bq.shape[0])
    for j in range(inv_b.shape[0]):
        inv_b[j] = math.ldexp(1.0, -eb[j])
    runs = _runs(afb, ascale, bfb, bscale, rows, others, nb, tk, K)
    s = np.zeros((r, n))
    nx = np.zeros(r)
    ny = np.zeros(n)
    chunks = 0
    widest = 0
    r0 = 0
    while r0 < runs.shape[0]:
        # a chunk: consecutive runs up to _CHUNK columns (at least one run)
        wd = 0
        r1 = r0
        while r1 < runs.shape[0]:
            t = runs[r1, 1]
            wr = (min(t * tk + tk, K) - t * tk) * (1 if runs[r1, 0] >= 0 else 2)
            if r1 > r0 and wd + wr > _CHUNK:
                break
            wd += wr
            r1 += 1
        x = np.empty((r, wd))
        y = np.empty((n, wd))
        _fill(x, rows, aq, ascale, afb, abig, asmall, inv_a, runs, r0, r1, ia0, ia1, blocks, segments, digits, tk, K, False)
        _fill(y, others, bq, bscale, bfb, bbig, bsmall, inv_b, runs, r0, r1, jb0, jb1, blocks, segments, digits, tk, K, True)
        s += np.dot(x, y.T)
        for u in range(r):
            nx[u] += np.dot(x[u], x[u])
        for v in range(n):
            ny[v] += np.dot(y[v], y[v])
        chunks += 1
        widest = max(widest, wd)
        r0 = r1
    g = 2.0 * (widest + chunks + 2) * _U
    p = np.empty(MAX_PARTIALS)
    slow = 0
    for u in range(r):
        i = rows[u]
        xa = math.sqrt(nx[u])
        for v in range(n):
            j = others[v]
            e = ea[i] + eb[j]
            sv = s[u, v]
            err = g * xa * math.sqrt(ny[v]) + 2.0 * _U * abs(sv)
            val = math.ldexp(sv, e)
            if _certain32(val, math.ldexp(err, e)):
                res = np.float64(np.float32(val)) + 0.0
            else:
                res = _exact_element(pa, pb, parts_a, parts_b, blocks, i, j, e, ia0, ia1, jb0, jb1, params, p)
                slow += 1
            if transposed:
                out[j, i] = res
            else:
                out[i, j] = res
    return slow


@cached_njit(nogil=True)
def _fast(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32: bool):
    """The fast path: one dgemm per block over the whole K, rounded once."""
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tk = params[W_TK]
    K = aq.shape[1]
    rows_a = np.arange(aq.shape[0])
    rows_b = np.arange(bq.shape[0])
    nb = blocks.shape[0]

    def dot(b):
        x = _operand(aq, ascale, rows_a, 0, K, blocks[b, BLOCK_I0], blocks[b, BLOCK_I1], segments, digits, tk)
        y = _operand(bq, bscale, rows_b, 0, K, blocks[b, BLOCK_J0], blocks[b, BLOCK_J1], segments, digits, tk)
        return np.dot(x, y.T)

    if nb <= 2:
        d1 = dot(0)
        d2 = dot(1) if nb == 2 else d1
        w2 = 2.0 ** blocks[1, BLOCK_SHIFT] if nb == 2 else 0.0
        _epilogue(d1, 2.0 ** blocks[0, BLOCK_SHIFT], d2, w2, nb == 2, ea, eb, out, to32)
        return
    m, n = out.shape
    ds = np.empty((nb, m, n))
    for b in range(nb):
        ds[b] = dot(b)
    _epilogue_many(ds, blocks, ea, eb, out, to32)


#: 32-bit limbs of an output's exact accumulator when the epilogue's rounding test
#: fails: block shifts reach 2*8*(segments-1) <= 128 bits, block values 2^53, sums
#: of up to 81 blocks 7 bits more
_BLOCK_LIMBS = 8


@cached_njit(nogil=True)
def _certain64(s: float, err: float, e: int) -> bool:
    """Ziv's test in float64: does every value within ``err`` of ``s`` round to ``s``,
    and is ``s 2^e`` a normal float64 (so that scaling by ``2^e`` is exact)?"""
    r = abs(math.ldexp(s, e))
    if not (2.0**-1021 <= r < 2.0**1023):
        return False
    u = np.float64(abs(s)).view(np.uint64)
    f, ex = math.frexp(abs(s))
    half = math.ldexp(1.0, ex - 54)
    if (u & np.uint64(0xFFFFFFFFFFFFF)) == 0:
        half *= 0.5  # at a power of two the ulp below is half as large
    return err < half


@cached_njit(nogil=True)
def _epilogue_many(ds, blocks, ea, eb, out, to32: bool):
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
                if (t != 0.0 or mag == 0.0) and _certain32(val, math.ldexp(err, ex)):
                    out[i, j] = np.float64(np.float32(val)) + 0.0
                    continue
            else:
                if t == 0.0 and mag == 0.0:
                    out[i, j] = 0.0
                    continue
                if _certain64(t, err, ex):
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


@cached_njit(nogil=True)
def _exact_rows(pa, pb, blocks, ea, eb, params, rows, out, transposed: bool, to32: bool):
    """Recompute the outputs of ``rows`` of ``pa`` (rows of A; columns of B when
    ``transposed``, with ``pa``/``pb`` and the blocks' sides swapped) k-tile by
    k-tile with an exact sum: the wide spans of the float64 domain, which has no
    fallback tiles (the float32 domain takes :func:`_certified`)."""
    _, _, aq, agexp, _, _, _, ascale, _ = pa
    _, _, bq, _, _, _, _, bscale, _ = pb
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
                x = _operand(aq, ascale, rs, k0, k1, blocks[b, ia0], blocks[b, ia1], segments, digits, tk)
                y = _operand(bq, bscale, all_b, k0, k1, blocks[b, jb0], blocks[b, jb1], segments, digits, tk)
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
def _exact_sets(sa, sb, fa, fb, limit: int):
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


@cached_njit(nogil=True)
def _recompute32(xraw, yraw, rows, out, transposed: bool) -> None:
    """Float32 domain, step 6: the outputs of ``rows`` of ``xraw`` (rows of A; columns
    of B when ``transposed``) against every row of ``yraw`` become RN32 of the exact
    product. Products of float32 values are exact in float64, so one float64 GEMM
    gives ``s`` within ``gamma_K sum|p|``; Ziv's test keeps ``RN32(s)``, the rest
    take the exact dot product (runtime/exactsum.exact_dot_round)."""
    r = rows.shape[0]
    if r == 0:
        return
    K = xraw.shape[1]
    x = np.zeros((r, K))
    for u in range(r):
        for k in range(K):
            v = xraw[rows[u], k]
            x[u, k] = v if math.isfinite(v) else 0.0
    y = np.where(np.isfinite(yraw), yraw, 0.0)
    s = np.dot(x, y.T)
    t = np.dot(np.abs(x), np.abs(y).T)
    g = 1.01 * K * _U / (1.0 - K * _U)
    acc = np.zeros(_ACC_LIMBS, dtype=np.int64)
    for u in range(r):
        for v in range(y.shape[0]):
            if _certain32(s[u, v], g * t[u, v]):
                res = np.float64(np.float32(s[u, v])) + 0.0
            else:
                res = exact_dot_round(x[u], y[v], acc, True)
            if transposed:
                out[v, rows[u]] = res
            else:
                out[rows[u], v] = res


@cached_njit(nogil=True)
def _product(pa, pb, params, out, stats) -> int:
    """``out = RN(X)`` (float64 array holding the float32/float64 result) for split
    operands; fills ``stats``; returns a status."""
    araw, abad, aq, agexp, afb, aref, aspan, ascale, afb_tiles = pa
    braw, bbad, bq, bgexp, bfb, bref, bspan, bscale, bfb_tiles = pb
    to32 = params[W_DOMAIN] == DOMAIN_FP32
    m, K = aq.shape
    n = bq.shape[0]
    if bq.shape[1] != K:
        return ERR_SHAPE
    nkt = agexp.shape[1]
    stats[:] = 0
    stats[STAT_TILES] = nkt * (-(-m // params[W_TM]) + -(-n // params[W_TN]))
    if m == 0 or n == 0:
        return OK
    if K == 0:
        out[:] = 0.0
        return OK
    segments = params[W_SEGMENTS]
    widest = aspan.max() + bspan.max()
    stats[STAT_WIDEST_SPAN] = widest
    if widest > _MAX_SPAN:
        return ERR_SPAN
    # keep only the span the data has free (up to SPAN_RESERVE; wider rows and
    # columns take the exact / certified path): fewer, wider blocks, same bits
    reserve = min(widest, SPAN_RESERVE)
    blocks, ok = plan_block_array(_pairs(params), segments, params[W_SEG0_BITS], K, params[W_DIGITS], reserve)
    if not ok:
        return ERR_K_TOO_LONG
    # value = (sum of block products * 2^shift) * 2^(ref_a - w1) * 2^(ref_b - w1)
    w1 = width(segments, params[W_SEG0_BITS], params[W_DIGITS]) - 1
    ea = aref - w1
    eb = bref - w1
    limit = 53 - k_bits(K) - blocks[:, BLOCK_BITS].max()
    rows, cols = _exact_sets(aspan, bspan, afb, bfb, limit)
    if rows.shape[0] < m and cols.shape[0] < n:
        _fast(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32)
    if to32:
        if afb_tiles + bfb_tiles:
            parts_a = _tf32_split(araw)
            parts_b = _tf32_split(braw)
        else:
            parts_a = (np.zeros((0, 0)), np.zeros((0, 0)))
            parts_b = parts_a
        # the columns' pass skips the rows the rows' pass computed
        in_rows = np.zeros(m, dtype=np.bool_)
        in_rows[rows] = True
        rest = np.flatnonzero(~in_rows)
        slow = _certified(pa, pb, parts_a, parts_b, blocks, ea, eb, params, rows, np.arange(n), out, False)
        slow += _certified(pb, pa, parts_b, parts_a, blocks, eb, ea, params, cols, rest, out, True)
        stats[STAT_CERTIFIED] = rows.shape[0] * n + cols.shape[0] * rest.shape[0]
        stats[STAT_SLOW_ELEMENTS] = slow
    else:
        if rows.shape[0]:
            _exact_rows(pa, pb, blocks, ea, eb, params, rows, out, False, to32)
        if cols.shape[0]:
            _exact_rows(pb, pa, blocks, eb, ea, params, cols, out, True, to32)
    w = width(segments, params[W_SEG0_BITS], params[W_DIGITS])
    if to32:
        lost_a = np.flatnonzero(lost_rows(araw, aq, afb, params[W_TK]))
        lost_b = np.flatnonzero(lost_rows(braw, bq, bfb, params[W_TK]))
        _recompute32(araw, braw, lost_a, out, False)
        _recompute32(braw, araw, lost_b, out, True)
        stats[STAT_RECOMPUTED] = lost_a.shape[0] * n + lost_b.shape[0] * m - lost_a.shape[0] * lost_b.shape[0]
    else:
        dropped = dropped_weight(_pairs(params), segments, params[W_SEG0_BITS], params[W_DIGITS])
        doubt = fp64_doubtful(araw, agexp, aref, braw, bgexp, bref, params[W_TK], w, dropped, out)
        stats[STAT_RECOMPUTED] = recompute(araw, braw, doubt, out, False)
    if abad.any() or bbad.any():
        stats[STAT_NONFINITE] = nonfinite_rule(araw, braw, abad, bbad, out)
    stats[STAT_FALLBACK_TILES] = afb_tiles + bfb_tiles
    stats[STAT_EXACT_ROWS] = rows.shape[0]
    stats[STAT_EXACT_COLS] = cols.shape[0]
    return OK


@cached_njit(nogil=True)
def multiply_into(pa, pb, params, c, stats) -> int:
    """``C = A @ B`` under the MixPert semantics for split operands (from
    :func:`prepare_operand`) into ``c`` (m x n, float32/float64, any strides;
    float32 only for the FP32 domain, where the result is exact in it). Fills
    ``stats``; returns 0 or an ``ERR_*`` status (``c`` is then unspecified)."""
    if not _params_ok(params, c.itemsize):
        return ERR_PARAMS
    m = pa[2].shape[0]
    n = pb[2].shape[0]
    if c.shape[0] != m or c.shape[1] != n:
        return ERR_SHAPE
    out = np.empty((m, n))
    status = _product(pa, pb, params, out, stats)
    if status == OK:
        for i in range(m):
            for j in range(n):
                c[i, j] = out[i, j]
    return status


@cached_njit(nogil=True)
def mixpert_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the MixPert semantics: ``a`` (m x k), ``b`` (k x n), ``c``
    (m x n), float32/float64 with any strides; ``params`` the config words
    (``MixPertConfig.words()``); ``stats`` an int64 array of ``N_STATS``. Returns 0
    or an ``ERR_*`` status (``STATUS_MESSAGES``). Compiled, GIL-free, thread-safe
    (all scratch is allocated per call)."""
    if not _params_ok(params, c.itemsize):
        return ERR_PARAMS
    if a.shape[1] != b.shape[0]:
        return ERR_SHAPE
    pa = prepare_operand(a, False, params)
    pb = prepare_operand(b, True, params)
    return multiply_into(pa, pb, params, c, stats)


# ------------------------------------------------------------ Python face


@dataclass
class Prepared:
    """One operand split and aligned under a config, ready for several GEMMs.

    Stored in *row form*: A as m×K, B as Bᵀ (n×K), so both sides use one code path.
    ``arrays`` is the tuple the compiled :func:`multiply_into` takes."""

    side: str  # "A" | "B"
    params: np.ndarray  # the config words it was split under
    shape: tuple[int, int]  # the operand's own shape (A: m×K, B: K×n)
    dtype: np.dtype  # the caller's dtype (C is returned in it)
    arrays: tuple  # (raw, bad, q, gexp, fb, ref, span, scale, fb_tiles)

    @property
    def q(self) -> np.ndarray:
        """Aligned signed mantissas (row form, int64)."""
        return self.arrays[2]

    @property
    def gexp(self) -> np.ndarray:
        """Group exponent per row (of the row form) and k-tile."""
        return self.arrays[3]

    def same_layout(self, params: np.ndarray) -> bool:
        """Was it split as config words ``params`` split an operand?"""
        return bool(np.array_equal(self.params[:N_LAYOUT_WORDS], params[:N_LAYOUT_WORDS]))


@dataclass
class ExecStats:
    """What the executor did (the scheme turns it into RunStats)."""

    fallback_tiles: int
    tiles: int
    nonfinite_elements: int
    exact_path_rows: int
    exact_path_cols: int
    certified_elements: int  # outputs of those rows/columns from the float64 GEMM + Ziv's test
    slow_path_elements: int  # of those, the ones summed exactly (the test left them in doubt)
    recomputed_elements: int  # outputs the guarantee check left in doubt: RN(exact A·B)


def _words(params: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(params, dtype=np.int64)


def prepare(x: np.ndarray, side: str, params: np.ndarray) -> Prepared:
    """Split and align operand ``x`` (A if ``side == "A"``, else B) under the config
    words ``params``."""
    if side not in ("A", "B"):
        raise ValueError(f"side must be 'A' or 'B', got {side!r}")
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"mixpert: operand {side} must be 2-D, got shape {x.shape}")
    params = _words(params)
    return Prepared(side, params, x.shape, x.dtype, prepare_operand(x, side == "B", params))


def _raise(status: int, stats: np.ndarray, a_shape: tuple, b_shape: tuple) -> None:
    if status == ERR_SPAN:
        raise ValueError(
            f"mixpert: a row of A and a column of B span {int(stats[STAT_WIDEST_SPAN])} binades along K; "
            f"the executor supports at most {_MAX_SPAN}. Scale the operands or use the native scheme "
            "for this GEMM"
        )
    if status == ERR_SHAPE:
        raise ValueError(
            f"mixpert: inner dimensions differ: A is {a_shape[0]}x{a_shape[1]}, B is {b_shape[0]}x{b_shape[1]}"
        )
    raise ValueError(f"mixpert: {STATUS_MESSAGES[status]}")


def run_mixpert(
    a: np.ndarray | Prepared, b: np.ndarray | Prepared, params: np.ndarray
) -> tuple[np.ndarray, ExecStats]:
    """C = A @ B under the MixPert semantics (arrays, or operands from :func:`prepare`
    under the same config); C has A's dtype. Raises ValueError for what the
    compiled executor refuses."""
    params = _words(params)
    dtype = a.dtype if isinstance(a, Prepared) else np.asarray(a).dtype
    a_shape = a.shape if isinstance(a, Prepared) else np.shape(a)
    b_shape = b.shape if isinstance(b, Prepared) else np.shape(b)
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ValueError(f"mixpert: A and B must be 2-D, got shapes {a_shape} and {b_shape}")
    c = np.empty((a_shape[0], b_shape[1]), dtype=dtype)
    stats = np.zeros(N_STATS, dtype=np.int64)
    if isinstance(a, Prepared) or isinstance(b, Prepared):
        if a_shape[1] != b_shape[0]:
            _raise(ERR_SHAPE, stats, a_shape, b_shape)
        pa = a if isinstance(a, Prepared) else prepare(a, "A", params)
        pb = b if isinstance(b, Prepared) else prepare(b, "B", params)
        status = multiply_into(pa.arrays, pb.arrays, params, c, stats)
    else:
        status = mixpert_gemm(np.asarray(a), np.asarray(b), c, params, stats)
    if status != OK:
        _raise(status, stats, a_shape, b_shape)
    return c, ExecStats(
        int(stats[STAT_FALLBACK_TILES]),
        int(stats[STAT_TILES]),
        int(stats[STAT_NONFINITE]),
        int(stats[STAT_EXACT_ROWS]),
        int(stats[STAT_EXACT_COLS]),
        int(stats[STAT_CERTIFIED]),
        int(stats[STAT_SLOW_ELEMENTS]),
        int(stats[STAT_RECOMPUTED]),
    )
