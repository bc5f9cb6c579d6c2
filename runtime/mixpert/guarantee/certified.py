"""The MixPert executor's certified path (float32 domain) and its float32 step 6.

Rows of A / columns of B whose exponent span along K is too wide for the fast
path's bound, or that touch a fallback tile (whose tile products contribute their
exact tf32x3 products instead), get ``S'`` from one float64 GEMM over exactly
representable columns (INT8 block values and tf32 parts) with a rigorous error
bound; Ziv's rounding test accepts ``RN32(S')`` or sends the output to an exact
k-tile-by-k-tile sum (:func:`certified`). Step 6 of the float32 domain
(:func:`recompute32`) uses the same technique for ``RN32(A·B)`` itself.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.guarantee.ziv import certain32
from mixjit.runtime.mixpert.pair_blocks import BLOCK_I0, BLOCK_I1, BLOCK_J0, BLOCK_J1, BLOCK_SHIFT
from mixjit.runtime.mixpert.segments import digit_range
from mixjit.runtime.mixpert.words import W_DIGITS, W_SEGMENTS, W_TK
from mixjit.runtime.multiterm.executor import _rn_bits
from mixjit.runtime.numerics.exactsum import _ACC_LIMBS, MAX_PARTIALS, add_piece, exact_dot_round, finish, round32

#: TF32's significant bits as the float64 bits :func:`_rn_bits` drops
_TF32_DROP = 53 - 11
_TWO128 = 2.0**128


@cached_njit(nogil=True)
def tf32_split(raw):
    """The tf32x3 split of a row-form operand (float32 values), as the tf32x3 scheme
    splits (docs/numerics.md, tf32x3 step 1): ``big = RN(x)`` and ``small =
    RN(x - big)`` to TF32's 11 significant bits with no lower exponent limit, so
    float32 subnormals are kept exactly; non-finite inputs count as 0, and an element
    whose big part overflows (2^128) is kept whole (big = x, small = 0)."""
    r, kk = raw.shape
    big = np.zeros((r, kk))
    small = np.zeros((r, kk))
    for i in range(r):
        for k in range(kk):
            x = raw[i, k]
            if not math.isfinite(x):
                continue
            hi = _rn_bits(x, _TF32_DROP)
            if abs(hi) >= _TWO128:
                hi = x
            big[i, k] = hi
            small[i, k] = _rn_bits(x - hi, _TF32_DROP)  # x - hi is exact in float64
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
def _exact_element(pa, pb, parts_a, parts_b, blocks, i: int, j: int, e: int, ia0: int, ia1: int,
                   jb0: int, jb1: int, params, p) -> float:
    """RN32 of the exact ``X[i, j]`` (row ``i`` of ``pa`` times row ``j`` of ``pb``,
    result scale ``2^e``), k-tile by k-tile as step 5 defines it: tile products
    with a fallback tile add their tf32x3 products, the others their INT8 block
    sums (each exact in int64). ``p`` is partials scratch."""
    aq, afb, ascale = pa.q, pa.fb, pa.scale
    bq, bfb, bscale = pb.q, pb.fb, pb.scale
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
def exact_elements(pa, pb, blocks, ea, eb, params, flat, skip_rows, skip_cols, out) -> int:
    """``out[i, j] = RN32(X[i, j])`` summed exactly (:func:`_exact_element`) for the
    outputs ``flat`` (indices ``i * n + j``) the wide fast path left in doubt
    (runtime/mixpert/paths/wide.py), except those of rows / columns marked in
    ``skip_rows`` / ``skip_cols`` (the certified path computes them). ``blocks``
    are exact blocks (their int64 sums over a k-tile are exact). Returns how many."""
    n = pb.q.shape[0]
    none = (np.zeros((0, 0)), np.zeros((0, 0)))
    p = np.empty(MAX_PARTIALS)
    count = 0
    for u in range(flat.shape[0]):
        i = flat[u] // n
        j = flat[u] % n
        if skip_rows[i] or skip_cols[j]:
            continue
        out[i, j] = _exact_element(pa, pb, none, none, blocks, i, j, ea[i] + eb[j], BLOCK_I0, BLOCK_I1, BLOCK_J0,
                                   BLOCK_J1, params, p)
        count += 1
    return count


@cached_njit(nogil=True)
def certified(pa, pb, parts_a, parts_b, blocks, ea, eb, params, rows, others, out, transposed: bool) -> int:
    """The outputs ``rows × others`` of ``pa`` times ``pb`` (rows of A times
    columns of B; columns of B times rows of A when ``transposed``, the blocks'
    sides swapped), float32 domain, for rows and columns the fast path cannot take
    (fallback tiles, wide spans). One float64 GEMM over runs of exactly
    representable columns (INT8 block values of the tile products without
    fallback, tf32 parts of those with) gives ``S'`` within
    ``2(w + c + 2)·u·‖x_i‖‖y_j‖ + 2u|S'|`` of ``X`` (w: chunk size, c: chunks);
    where Ziv's test certifies ``RN32(S')`` it is the result, the rest is summed
    exactly (:func:`_exact_element`). Returns the number of exact sums."""
    araw, aq, afb, ascale = pa.raw, pa.q, pa.fb, pa.scale
    bq, bfb, bscale = pb.q, pb.fb, pb.scale
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
            if certain32(val, math.ldexp(err, e)):
                res = np.float64(np.float32(val)) + 0.0
            else:
                res = _exact_element(pa, pb, parts_a, parts_b, blocks, i, j, e, ia0, ia1, jb0, jb1, params, p)
                slow += 1
            if transposed:
                out[j, i] = res
            else:
                out[i, j] = res
    return slow


#: rows up to which step 6 sums each of their outputs directly instead of by two GEMMs:
#: the GEMMs need finite-masked and absolute copies of the whole other operand (two
#: n x K float64 arrays and their page faults, about 90 ms at 2048 for the one row
#: that uniform data loses now and then), a direct sum ~4 ms per row
_DIRECT_ROWS = 8


@cached_njit(nogil=True)
def _finite_row(raw, v: int):
    """Row ``v`` of ``raw`` with its non-finite elements as 0 (the row itself if none)."""
    row = raw[v]
    for k in range(row.shape[0]):
        if not math.isfinite(row[k]):
            return np.where(np.isfinite(row), row, 0.0)
    return row


@cached_njit(nogil=True)
def _direct_sums(x, yraw):
    """``s = x · yᵀ`` and ``t = |x| · |y|ᵀ`` summed output by output, the non-finite
    elements of ``yraw`` as 0 (``x`` is finite): the same bound as the GEMMs'."""
    r, K = x.shape
    nv = yraw.shape[0]
    s = np.empty((r, nv))
    t = np.empty((r, nv))
    for u in range(r):
        for v in range(nv):
            a = 0.0
            b = 0.0
            for k in range(K):
                yv = yraw[v, k]
                p = x[u, k] * (yv if math.isfinite(yv) else 0.0)
                a += p
                b += abs(p)
            s[u, v] = a
            t[u, v] = b
    return s, t


@cached_njit(nogil=True)
def recompute32(xraw, yraw, rows, out, transposed: bool) -> None:
    """Float32 domain, step 6: the outputs of ``rows`` of ``xraw`` (rows of A; columns
    of B when ``transposed``) against every row of ``yraw`` become RN32 of the exact
    product. Products of float32 values are exact in float64, so a float64 sum (two
    GEMMs, or output by output for up to ``_DIRECT_ROWS`` rows) gives ``s`` within
    ``gamma_K sum|p|``; Ziv's test keeps ``RN32(s)``, the rest take the exact dot
    product (runtime/exactsum.exact_dot_round). The same bits either way."""
    r = rows.shape[0]
    if r == 0:
        return
    K = xraw.shape[1]
    x = np.zeros((r, K))
    for u in range(r):
        for k in range(K):
            v = xraw[rows[u], k]
            x[u, k] = v if math.isfinite(v) else 0.0
    direct = r <= _DIRECT_ROWS
    if direct:
        y = yraw
        s, t = _direct_sums(x, yraw)
    else:
        y = np.where(np.isfinite(yraw), yraw, 0.0)
        s = np.dot(x, y.T)
        t = np.dot(np.abs(x), np.abs(y).T)
    g = 1.01 * K * _U / (1.0 - K * _U)
    acc = np.zeros(_ACC_LIMBS, dtype=np.int64)
    for u in range(r):
        for v in range(y.shape[0]):
            if certain32(s[u, v], g * t[u, v]):
                res = np.float64(np.float32(s[u, v])) + 0.0
            else:
                res = exact_dot_round(x[u], _finite_row(yraw, v) if direct else y[v], acc, True)
            if transposed:
                out[v, rows[u]] = res
            else:
                out[rows[u], v] = res
