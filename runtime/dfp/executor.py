"""Compiled executor of the dfp scheme (dynamic fixed point, seed 004).

Semantics: docs/numerics.md, section "dfp". The same code runs for ``scheme.run``
(runtime/schemes/dfp.py) and for compiled callers:

* :func:`dfp_gemm` ``(a, b, c, params, stats) -> status``: ``C = A @ B`` for 2-D
  float32/float64 arrays with any strides (``c`` m×n); ``params`` the config words
  (``DfpConfig.words()``); ``stats`` int64[N_STATS]. Returns 0 or an ``ERR_*`` status
  (``STATUS_MESSAGES``); never raises, never takes the GIL; scratch is per call.
* :func:`shared_exponent`: the exponent (right shift) rule of one block;
* :func:`quantize_blocks`: a row-form operand as integer mantissas with one shared
  exponent per block of rows (also the inlier quantizer of runtime/int8/encodings.py).

Word layout (``N_WORDS = 5``): ``W_BITS`` mantissa width in bits (2..16, sign
included); ``W_BLOCK`` rows of A (columns of B) that share one exponent, 0 = the
whole tensor; ``W_OUT`` ``OUT_FP32`` (C = RN32 of the exact product) or ``OUT_DFP``
(C requantized to a per-tensor dynamic fixed-point tensor of ``W_BITS`` bits);
``W_CARRY_A`` / ``W_CARRY_B``: 0, or the width of the dfp site whose ``OUT_DFP``
output this operand is (a chain in the GEMM DAG, passes/dfp_chain.py): the operand
keeps that site's shared exponent and mantissas (:func:`carried_mantissas`) instead
of being quantized again.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.numerics.executor_common import (
    ERR_FIRST_OWN,
    ERR_PARAMS,
    ERR_SHAPE,
    OK,
    RINT_MAGIC,
    SHAPE_MESSAGE,
    nonfinite_rule,
    row_form,
)

__all__ = [
    "W_BITS", "W_BLOCK", "W_OUT", "W_CARRY_A", "W_CARRY_B", "N_WORDS", "OUT_FP32", "OUT_DFP", "MIN_BITS", "MAX_BITS",
    "STAT_NONFINITE", "STAT_OUT_EXPONENT", "STAT_CARRIES", "STAT_CARRY_MISSES", "N_STATS", "OK", "ERR_PARAMS", "ERR_SHAPE", "ERR_K",
    "STATUS_MESSAGES", "max_k", "shared_exponent", "quantize_blocks", "carried_mantissas", "dfp_gemm",
]

W_BITS = 0
W_BLOCK = 1
W_OUT = 2
W_CARRY_A = 3
W_CARRY_B = 4
N_WORDS = 5
OUT_FP32 = 0
OUT_DFP = 1
MIN_BITS = 2
MAX_BITS = 16

STAT_NONFINITE = 0  # outputs set by the non-finite rule
STAT_OUT_EXPONENT = 1  # the output's shared exponent (OUT_DFP; 0 otherwise)
STAT_CARRIES = 2  # blocks (A, B and the output) whose rounded maximum took one more right shift
STAT_CARRY_MISSES = 3  # carried operands (W_CARRY_*) that were not a dfp tensor of that width: quantized again
N_STATS = 4

ERR_K = ERR_FIRST_OWN
STATUS_MESSAGES: dict[int, str] = {
    ERR_PARAMS: "the config words are invalid (encode configs with DfpConfig.words(): bits 2..16, "
                "block >= 0, out 0 = fp32 or 1 = dfp, carry_a and carry_b 0 or 2..16)",
    ERR_SHAPE: SHAPE_MESSAGE,
    ERR_K: "K is too long for an exact float64 integer GEMM at this mantissa width "
           "(K * q_max(A) * q_max(B) must stay below 2^53, q_max = 2^(width-1) - 1 of each operand's "
           "width, bits or carry_*; use fewer bits or split K)",
}
"""What each non-zero status of :func:`dfp_gemm` means."""



@cached_njit(nogil=True)
def max_k(bits: int, bits_b: int = 0) -> int:
    """The largest K whose integer sums stay exact in float64: K·q_a·q_b < 2^53, with
    q = 2^(w−1) − 1 of each operand's width (``bits_b`` 0: both ``bits`` wide)."""
    qa = (1 << (bits - 1)) - 1
    qb = qa if bits_b == 0 else (1 << (bits_b - 1)) - 1
    return ((1 << 53) - 1) // (qa * qb)


@cached_njit(nogil=True)
def _rint(t: float) -> float:
    return (t + RINT_MAGIC) - RINT_MAGIC


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
def carried_mantissas(raw, width: int):
    """``(q, exps, taken)``: a carried operand (row form, float64, non-finite values
    count as 0) as the per-tensor dynamic fixed-point tensor of ``width`` bits that a
    dfp site with ``out=dfp`` wrote: its shared exponent E = ``shared_exponent(amax,
    width − 1)`` and mantissas ``q = raw·2^-E``. ``taken`` is False (and ``q``
    meaningless) unless every ``q`` is an integer: the operand is then not such a
    tensor (it changed after the site that wrote it) and is quantized again."""
    rows, kk = raw.shape
    amax = 0.0
    for i in range(rows):
        for k in range(kk):
            v = raw[i, k]
            if math.isfinite(v) and abs(v) > amax:
                amax = abs(v)
    e, carried = shared_exponent(amax, width - 1)
    exps = np.zeros(1, dtype=np.int64)
    exps[0] = e
    q = np.zeros((rows, kk))
    if carried:  # amax itself needs rounding at this width: not a tensor of this width
        return q, exps, False
    for i in range(rows):
        for k in range(kk):
            v = raw[i, k]
            if math.isfinite(v):
                t = math.ldexp(v, -e)
                if t != math.floor(t):
                    return q, exps, False
                q[i, k] = t
    return q, exps, True


@cached_njit(nogil=True)
def _operand(raw, bits: int, block: int, carry: int, stats):
    """``(q, exps, rows per exponent, carries)`` of one operand: carried (``carry`` > 0)
    when it is a dfp tensor of that width, else quantized with the site's own config
    (a carry that does not hold adds one to ``stats[STAT_CARRY_MISSES]``)."""
    rows = raw.shape[0]
    if carry > 0:
        q, exps, taken = carried_mantissas(raw, carry)
        if taken:
            return q, exps, max(rows, 1), 0
        stats[STAT_CARRY_MISSES] += 1
    q, exps, carries = quantize_blocks(raw, bits, block)
    return q, exps, rows if block == 0 else block, carries


@cached_njit(nogil=True)
def _params_ok(params) -> bool:
    if params.shape[0] < N_WORDS:
        return False
    bits = params[W_BITS]
    for w in (W_CARRY_A, W_CARRY_B):
        if params[w] != 0 and not MIN_BITS <= params[w] <= MAX_BITS:
            return False
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
    carry_a = params[W_CARRY_A]
    carry_b = params[W_CARRY_B]
    # the widest each operand can be: its own bits, or the carried width when wider
    if K > max_k(max(bits, carry_a), max(bits, carry_b)):
        return ERR_K
    stats[:] = 0
    if m == 0 or n == 0:
        return OK
    block = params[W_BLOCK]
    araw, abad = row_form(a, False)
    braw, bbad = row_form(b, True)
    qa, ea, bsa, ca = _operand(araw, bits, block, carry_a, stats)
    qb, eb, bsb, cb = _operand(braw, bits, block, carry_b, stats)
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
