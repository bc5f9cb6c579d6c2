"""Cost-model facts of the operand encodings (runtime/int8/encodings.py), pure Python.

An encoded operand is a dense integer part on the tensor cores plus a sparse FP32
correction for the elements the format cannot hold (outliers, and ±1 in sf8):
* ``sf8`` and ``pct<p>``: the dense part is INT8, one IMMA product;
* ``sf16``: a 16-bit significand, a signed high and an unsigned low byte: four
  IMMA products (s8·s8, s8·u8, u8·s8, u8·u8);
* the correction: each kept element of A (B) meets a whole row of B (column of A),
  so a fraction φ of kept elements per operand costs 2·φ·mnk SIMT multiply-adds per
  operand. φ = (100 − p)/100 for ``pct<p>``; for sf16/sf8 the share outside
  [-1, 1] depends on the data and is assumed to be :data:`SUPERFLOAT_OUTLIER_SHARE`
  (seed 002: at most 0.42 % outside the range for its vision and language models).
"""

from __future__ import annotations

from mixjit.runtime.int8.encodings import ENC_PCT, ENC_SF16, parse_encoding
from mixjit.runtime.schemes.base import Work

__all__ = ["SUPERFLOAT_OUTLIER_SHARE", "encoding_products", "outlier_share", "encoded_work"]

#: modeling assumption: share of elements outside [-1, 1] for sf16/sf8 (seed 002, Tables 2-3)
SUPERFLOAT_OUTLIER_SHARE = 0.005


def encoding_products(encoding: str) -> int:
    """Full-size INT8 products of the dense part of an encoded GEMM."""
    code, _ = parse_encoding(encoding)
    return 4 if code == ENC_SF16 else 1


def outlier_share(encoding: str) -> float:
    """Modeled fraction of each operand's elements kept in FP32."""
    code, p = parse_encoding(encoding)
    if code == ENC_PCT:
        return (100.0 - p) / 100.0
    return SUPERFLOAT_OUTLIER_SHARE


def encoded_work(encoding: str, m: int, n: int, k: int, in_bytes: int) -> Work:
    """Work of an m×n×k GEMM whose operands are both encoded with ``encoding``:
    dense INT8 products, the sparse FP32 correction, and packing passes (a max or
    percentile pass, an encode pass writing the integer part, the outliers' values
    and positions at 8 bytes each)."""
    dense_bytes = 2 if parse_encoding(encoding)[0] == ENC_SF16 else 1
    phi = outlier_share(encoding)
    elems = m * k + k * n
    ops = {"int8": 2.0 * m * n * k * encoding_products(encoding), "fp32": 2.0 * 2.0 * phi * m * n * k}
    packing = (2 * in_bytes + dense_bytes) * elems + 8 * phi * elems + 8 * (m + n)
    return Work(ops=ops, bytes_moved=float(packing))
