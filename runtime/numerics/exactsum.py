"""Exact sums, rounded once (the "exact, then round once" convention).

Every emulation scheme defines each output element as the *exact* sum of float64
pieces (products of low-precision parts, exact dgemm results, per-k-tile values,
fallback tile products, an addend), rounded once to float32 or float64, ties to
even, a zero result written as +0. This module is the one implementation of that
rounding, shared by the multi-term schemes (runtime/schemes/emulation.py, split)
and the MixPert executor (runtime/mixpert/).

Compiled kernels (``@cached_njit(nogil=True)``: Numba, disk-cached, callable from compiled
code): per output element a list of non-overlapping float64 partials (Shewchuk's
algorithm, as in CPython's ``math.fsum``) holds the exact sum;

* :func:`add_piece` / :func:`add_pieces` add pieces exactly;
* :func:`finish` gives ``hi = RN64(S)`` and ``lo``, a float64 with the sign of the
  exact residual ``S - hi`` (0 iff the residual is 0);
* :func:`round32` / :func:`round64_scaled` turn ``(hi, lo)`` into the correctly
  rounded float32 / float64 value (no double rounding, gradual underflow);
* :func:`finish_all` rounds a whole matrix of partial lists;
* :func:`exact_dot_round`: ``RN(sum_k x_k y_k)`` of float64 vectors over the whole
  exponent range (products split into 18-bit pieces, summed in 32-bit integer
  limbs, :func:`acc_add` / :func:`acc_round`): MixPert's exact-product fallback.

Fast GEMM path (:func:`round_exact_sum`): float64 GEMMs in any BLAS order give
``S'`` with ``|S' - S| <= e`` (the dot-product error bound ``gamma_n * sum|terms|``,
``sum|terms|`` bounded by Cauchy-Schwarz); where ``[S'-e, S'+e]`` lies strictly
inside the float32 rounding interval of ``RN32(S')`` that is the answer (Ziv's
rounding test, :func:`inside_rounding_interval`); the rare other elements are
recomputed from their exact products with the partials above. Which elements take
the slow path never changes the result, only the time.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from mixjit.runtime.jit.cache import cached_njit

__all__ = [
    "MAX_PARTIALS",
    "add_piece",
    "add_pieces",
    "finish",
    "round32",
    "round64_scaled",
    "finish_all",
    "round_exact_sum",
    "round_to_f32_exact",
    "inside_rounding_interval",
    "acc_add",
    "acc_round",
    "exact_dot_round",
    "exact_dot_scratch",
]

_U = 2.0**-53
_F32MAX = np.float32(np.finfo(np.float32).max)
#: K' chunk of the fast path (tightens the error bound from K' to CHUNK + K'/CHUNK)
_CHUNK = 256

#: non-overlapping float64 partials can span the whole float64 range in < 48 words
MAX_PARTIALS = 48

_TWO128 = 2.0**128
_MIN32 = 2.0**-149
_MIN_NORMAL32 = 2.0**-126
_MIN_NORMAL64 = 2.0**-1022


@cached_njit(nogil=True)
def add_piece(p, n: int, x: float) -> int:
    """Add ``x`` exactly to the ``n`` partials ``p[0:n]``; return the new count."""
    i = 0
    for j in range(n):
        y = p[j]
        if abs(x) < abs(y):
            x, y = y, x
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            p[i] = lo
            i += 1
        x = hi
    if x != 0.0 or i == 0:
        p[i] = x
        i += 1
    return i


@cached_njit(nogil=True)
def add_pieces(parts, counts, d, fa, fb):
    """``parts[i,j,:]`` += ``d[i,j] * fa[i] * fb[j]`` exactly, for every element."""
    r, c = d.shape
    for i in range(r):
        for j in range(c):
            v = d[i, j] * fa[i] * fb[j]
            if v != 0.0:
                counts[i, j] = add_piece(parts[i, j], counts[i, j], v)


@cached_njit(nogil=True)
def _fsum_hi(p, n: int) -> float:
    # CPython math.fsum's final rounding of non-overlapping partials
    if n == 0:
        return 0.0
    n -= 1
    hi = p[n]
    lo = 0.0
    while n > 0:
        x = hi
        n -= 1
        y = p[n]
        hi = x + y
        yr = hi - x
        lo = y - yr
        if lo != 0.0:
            break
    if n > 0 and ((lo < 0.0 and p[n - 1] < 0.0) or (lo > 0.0 and p[n - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        yr = x - hi
        if y == yr:
            hi = x
    return hi


@cached_njit(nogil=True)
def finish(p, n: int) -> tuple[float, float]:
    """``(hi, lo)``: ``hi = RN64(sum p[0:n])``, ``lo`` the residual's leading partial."""
    hi = _fsum_hi(p, n)
    if hi == 0.0 and n == 0:
        return 0.0, 0.0
    tmp = np.empty(n + 1)
    tmp[:n] = p[:n]
    m = add_piece(tmp, n, -hi)
    lo = 0.0
    for k in range(m):
        if abs(tmp[k]) > abs(lo):
            lo = tmp[k]
    return hi, lo


@cached_njit(nogil=True)
def round32(hi: float, lo: float) -> np.float32:
    """RN32 of ``S = hi + residual`` given ``hi = RN64(S)`` and ``lo`` with the sign of
    ``S - hi``: fixes the double-rounding case where ``hi`` is a float32 midpoint."""
    c = np.float32(hi)
    a = abs(hi)
    if lo != 0.0 and np.float64(c) != hi and _MIN_NORMAL32 <= a < _TWO128:
        # normal float32 range: double rounding needs hi on a float32 midpoint (the 29
        # float64 fraction bits below float32's last are exactly 1000...0)
        if (np.float64(hi).view(np.uint64) & np.uint64(0x1FFFFFFF)) != np.uint64(0x10000000):
            return c + np.float32(0.0)
    if lo != 0.0 and np.float64(c) != hi:
        a = abs(hi)
        cm = abs(np.float64(c))
        if math.isinf(cm):
            cm = _TWO128
        f, ex = math.frexp(cm)
        if cm == 0.0:  # between 0 and the smallest subnormal
            other = _MIN32
        elif a > cm:
            other = cm + max(math.ldexp(1.0, ex - 24), _MIN32)
        else:
            step = math.ldexp(1.0, ex - 25) if f == 0.5 else math.ldexp(1.0, ex - 24)
            other = cm - max(step, _MIN32)
        if a == 0.5 * (cm + other):
            above = (lo > 0.0) == (hi > 0.0)
            mag = max(cm, other) if above else min(cm, other)
            c = np.float32(math.copysign(mag, hi)) if mag < _TWO128 else np.float32(math.copysign(math.inf, hi))
    return c + np.float32(0.0)


@cached_njit(nogil=True)
def round64_scaled(hi: float, lo: float, e: int) -> float:
    """RN64 of ``S * 2^e`` given ``hi = RN64(S)`` and the sign of ``S - hi`` in ``lo``;
    exact in the subnormal range (where scaling ``hi`` alone could round twice)."""
    r = math.ldexp(hi, e)
    if r == 0.0 and hi == 0.0:
        return 0.0
    if abs(r) >= _MIN_NORMAL64:
        return r + 0.0
    t = math.ldexp(abs(hi), e + 1074)  # the value in units of the smallest subnormal
    if t < 0.25:
        return 0.0
    n = math.floor(t)
    f = t - n
    lo_up = (lo > 0.0) == (hi > 0.0) and lo != 0.0
    if f > 0.5 or (f == 0.5 and (lo_up or (lo == 0.0 and n % 2.0 == 1.0))):
        n += 1.0
    return math.copysign(math.ldexp(n, -1074), hi) + 0.0


@cached_njit(nogil=True)
def finish_all(parts, counts, ea, eb, out, to32: bool):
    """Round every element's exact sum times ``2^(ea[i]+eb[j])`` into ``out``."""
    r, c = counts.shape
    for i in range(r):
        for j in range(c):
            hi, lo = finish(parts[i, j], counts[i, j])
            if to32:
                # float32-domain sums are far inside float64's range: scaling is exact
                out[i, j] = round32(math.ldexp(hi, ea[i] + eb[j]), lo)
            else:
                out[i, j] = round64_scaled(hi, lo, ea[i] + eb[j])


# ------------------------------------------------- float64 GEMMs, Ziv test


def round_exact_sum(
    a_parts: Sequence[np.ndarray],
    b_parts: Sequence[np.ndarray],
    pairs: Sequence[tuple[int, int]],
    addend: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Return ``RN32(sum_{(p,q) in pairs} a_parts[p] @ b_parts[q] + addend)`` computed
    exactly, and the number of elements that needed the slow path.

    ``a_parts`` are float64 m×k arrays, ``b_parts`` float64 k×n arrays, all finite.
    Caller's contract: for each ``p``, the sum of the ``b_parts[q]`` paired with it is
    exact in float64, and so is its product with any element of ``a_parts[p]`` (true
    when the parts come from one float32 value per element: a_p has at most 24
    significant bits and the sum at most 26). ``addend`` is an optional float64 m×n
    array added exactly. Zero results are +0.
    """
    groups: dict[int, list[int]] = {}
    for p, q in pairs:
        groups.setdefault(p, []).append(q)
    # one operand pair with K' = (number of groups)·k: X = [a_p ...], Y = [sum_q b_q; ...]
    x = np.hstack([a_parts[p] for p in groups])
    y = np.vstack([np.add.reduce([b_parts[q] for q in qs]) for qs in groups.values()])
    m, kk = x.shape
    n = y.shape[1]
    s = np.zeros((m, n)) if addend is None else np.array(addend, dtype=np.float64)
    # K' in chunks: each chunk's dot products err by <= gamma_chunk * sum|terms|, the
    # chunk results add with <= gamma_nchunks more (Higham, Accuracy and Stability, §3.1)
    n_chunks = 0
    for k0 in range(0, kk, _CHUNK):
        s += x[:, k0 : k0 + _CHUNK] @ y[k0 : k0 + _CHUNK, :]
        n_chunks += 1
    # sum |terms| <= ||x_i||_2 ||y_j||_2 (Cauchy-Schwarz)
    t = np.outer(np.sqrt(np.einsum("ik,ik->i", x, x)), np.sqrt(np.einsum("kj,kj->j", y, y)))
    adds = n_chunks + 2
    err = (2.0 * (min(kk, _CHUNK) + adds) * _U) * t + (2.0 * _U) * np.abs(s)
    if addend is not None:
        err += (2.0 * adds * _U) * np.abs(addend)
    with np.errstate(over="ignore"):
        c = s.astype(np.float32)
        ok = inside_rounding_interval(s, err, c)
    c += np.float32(0.0)  # -0 -> +0
    bad_i, bad_j = np.nonzero(~ok)
    if bad_i.size:
        extra = np.zeros(bad_i.size) if addend is None else addend[bad_i, bad_j]
        c[bad_i, bad_j] = _exact_dots32(x, y, bad_i, bad_j, extra)
    return c, int(bad_i.size)


def inside_rounding_interval(s: np.ndarray, err: np.ndarray, c: np.ndarray) -> np.ndarray:
    """True where every value within ``err`` of ``s`` rounds to the float32 ``c = RN32(s)``.

    The rounding interval of ``c`` reaches half an ulp above and below it, except
    below a power of two, where the lower ulp is half as large: there a quarter ulp is
    used on both sides (conservative). ``d = s - c`` is exact (Sterbenz). Infinite
    ``c`` and ``|c| = FLT_MAX`` (where the upper neighbour is the overflow threshold)
    are never accepted; the slow path rounds them.
    """
    ac = np.abs(c)
    half = np.spacing(ac).astype(np.float64)
    pow2 = (ac.view(np.uint32) & np.uint32(0x7FFFFF)) == 0
    half *= np.where(pow2, 0.25, 0.5)
    with np.errstate(invalid="ignore"):
        return (np.abs(s - c) + err < half) & (ac < _F32MAX)


@cached_njit(nogil=True)
def _exact_dots32(x, y, rows, cols, addend):
    """``RN32`` of the exact ``x[r] · y[:, c] + addend`` for each listed element
    (the products are exact by the caller's contract)."""
    out = np.empty(rows.shape[0], dtype=np.float32)
    p = np.empty(MAX_PARTIALS)
    for t in range(rows.shape[0]):
        r = rows[t]
        c = cols[t]
        n = add_piece(p, 0, addend[t]) if addend[t] != 0.0 else 0
        for k in range(x.shape[1]):
            v = x[r, k] * y[k, c]
            if v != 0.0:
                n = add_piece(p, n, v)
        hi, lo = finish(p, n)
        out[t] = round32(hi, lo)
    return out


def round_to_f32_exact(terms: np.ndarray) -> np.float32:
    """``RN32`` of the exact sum of float64 ``terms`` (ties to even; zero is +0)."""
    t = np.ascontiguousarray(terms, dtype=np.float64)
    return _exact_dots32(t[None, :], np.ones((t.size, 1)), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1))[0]


# ------------------------------------- exact dot products of float64 inputs

#: bit 0 of limb 0 of the dot-product accumulator weighs 2^_ACC_BASE (the lowest bit
#: of a product of two subnormal float64s, 2^-1074 * 2^-1074)
_ACC_BASE = -2148
#: 32-bit limbs (held in int64 for carry room): products reach 2^2048, sums of up to
#: 2^31 of them 31 bits more
_ACC_LIMBS = 136
_LIMB = np.int64(0xFFFFFFFF)


@cached_njit(nogil=True)
def _mantissa(x: float) -> tuple[int, int]:
    """``(m, e)`` with ``|x| = m * 2^e``, ``m`` an integer < 2^53 (finite ``x``)."""
    u = np.float64(x).view(np.uint64)
    be = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF))
    frac = np.int64(u & np.uint64(0xFFFFFFFFFFFFF))
    if be == 0:
        return frac, np.int64(-1074)
    return frac | (np.int64(1) << 52), be - 1075


@cached_njit(nogil=True)
def acc_add(acc, pos: int, v: int, neg: bool) -> None:
    """``acc += ±v * 2^pos`` (bit index ``pos`` >= 0, ``0 <= v < 2^36``), carries deferred."""
    idx = pos >> 5
    sh = pos & 31
    lo = (v & ((np.int64(1) << (32 - sh)) - 1)) << sh
    hi = v >> (32 - sh)
    if neg:
        acc[idx] -= lo
        acc[idx + 1] -= hi & _LIMB
        acc[idx + 2] -= hi >> 32
    else:
        acc[idx] += lo
        acc[idx + 1] += hi & _LIMB
        acc[idx + 2] += hi >> 32


@cached_njit(nogil=True)
def _acc_normalise(acc) -> int:
    """Propagate carries so every limb is in [0, 2^32); returns the final carry
    (negative iff the accumulated value is negative)."""
    carry = np.int64(0)
    for k in range(acc.shape[0]):
        t = acc[k] + carry
        acc[k] = t & _LIMB
        carry = t >> 32
    return carry


@cached_njit(nogil=True)
def _acc_bits(acc, lo: int, count: int) -> int:
    """Bits ``lo .. lo+count-1`` (``lo >= 0``, ``count <= 54``) of a normalised accumulator."""
    res = np.int64(0)
    for k in range(lo >> 5, min((lo + count - 1) >> 5, acc.shape[0] - 1) + 1):
        s = 32 * k - lo
        if s < 0:
            res += acc[k] >> (-s)
        else:
            res += (acc[k] & ((np.int64(1) << min(32, count - s)) - 1)) << s
    return res & ((np.int64(1) << count) - 1)


@cached_njit(nogil=True)
def acc_round(acc, prec: int, emin_lsb: int, base: int) -> float:
    """Round the accumulated value ``sum_k acc[k] 2^(32k + base)`` (limbs with
    deferred carries) to ``prec`` significant bits, nearest, ties to even, quantum
    at least ``2^emin_lsb`` (gradual underflow); ±inf past float64's range, +0 for
    zero. The accumulator is left normalised (magnitude)."""
    neg = _acc_normalise(acc) < 0
    if neg:
        for k in range(acc.shape[0]):
            acc[k] = -acc[k]
        _acc_normalise(acc)
    top = -1
    for k in range(acc.shape[0] - 1, -1, -1):
        if acc[k] != 0:
            top = k
            break
    if top < 0:
        return 0.0
    hb = 32 * top
    t = acc[top]
    while t > 1:
        hb += 1
        t >>= 1
    lsb = max(hb - prec + 1, emin_lsb - base)
    if lsb > hb + 1:  # below half the smallest quantum
        return 0.0
    if lsb <= 0:  # every bit is kept: exact
        r = math.ldexp(np.float64(_acc_bits(acc, 0, hb + 1)), base)
        return -r if neg else r
    n = _acc_bits(acc, lsb, hb - lsb + 1) if hb >= lsb else np.int64(0)
    below = lsb - 1  # the half bit; bits 0 .. below-1 are sticky
    half = (acc[below >> 5] >> (below & 31)) & 1
    sticky = (acc[below >> 5] & ((np.int64(1) << (below & 31)) - 1)) != 0
    for k in range(below >> 5):
        sticky |= acc[k] != 0
    if half == 1 and (sticky or (n & 1) == 1):
        n += 1
    r = math.ldexp(np.float64(n), lsb + base)
    return -r if neg else r


@cached_njit(nogil=True)
def exact_dot_round(x, y, acc, to32: bool) -> float:
    """``RN(sum_k x[k] * y[k])`` of two float64 vectors, computed exactly (every
    product and the whole sum, over float64's full exponent range, subnormals
    included) and rounded once to float32 (``to32``, returned as float64) or
    float64: nearest, ties to even, gradual underflow, overflow to ±inf, zero as
    +0. Non-finite elements count as 0. ``acc`` is int64 scratch of
    ``_ACC_LIMBS``."""
    acc[:] = 0
    mask = np.int64((1 << 18) - 1)
    for k in range(x.shape[0]):
        a = x[k]
        b = y[k]
        if a == 0.0 or b == 0.0 or not (math.isfinite(a) and math.isfinite(b)):
            continue
        ma, ea = _mantissa(a)
        mb, eb = _mantissa(b)
        neg = (a < 0.0) != (b < 0.0)
        base = ea + eb - _ACC_BASE
        for i in range(3):
            pa = (ma >> (18 * i)) & mask
            if pa == 0:
                continue
            for j in range(3):
                pb = (mb >> (18 * j)) & mask
                if pb != 0:
                    acc_add(acc, base + 18 * (i + j), pa * pb, neg)
    if to32:
        r = acc_round(acc, 24, -149, _ACC_BASE)
        return np.float64(np.float32(r)) + 0.0
    return acc_round(acc, 53, -1074, _ACC_BASE) + 0.0


def exact_dot_scratch() -> np.ndarray:
    """Scratch for :func:`exact_dot_round`."""
    return np.zeros(_ACC_LIMBS, dtype=np.int64)
