"""Compiled executor of the int8 scheme (symmetric INT8, per-row A / per-column B scales).

Semantics: docs/numerics.md, section "int8". The same code runs for ``scheme.run``
(runtime/schemes/int8.py) and for compiled callers:

* :func:`int8_gemm` ``(a, b, c, params, stats) -> status``: ``C = A @ B`` for 2-D
  float32/float64 arrays with any strides (``c`` float32 or float64, m×n);
  ``params`` the config words (``Int8Config.words()``); ``stats`` int64[N_STATS].
  Returns 0 or an ``ERR_*`` status (``STATUS_MESSAGES``); never raises, never takes
  the GIL; scratch is per call.
* :func:`quantized_gemm`: the same with any symmetric range ``[-qmax, qmax]``
  (qmax <= 127; the vitbit scheme's b-bit integers);
* :func:`dequantized_product`: the dequantized integer GEMM ``RN64(RN64(S·s_i)·t_j)``
  (also the INT8 part of the split scheme);
* :func:`quantize_symmetric`: the quantization step alone.

Word layout (``N_WORDS = 3``): ``W_SCALE`` = ``SCALE_ROW_COL`` (the only scaling);
``W_ENCODING``, ``W_ENCODING_P``: the operand encoding (runtime/int8/encodings.py
``encoding_words``: ``ENC_INT8`` is the symmetric quantization above; sf16, sf8 and
pct<p> encode the operands and round the exact product once).
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.int8.encodings import ENC_INT8, N_COUNTS, encode_rows, encoded_product, words_ok
from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.numerics.executor_common import (
    ERR_PARAMS,
    ERR_SHAPE,
    OK,
    RINT_MAGIC,
    SHAPE_MESSAGE,
    nonfinite_rule,
    row_form,
    store,
)

__all__ = [
    "W_SCALE",
    "W_ENCODING",
    "W_ENCODING_P",
    "N_WORDS",
    "SCALE_ROW_COL",
    "STAT_NONFINITE",
    "STAT_OUTLIERS",
    "STAT_UNITY",
    "STAT_ZEROS",
    "N_STATS",
    "OK",
    "ERR_PARAMS",
    "ERR_SHAPE",
    "STATUS_MESSAGES",
    "EXACT_SGEMM_K",
    "quantize_symmetric",
    "dequantized_product",
    "quantized_gemm",
    "int8_gemm",
]

W_SCALE = 0
W_ENCODING = 1
W_ENCODING_P = 2
N_WORDS = 3
SCALE_ROW_COL = 0

STAT_NONFINITE = 0  # outputs set by the non-finite rule
STAT_OUTLIERS = 1  # encoded operand elements kept in FP32 (runtime/int8/encodings.py COUNT_*)
STAT_UNITY = 2  # encoded operand elements that are exactly +-1
STAT_ZEROS = 3  # encoded operand elements that are 0
N_STATS = 4

STATUS_MESSAGES: dict[int, str] = {
    ERR_PARAMS: "the config words are invalid (encode configs with Int8Config.words(): scale 0 = row-col, "
                "then the encoding's two words)",
    ERR_SHAPE: SHAPE_MESSAGE,
}
"""What each non-zero status of :func:`int8_gemm` means."""

#: the largest K block whose int8×int8 sum is exact in a float32 accumulator:
#: 1024 · 127² = 16,516,096 < 2^24
EXACT_SGEMM_K = 1024


#: rows x columns of one transposition block
_TB = 32


@cached_njit(nogil=True)
def quantize_symmetric(x, transpose: bool, qmax: float):
    """``(q3, s, bad)``: symmetric quantization to ``[-qmax, qmax]`` (127: INT8) of each
    row of ``x`` (of ``x.T`` if ``transpose``), its values rounded to float32 first and
    non-finite ones as 0: ``s_i = RN64(amax_i/qmax)``, ``q = rint(RN64(x/s_i))`` ties to even (0 for an
    all-zero row), stored block-major as float32, (⌈K/w⌉, rows, w) with
    w = min(EXACT_SGEMM_K, K), zero padded; ``bad[i]``: row i holds an inf/NaN."""
    r = x.shape[1] if transpose else x.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    w = max(1, min(EXACT_SGEMM_K, kk))
    nb = (kk + w - 1) // w
    q3 = np.zeros((nb, r, w), dtype=np.float32)
    amax = np.zeros(r)
    bad = np.zeros(r, dtype=np.bool_)
    for i0 in range(0, r, _TB):  # blocked: reads along x's rows, writes along q3's
        for k0 in range(0, kk, _TB):
            for i in range(i0, min(i0 + _TB, r)):
                for k in range(k0, min(k0 + _TB, kk)):
                    v = np.float64(np.float32(x[k, i] if transpose else x[i, k]))
                    if not math.isfinite(v):
                        bad[i] = True
                    elif abs(v) > amax[i]:
                        amax[i] = abs(v)
    s = amax / qmax
    for i0 in range(0, r, _TB):
        for k0 in range(0, kk, _TB):
            for i in range(i0, min(i0 + _TB, r)):
                si = s[i]
                if si == 0.0:
                    continue
                for k in range(k0, min(k0 + _TB, kk)):
                    v = np.float64(np.float32(x[k, i] if transpose else x[i, k]))
                    if math.isfinite(v):
                        q3[k // w, i, k % w] = np.float32((v / si + RINT_MAGIC) - RINT_MAGIC)
    return q3, s, bad


@cached_njit(nogil=True)
def dequantized_product(a, b, b_transposed: bool, qmax: float):
    """``(D, abad, bbad)``: ``D[i,j] = RN64(RN64(S[i,j]·s_i)·t_j)`` (float64 m×n) for
    A (m×K) and B (K×n if ``b_transposed``, else given as Bᵀ n×K), and their rows /
    columns holding an inf/NaN. ``S`` is the exact integer product of the quantized
    values, from float32 GEMMs on K blocks of :data:`EXACT_SGEMM_K` (each exact in
    any order) added in float64 (exact integers)."""
    qa, sa, abad = quantize_symmetric(a, False, qmax)
    qb, sb, bbad = quantize_symmetric(b, b_transposed, qmax)
    m = sa.shape[0]
    n = sb.shape[0]
    d = np.zeros((m, n))
    part = np.empty((m, n), dtype=np.float32)
    nb = qa.shape[0]
    for blk in range(nb):
        np.dot(qa[blk], qb[blk].T, part)
        last = blk == nb - 1
        for i in range(m):
            for j in range(n):
                v = d[i, j] + part[i, j]
                d[i, j] = (v * sa[i]) * sb[j] if last else v
    return d, abad, bbad


@cached_njit(nogil=True)
def int8_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the int8 semantics: ``a`` (m x k), ``b`` (k x n), ``c``
    (m x n), float32/float64, any strides; ``params`` the config words; ``stats``
    int64[N_STATS]. Returns 0 or an ``ERR_*`` status (``c`` is then unchanged).
    ``c`` may overlap ``a`` or ``b``: they are read (quantized, copied) before ``c``
    is written."""
    if params.shape[0] < N_WORDS or params[W_SCALE] != SCALE_ROW_COL:
        return ERR_PARAMS
    if not words_ok(params[W_ENCODING], params[W_ENCODING_P]):
        return ERR_PARAMS
    m, K = a.shape
    n = b.shape[1]
    if b.shape[0] != K or c.shape[0] != m or c.shape[1] != n:
        return ERR_SHAPE
    stats[:] = 0
    if params[W_ENCODING] == ENC_INT8:
        stats[STAT_NONFINITE] = quantized_gemm(a, b, c, 127.0)
    elif m > 0 and n > 0:
        stats[STAT_NONFINITE] = _encoded_gemm(a, b, c, params[W_ENCODING], params[W_ENCODING_P], stats)
    return OK


@cached_njit(nogil=True)
def _encoded_gemm(a, b, c, code: int, pbits: int, stats) -> int:
    """C = RN32 of the exact product of the encoded operands, then the non-finite
    rule (returns its count); the encoding's counts go to ``stats[STAT_OUTLIERS:]``."""
    p = np.int64(pbits).view(np.float64)
    araw, abad = row_form(a, False)
    braw, bbad = row_form(b, True)
    counts = np.zeros(N_COUNTS, dtype=np.int64)
    xa = encode_rows(araw, code, p, counts)
    xb = encode_rows(braw, code, p, counts)
    out = np.empty((a.shape[0], b.shape[1]), dtype=np.float32)
    encoded_product(xa, xb, out)
    nf = 0
    if abad.any() or bbad.any():
        nf = nonfinite_rule(araw, braw, abad, bbad, out)
    for t in range(N_COUNTS):
        stats[STAT_OUTLIERS + t] = counts[t]
    store(out, c)
    return nf


@cached_njit(nogil=True)
def quantized_gemm(a, b, c, qmax: float) -> int:
    """``C = RN32(RN64(RN64(S·s_i)·t_j))`` for symmetric ``[-qmax, qmax]`` quantization
    (shapes already checked; ``c`` may overlap ``a`` or ``b``), then the non-finite
    rule; returns the number of outputs that rule set."""
    m = a.shape[0]
    n = b.shape[1]
    if m == 0 or n == 0:
        return 0
    d, abad, bbad = dequantized_product(a, b, True, qmax)
    special = abad.any() or bbad.any()
    if special:  # copies for the non-finite rule, taken before C (which may alias A or B) is written
        araw = row_form(a, False)[0]
        braw = row_form(b, True)[0]
    for i in range(m):
        for j in range(n):
            c[i, j] = np.float32(d[i, j]) + np.float32(0.0)  # |C| > FLT_MAX rounds to inf
    if special:
        return nonfinite_rule(araw, braw, abad, bbad, c)
    return 0
