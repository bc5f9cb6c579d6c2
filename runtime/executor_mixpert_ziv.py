"""Ziv's rounding tests of the MixPert executor: is a float64 approximation with a
known error bound certain to round to the right float32 / float64 result?

Where a test answers yes, the executor keeps the cheap approximation; where it
answers no, the output is summed exactly (runtime/exactsum.py). Either way the
bits are those of the exact value rounded once.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit_cache import cached_njit

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


@cached_njit(nogil=True)
def certain64(s: float, err: float, e: int) -> bool:
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
