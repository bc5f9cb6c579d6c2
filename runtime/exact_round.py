"""Exact sums of float64 pieces, rounded once (compiled kernels).

The MixPert executors define each output as the *exact* sum of float64 pieces
(exact dgemm results, per-k-tile values, fallback tile products), rounded once to
the target format. When the pieces cannot be added exactly in one float64, these
kernels keep, per output element, a list of non-overlapping float64 partials
(Shewchuk's algorithm, as in CPython's ``math.fsum``) and round the exact sum at the
end:

* :func:`add_pieces` adds ``D[i,j] * fa[i] * fb[j]`` (power-of-two factors, exact)
  to every element's partials;
* :func:`finish` gives ``hi = RN64(S)`` and ``lo``, a float64 with the sign of the
  exact residual ``S - hi`` (0 iff the residual is 0);
* :func:`round32` / :func:`round64_scaled` turn ``(hi, lo)`` into the correctly
  rounded float32 / float64 value (ties to even, gradual underflow, +0 for zero).

All are Numba ``@njit(cache=True, nogil=True)`` so compiled code can call them.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["MAX_PARTIALS", "add_piece", "add_pieces", "finish", "round32", "round64_scaled", "finish_all"]

#: non-overlapping float64 partials can span the whole float64 range in < 48 words
MAX_PARTIALS = 48

_TWO128 = 2.0**128
_MIN32 = 2.0**-149
_MIN_NORMAL64 = 2.0**-1022


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def add_pieces(parts, counts, d, fa, fb):
    """``parts[i,j,:]`` += ``d[i,j] * fa[i] * fb[j]`` exactly, for every element."""
    r, c = d.shape
    for i in range(r):
        for j in range(c):
            v = d[i, j] * fa[i] * fb[j]
            if v != 0.0:
                counts[i, j] = add_piece(parts[i, j], counts[i, j], v)


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
def round32(hi: float, lo: float) -> np.float32:
    """RN32 of ``S = hi + residual`` given ``hi = RN64(S)`` and ``lo`` with the sign of
    ``S - hi``: fixes the double-rounding case where ``hi`` is a float32 midpoint."""
    c = np.float32(hi)
    if lo != 0.0 and np.float64(c) != hi:
        a = abs(hi)
        cm = abs(np.float64(c))
        if math.isinf(cm):
            cm = _TWO128
        f, ex = math.frexp(cm)
        if a > cm:
            other = cm + max(math.ldexp(1.0, ex - 24), _MIN32)
        else:
            step = math.ldexp(1.0, ex - 25) if f == 0.5 else math.ldexp(1.0, ex - 24)
            other = cm - max(step, _MIN32)
        if a == 0.5 * (cm + other):
            above = (lo > 0.0) == (hi > 0.0)
            mag = max(cm, other) if above else min(cm, other)
            c = np.float32(math.copysign(mag, hi)) if mag < _TWO128 else np.float32(math.copysign(math.inf, hi))
    return c + np.float32(0.0)


@numba.njit(cache=True, nogil=True)
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


@numba.njit(cache=True, nogil=True)
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
