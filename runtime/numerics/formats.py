"""Rounding of float32 arrays to the low-precision tensor-core formats.

Every function takes a float32 array (any shape) and returns a new float32 array
holding the nearest value of the target format, ties to even (IEEE
round-to-nearest-even), with gradual underflow and overflow to ±inf. NaN stays NaN
(a quiet NaN with the input's sign). These are the formats' own IEEE-style roundings,
exact bit operations, never approximations. The compiled executors round in their
own code (runtime/multiterm/executor.py), checked against these functions
(tests/runtime/multiterm/test_executors_emulation.py): FP16 exactly as ``round_to_fp16``;
TF32 and BF16 as ``round_to_tf32`` / ``round_to_bf16`` on float32 normal values,
but with no lower exponent limit below them (docs/numerics.md, tf32x3 step 1).

Formats (sign : exponent : stored fraction bits):

* TF32 1:8:10 — float32's range, 11 significant bits (NVIDIA Ampere+ tensor cores).
* BF16 1:8:7  — float32's range, 8 significant bits.
* FP16 1:5:10 — IEEE binary16: 11 significant bits, normal range [2^-14, 65504],
  subnormals down to 2^-24.
"""

from __future__ import annotations

import numpy as np

__all__ = ["round_to_tf32", "round_to_bf16", "round_to_fp16", "FORMAT_BITS"]

#: significant bits (including the implicit one) of each part format
FORMAT_BITS = {"tf32": 11, "bf16": 8, "fp16": 11, "fp32": 24}

_SIGN = np.uint32(0x80000000)
_QNAN = np.uint32(0x7FC00000)
_EXP_ALL = np.uint32(0x7F800000)


def _as_f32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise TypeError(f"expected a float32 array, got {x.dtype}; convert with .astype(np.float32)")
    return x


def _drop_fraction_bits(x: np.ndarray, drop: int) -> np.ndarray:
    """Round float32 ``x`` to a format with float32's exponent and ``23 - drop`` fraction
    bits, ties to even, on the bit pattern.

    Adding ``2^(drop-1) - 1 + lsb`` to the pattern and clearing the low ``drop`` bits is
    round-to-nearest-even on the magnitude, including subnormals (same spacing as the
    pattern) and overflow (a carry into the exponent field of the largest binade gives
    the pattern of inf). NaN is handled apart because its pattern would round to inf.
    """
    x = _as_f32(x)
    u = np.ascontiguousarray(x).view(np.uint32)
    lsb = (u >> np.uint32(drop)) & np.uint32(1)
    r = (u + (np.uint32((1 << (drop - 1)) - 1) + lsb)) & np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)
    nan = (u & ~_SIGN) > _EXP_ALL
    r = np.where(nan, (u & _SIGN) | _QNAN, r)
    return r.view(np.float32).reshape(x.shape)


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """Nearest TF32 value (1:8:10) of each float32 element, ties to even, as float32."""
    return _drop_fraction_bits(x, 13)


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """Nearest BF16 value (1:8:7) of each float32 element, ties to even, as float32."""
    return _drop_fraction_bits(x, 16)


def round_to_fp16(x: np.ndarray) -> np.ndarray:
    """Nearest IEEE binary16 value of each float32 element, ties to even, as float32.

    numpy's float32→float16 cast is the IEEE conversion (round-to-nearest-even,
    gradual underflow, overflow to inf); tests cross-check it against an exact
    rational reference.
    """
    x = _as_f32(x)
    with np.errstate(over="ignore"):
        return x.astype(np.float16).astype(np.float32)
