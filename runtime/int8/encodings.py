"""Operand encodings of the int8 and split schemes (seed 002): SuperFloat16/8 and
percentile-based selective quantization.

An encoding replaces the symmetric INT8 quantizer (``encoding=int8``, the default)
with another integer format; the GEMM is then exact on the encoded values and
rounded once to float32 (docs/numerics.md, "Operand encodings"):

* ``sf16`` / ``sf8``: SuperFloat, a sign and a 15 / 7-bit significand-only fixed
  point for [-1, 1]: v = sign·⌊|x|·2^f⌋·2^-f (the top f bits of the shifted
  mantissa, so |x| < 2^-f is 0: the "sparse" values, FP32 exponent <= 111 for
  sf16); |x| in [1 − 2^-f, 1] is exactly ±1 ("unity"); |x| > 1 stays FP32 (an
  outlier, kept in the native format);
* ``pct<p>``: selective quantization: per row of A (column of B) the elements whose
  magnitude exceeds the nearest-rank p-th percentile τ stay FP32; the others are
  INT8 dynamic fixed point with the shared exponent of τ (runtime/dfp/executor.py).

Every encoded value has at most 24 significant bits and every inlier at most 16,
so each product of two encoded values is exact in float64.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.dfp.executor import quantize_blocks
from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.numerics.executor_common import chunked, round_products32

__all__ = [
    "ENC_INT8", "ENC_SF16", "ENC_SF8", "ENC_PCT", "ENCODING_CODES", "COUNT_OUTLIERS", "COUNT_UNITY", "COUNT_ZEROS",
    "N_COUNTS", "parse_encoding", "encoding_words", "words_ok", "nearest_rank", "encode_rows", "encoded_product",
]

ENC_INT8 = 0
ENC_SF16 = 1
ENC_SF8 = 2
ENC_PCT = 3
ENCODING_CODES = {"int8": ENC_INT8, "sf16": ENC_SF16, "sf8": ENC_SF8}
"""The fixed encodings by name (``pct<p>`` carries a parameter)."""

COUNT_OUTLIERS = 0  # elements kept in FP32 (|x| > 1, or above the percentile)
COUNT_UNITY = 1  # elements encoded as exactly +-1 (sf16/sf8)
COUNT_ZEROS = 2  # elements encoded as 0 (zeros and the "sparse" values)
N_COUNTS = 3


def parse_encoding(text: str) -> tuple[int, float]:
    """``(code, p)`` of an encoding name: ``int8``, ``sf16``, ``sf8`` or ``pct<p>``
    with 0 < p < 100 (``pct99``, ``pct99.5``); p is 0 for the fixed encodings."""
    if text in ENCODING_CODES:
        return ENCODING_CODES[text], 0.0
    p = math.nan
    if text.startswith("pct"):
        try:
            p = float(text[3:])
        except ValueError:
            pass
    if not 0.0 < p < 100.0:
        raise ValueError(f"encoding={text!r}; use int8, sf16, sf8 or pct<p> with 0 < p < 100 (e.g. pct99)")
    return ENC_PCT, p


def encoding_words(text: str) -> tuple[int, int]:
    """The two config words of an encoding: its code and p's float64 bit pattern."""
    code, p = parse_encoding(text)
    return code, int(np.float64(p).view(np.int64))


@cached_njit(nogil=True)
def words_ok(code: int, pbits: int) -> bool:
    """Whether two encoding words are valid (what :func:`encoding_words` writes)."""
    if code == ENC_PCT:
        p = np.int64(pbits).view(np.float64)
        return 0.0 < p < 100.0
    return ENC_INT8 <= code <= ENC_SF8


@cached_njit(nogil=True)
def nearest_rank(values, q: float) -> float:
    """Nearest-rank percentile: the ``ceil(q/100·N)``-th smallest value (1-based)."""
    n = values.shape[0]
    r = min(n, max(1, math.ceil(q / 100.0 * n))) - 1
    return np.partition(values, r)[r]


@cached_njit(nogil=True)
def _superfloat(v: float, f: int, counts) -> float:
    av = abs(v)
    if av > 1.0:
        counts[COUNT_OUTLIERS] += 1
        return v
    if av >= 1.0 - math.ldexp(1.0, -f):
        counts[COUNT_UNITY] += 1
        return 1.0 if v > 0.0 else -1.0
    t = math.floor(math.ldexp(av, f))
    if t == 0.0:
        counts[COUNT_ZEROS] += 1
        return 0.0
    return math.ldexp(t if v > 0.0 else -t, -f)


@cached_njit(nogil=True)
def encode_rows(raw, code: int, p: float, counts):
    """The encoded values (float64) of row-form ``raw`` (non-finite values as 0), each
    row of A / column of B on its own; ``counts`` (int64[N_COUNTS]) accumulates the
    outliers, unity and zero elements."""
    rows, kk = raw.shape
    out = np.zeros((rows, kk))
    if code == ENC_SF16 or code == ENC_SF8:
        f = 15 if code == ENC_SF16 else 7
        for i in range(rows):
            for k in range(kk):
                v = raw[i, k]
                out[i, k] = _superfloat(v if math.isfinite(v) else 0.0, f, counts)
        return out
    mags = np.empty(kk)
    inl = np.zeros((1, kk))
    for i in range(rows):
        for k in range(kk):
            v = raw[i, k]
            mags[k] = abs(v) if math.isfinite(v) else 0.0
        tau = nearest_rank(mags.copy(), p) if kk else 0.0
        for k in range(kk):
            inl[0, k] = raw[i, k] if mags[k] <= tau and math.isfinite(raw[i, k]) else 0.0
            if mags[k] > tau:
                out[i, k] = raw[i, k]
                counts[COUNT_OUTLIERS] += 1
        q, e, _ = quantize_blocks(inl, 8, 0)
        for k in range(kk):
            if mags[k] <= tau:
                out[i, k] = math.ldexp(q[0, k], e[0])
                if q[0, k] == 0.0:
                    counts[COUNT_ZEROS] += 1
    return out


@cached_njit(nogil=True)
def encoded_product(xa, xb, out) -> int:
    """``out = RN32(Σ_k xa[i,k]·xb[j,k])`` exactly, for encoded (or other) row-form
    operands whose products are exact in float64; returns the outputs Ziv's test
    left in doubt (summed exactly: the time changes, never the bits)."""
    kk = xa.shape[1]
    x3 = chunked(xa, np.arange(xa.shape[0]), np.arange(kk))
    y3 = chunked(xb, np.arange(xb.shape[0]), np.arange(kk))
    return round_products32(x3, y3, kk, np.zeros((1, 1)), False, out)
