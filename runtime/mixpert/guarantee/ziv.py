"""Ziv's rounding tests of the MixPert executor: is a float64 approximation with a
known error bound certain to round to the right float32 / float64 result?

Where a test answers yes, the executor keeps the cheap approximation; where it
answers no, the output is summed exactly (runtime/numerics/exactsum.py). Either way the
bits are those of the exact value rounded once.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit

F32_MAX = float(np.finfo(np.float32).max)
"""The largest finite float32 (as a float64)."""


@cached_njit(nogil=True)
def certain32(s: float, err: float) -> bool:
    """Ziv's rounding test: does every value within ``err`` of ``s`` round to the
    float32 ``RN32(s)``? Half an ulp on each side (a quarter at a power of two);
    never at ``FLT_MAX`` or beyond (the exact path rounds those)."""
    c = np.float32(s)
    ac = abs(np.float64(c))
    if not ac < F32_MAX:
        return False
    bits = np.float32(ac).view(np.uint32)
    ulp = np.float64(np.uint32(bits + np.uint32(1)).view(np.float32)) - ac
    half = ulp * (0.25 if (bits & np.uint32(0x7FFFFF)) == 0 else 0.5)
    return abs(s - np.float64(c)) + err < half


_MANTISSA64 = np.uint64(0xFFFFFFFFFFFFF)


@cached_njit(nogil=True)
def _certain64_slow(s: float, err: float, e: int) -> bool:
    """:func:`certain64` through ``ldexp``/``frexp``, for any ``s``."""
    r = abs(math.ldexp(s, e))
    if not (2.0**-1021 <= r < 2.0**1023):
        return False
    u = np.float64(abs(s)).view(np.uint64)
    f, ex = math.frexp(abs(s))
    half = math.ldexp(1.0, ex - 54)
    if (u & _MANTISSA64) == 0:
        half *= 0.5  # at a power of two the ulp below is half as large
    return err < half


@cached_njit(nogil=True)
def certain64(s: float, err: float, e: int) -> bool:
    """Ziv's test in float64: does every value within ``err`` of ``s`` round to ``s``,
    and is ``s 2^e`` a normal float64 (so that scaling by ``2^e`` is exact)? For an
    ``s`` of biased exponent 54 or more (every case of the fast path's sums but
    tiny ones) the answer comes from the exponent bits alone (no ``ldexp``): the
    half ulp of ``s`` is ``2^(be - 1076)``, and ``s 2^e`` lies in
    ``[2^-1021, 2^1023)`` exactly when ``2 <= be + e <= 2045``."""
    u = np.float64(s).view(np.uint64) & np.uint64(0x7FFFFFFFFFFFFFFF)
    be = np.int64(u >> np.uint64(52))
    if be < 54 or be == 2047:
        return _certain64_slow(s, err, e)
    if not (2 <= be + e <= 2045):
        return False
    h = np.uint64(np.uint64(be - 53) << np.uint64(52)).view(np.float64)
    if (u & _MANTISSA64) == 0:
        h *= 0.5  # at a power of two the ulp below is half as large
    return err < h


@cached_njit(nogil=True)
def scaled_normal(s: float, e: int) -> float:
    """``s 2^e`` where :func:`certain64` said it is a normal float64: exact, by adding
    ``e`` to the exponent bits."""
    u = np.float64(s).view(np.uint64)
    return np.uint64(u + np.uint64(np.uint64(e) << np.uint64(52))).view(np.float64)


@cached_njit(nogil=True)
def times_pow2(x: float, e: int) -> float:
    """``RN64(x 2^e)``, the same value as ``math.ldexp(x, e)``: a multiplication by
    the exact power of two where ``2^e`` is a normal float64 (one correct rounding
    either way), ``ldexp`` otherwise."""
    if -1022 <= e <= 1023:
        return x * np.uint64(np.uint64(e + 1023) << np.uint64(52)).view(np.float64)
    return math.ldexp(x, e)
