"""Compiled pieces shared by the executors of tf32x3, bf16xn, fp16x2, int8 and split.

All ``@cached_njit(nogil=True)`` (Numba, disk-cached, callable from compiled code);
semantics in docs/numerics.md ("Common conventions", "tf32x3"):

* :func:`row_form`: an operand in *row form* (A as m×K, B as Bᵀ n×K, float64
  copies of the FP32-domain values) and its rows holding an inf/NaN;
* :func:`nonfinite_rule`: the non-finite rule for the outputs of those rows/columns;
* :func:`chunked` / :func:`round_products32`: ``RN32`` of the exact
  ``X·Yᵀ (+ addend)`` for operands whose products are exact in float64, by float64
  GEMMs over chunks of :data:`CHUNK` along K, Ziv's rounding test, and an exact sum
  (runtime/numerics/exactsum.py) for the outputs the test leaves in doubt. Which outputs
  take the exact sum changes the time, never the bits;
* :func:`store`: copy a float32 result into the caller's C (any dtype, strides);
* the status codes ``OK`` / ``ERR_PARAMS`` / ``ERR_SHAPE`` and the shape-error message
  (``SHAPE_MESSAGE``) that the executors of dfp, vitbit and the multi-term schemes share
  (each adds its own ``ERR_*`` codes from ``ERR_FIRST_OWN`` on, and its own
  ``ERR_PARAMS`` message, which names its config class).

Operands of :func:`round_products32` are *chunk-major* (:func:`chunk_layout`):
``x3[c]`` is the m×w block of columns ``c·w ...`` of X, w = min(CHUNK, K) (the
last block zero padded), so that every float64 GEMM runs on contiguous blocks.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.numerics.exactsum import MAX_PARTIALS, add_piece, finish, round32

__all__ = [
    "CHUNK", "chunk_layout", "row_form", "nonfinite_rule", "chunked", "round_products32", "store",
    "OK", "ERR_PARAMS", "ERR_SHAPE", "ERR_FIRST_OWN", "SHAPE_MESSAGE", "RINT_MAGIC",
]

# ---- status codes shared by the executors (the numbers of executor_mixpert's codes of
# the same meaning, so that one code means one thing in every executor's block) -------
OK = 0
ERR_PARAMS = 3
ERR_SHAPE = 4
#: the first status number an executor may give a refusal of its own (dfp, vitbit: ERR_K)
ERR_FIRST_OWN = 5
SHAPE_MESSAGE = "shapes do not match: A is m x k, B must be k x n and C m x n"
"""The ``ERR_SHAPE`` message of every executor that returns it."""

#: 1.5 * 2^52: adding and subtracting it rounds |t| < 2^51 to an integer, ties to even
RINT_MAGIC = 6755399441055744.0

#: inner size of one float64 GEMM (the error bound's n): see docs/numerics.md, tf32x3
CHUNK = 1024
_U = 2.0**-53
_F32MAX = float(np.finfo(np.float32).max)
#: rows x columns of one transposition block of :func:`row_form`
_TB = 32


@cached_njit(nogil=True)
def row_form(x, transpose: bool):
    """``(raw, bad)``: float64 copy of ``x`` (``x.T`` if ``transpose``) with every value
    rounded to float32 first (the FP32 domain; overflow gives ±inf), and
    ``bad[i]``: row ``i`` of the copy holds an inf or NaN."""
    r = x.shape[1] if transpose else x.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    raw = np.empty((r, kk))
    if transpose:  # blocked, so that neither side is read with a long stride
        for k0 in range(0, kk, _TB):
            for i0 in range(0, r, _TB):
                for k in range(k0, min(k0 + _TB, kk)):
                    for i in range(i0, min(i0 + _TB, r)):
                        raw[i, k] = np.float64(np.float32(x[k, i]))
    else:
        for i in range(r):
            for k in range(kk):
                raw[i, k] = np.float64(np.float32(x[i, k]))
    bad = np.zeros(r, dtype=np.bool_)
    for i in range(r):
        for k in range(kk):
            if not math.isfinite(raw[i, k]):
                bad[i] = True
                break
    return raw, bad


@cached_njit(nogil=True)
def nonfinite_rule(araw, braw, abad, bbad, out) -> int:
    """The non-finite rule (docs/numerics.md, Common conventions) for every output
    whose row of A (``araw``, m×K) or column of B (``braw``, n×K) holds an inf/NaN:
    NaN if a term is NaN (a NaN input or inf·0) or the inf terms have both signs,
    else the inf of their sign. Returns the number of such outputs."""
    K = araw.shape[1]
    count = 0
    for i in range(araw.shape[0]):
        for j in range(braw.shape[0]):
            if not (abad[i] or bbad[j]):
                continue
            count += 1
            pos = False
            neg = False
            nan = False
            for k in range(K):
                a = araw[i, k]
                b = braw[j, k]
                if math.isnan(a) or math.isnan(b):
                    nan = True
                    break
                if math.isinf(a) or math.isinf(b):
                    if a == 0.0 or b == 0.0:
                        nan = True
                        break
                    if (a > 0.0) == (b > 0.0):
                        pos = True
                    else:
                        neg = True
            if nan or (pos and neg):
                out[i, j] = np.nan
            elif pos:
                out[i, j] = np.inf
            elif neg:
                out[i, j] = -np.inf
    return count


@cached_njit(nogil=True)
def chunk_layout(kk: int) -> tuple[int, int]:
    """``(chunks, width)`` of the chunk-major layout of ``kk`` columns."""
    w = max(1, min(CHUNK, kk))
    return (kk + w - 1) // w, w


@cached_njit(nogil=True)
def chunked(src, rows, cols):
    """Chunk-major copy of ``src[rows][:, cols]`` (float64): shape
    (chunks, len(rows), width) of :func:`chunk_layout`, zero padded."""
    kk = cols.shape[0]
    nch, w = chunk_layout(kk)
    out = np.zeros((nch, rows.shape[0], w))
    for t in range(rows.shape[0]):
        r = rows[t]
        for k in range(kk):
            out[k // w, t, k % w] = src[r, cols[k]]
    return out


@cached_njit(nogil=True)
def _half_interval(c: np.float32) -> float:
    """Half the float32 rounding interval of ``c`` (a quarter ulp at a power of two,
    where the lower neighbour is closer)."""
    u = np.float32(abs(c)).view(np.uint32)
    e = (u >> np.uint32(23)) & np.uint32(0xFF)
    ulp = 2.0**-149 if e == 0 else math.ldexp(1.0, np.int64(e) - 150)
    return ulp * (0.25 if (u & np.uint32(0x7FFFFF)) == 0 else 0.5)


@cached_njit(nogil=True)
def _double_double32(x3, y3, i: int, j: int, addend: float, out) -> bool:
    """Second test for an output the GEMM's bound left in doubt: Σ x[i,k]·y[j,k] +
    addend (exact products) in double-double (Ogita-Rump-Oishi Sum2:
    |hi + lo - S| <= γ_n²·Σ|terms|); if that interval and the final addition's error
    lie inside the rounding interval of ``RN32(hi + lo)``, write it and return True."""
    hi = addend
    lo = 0.0
    tot = abs(addend)
    nterms = 1
    for c in range(x3.shape[0]):
        for k in range(x3.shape[2]):
            v = x3[c, i, k] * y3[c, j, k]
            s = hi + v
            bb = s - hi
            lo += (hi - (s - bb)) + (v - bb)
            hi = s
            tot += abs(v)
            nterms += 1
    t = hi + lo
    g = nterms * _U
    err = 2.0 * g * g * tot + 2.0 * _U * abs(t)
    cv = np.float32(t)
    if abs(cv) < _F32MAX and abs(t - np.float64(cv)) + err < _half_interval(cv):
        out[i, j] = cv + np.float32(0.0)
        return True
    return False


@cached_njit(nogil=True)
def round_products32(x3, y3, kk: int, addend, use_addend: bool, out) -> int:
    """``out[i, j] = RN32(Σ_k x[i,k]·y[j,k] + addend[i,j])``, the sum taken exactly.

    ``x3`` / ``y3``: chunk-major float64 operands (:func:`chunked`) of X (m×K) and Y
    (n×K), finite, every product exact in float64 (the caller's contract); ``kk``
    the K they were built from (the padding is zeros);
    ``addend`` m×n float64 (read only if ``use_addend``); ``out`` m×n float32.
    Returns the number of outputs Ziv's test left in doubt (each then re-summed in
    double-double with a tighter bound, and exactly if that is still in doubt).
    """
    nch, m, w = x3.shape
    n = y3.shape[1]
    s = np.zeros((m, n))
    if use_addend:
        s[:, :] = addend
    d = np.empty((m, n))
    for c in range(nch):
        np.dot(x3[c], y3[c].T, d)
        s += d
    # |S' - S| <= gamma_chunk * sum|terms| per chunk, plus the chunk additions
    # (Higham §3.1); sum|terms| <= ||x_i||_2 ||y_j||_2 (Cauchy-Schwarz)
    nx = np.zeros(m)
    ny = np.zeros(n)
    for c in range(nch):
        for i in range(m):
            for k in range(w):
                nx[i] += x3[c, i, k] * x3[c, i, k]
        for j in range(n):
            for k in range(w):
                ny[j] += y3[c, j, k] * y3[c, j, k]
    for i in range(m):
        nx[i] = math.sqrt(nx[i])
    for j in range(n):
        ny[j] = math.sqrt(ny[j])
    adds = nch + 2
    g = 2.0 * (min(kk, w) + adds) * _U
    slow = 0
    p = np.empty(MAX_PARTIALS)
    for i in range(m):
        for j in range(n):
            sv = s[i, j]
            err = g * nx[i] * ny[j] + 2.0 * _U * abs(sv)
            if use_addend:
                err += 2.0 * adds * _U * abs(addend[i, j])
            cv = np.float32(sv)
            if abs(cv) < _F32MAX and abs(sv - np.float64(cv)) + err < _half_interval(cv):
                out[i, j] = cv + np.float32(0.0)
                continue
            slow += 1
            if _double_double32(x3, y3, i, j, addend[i, j] if use_addend else 0.0, out):
                continue
            cnt = 0
            if use_addend and addend[i, j] != 0.0:
                cnt = add_piece(p, 0, addend[i, j])
            for c in range(nch):
                for k in range(w):
                    v = x3[c, i, k] * y3[c, j, k]
                    if v != 0.0:
                        cnt = add_piece(p, cnt, v)
            hi, lo = finish(p, cnt)
            out[i, j] = round32(hi, lo)
    return slow


@cached_njit(nogil=True)
def store(out, c):
    """``c[:] = out`` (float32 values, exact in float32 and float64 ``c``)."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            c[i, j] = out[i, j]
