"""Compiled executor of the dfp scheme (dynamic fixed point, seed 004).

Semantics: docs/numerics.md, section "dfp". The same code runs for ``scheme.run``
(runtime/schemes/dfp.py) and for compiled callers:

* :func:`dfp_gemm` ``(a, b, c, params, stats) -> status``: ``C = A @ B`` for 2-D
  float32/float64 arrays with any strides (``c`` m×n); ``params`` the config words
  (``DfpConfig.words()``); ``stats`` int64[N_STATS]. Returns 0 or an ``ERR_*`` status
  (``STATUS_MESSAGES``); never raises, never takes the GIL; scratch is per call.
* :func:`shared_exponent`: the exponent (right shift) rule of one block;
* :func:`quantize_blocks`: a row-form operand as integer mantissas with one shared
  exponent per block of rows (also the inlier quantizer of runtime/encodings.py).

Word layout (``N_WORDS = 3``): ``W_BITS`` mantissa width in bits (2..16, sign
included); ``W_BLOCK`` rows of A (columns of B) that share one exponent, 0 = the
whole tensor; ``W_OUT`` ``OUT_FP32`` (C = RN32 of the exact product) or ``OUT_DFP``
(C requantized to a per-tensor dynamic fixed-point tensor of ``W_BITS`` bits).
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.executor_common import nonfinite_rule, row_form
from mixjit.runtime.jit_cache import cached_njit

__all__ = [
    "W_BITS", "W_BLOCK", "W_OUT", "N_WORDS", "OUT_FP32", "OUT_DFP", "MIN_BITS", "MAX_BITS",
    "STAT_NONFINITE", "STAT_OUT_EXPONENT", "STAT_CARRIES", "N_STATS", "OK", "ERR_PARAMS", "ERR_SHAPE", "ERR_K",
    "STATUS_MESSAGES", "max_k", "shared_exponent", "quantize_blocks", "dfp_gemm",
]

W_BITS = 0
W_BLOCK = 1
W_OUT = 2
N_WORDS = 3
OUT_FP32 = 0
OUT_DFP = 1
MIN_BITS = 2
MAX_BITS = 16

STAT_NONFINITE = 0  # outputs set by the non-finite rule
STAT_OUT_EXPONENT = 1  # the output's shared exponent (OUT_DFP; 0 otherwise)
STAT_CARRIES = 2  # blocks (A, B and the output) whose rounded maximum took one more right shift
N_STATS = 3

OK = 0
ERR_PARAMS = 3
ERR_SHAPE = 4
ERR_K = 5
STATUS_MESSAGES: dict[int, str] = {
    ERR_PARAMS: "the config words are invalid (encode configs with DfpConfig.words(): bits 2..16, "
                "block >= 0, out 0 = fp32 or 1 = dfp)",
    ERR_SHAPE: "shapes do not match: A is m x k, B must be k x n and C m x n",
    ERR_K: "K is too long for an exact float64 integer GEMM at this mantissa width "
           "(K * (2^(bits-1) - 1)^2 must stay below 2^53; use fewer bits or split K)",
}
"""What each non-zero status of :func:`dfp_gemm` means."""

#: 1.5 * 2^52: adding and subtracting it rounds |t| < 2^51 to an integer, ties to even
_RINT_MAGIC = 6755399441055744.0


@cached_njit(nogil=True)
def max_k(bits: int) -> int:
    """The largest K whose integer sums stay exact in float64: K·q_max² < 2^53."""
    q = (1 << (bits - 1)) - 1
    return ((1 << 53) - 1) // (q * q)


@cached_njit(nogil=True)
def _rint(t: float) -> float:
    return (t + _RINT_MAGIC) - _RINT_MAGIC


@cached_njit(nogil=True)
def shared_exponent(amax: float, r: int) -> tuple[int, bool]:
    """``(E, carried)``: the shared exponent of a block whose largest finite magnitude
    is ``amax``, for ``r`` magnitude bits. E = e(amax) + 1 − r, which puts amax's
    leading bit at bit r−1 (the right shift from the absolute maximum and the
    dynamic range 2^r − 1); one more (``carried``) if amax then rounds up to 2^r.
    0 for an all-zero block."""
    if amax == 0.0:
        return 0, False
    ex = math.frexp(amax)[1]  # amax = f·2^ex, f in [0.5, 1): e(amax) = ex - 1
    e = ex - r
    if _rint(math.ldexp(amax, -e)) == float(1 << r):
        return e + 1, True
    return e, False


@cached_njit(nogil=True)
def quantize_blocks(raw, bits: int, block: int):
    """``(q, exps, carries)``: the rows of ``raw`` (float64, non-finite values count as
    0) as integer mantissas ``q`` (float64, |q| <= 2^(bits-1) − 1), one shared exponent
    per block of ``block`` rows (0: all rows), ``raw ≈ q·2^exps[i // block]``, with
    ``q = rint(raw·2^-E)`` ties to even."""
    rows, kk = raw.shape
    bs = rows if block == 0 else block
    bs = max(bs, 1)
    nblk = (rows + bs - 1) // bs
    r = bits - 1
    q = np.zeros((rows, kk))
    exps = np.zeros(max(nblk, 1), dtype=np.int64)
    carries = 0
    for blk in range(nblk):
        i0 = blk * bs
        i1 = min(rows, i0 + bs)
        amax = 0.0
        for i in range(i0, i1):
            for k in range(kk):
                v = raw[i, k]
                if math.isfinite(v) and abs(v) > amax:
                    amax = abs(v)
        e, carried = shared_exponent(amax, r)
        exps[blk] = e
        if carried:
            carries += 1
        if amax == 0.0:
            continue
        for i in range(i0, i1):
            for k in range(kk):
                v = raw[i, k]
                if math.isfinite(v):
                    q[i, k] = _rint(math.ldexp(v, -e))
    return q, exps, carries


@cached_njit(nogil=True)
def _params_ok(params) -> bool:
    if params.shape[0] < N_WORDS:
        return False
    bits = params[W_BITS]
    return (MIN_BITS <= bits <= MAX_BITS and params[W_BLOCK] >= 0
            and (params[W_OUT] == OUT_FP32 or params[W_OUT] == OUT_DFP))


@cached_njit(nogil=True)
def dfp_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the dfp semantics: ``a`` (m x k), ``b`` (k x n), ``c``
    (m x n), float32/float64, any strides; ``params`` the config words; ``stats``
    int64[N_STATS]. Returns 0 or an ``ERR_*`` status (``c`` is then unchanged).
    ``c`` may overlap ``a`` or ``b``: they are copied (row form) before ``c`` is written."""
    if not _params_ok(params):
        return ERR_PARAMS
    m, K = a.shape
    n = b.shape[1]
    if b.shape[0] != K or c.shape[0] != m or c.shape[1] != n:
        return ERR_SHAPE
    bits = params[W_BITS]
    if K > max_k(bits):
        return ERR_K
    stats[:] = 0
    if m == 0 or n == 0:
        return OK
    block = params[W_BLOCK]
    araw, abad = row_form(a, False)
    braw, bbad = row_form(b, True)
    qa, ea, ca = quantize_blocks(araw, bits, block)
    qb, eb, cb = quantize_blocks(braw, bits, block)
    bsa = m if block == 0 else block
    bsb = n if block == 0 else block
    s = np.dot(qa, qb.T)  # integers below 2^53: exact in any order
    val = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            val[i, j] = math.ldexp(s[i, j], ea[i // bsa] + eb[j // bsb])  # exact
    out = np.empty((m, n), dtype=np.float32)
    carries = ca + cb
    if params[W_OUT] == OUT_DFP:
        amax = 0.0
        for i in range(m):
            for j in range(n):
                amax = max(amax, abs(val[i, j]))
        ec, carried = shared_exponent(amax, bits - 1)
        if carried:
            carries += 1
        stats[STAT_OUT_EXPONENT] = ec
        for i in range(m):
            for j in range(n):
                qc = _rint(math.ldexp(val[i, j], -ec))
                out[i, j] = np.float32(math.ldexp(qc, ec)) + np.float32(0.0)
    else:
        for i in range(m):
            for j in range(n):
                out[i, j] = np.float32(val[i, j]) + np.float32(0.0)  # one rounding; > FLT_MAX gives inf
    if abad.any() or bbad.any():
        stats[STAT_NONFINITE] = nonfinite_rule(araw, braw, abad, bbad, out)
    stats[STAT_CARRIES] = carries
    for i in range(m):
        for j in range(n):
            c[i, j] = out[i, j]
    return OK
