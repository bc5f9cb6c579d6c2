"""A CPU model of the generated mixpert-fp64 kernels, at the level of warps, lanes and registers.

It runs the same arithmetic as mixpert_fp64_pack.cu and mixpert_fp64_gemm.cu, driven by the same
:class:`~mixjit.runtime.mixpert.cuda.fp64_desc.Fp64Desc`: the float64 split (mixpert's ``_split``), the group exponents
and alignment shift, the sign-magnitude digit planes, the cp.async copy of each 32-wide K chunk
(mixpert's ``chunk_products``: the chunk's loads, the per-lane fragments and the MMA as the PTX ISA defines it
(runtime/cuda/fragments.py), the INT32 accumulator of each diagonal and its flushes, the exact
accumulator and the single rounding to float64. Its result is the kernel's ``P = RN64(X)``;
:func:`~mixjit.runtime.mixpert.cuda.host_check.guarantee_on_host` then gives the CPU executor's
bits (tests/cuda/test_mixpert_fp64_model.py). NumPy only; no numba.
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.cuda.desc import MMA_K, cdiv
from mixjit.runtime.cuda.fragments import round_to_float
from mixjit.runtime.mixpert.cuda.fp64_desc import Fp64Desc
from mixjit.runtime.mixpert.cuda.fragments import (
    F64_FORMAT,
    NO_EXP,
    STATUS_NONFINITE,
    STATUS_SPAN,
    ZERO_EXP,
    Packed,
    _shift,
    _split,
    chunk_products,
    warp_scales,
)

__all__ = ["pack_operand64", "run_gemm64"]


def pack_operand64(rows_k: np.ndarray, desc: Fp64Desc, is_b: bool, rows_pad: int, k_pad: int) -> Packed:
    """mixpert_fp64_pack.cu for one operand given as its rows × K view (A: op(A); B: op(B).T):
    split, group exponents per row or tile and k-tile, shift, sign-magnitude digit planes."""
    tr = desc.tile[2] if is_b else desc.tile[0]
    tk = desc.tile[1]
    nkt = cdiv(k_pad, tk)
    x = np.zeros((rows_pad, nkt * tk), np.float64)
    x[: rows_k.shape[0], : rows_k.shape[1]] = rows_k
    bits = x.view(np.uint64)
    finite = ((bits >> np.uint64(52)) & np.uint64(0x7FF)) != 0x7FF
    use = finite & ((bits << np.uint64(1)) != 0)
    status = 0 if finite.all() else STATUS_NONFINITE
    mag, e = _split(np.where(use, bits, np.uint64(1 << 62)), desc.width, F64_FORMAT)  # 1 << 62: 2.0, a stand-in
    e = np.where(use, e, NO_EXP)
    rowmax = e.reshape(rows_pad // tr, tr, nkt, tk).max(axis=3)  # (row tiles, tr, nkt)
    group = rowmax if desc.align == "row" else np.broadcast_to(rowmax.max(axis=1, keepdims=True), rowmax.shape)
    group_el = np.repeat(group.reshape(rows_pad, nkt), tk, axis=1)
    q = np.where(use, _shift(mag, np.where(use, group_el - e, 0), desc.rounding == "round"), 0)
    negative = (bits >> np.uint64(63)) != 0
    planes = np.empty((len(desc.b_segments if is_b else desc.a_segments), rows_pad, k_pad), np.int8)
    for p, seg in enumerate(desc.b_segments if is_b else desc.a_segments):
        digit = q >> (desc.digit_bits * (desc.segments - 1 - seg))
        if seg > 0:
            digit = digit & 127
        planes[p] = np.where(negative, -digit, digit)[:, :k_pad].astype(np.int8)
    gexp = np.where(group == NO_EXP, ZERO_EXP, group).reshape(rows_pad, nkt)
    return Packed(planes, gexp.astype(np.int64), status)


def run_gemm64(a: np.ndarray, b: np.ndarray, desc: Fp64Desc) -> tuple[np.ndarray, int]:
    """The three kernels of ``desc`` on float64 ``a`` (m×k) and ``b`` (k×n): (P, status), P the
    kernel's ``RN64(X)`` before the host's step 6; a nonzero status hands the GEMM to the CPU
    executor."""
    params = desc.template_params()
    pairs = list(zip(params["kPairA"], params["kPairB"], params["kPairDiag"]))
    shifts, flush = params["kDiagShift"], params["kFlushChunks"]
    m, k = a.shape
    n = b.shape[1]
    bm, bn = desc.block
    tk = desc.tile[1]
    m_pad, n_pad = cdiv(m, bm) * bm, cdiv(n, bn) * bn
    k_pad = desc.k_pad(k)
    A = pack_operand64(a, desc, False, m_pad, k_pad)
    B = pack_operand64(b.T, desc, True, n_pad, k_pad)
    status = A.status | B.status
    wm, wn = desc.warp_tile
    mi_n, ni_n = wm // 16, wn // 8
    ktiles, chunks, per_ktile = cdiv(k_pad, tk), k_pad // MMA_K, tk // MMA_K
    out = np.zeros((m, n), np.float64)
    for by in range(m_pad // bm):
        for bx in range(n_pad // bn):
            m0, n0 = by * bm, bx * bn
            for warp in range(desc.warps[0] * desc.warps[1]):
                wm0, wn0 = (warp // desc.warps[1]) * wm, (warp % desc.warps[1]) * wn
                rows, cols, ea_all, eb_all, valid, emin, emax, anyv = warp_scales(A, B, m0 + wm0, n0 + wn0, mi_n, ni_n)
                if (anyv & (emax - emin + desc.partial_bits + int(ktiles).bit_length() > params["kAccBits"])).any():
                    status |= STATUS_SPAN
                acc = np.zeros(rows.shape, object)
                diag = np.zeros((len(shifts),) + rows.shape, np.int64)
                for chunk in range(chunks):
                    for dg, mi, ni, d in chunk_products(desc, A, B, m0, n0, chunk, wm0, wn0, mi_n, ni_n, pairs):
                        diag[dg, :, mi, ni, :] += d
                    assert np.abs(diag).max(initial=0) < 2**31, "a diagonal's INT32 accumulator overflowed"
                    kt, in_tile = chunk // per_ktile, chunk % per_ktile
                    if (in_tile + 1) % flush == 0 or in_tile + 1 == per_ktile or chunk + 1 == chunks:
                        scale = np.where(valid[..., kt], ea_all[..., kt] + eb_all[..., kt] - emin, 0)  # zero groups: zero diagonals
                        for dg, shift in enumerate(shifts):
                            weight = 2 ** (shift + scale).astype(object)
                            acc = acc + np.where(diag[dg] != 0, diag[dg].astype(object) * weight, 0)
                        diag[:] = 0
                assert status & STATUS_SPAN or all(abs(v) < 2 ** params["kAccBits"] for v in acc.ravel()), \
                    "exact accumulator overflow that the span check missed"
                for idx in np.ndindex(rows.shape):
                    row, col = rows[idx], cols[idx]
                    if row < m and col < n and anyv[idx]:
                        out[row, col] = round_to_float(int(acc[idx]), int(emin[idx]) - 2 * (desc.width - 1),
                                                       np.float64)
    return out, status
