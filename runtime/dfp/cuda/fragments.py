"""A CPU model of the dfp scheme's kernels (dfp_quant.cu around int8_gemm.cu): the row maxima, the
block exponents, the quantizers' arithmetic, the INT8 GEMM at the level of warps and lanes (ozaki2's
model of int8_gemm.cu, shared) and the rescaling. Tests compare it bit for bit with the CPU
executor. NumPy only; no numba."""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.dfp.cuda.desc import DfpDesc, pieces
from mixjit.runtime.mixpert.cuda.fragments import STATUS_NONFINITE
from mixjit.runtime.ozaki2.cuda.fragments import int8_gemm

__all__ = ["block_exponents", "quantize", "run_dfp"]


def _rows_k(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):  # float64 inputs beyond float32's range round to inf, as on the device
        return x.astype(np.float32).astype(np.float64)


def block_exponents(amax: np.ndarray, per: int, magnitude_bits: int) -> np.ndarray:
    """dfp_exponents for rows with largest magnitudes ``amax``, ``per`` rows per block: E = e(amax)
    + 1 - r, one more where amax·2^-E rounds (ties to even) to 2^r; 0 for an all-zero block."""
    out = []
    for z in range(max(math.ceil(len(amax) / per), 1)):
        v = float(amax[z * per:(z + 1) * per].max(initial=0.0))
        e = 0
        if v != 0.0:
            e = math.frexp(v)[1] - magnitude_bits
            if float(np.rint(math.ldexp(v, -e))) == float(1 << magnitude_bits):
                e += 1
        out.append(e)
    return np.array(out, dtype=np.int64)


def quantize(x: np.ndarray, rows_pad: int, k_pad: int, per: int, exps: np.ndarray,
             n_pieces: int, is_b: bool) -> tuple[np.ndarray, np.ndarray]:
    """dfp_quantize for the rows × K view ``x`` (float32-rounded, non-finite as 0): (the INT8 planes
    of the batches, batches × rows_pad × k_pad; the row sums of ``q - 128``), ``q = rint(v·2^-E)``
    of each row's block exponent. One piece: one plane, ``q``. Two: ``q - 128 = 256·h + l``, A's
    planes h, h, l, l and B's h, l, h, l; zero padding everywhere."""
    rows, k = x.shape
    scale = np.ldexp(1.0, -exps[np.arange(rows) // per]) if rows else np.zeros(0)
    q = np.rint(x * scale[:, None]).astype(np.int64)
    if n_pieces == 1:
        plane = np.zeros((1, rows_pad, k_pad), np.int8)
        plane[0, :rows, :k] = q.astype(np.int8)
        return plane, np.zeros(rows, np.int64)
    h, l = np.zeros((rows_pad, k_pad), np.int8), np.zeros((rows_pad, k_pad), np.int8)
    h[:rows, :k], l[:rows, :k] = q >> 8, (q & 255) - 128
    order = (h, l, h, l) if is_b else (h, h, l, l)
    return np.stack(order), (q - 128).sum(axis=1)


def run_dfp(a: np.ndarray, b: np.ndarray, desc: DfpDesc) -> tuple[np.ndarray, int]:
    """The kernels of ``desc`` on ``a`` (m×k) and ``b`` (k×n): (C in the input dtype, status)."""
    (m, k), n = a.shape, b.shape[1]
    m_pad, n_pad, k_pad = desc.padded(m, n, k)
    r, n_pieces = desc.bits - 1, pieces(desc.bits)
    planes, sums, exps, pers, status = [], [], [], [], 0
    for x, rows_pad, is_b in ((_rows_k(a), m_pad, False), (_rows_k(b.T), n_pad, True)):
        finite = np.isfinite(x)
        if not finite.all():
            status |= STATUS_NONFINITE
        x = np.where(finite, x, 0.0)
        per = desc.rows_per_block(x.shape[0])
        e = block_exponents(np.abs(x).max(axis=1, initial=0.0), per, r)
        p, rowsum = quantize(x, rows_pad, k_pad, per, e, n_pieces, is_b)
        planes.append(p)
        sums.append(rowsum)
        exps.append(e)
        pers.append(per)
    batch = int8_gemm(planes[0], planes[1], desc, m, n).astype(np.int64)
    s = batch[0]
    if n_pieces == 2:
        s = 65536 * s + 256 * (batch[1] + batch[2]) + batch[3] + 128 * (sums[0][:, None] + sums[1][None, :]) + 16384 * k
    shift = exps[0][np.arange(m) // pers[0]][:, None] + exps[1][np.arange(n) // pers[1]][None, :]
    v = np.ldexp(s.astype(np.float64), shift)
    if desc.out == "dfp":  # dfp_out_amax, then the requantization with the result's own exponent
        ec = int(block_exponents(np.abs(v).reshape(1, -1).max(axis=1, initial=0.0), 1, r)[0])
        v = np.ldexp(np.rint(np.ldexp(v, -ec)), ec)
    with np.errstate(over="ignore"):
        c = v.astype(np.float32) + np.float32(0.0)  # one rounding; a zero result +0; beyond FLT_MAX: inf
    return c.astype(a.dtype), status
