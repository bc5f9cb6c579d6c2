"""Splitting floats into a shared exponent and signed INT8 mantissa segments.

This is the data packer of the MixPert scheme (paper §3.2.1, §3.3.2), generic in
the input dtype (float32 / float64) and in the number of segments. The written
semantics is docs/numerics.md, section "mixpert"; in short, for a segment layout
with ``seg0_bits`` bits in segment 0 and 7 bits in each of the ``segments - 1``
others (width ``W = seg0_bits + 7*(segments-1)``):

1. *element split*: a finite nonzero ``x`` becomes ``x ≈ M * 2^(e - W + 1)`` with
   ``M`` in ``[2^(W-1), 2^W)`` (the implied one explicit), ``M`` rounded to nearest,
   ties to even, at bit ``W + 1``; a carry to ``2^W`` gives ``M = 2^(W-1)``, ``e+1``,
   except at the format's largest exponent ``emax`` (127 / 1023), where ``M`` is
   truncated instead (``2^W - 1``), so a finite input never reaches ``2^(emax+1)``.
   Subnormal inputs are normalised the same way (handled exactly, never flushed).
2. *alignment*: each alignment group (a tile, or one row of a tile) shares
   ``E = max e`` over its nonzero elements; each element's ``M`` is shifted right
   by ``d = E - e`` bits, truncated (``trunc``) or rounded to nearest, ties to even
   (``round``). The sign is applied afterwards: ``q = ±shift(M, d)``, ``|q| < 2^W``.
   Where the balanced digits' bump (below) gives ``E = emax + 1``, a shift that
   would round up to ``2^(emax+1)`` truncates instead, as in step 1.
3. *segments*, two digit systems (``digits`` config field):

   * ``magnitude`` (the paper's): ``|q| = sum_i s_i * 2^(7*(segments-1-i))`` with
     ``s_0 < 2^seg0_bits`` and ``s_i < 2^7``; each segment carries the sign of ``x``
     (sign-magnitude), so every segment is a signed INT8 in ``[-127, 127]``;
   * ``balanced``: ``q = sum_i d_i * 256^(segments-1-i)`` with every ``d_i`` in
     ``[-128, 127]`` (balanced radix-256 digits: 8 bits per INT8), which holds
     ``q`` in ``[-128*R, 127*R]``, ``R = (256^segments - 1)/255``. A group whose
     largest aligned value would exceed ``127*R`` (a positive element at the group
     exponent with ``seg0_bits = 7``: the top digit would round to +128) takes
     ``E + 1`` instead (one more bit of alignment shift for the whole group).

   The mantissa width is ``W = seg0_bits + b*(segments-1)``, ``b`` = 7 or 8.

The hot kernels are Numba functions (``@cached_njit``, disk-cached) over plain arrays, so
compiled callers (the @mixjit frontend) can call them without the GIL.
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from mixjit.runtime.jit.cache import cached_njit

__all__ = [
    "ZERO_EXP",
    "ROUND_TRUNC",
    "ROUND_NEAREST",
    "MAGNITUDE",
    "BALANCED",
    "digit_bits",
    "width",
    "max_aligned",
    "split_element",
    "NO_EXP",
    "split_into",
    "shift_magnitude",
    "pack_groups",
    "pack_groups_into",
    "segment_digits",
    "digit_range",
]

#: group exponent of an all-zero group (no element contributes)
ZERO_EXP = -(1 << 30)
#: alignment shift modes (``rounding`` config field "trunc" / "round")
ROUND_TRUNC = 0
ROUND_NEAREST = 1


#: digit systems (``digits`` config field "magnitude" / "balanced")
MAGNITUDE = 0
BALANCED = 1


@register_jitable
def digit_bits(digits: int) -> int:
    """Bits per segment below segment 0: 7 (sign-magnitude) or 8 (balanced)."""
    return 8 if digits == BALANCED else 7


@register_jitable
def width(segments: int, seg0_bits: int, digits: int = MAGNITUDE) -> int:
    """Mantissa bits kept by a layout: ``seg0_bits + b*(segments-1)``."""
    return seg0_bits + digit_bits(digits) * (segments - 1)


@cached_njit(nogil=True)
def _balanced_offset(n: int) -> int:
    """``128 * (256^n - 1) / 255`` (n <= 7): the offset that maps n balanced digits
    to n bytes (digit + 128 each)."""
    return 128 * (((np.int64(1) << (8 * n)) - 1) // 255)


@register_jitable
def max_aligned(segments: int, digits: int) -> int:
    """Largest aligned value the segments can hold (``127*R`` for balanced digits;
    no limit below 2^62 for sign-magnitude, whose width already bounds |q|)."""
    if digits == BALANCED:
        return 127 * (((1 << (8 * segments)) - 1) // 255)
    return (1 << 62) - 1


@cached_njit(nogil=True)
def split_element(u, w: int, emax: int) -> tuple[int, int]:
    """Element split of a finite nonzero value given as the bits ``u`` (uint64) of its
    float64 value: signed ``M`` (|M| in [2^(w-1), 2^w)) and exponent ``e`` with
    ``x ≈ M * 2^(e - w + 1)``; RNE at bit w+1, carry renormalised, except that a
    carry past ``emax`` (the input format's largest finite exponent: 127 for float32,
    1023 for float64) truncates instead, so the split stays finite. Integer
    operations only (float32 inputs are widened to float64 exactly first).
    """
    be = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF))
    frac = np.int64(u & np.uint64(0xFFFFFFFFFFFFF))
    # written with selects, no branch that depends on u, so that the packer's loop
    # vectorises. A float64 subnormal is normalised: nb, the bit length of frac, is
    # read off the exponent of float64(frac), exact (frac < 2^52), built as
    # (2^52 + frac) - 2^52 from bits: an integer or and a float subtraction that
    # vectorise (AVX2 has no int64 -> float64 conversion)
    fl = np.int64(frac | np.int64(0x4330000000000000)).view(np.float64) - 4503599627370496.0
    nb = np.int64((np.float64(fl).view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)) - 1022
    sub = be == 0
    mant = (frac << min(max(53 - nb, 0), 63)) if sub else (frac | (np.int64(1) << 52))
    e = (-1074 + nb - 1) if sub else (be - 1023)
    if w >= 53:
        m = mant << (w - 53)
    else:
        sh = 53 - w
        m = mant >> sh
        rem = mant & ((np.int64(1) << sh) - 1)
        half = np.int64(1) << (sh - 1)
        m += np.int64((rem > half) | ((rem == half) & ((m & 1) == 1)))
        carry = m == (np.int64(1) << w)
        top = e >= emax  # 2^(emax+1) would overflow the format: truncate
        m = (m - 1 if top else np.int64(1) << (w - 1)) if carry else m
        e = e + np.int64(carry & (not top))
    m = -m if u >> np.uint64(63) else m
    return m, e


@cached_njit(nogil=True)
def shift_magnitude(m: int, d: int, mode: int) -> int:
    """``m >> d`` on the magnitude (sign kept), truncated or rounded to nearest-even."""
    neg = m < 0
    a = -m if neg else m
    if d <= 0:
        q = a
    elif d >= 63:
        q = np.int64(0)  # |m| < 2^62 <= half of 2^d: rounds to 0 as well
    else:
        q = a >> d
        if mode == ROUND_NEAREST:
            rem = a - (q << d)
            half = np.int64(1) << (d - 1)
            if rem > half or (rem == half and (q & 1) == 1):
                q += 1
    return -q if neg else q


#: per-element exponent of a zero or non-finite element in the packers' scratch
#: (fits the int16 scratch of :func:`pack_groups`)
NO_EXP = -32768
_EXPMASK = np.uint64(0x7FF0000000000000)


@register_jitable
def split_into(u, w: int, emax: int, q, ex, i, k) -> tuple[int, bool]:
    """The per-element step of the packers (:func:`pack_groups`, and the small path's
    float64 split, runtime/mixpert/paths/small.py): split the value with float64
    bits ``u`` (:func:`split_element`) into ``q[i, k]`` (``M``; 0 for a zero or a
    non-finite value) and ``ex[i, k]`` (``e``; :data:`NO_EXP` for those). Returns
    that exponent and whether the value is finite. Selects only, so that the
    caller's loop vectorises."""
    fin = (u & _EXPMASK) != _EXPMASK
    use = fin & ((u << np.uint64(1)) != 0)
    m, e = split_element(u, w, emax)
    q[i, k] = m if use else 0
    e = e if use else np.int64(NO_EXP)
    ex[i, k] = e
    return e, fin


@cached_njit(nogil=True)
def _shift_branchless(m: int, d: int, mode: int) -> int:
    """:func:`shift_magnitude` for ``|m| < 2^62``, ``d >= 0``, written with selects
    so that the packer's inner loop vectorises."""
    neg = m < 0
    a = -m if neg else m
    dd = min(d, 62)
    q = a >> dd
    if mode == ROUND_NEAREST:
        rem = a - (q << dd)
        half = (np.int64(1) << dd) >> 1
        up = (dd > 0) & ((rem > half) | ((rem == half) & ((q & 1) == 1)))
        q += np.int64(up)
    q = np.int64(0) if d >= 63 else q
    return -q if neg else q


@cached_njit(nogil=True)
def pack_groups(x, group_rows: int, tk: int, w: int, mode: int, far: int, qmax: int, emax: int):
    """Split and align the rows of ``x`` (r×K, float32/float64) in groups of
    ``group_rows`` consecutive rows × ``tk`` consecutive columns; ``emax`` is the
    largest finite exponent of the domain's format (:func:`split_element`: 127 when
    the values are float32 values, also if widened to float64). A group holding an
    element at its exponent with ``M > qmax`` takes exponent ``E + 1``
    (:func:`max_aligned`).

    Non-finite elements are treated as 0 (the non-finite rule handles their
    outputs). Returns ``q`` (r×K int64, aligned signed mantissas), ``gexp`` (r×nkt
    int64, the exponent ``E`` of each row's group in each k-tile, ``ZERO_EXP`` if the
    group is all zero), per row and k-tile the number of nonzero elements
    ``nonzero`` and of those shifted by more than ``far`` bits ``shifted`` (the
    fallback trigger), and per row whether it holds an inf/NaN (``bad``).
    B is packed as ``pack_groups(B.T, ...)``. :func:`pack_groups_into` does the work.
    """
    q = np.empty(x.shape, dtype=np.int64)
    return pack_groups_into(q, x, group_rows, tk, w, mode, far, qmax, emax)


@cached_njit(nogil=True)
def pack_groups_into(q, x, group_rows: int, tk: int, w: int, mode: int, far: int, qmax: int, emax: int):
    """:func:`pack_groups` with ``q`` given (r×K int64, every element written: a caller
    may hand in an array on huge pages). Returns ``(q, gexp, nonzero, shifted, bad)``.

    One group of rows at a time, two passes over it while it is in cache: split every
    element (``q`` holds ``M``, a 16-bit scratch of the group's size its exponent),
    then align each to its group exponent. Each element's arithmetic does not depend
    on the order of the groups: the same values as one pass over all rows then the other.
    """
    r, K = x.shape
    nkt = (K + tk - 1) // tk
    gr = max(min(group_rows, r), 1)
    ex = np.empty((gr, K), dtype=np.int16)
    gexp = np.empty((r, nkt), dtype=np.int64)
    nonzero = np.zeros((r, nkt), dtype=np.int64)
    shifted = np.zeros((r, nkt), dtype=np.int64)
    bad = np.zeros(r, dtype=np.bool_)
    rowmax = np.empty((gr, nkt), dtype=np.int64)
    over = np.zeros((gr, nkt), dtype=np.bool_)  # an element at rowmax has M > qmax
    check_over = qmax < (np.int64(1) << 62) - 1  # sign-magnitude digits never overflow
    for g0 in range(0, r, gr):
        g1 = min(g0 + gr, r)
        qg = q[g0:g1]
        # pass 1: split every element of the group; each row's max exponent per k-tile
        for li in range(g1 - g0):
            nonfinite = 0
            for kt in range(nkt):
                k0 = kt * tk
                k1 = min(k0 + tk, K)
                mx = np.int64(NO_EXP)
                for k in range(k0, k1):
                    ku = np.uint64(k)  # k >= 0: an unsigned index spares the negative-index check
                    e, fin = split_into(np.float64(x[g0 + li, ku]).view(np.uint64), w, emax, qg, ex, li, ku)
                    mx = max(mx, e)
                    nonfinite += np.int64(not fin)
                ov = 0  # an integer count, not a bool |=, so that the loop vectorises
                if check_over:
                    for k in range(k0, k1):
                        ku = np.uint64(k)
                        ov += np.int64((ex[li, ku] == mx) & (qg[li, ku] > qmax))
                rowmax[li, kt] = mx if mx != NO_EXP else ZERO_EXP
                over[li, kt] = ov > 0 and mx != NO_EXP
            bad[g0 + li] = nonfinite > 0
        for kt in range(nkt):
            top = ZERO_EXP
            for li in range(g1 - g0):
                top = max(top, rowmax[li, kt])
            bump = False
            for li in range(g1 - g0):
                bump |= rowmax[li, kt] == top and over[li, kt]
            for i in range(g0, g1):
                gexp[i, kt] = top + 1 if bump else top
        # pass 2: align to the group exponent; at a bumped E = emax + 1 a shift that
        # rounds up to 2^(w-1) (the value 2^(emax+1)) truncates instead: 2^(w-1) - 1
        for li in range(g1 - g0):
            i = g0 + li
            for kt in range(nkt):
                g = gexp[i, kt]
                lim = (np.int64(1) << (w - 1)) - 1 if g > emax else (np.int64(1) << 62)
                nz = 0
                sh = 0
                for k in range(kt * tk, min(kt * tk + tk, K)):
                    ku = np.uint64(k)
                    e = np.int64(ex[li, ku])
                    use = e != NO_EXP
                    d = g - e if use else np.int64(0)
                    qg[li, ku] = min(max(_shift_branchless(qg[li, ku], d, mode), -lim), lim)
                    nz += np.int64(use)
                    sh += np.int64(use & (d > far))
                nonzero[i, kt] = nz
                shifted[i, kt] = sh
    return q, gexp, nonzero, shifted, bad


def segment_digits(q: np.ndarray, segments: int, digits: int = MAGNITUDE) -> np.ndarray:
    """The INT8 segments of aligned mantissas ``q``: shape ``(segments,) + q.shape``,
    segment 0 most significant (sign-magnitude or balanced digits)."""
    if digits == BALANCED:
        u = q + _balanced_offset(segments)
        out = np.empty((segments,) + q.shape, dtype=np.int8)
        for i in range(segments):
            out[i] = (((u >> (8 * (segments - 1 - i))) & 255) - 128).astype(np.int8)
        return out
    a = np.abs(q)
    sign = np.sign(q)
    out = np.empty((segments,) + q.shape, dtype=np.int8)
    for i in range(segments):
        shift = 7 * (segments - 1 - i)
        d = (a >> shift) if i == 0 else ((a >> shift) & 127)
        out[i] = (sign * d).astype(np.int8)
    return out


@cached_njit(nogil=True)
def digit_range(q: int, i0: int, i1: int, segments: int, digits: int) -> int:
    """Segments ``i0..i1`` of ``q`` as one signed integer ``sum_i s_i 2^(b*(i1-i))``."""
    if digits == BALANCED:
        n = i1 - i0 + 1
        v = (q + _balanced_offset(segments)) >> (8 * (segments - 1 - i1))
        if i0 > 0:
            v &= (np.int64(1) << (8 * n)) - 1
        return v - _balanced_offset(n)
    a = -q if q < 0 else q
    lo = 7 * (segments - 1 - i1)
    v = a >> lo
    if i0 > 0:
        v &= (np.int64(1) << (7 * (i1 - i0 + 1))) - 1
    return -v if q < 0 else v
