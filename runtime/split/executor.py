"""Compiled executor of the split scheme (the patent's INT8/FP16 split-precision GEMM).

Semantics: docs/numerics.md, section "split". The same code runs for ``scheme.run``
(runtime/schemes/split.py) and for compiled callers:

* :func:`split_gemm` ``(a, b, c, params, stats) -> status``: ``C = A @ B`` for 2-D
  float32/float64 arrays with any strides (``c`` float32 or float64, m×n);
  ``params`` the config words (``SplitConfig.words()``); ``stats`` int64[N_STATS].
  Returns 0 or an ``ERR_*`` status (``STATUS_MESSAGES``); never raises, never takes
  the GIL; scratch is per call.
* :func:`slice_importance` / :func:`fp16_columns`: the ranking steps alone.

Word layout (``N_WORDS = 11``):

* ``W_FP16_MODE``: ``FP16_FIXED`` (the share is ``W_FP16_NUM / 2^W_FP16_EXP``, the
  exact value of the config's float) or ``FP16_AUTO`` (the partition-size
  calculator with the target's MMA depths ``W_MMA_K_INT8``, ``W_MMA_K_FP16`` and
  ``W_MMA_UNIT`` = their lcm; runtime/model/partition.py);
* ``W_WIDTH``: slice width (≥ 1);
* ``W_RANK``: ``RANK_PERCENTILE`` (Q = the float64 whose bit pattern is
  ``W_RANK_Q``) or ``RANK_INDEX``;
* ``W_ENCODING``, ``W_ENCODING_P``: the INT8 part's operand encoding
  (runtime/int8/encodings.py ``encoding_words``; ``ENC_INT8`` = symmetric quantization).
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.int8.encodings import ENC_INT8, N_COUNTS, encode_rows, encoded_product, nearest_rank, words_ok
from mixjit.runtime.int8.executor import dequantized_product
from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.multiterm.executor import FMT_FP16, build_parts
from mixjit.runtime.numerics.executor_common import (
    ERR_PARAMS,
    ERR_SHAPE,
    OK,
    SHAPE_MESSAGE,
    nonfinite_rule,
    round_products32,
    row_form,
    store,
)

__all__ = [
    "W_FP16_MODE", "W_FP16_NUM", "W_FP16_EXP", "W_MMA_K_INT8", "W_MMA_K_FP16", "W_MMA_UNIT",
    "W_WIDTH", "W_RANK", "W_RANK_Q", "W_ENCODING", "W_ENCODING_P", "N_WORDS", "FP16_FIXED", "FP16_AUTO", "RANK_PERCENTILE",
    "RANK_INDEX", "STAT_NONFINITE", "STAT_K_FP16", "STAT_K_INT8", "STAT_SLOW_ELEMENTS", "STAT_OUTLIERS", "STAT_UNITY", "STAT_ZEROS", "N_STATS",
    "OK", "ERR_PARAMS", "ERR_SHAPE", "STATUS_MESSAGES", "slice_importance", "fp16_columns", "split_gemm",
]

W_FP16_MODE = 0
W_FP16_NUM = 1
W_FP16_EXP = 2
W_MMA_K_INT8 = 3
W_MMA_K_FP16 = 4
W_MMA_UNIT = 5
W_WIDTH = 6
W_RANK = 7
W_RANK_Q = 8
W_ENCODING = 9
W_ENCODING_P = 10
N_WORDS = 11
FP16_FIXED = 0
FP16_AUTO = 1
RANK_PERCENTILE = 0
RANK_INDEX = 1

STAT_NONFINITE = 0  # outputs set by the non-finite rule
STAT_K_FP16 = 1  # K columns in the FP16 part
STAT_K_INT8 = 2  # K columns in the INT8 part
STAT_SLOW_ELEMENTS = 3  # outputs Ziv's test left in doubt: summed exactly
STAT_OUTLIERS = 4  # encoded INT8-part elements kept in FP32 (runtime/int8/encodings.py COUNT_*)
STAT_UNITY = 5  # encoded INT8-part elements that are exactly +-1
STAT_ZEROS = 6  # encoded INT8-part elements that are 0
N_STATS = 7

STATUS_MESSAGES: dict[int, str] = {
    ERR_PARAMS: "the config words are invalid, or K >= 2^31 (encode configs with SplitConfig.words())",
    ERR_SHAPE: SHAPE_MESSAGE,
}
"""What each non-zero status of :func:`split_gemm` means."""

_MAX_K = 2**31


@cached_njit(nogil=True)
def _params_ok(params) -> bool:
    if params.shape[0] < N_WORDS or params[W_WIDTH] < 1:
        return False
    if not words_ok(params[W_ENCODING], params[W_ENCODING_P]):
        return False
    mode = params[W_FP16_MODE]
    if mode == FP16_FIXED:
        num = params[W_FP16_NUM]
        e = params[W_FP16_EXP]
        if num < 0 or e < 0 or (e < 62 and num > (1 << e)) or (e == 0 and num > 1):
            return False
    elif mode == FP16_AUTO:
        if min(params[W_MMA_K_INT8], params[W_MMA_K_FP16], params[W_MMA_UNIT]) < 1:
            return False
    else:
        return False
    if params[W_RANK] == RANK_PERCENTILE:
        q = np.int64(params[W_RANK_Q]).view(np.float64)
        return 0.0 < q <= 100.0
    return params[W_RANK] == RANK_INDEX


@cached_njit(nogil=True)
def _round_half_shift(num: int, nsl: int, e: int) -> int:
    """``floor(num·nsl/2^e + 1/2)`` exactly, for 0 <= num < 2^53, 0 <= nsl < 2^32,
    e >= 1 (a 96-bit product held as hi·2^32 + lo in int64 words)."""
    if e > 85:  # num·nsl < 2^85 <= 2^(e-1): below one half
        return 0
    mask = (1 << 32) - 1
    t0 = (num & mask) * nsl
    hi = (num >> 32) * nsl + (t0 >> 32)
    lo = t0 & mask
    if e - 1 >= 32:
        hi += 1 << (e - 33)
    else:
        lo += 1 << (e - 1)
        hi += lo >> 32
        lo &= mask
    if e >= 32:
        return hi >> (e - 32)
    return (hi << (32 - e)) | (lo >> e)


@cached_njit(nogil=True)
def _fp16_slice_count(params, K: int, nsl: int) -> int:
    """n₁₆ = ⌊f·n + 1/2⌋ with f the FP16 share of K as an exact rational."""
    if K == 0:
        return 0
    if params[W_FP16_MODE] == FP16_AUTO:
        k8 = params[W_MMA_K_INT8]
        k16 = params[W_MMA_K_FP16]
        unit = params[W_MMA_UNIT]
        d = (k8 + k16) * unit
        k_fp16 = min(K, unit * ((2 * K * k16 + d) // (2 * d)))
        return (2 * k_fp16 * nsl + K) // (2 * K)
    num = params[W_FP16_NUM]
    e = params[W_FP16_EXP]
    if e == 0:
        return num * nsl
    return _round_half_shift(num, nsl, e)


@cached_njit(nogil=True)
def slice_importance(araw, braw, width: int, rank: int, q: float):
    """Importance of each K slice of row-form operands (A m×K, Bᵀ n×K, non-finite
    values as 0): ``RN64(P_Q(|A[:, s]|)·P_Q(|B[s, :]|))``, or ``-s`` for ``RANK_INDEX``."""
    m, K = araw.shape
    n = braw.shape[0]
    nsl = (K + width - 1) // width
    imp = np.empty(nsl)
    for s in range(nsl):
        if rank == RANK_INDEX:
            imp[s] = -float(s)
            continue
        k0 = s * width
        k1 = min(K, k0 + width)
        va = np.empty(m * (k1 - k0))
        vb = np.empty(n * (k1 - k0))
        t = 0
        for i in range(m):
            for k in range(k0, k1):
                v = araw[i, k]
                va[t] = abs(v) if math.isfinite(v) else 0.0
                t += 1
        t = 0
        for j in range(n):
            for k in range(k0, k1):
                v = braw[j, k]
                vb[t] = abs(v) if math.isfinite(v) else 0.0
                t += 1
        imp[s] = nearest_rank(va, q) * nearest_rank(vb, q)
    return imp


@cached_njit(nogil=True)
def fp16_columns(araw, braw, params):
    """Mask over K: True for the columns of the n₁₆ most important slices (ties to
    the lower slice index)."""
    K = araw.shape[1]
    width = params[W_WIDTH]
    nsl = (K + width - 1) // width
    n16 = _fp16_slice_count(params, K, nsl)
    q = np.int64(params[W_RANK_Q]).view(np.float64)
    imp = slice_importance(araw, braw, width, params[W_RANK], q)
    order = np.argsort(-imp, kind="mergesort")  # stable: equal importance keeps index order
    mask = np.zeros(K, dtype=np.bool_)
    for t in range(min(n16, nsl)):
        s = order[t]
        for k in range(s * width, min(K, (s + 1) * width)):
            mask[k] = True
    return mask


@cached_njit(nogil=True)
def _columns(raw, cols):
    out = np.empty((raw.shape[0], cols.shape[0]))
    for i in range(raw.shape[0]):
        for t in range(cols.shape[0]):
            out[i, t] = raw[i, cols[t]]
    return out


@cached_njit(nogil=True)
def split_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the split semantics: ``a`` (m x k), ``b`` (k x n), ``c``
    (m x n), float32/float64, any strides; ``params`` the config words; ``stats``
    int64[N_STATS]. Returns 0 or an ``ERR_*`` status (``c`` is then unchanged).
    ``c`` may overlap ``a`` or ``b``: they are read only into row-form copies first."""
    if not _params_ok(params):
        return ERR_PARAMS
    m, K = a.shape
    n = b.shape[1]
    if b.shape[0] != K or c.shape[0] != m or c.shape[1] != n:
        return ERR_SHAPE
    if K >= _MAX_K:
        return ERR_PARAMS
    stats[:] = 0
    if m == 0 or n == 0:
        return OK
    araw, abad = row_form(a, False)
    braw, bbad = row_form(b, True)
    f16 = fp16_columns(araw, braw, params)
    fcols = np.flatnonzero(f16)
    icols = np.flatnonzero(~f16)
    out = np.empty((m, n), dtype=np.float32)
    if params[W_ENCODING] == ENC_INT8:
        stats[STAT_SLOW_ELEMENTS] = _quantized_split(araw, braw, icols, fcols, out)
    else:
        _encoded_split(araw, braw, icols, fcols, params, out, stats)
    if abad.any() or bbad.any():
        stats[STAT_NONFINITE] = nonfinite_rule(araw, braw, abad, bbad, out)
    stats[STAT_K_FP16] = fcols.shape[0]
    stats[STAT_K_INT8] = icols.shape[0]
    store(out, c)
    return OK


@cached_njit(nogil=True)
def _quantized_split(araw, braw, icols, fcols, out) -> int:
    """``out = RN32(D + FP16 part)`` with D the dequantized INT8 part (docs: split,
    steps 3-5); returns the outputs Ziv's test left in doubt."""
    m = araw.shape[0]
    n = braw.shape[0]
    if icols.shape[0]:
        d = dequantized_product(_columns(araw, icols), _columns(braw, icols), False, 127.0)[0]
    else:
        d = np.zeros((m, n))
    if fcols.shape[0]:
        kf = fcols.shape[0]
        one = np.ones((1, 1), dtype=np.bool_)
        x3, _ = build_parts(_columns(araw, fcols), FMT_FP16, 1, one, kf)
        y3, _ = build_parts(_columns(braw, fcols), FMT_FP16, 1, one, kf)
        return round_products32(x3, y3, kf, d, True, out)
    for i in range(m):
        for j in range(n):
            out[i, j] = np.float32(d[i, j]) + np.float32(0.0)  # |C| > FLT_MAX rounds to inf
    return 0


@cached_njit(nogil=True)
def _fp16_row_form(raw, cols):
    """The FP16 part of columns ``cols`` of a row-form operand (range-scaled hi parts,
    unscaled: h·2^-σ), in row form."""
    kf = cols.shape[0]
    x3, _ = build_parts(_columns(raw, cols), FMT_FP16, 1, np.ones((1, 1), dtype=np.bool_), kf)
    w = x3.shape[2]
    out = np.empty((raw.shape[0], kf))
    for i in range(raw.shape[0]):
        for k in range(kf):
            out[i, k] = x3[k // w, i, k % w]
    return out


@cached_njit(nogil=True)
def _encoded_split(araw, braw, icols, fcols, params, out, stats) -> None:
    """``out = RN32`` of the exact sum of the INT8 part's encoded products and the
    FP16 part's products (one rounding); the encoding's counts into ``stats``."""
    p = np.int64(params[W_ENCODING_P]).view(np.float64)
    counts = np.zeros(N_COUNTS, dtype=np.int64)
    code = params[W_ENCODING]
    xa = np.hstack((encode_rows(_columns(araw, icols), code, p, counts), _fp16_row_form(araw, fcols)))
    xb = np.hstack((encode_rows(_columns(braw, icols), code, p, counts), _fp16_row_form(braw, fcols)))
    stats[STAT_SLOW_ELEMENTS] = encoded_product(xa, xb, out)
    for t in range(N_COUNTS):
        stats[STAT_OUTLIERS + t] = counts[t]
