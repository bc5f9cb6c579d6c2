"""The MixPert executor's guarantee: outputs it cannot vouch for are recomputed exactly.

Semantics: docs/numerics.md, "mixpert-fp64", *Guarantee*, and "mixpert", step 6.
A MixPert output is ``RN(X)``, ``X`` the exact sum of the kept segment products of
the *aligned* operands; an element far below its group's largest keeps few bits,
or none, so ``X`` can be far from ``A·B`` (``[[1, 1e-20]] @ [[1e-20], [1]]`` gives 0).

* float64 domain (:func:`fp64_doubtful`): a rigorous bound ``Err_ij >= |X_ij -
  (AB)_ij|`` (one small GEMM over 4 columns per k-tile: operand quantisation and
  dropped pairs, per alignment group) is compared with a lower bound ``L_ij <=
  (|A||B|)_ij`` (``|C| - Err``, or where cancellation makes that too small, the
  dot product of |a_i| and |b_j|); where ``Err(1+u) > (gamma_K - u) L`` the
  output is *doubtful*;
* float32 domain (:func:`lost_rows`): rows of A / columns of B holding a nonzero
  element that alignment shifted out entirely (``q = 0``) outside a fallback tile
  make their outputs doubtful.

Doubtful outputs are recomputed as ``RN(sum_k a_ik b_kj)`` of the domain's inputs,
exactly (:func:`recompute`, runtime/exactsum.exact_dot_round) and counted.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.pack import fresh64, fresh_array
from mixjit.runtime.mixpert.segments import BALANCED, ZERO_EXP, digit_bits
from mixjit.runtime.numerics.exactsum import _ACC_LIMBS, exact_dot_round

__all__ = ["dropped_weight", "fp64_doubtful", "lost_rows", "recompute"]

_U64 = 2.0**-53
_TINY = 2.0**-1074


@cached_njit(nogil=True)
def _pow2(n: int) -> float:
    """``2^n`` as ``math.ldexp(1.0, n)`` gives it (0 below 2^-1074, inf above the
    range), built from its bits where it is a normal or subnormal float64 (no libm
    call: the check calls it per output with n near -1075)."""
    if -1022 <= n <= 1023:
        return np.int64((n + 1023) << 52).view(np.float64)
    if -1074 <= n < -1022:
        return np.int64(1 << (n + 1074)).view(np.float64)
    if n < -1074:
        return 0.0  # 2^-1075 is a tie and rounds to even (0); below it, 0
    return math.ldexp(1.0, n)


@cached_njit(nogil=True)
def _scaled(x: float, n: int) -> float:
    """``math.ldexp(x, n)``, the same bits: one multiplication by the normal
    ``2^n`` rounds like ldexp (once, to nearest), so it is used where ``2^n`` is normal."""
    if -1022 <= n <= 1023:
        return x * _pow2(n)
    return math.ldexp(x, n)


@cached_njit(nogil=True)
def dropped_weight(pairs, segments: int, seg0_bits: int, digits: int) -> float:
    """``D = sum over dropped pairs (p, r) of cap_p cap_r 2^(b(s-1-p) + b(s-1-r))``:
    the dropped pairs of one k add at most ``D 2^(E_A + E_B - 2(W-1))`` (cap: the
    largest |segment|, 2^t - 1 / 127 for sign-magnitude, 128 for balanced digits)."""
    b = digit_bits(digits)
    d = 0.0
    for p in range(segments):
        for r in range(segments):
            if pairs[p, r]:
                continue
            cp = 128.0 if digits == BALANCED else (2.0**seg0_bits - 1.0 if p == 0 else 127.0)
            cr = 128.0 if digits == BALANCED else (2.0**seg0_bits - 1.0 if r == 0 else 127.0)
            d += cp * cr * 2.0 ** (b * (2 * segments - 2 - p - r))
    return d


#: rows whose sums of |x| :func:`_abs_sums` runs side by side: each row's sum is a
#: chain of dependent additions in k order, and four independent chains overlap
_SUM_ROWS = 4


@cached_njit(nogil=True, inline="always")
def _abs_term(x: float, f: float, normal: bool, sx: int) -> float:
    """``|x| 2^-sx`` as ``S`` adds it (``f = 2^-sx``, one multiplication where that is
    normal, else :func:`_scaled`); an exact 0 for zero and non-finite ``x``."""
    use = math.isfinite(x) and x != 0.0
    ax = abs(x)
    v = ax * f if normal else _scaled(ax, -sx)
    return v if use else 0.0


@cached_njit(nogil=True)
def _abs_sums(raw, ref, i0: int, i1: int, k0: int, k1: int, sums) -> None:
    """``sums[i - i0] = sum_k |x_ik| 2^-ref_i`` over ``k0..k1`` (:func:`_abs_term`) in k
    order for rows ``i0..i1`` (at most :data:`_SUM_ROWS`): the same additions in the
    same order as one row at a time, but the rows side by side where there are
    :data:`_SUM_ROWS` of them and their ``2^-ref`` are normal (every row but those of
    extreme ranges), so that their chains of additions overlap."""
    together = i1 - i0 == _SUM_ROWS
    for i in range(i0, i1):
        together &= -1022 <= -ref[i] <= 1023
    if together:
        f0, f1, f2, f3 = _pow2(-ref[i0]), _pow2(-ref[i0 + 1]), _pow2(-ref[i0 + 2]), _pow2(-ref[i0 + 3])
        s0 = s1 = s2 = s3 = 0.0
        for k in range(k0, k1):
            ku = np.uint64(k)  # k >= 0: an unsigned index spares the negative-index check
            s0 += _abs_term(raw[i0, ku], f0, True, 0)
            s1 += _abs_term(raw[i0 + 1, ku], f1, True, 0)
            s2 += _abs_term(raw[i0 + 2, ku], f2, True, 0)
            s3 += _abs_term(raw[i0 + 3, ku], f3, True, 0)
        sums[0] = s0
        sums[1] = s1
        sums[2] = s2
        sums[3] = s3
        return
    for i in range(i0, i1):
        normal = -1022 <= -ref[i] <= 1023
        f = _pow2(-ref[i])
        s = 0.0
        for k in range(k0, k1):
            s += _abs_term(raw[i, np.uint64(k)], f, normal, ref[i])
        sums[i - i0] = s


@cached_njit(nogil=True)
def _bound_operand(raw, gexp, ref, tk: int, w: int, side_b: bool, c: float):
    """One side of the bound GEMM, scaled by ``2^-ref`` per row: per k-tile κ four
    columns, A: ``[delta, S, n delta, c n 2^E]``, B: ``[S, delta, delta, 2^E]``, with
    ``delta = 2^(E-W+2)`` where some element of the group is not on its grid
    ``2^(E-W+1)`` (it bounds split + shift error, rounded or truncated), else 0;
    ``S`` the group's sum of |x| (rounded up), ``n`` the k-tile's length.

    ``S`` is summed in k order, zero and non-finite elements adding an exact 0
    (:func:`_abs_sums`, for :data:`_SUM_ROWS` rows of a k-tile at a time); the grid
    test is a separate branch-free loop (a count of off-grid elements) that
    vectorises, over the same rows of the tile while they are in cache."""
    r, K = raw.shape
    nkt = gexp.shape[1]
    out = np.zeros((r, 4 * nkt))
    up = 1.0 + 2.0 * (tk + 2) * _U64
    low52 = np.int64(0xFFFFFFFFFFFFF)
    sums = np.empty(_SUM_ROWS)
    for i0 in range(0, r, _SUM_ROWS):
        i1 = min(i0 + _SUM_ROWS, r)
        for t in range(nkt):
            k0 = t * tk
            k1 = min(k0 + tk, K)
            _abs_sums(raw, ref, i0, i1, k0, k1, sums)
            for i in range(i0, i1):
                e = gexp[i, t]
                if e == ZERO_EXP:
                    continue
                grid = e - w + 1
                s = sums[i - i0]
                off = 0
                for k in range(k0, k1):
                    u = np.float64(raw[i, np.uint64(k)]).view(np.uint64)
                    be = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF))
                    m = np.int64(u) & low52
                    use = (be != 0x7FF) & ((m | be) != 0)
                    m = m | (np.int64(1) << 52) if be != 0 else m
                    lsb = be - 1075 if be != 0 else np.int64(-1074)
                    sh = grid - lsb
                    mask = (np.int64(1) << min(max(sh, 0), 62)) - 1
                    off += np.int64(use & (sh > 0) & ((sh >= 53) | ((m & mask) != 0)))
                delta = _pow2(e - ref[i] - w + 2) if off else 0.0
                sc = s * up + (k1 - k0) * _TINY  # scaled |x| that underflowed
                top = _pow2(e - ref[i])
                if side_b:
                    out[i, 4 * t] = sc
                    out[i, 4 * t + 1] = delta
                    out[i, 4 * t + 2] = delta
                    out[i, 4 * t + 3] = top
                else:
                    out[i, 4 * t] = delta
                    out[i, 4 * t + 1] = sc
                    out[i, 4 * t + 2] = (k1 - k0) * delta
                    out[i, 4 * t + 3] = c * (k1 - k0) * top
    return out


@cached_njit(nogil=True)
def _abs_dot(x, y, sx: int, sy: int) -> float:
    """``sum_k |x_k| |y_k| 2^-(sx+sy)`` in float64 (finite elements; may round)."""
    t = 0.0
    for k in range(x.shape[0]):
        a = x[k]
        b = y[k]
        if a != 0.0 and b != 0.0 and math.isfinite(a) and math.isfinite(b):
            t += _scaled(abs(a), -sx) * _scaled(abs(b), -sy)
    return t


@cached_njit(nogil=True)
def _scaled_abs_row(out, x, sx: int) -> None:
    """``out[k] = |x_k| 2^-sx`` as :func:`_abs_dot` scales it (``_scaled``), 0 for zero
    and non-finite elements: :func:`_abs_dot`'s products are ``out_x[k] * out_y[k]``."""
    normal = -1022 <= -sx <= 1023
    f = _pow2(-sx)
    for k in range(x.shape[0]):
        a = x[k]
        u = np.float64(a).view(np.uint64)
        use = ((u & np.uint64(0x7FF0000000000000)) != np.uint64(0x7FF0000000000000)) & (a != 0.0)
        v = abs(a) * f if normal else _scaled(abs(a), -sx)
        out[k] = v if use else 0.0


#: the Err GEMM is written out per output (no BLAS call, no m x n array) up to this
#: many columns (4 per k-tile), and runs as one BLAS GEMM beyond
_INLINE_ERR_COLUMNS = 8


@cached_njit(nogil=True)
def _certifies(e: float, c: float, sc: int, tol: float) -> bool:
    """The rule that keeps an output (scalar form): ``Err = e`` (scaled, raised by its
    rounding bound) is 0, or ``e <= tol (L - e)`` with ``L = |c| 2^-sc (1 - 2u) -
    2^(-1075 - sc) - 2 tiny`` finite (``|A||B| >= |X| - Err``, ``c = RN64(X)``)."""
    if e == 0.0:
        return True  # X = AB exactly
    cs = _scaled(abs(c), -sc) * (1.0 - 2.0 * _U64) - _pow2(-1075 - sc) - 2.0 * _TINY
    return math.isfinite(cs) and e <= tol * (cs - e)


@cached_njit(nogil=True)
def _mark(doubt, pend_rows, pend_cols, i: int, j: int) -> int:
    """Mark output ``(i, j)`` in doubt (pending pass 2); returns 1, the count it adds.
    Called only for outputs pass 1 does not certify (a few), so its array arguments'
    reference counting costs nothing measurable."""
    doubt[i, j] = True
    pend_rows[i] += 1
    pend_cols[j] = True
    return 1


@cached_njit(nogil=True)
def _err_at(xa, yb, err, inline: bool, i: int, j: int, inl_up: float, inl_abs: float, err_up: float,
            err_abs: float) -> float:
    """Err at ``(i, j)`` raised by its rounding bound: summed over the bound columns in
    order (``inline``, as :func:`_certify_rows` sums it) or read from the Err GEMM."""
    if inline:
        v = 0.0
        for q in range(xa.shape[1]):
            v += xa[i, q] * yb[j, q]
        ev = v * inl_up + inl_abs
    else:
        ev = err[i, j]
    return ev * err_up + err_abs


@cached_njit(nogil=True)
def _certify_rows(xa, yb, aref, bref, c, err_up: float, err_abs: float, inl_up: float, inl_abs: float, tol: float,
                  doubt, pend_rows, pend_cols) -> int:
    """:func:`fp64_doubtful`'s pass 1 where Err is summed per output: the same
    arithmetic in the same order, one output row at a time in branch-free loops that
    vectorise (Err's columns summed over the row, the powers of two built from their
    bits where ``2^-(ref_A + ref_B)`` is normal); the outputs they leave uncertified,
    and rows with an exponent outside that range, take the scalar rule
    (:func:`_certifies`). Marks the doubtful outputs; returns how many."""
    m, nb = xa.shape
    n = yb.shape[0]
    ybt = np.ascontiguousarray(yb.T)
    v = np.empty(n)
    ok = np.empty(n, dtype=np.bool_)
    pending = 0
    for i in range(m):
        v[:] = 0.0
        for q in range(nb):
            xq = xa[i, q]
            for j in range(n):
                v[j] += xq * ybt[q, j]
        ai = aref[i]
        for j in range(n):
            e = (v[j] * inl_up + inl_abs) * err_up + err_abs
            sc = ai + bref[j]
            # _scaled(|c|, -sc) and _pow2(-1075 - sc) for -1022 <= -sc <= 1023, as selects
            normal = (-sc >= -1022) & (-sc <= 1023)
            f = np.int64((min(max(-sc, -1022), 1023) + 1023) << 52).view(np.float64)
            t = -1075 - sc
            tn = np.int64((min(max(t, -1022), 1023) + 1023) << 52).view(np.float64)
            ts = np.int64(np.int64(1) << (min(max(t + 1074, 0), 51))).view(np.float64)
            tiny = tn if t >= -1022 else (ts if t >= -1074 else 0.0)
            cs = abs(c[i, j]) * f * (1.0 - 2.0 * _U64) - tiny - 2.0 * _TINY
            ok[j] = normal & ((e == 0.0) | ((cs - cs == 0.0) & (e <= tol * (cs - e))))
        for j in range(n):
            if not ok[j] and not _certifies((v[j] * inl_up + inl_abs) * err_up + err_abs, c[i, j], ai + bref[j], tol):
                pending += _mark(doubt, pend_rows, pend_cols, i, j)
    return pending


@cached_njit(nogil=True)
def fp64_doubtful(araw, agexp, aref, braw, bgexp, bref, tk: int, w: int, dropped: float, c):
    """Outputs (m x n booleans) of a float64-domain product ``c = RN64(X)`` whose
    error bound does not prove ``|X - AB| (1+u) <= (gamma_K - u) |A||B|`` (so that
    ``RN64(X)`` meets native dgemm's ``gamma_K |A||B|``). Everything is scaled by
    ``2^-(ref_A(i) + ref_B(j))``; every rounding of the check is covered by a
    safety factor. ``|A||B| >= |AB| >= |X| - Err`` certifies almost every output
    from ``c`` itself; the rest (cancellation) get ``(|A||B|)_ij`` from one dot
    product of absolute values each.

    Two shortcuts, neither of which keeps an output the plain check would recompute:
    with at most :data:`_INLINE_ERR_COLUMNS` bound columns (one or two k-tiles) Err
    is summed per output instead of by a BLAS GEMM and raised by its own rounding
    bound, so it is never below the GEMM's (a larger Err only recomputes more, and
    only outputs within ~2^-48 of the threshold); and where many outputs need the
    dot product, it is summed with eight running sums from scaled rows built once,
    which brackets the sequential sum, and the sequential sum decides only where the
    bracket straddles the threshold (the same decision). The dot products (BLAS, any
    order) are within ``gamma_K`` of the exact sum of the same rounded products, as the
    sequential sum is: the bracket is twice that."""
    m, K = araw.shape
    n = braw.shape[0]
    nkt = agexp.shape[1]
    # |ab - a'b'| <= delta_A |b| + |a| delta_B + delta_A delta_B per k, and the
    # dropped pairs add at most D 2^(EA+EB-2W+2) (0 when every pair is kept)
    cd = math.ldexp(dropped, 2 - 2 * w)
    xa = _bound_operand(araw, agexp, aref, tk, w, False, cd)
    yb = _bound_operand(braw, bgexp, bref, tk, w, True, cd)
    nb = 4 * nkt
    inline = nb <= _INLINE_ERR_COLUMNS
    err = np.empty((0, 0)) if inline else np.dot(xa, yb.T)
    err_up = (1.0 + 4.0 * (nb + 2) * _U64) * (1.0 + _U64)
    err_abs = 4.0 * (nb + 2) * _TINY
    # the per-output sum is within (nb + 1) u of the exact Err, as the GEMM's is: this
    # factor and term put it at or above any order's result
    inl_up = 1.0 + 4.0 * (nb + 2) * _U64
    inl_abs = 4.0 * (nb + 2) * _TINY
    tol = (K * _U64 / (1.0 - K * _U64) - _U64) * (1.0 - 2.0**-40)
    dot_down = 1.0 - 2.0 * (K + 2) * _U64 / (1.0 - (K + 2) * _U64)
    doubt = fresh_array(m, n, np.bool_)  # on huge pages where it is large
    doubt[:] = False
    pending = 0
    # pass 1: certify from |c|; the rest are marked in doubt (pending)
    pend_rows = np.zeros(m, dtype=np.int64)
    pend_cols = np.zeros(n, dtype=np.bool_)
    if inline:
        pending = _certify_rows(xa, yb, aref, bref, c, err_up, err_abs, inl_up, inl_abs, tol, doubt, pend_rows,
                                pend_cols)
    else:  # Err from its GEMM, one output at a time
        for i in range(m):
            for j in range(n):
                if not _certifies(err[i, j] * err_up + err_abs, c[i, j], aref[i] + bref[j], tol):
                    pending += _mark(doubt, pend_rows, pend_cols, i, j)
    if pending == 0:
        return doubt
    # pass 2: the pending outputs, |A||B| from a dot product of absolute values
    fast = pending > m + n  # scaled rows cost about m + n dot products to build
    sb = fresh64(n if fast else 0, K)  # rows of pending columns only are filled, and only they are read
    if fast:
        for j in range(n):
            if pend_cols[j]:
                _scaled_abs_row(sb[j], braw[j], bref[j])
    sa = np.zeros(K)
    bracket = 4.0 * (K + 2) * _U64
    for i in range(m):
        if pend_rows[i] == 0:
            continue
        if fast:
            _scaled_abs_row(sa, araw[i], aref[i])
        for j in range(n):
            if not doubt[i, j]:
                continue
            e = _err_at(xa, yb, err, inline, i, j, inl_up, inl_abs, err_up, err_abs)
            if fast:
                # the sequential sum lies in [lo, hi]; the decision is monotone in it
                d = np.dot(sa, sb[j])  # any order: the bracket covers it
                hi = d * (1.0 + bracket) + 2.0 * (K + 2) * _TINY
                lo = d * (1.0 - bracket) - 2.0 * (K + 2) * _TINY
                if e > tol * ((hi - (K + 2) * _TINY) * dot_down):
                    continue  # doubtful whatever the sequential sum
                if not e > tol * ((lo - (K + 2) * _TINY) * dot_down):
                    doubt[i, j] = False
                    continue
            low = _abs_dot(araw[i], braw[j], aref[i], bref[j])
            low = (low - (K + 2) * _TINY) * dot_down
            doubt[i, j] = e > tol * low
    return doubt


@cached_njit(nogil=True)
def lost_rows(raw, q, fb, tk: int):
    """Per row: does a finite nonzero element outside a fallback tile align to 0?"""
    r, K = raw.shape
    out = np.zeros(r, dtype=np.bool_)
    for i in range(r):
        for k in range(K):
            x = raw[i, k]
            if q[i, k] == 0 and x != 0.0 and math.isfinite(x) and not fb[i, k // tk]:
                out[i] = True
                break
    return out


@cached_njit(nogil=True)
def recompute(araw, braw, doubt, out, to32: bool) -> int:
    """``out[i, j] = RN(sum_k a_ik b_kj)`` exactly where ``doubt``; returns how many."""
    acc = np.zeros(_ACC_LIMBS, dtype=np.int64)
    count = 0
    for i in range(doubt.shape[0]):
        for j in range(doubt.shape[1]):
            if doubt[i, j]:
                out[i, j] = exact_dot_round(araw[i], braw[j], acc, to32)
                count += 1
    return count
