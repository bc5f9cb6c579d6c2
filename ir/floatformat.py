"""Bit-exact conversion between Python floats and the binary formats f16, bf16, f32, f64.

Pure Python (no numpy), so that ``import mixjit.ir`` stays light. Rounding is IEEE
round-to-nearest-even with gradual underflow and overflow to infinity. NaN payloads are
carried by bit manipulation (the top payload bits), never by the FPU, so a NaN read from
an f32 bit pattern and written back gives the same bits.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class BinaryFormat:
    """An IEEE-style binary format: ``exp_bits`` exponent bits, ``mant_bits`` stored fraction bits."""

    exp_bits: int
    mant_bits: int

    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.mant_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1


FORMATS: dict[str, BinaryFormat] = {
    "f16": BinaryFormat(5, 10),
    "bf16": BinaryFormat(8, 7),
    "f32": BinaryFormat(8, 23),
    "f64": BinaryFormat(11, 52),
}
_F64 = FORMATS["f64"]


def f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def f64_from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _round_shift(n: int, shift: int) -> int:
    """``n / 2**shift`` rounded to nearest, ties to even (``shift`` may be <= 0)."""
    if shift <= 0:
        return n << -shift
    q, r = n >> shift, n & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return q


def to_bits(x: float, fmt: BinaryFormat) -> int:
    """The bit pattern of ``x`` rounded to ``fmt``."""
    if fmt == _F64:
        return f64_bits(x)
    sign = f64_bits(x) >> 63
    sign_bit = sign << (fmt.width - 1)
    exp_all_ones = ((1 << fmt.exp_bits) - 1) << fmt.mant_bits
    if math.isnan(x):
        payload = (f64_bits(x) & ((1 << 52) - 1)) >> (52 - fmt.mant_bits)
        return sign_bit | exp_all_ones | (payload or 1 << (fmt.mant_bits - 1))
    if math.isinf(x):
        return sign_bit | exp_all_ones
    if x == 0.0:
        return sign_bit
    m, e = math.frexp(abs(x))  # abs(x) = m * 2**e, 0.5 <= m < 1
    n, n_exp = int(m * (1 << 53)), e - 53  # exact: abs(x) = n * 2**n_exp
    emin = 1 - fmt.bias
    q = max(e - 1, emin) - fmt.mant_bits  # exponent of the last kept bit
    mant = _round_shift(n, q - n_exp)
    if mant >> (fmt.mant_bits + 1):  # rounding carried into a new leading bit
        mant >>= 1
        q += 1
    if mant >> fmt.mant_bits == 0:  # subnormal (or rounded to zero)
        return sign_bit | mant
    biased = q + fmt.mant_bits + fmt.bias
    if biased >= (1 << fmt.exp_bits) - 1:
        return sign_bit | exp_all_ones
    return sign_bit | (biased << fmt.mant_bits) | (mant - (1 << fmt.mant_bits))


def from_bits(bits: int, fmt: BinaryFormat) -> float:
    """The Python float (exact, formats narrower than f64 embed exactly) for a bit pattern."""
    if fmt == _F64:
        return f64_from_bits(bits)
    sign = bits >> (fmt.width - 1) & 1
    biased = bits >> fmt.mant_bits & ((1 << fmt.exp_bits) - 1)
    frac = bits & ((1 << fmt.mant_bits) - 1)
    if biased == (1 << fmt.exp_bits) - 1:
        if frac == 0:
            return -math.inf if sign else math.inf
        return f64_from_bits(sign << 63 | 0x7FF << 52 | frac << (52 - fmt.mant_bits))
    if biased == 0:
        value = math.ldexp(frac, 1 - fmt.bias - fmt.mant_bits)
    else:
        value = math.ldexp(frac | 1 << fmt.mant_bits, biased - fmt.bias - fmt.mant_bits)
    return -value if sign else value
