"""A CPU model of the generated MixPert kernels, at the level of warps, lanes and registers.

It runs the same index arithmetic as the templates, driven by the same :class:`KernelDesc`:
the packer (split, group exponents, alignment shift, digits, plane layout), the cp.async copy
of each 32-wide K chunk into shared memory (16-byte units), the per-lane fragment loads
(byte offsets as the kernel computes them), the MMA itself as the PTX ISA defines it
(``mma.m16n8k32`` .s8 fragment tables: which lane holds which element of A, B and C), the
int64 pair combination, the exact two-word accumulator and the single rounding to float32.

The MMA is evaluated from the *PTX tables* (runtime/cuda/fragments.py, shared by every
family's model), independently of the kernel's load offsets, so a wrong load address or
layout in the template shows up as a wrong result. Tests compare the model bit for bit with
the CPU executor (``mixjit.gemm(..., scheme="mixpert")``). NumPy only; no numba.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from mixjit.runtime.cuda.desc import MMA_K
from mixjit.runtime.cuda.fragments import A_LOADS, B_LOADS, LANES, axpby, mma_m16n8k32, round_to_f32, u32
from mixjit.runtime.mixpert.cuda.desc import KernelDesc

__all__ = ["pack_operand", "Packed", "run_gemm", "STATUS_NONFINITE", "STATUS_FALLBACK", "STATUS_SPAN", "NO_EXP",
           "ZERO_EXP"]

NO_EXP = -32768
ZERO_EXP = -(1 << 30)
STATUS_NONFINITE, STATUS_FALLBACK, STATUS_SPAN = 1, 2, 4


@dataclass
class Packed:
    """One packed operand: planes (P × rows_pad × k_pad int8), gexp (rows_pad × k-tiles), status."""

    planes: np.ndarray
    gexp: np.ndarray
    status: int


def _bit_length(v: np.ndarray) -> np.ndarray:
    n = np.zeros(v.shape, np.int64)
    for b in range(64):
        n += (v >> b) > 0
    return n


#: (significand bits p, largest exponent) of the formats the packers split: float32, float64
F32_FORMAT, F64_FORMAT = (24, 127), (53, 1023)


def _split(bits: np.ndarray, width: int, fmt: tuple[int, int] = F32_FORMAT) -> tuple[np.ndarray, np.ndarray]:
    """The packers' element split, vectorised (``bits``: the float's bits as non-negative integers;
    float32: mixpert_common.cuh split_element, float64: mixpert_fp64_common.cuh split_element64):
    magnitudes M and exponents e, RNE to ``width`` bits, a carry past the largest exponent truncated."""
    p, emax = fmt
    be = (bits >> (p - 1)).astype(np.int64) & (2 * emax + 1)
    frac = (bits & ((1 << (p - 1)) - 1)).astype(np.int64)
    nb = _bit_length(frac)
    sub = be == 0
    mant = np.where(sub, frac << np.clip(p - nb, 0, 63), frac | (1 << (p - 1)))
    e = np.where(sub, -(emax + p - 2) + nb - 1, be - emax)
    if width >= p:
        return mant << (width - p), e
    sh = p - width
    m = mant >> sh
    rem = mant & ((1 << sh) - 1)
    half = 1 << (sh - 1)
    m = m + ((rem > half) | ((rem == half) & ((m & 1) == 1)))
    carry = m == (1 << width)
    top = carry & (e >= emax)
    m = np.where(top, m - 1, np.where(carry, 1 << (width - 1), m))
    e = np.where(carry & ~top, e + 1, e)
    return m, e


def _shift(a: np.ndarray, d: np.ndarray, nearest: bool) -> np.ndarray:
    """mixpert_common.cuh shift_magnitude, vectorised (a >= 0, d >= 0)."""
    dd = np.clip(d, 0, 62)
    q = a >> dd
    if nearest:
        rem = a - (q << dd)
        half = (np.int64(1) << dd) >> 1
        q = q + ((dd > 0) & ((rem > half) | ((rem == half) & ((q & 1) == 1))))
    return np.where(d >= 63, 0, q)


def pack_operand(rows_k: np.ndarray, desc: KernelDesc, is_b: bool, rows_pad: int, k_pad: int) -> Packed:
    """mixpert_pack.cu for one operand given as its rows × K view (A: op(A); B: op(B).T): split,
    group exponents (with the balanced digits' +128 bump), shift, digits, plane layout."""
    tr = desc.tile[2] if is_b else desc.tile[0]
    tk = desc.tile[1]
    planes_seg = desc.b_segments if is_b else desc.a_segments
    x = np.zeros((rows_pad, k_pad), np.float32)
    x[: rows_k.shape[0], : rows_k.shape[1]] = rows_k.astype(np.float32)  # RN32 of float64 inputs
    bits = x.view(np.uint32).astype(np.int64)
    finite = ((bits >> 23) & 0xFF) != 0xFF
    use = finite & ((bits & 0x7FFFFFFF) != 0)
    status = STATUS_NONFINITE if not finite.all() else 0
    mag, e = _split(bits, desc.width)
    e = np.where(use, e, NO_EXP)
    nkt = k_pad // tk
    negative = (bits >> 31) != 0
    tiles = e.reshape(rows_pad // tr, tr, nkt, tk)
    rowmax = tiles.max(axis=3)  # (row tiles, tr, nkt)
    rowmax_el = np.repeat(rowmax.reshape(rows_pad, nkt), tk, axis=1)
    # balanced digits' +128 edge: a positive element at its row's max exponent with M > 127*R
    over = (use & (e == rowmax_el) & ~negative & (mag > desc.max_aligned)).reshape(rows_pad // tr, tr, nkt, tk)
    over = over.any(axis=3)
    if desc.align == "row":
        group, bump = rowmax, over
    else:
        top = rowmax.max(axis=1, keepdims=True)
        group = np.broadcast_to(top, rowmax.shape)
        bump = np.broadcast_to(((rowmax == top) & over).any(axis=1, keepdims=True), rowmax.shape)
    group = np.where(bump & (group != NO_EXP), group + 1, group)
    group_el = np.repeat(group.reshape(rows_pad, nkt), tk, axis=1)
    d = np.where(use, group_el - e, 0)
    q = np.where(use, _shift(mag, d, desc.rounding == "round"), 0)
    q = np.where((group_el > 127) & (q > (1 << (desc.width - 1)) - 1), (1 << (desc.width - 1)) - 1, q)
    if desc.fallback >= 0:
        nz = use.reshape(rows_pad // tr, tr, nkt, tk).sum(axis=(1, 3))
        far = (use & (d > desc.fallback)).reshape(rows_pad // tr, tr, nkt, tk).sum(axis=(1, 3))
        if (8 * far > nz).any():
            status |= STATUS_FALLBACK
    planes = np.empty((len(planes_seg), rows_pad, k_pad), np.int8)
    for p, seg in enumerate(planes_seg):
        shift = desc.digit_bits * (desc.segments - 1 - seg)
        if desc.digits == "balanced":
            u = np.where(negative, -q, q) + desc.balanced_offset
            planes[p] = (((u >> shift) & 255) - 128).astype(np.int8)
        else:
            digit = q >> shift
            if seg > 0:
                digit = digit & 127
            planes[p] = np.where(negative, -digit, digit).astype(np.int8)
    gexp = np.where(group == NO_EXP, ZERO_EXP, group).reshape(rows_pad, nkt)
    return Packed(planes, gexp.astype(np.int64), status)


# -- the GEMM kernel ---------------------------------------------------------------------------
def _load_chunk(desc: KernelDesc, pa: np.ndarray, pb: np.ndarray, m0: int, n0: int, chunk: int) -> tuple:
    """mixpert_gemm.cu load_chunk: the 16-byte cp.async units of one K chunk, per thread index."""
    bm, bn = desc.block
    na, nb = len(desc.a_segments), len(desc.b_segments)
    sa = np.zeros((na, bm, MMA_K), np.int8)
    sb = np.zeros((nb, bn, MMA_K), np.int8)
    k0 = chunk * MMA_K
    units_a = na * bm * 2
    for u in range(units_a + nb * bn * 2):
        if u < units_a:
            plane, row, half = u // (bm * 2), (u // 2) % bm, u % 2
            sa[plane, row, 16 * half:16 * half + 16] = pa[plane, m0 + row, k0 + 16 * half:k0 + 16 * half + 16]
        else:
            v = u - units_a
            plane, col, half = v // (bn * 2), (v // 2) % bn, v % 2
            sb[plane, col, 16 * half:16 * half + 16] = pb[plane, n0 + col, k0 + 16 * half:k0 + 16 * half + 16]
    return sa, sb


def chunk_products(desc: KernelDesc, A: Packed, B: Packed, m0: int, n0: int, chunk: int, wm0: int, wn0: int,
                   mi_n: int, ni_n: int, pairs: list[tuple[int, int, int]]) -> Iterator[tuple[int, int, int, np.ndarray]]:
    """One K chunk of a warp's MMAs, as the GEMM kernels' main loop issues them (the float32 and
    float64 kernels alike): the chunk loaded (:func:`_load_chunk`), then for each kept pair
    ``(plane of A, plane of B, tag)`` and each fragment ``(mi, ni)``, ``(tag, mi, ni, P)`` with P the
    m16n8k32 INT32 product per lane. The caller accumulates P by its tag (a shift, a diagonal)."""
    sa, sb = _load_chunk(desc, A.planes, B.planes, m0, n0, chunk)
    g, t = LANES // 4, LANES % 4
    for pa, pb, tag in pairs:
        for mi in range(mi_n):
            r = wm0 + 16 * mi + g
            fa = np.stack([u32(sa[pa], r + dr, dc + 4 * t) for dr, dc in A_LOADS], axis=1)
            for ni in range(ni_n):
                cidx = wn0 + 8 * ni + g
                fb = np.stack([u32(sb[pb], cidx, dc + 4 * t) for dc in B_LOADS], axis=1)
                yield tag, mi, ni, mma_m16n8k32(fa, fb)


def warp_scales(A: Packed, B: Packed, row0: int, col0: int, mi_n: int, ni_n: int) -> tuple:
    """The GEMMs' prescan (mixpert_common.cuh prescan_scales) for one warp tile at (row0, col0) of
    mi_n × ni_n m16n8 tiles: each element's (lane, mi, ni, c) row and column as the kernel computes
    them, their group exponents per k-tile, which k-tiles have a nonzero product, the smallest and
    largest E_A + E_B among those, and whether any has one."""
    g, t, c_idx = LANES // 4, LANES % 4, np.arange(4)
    rows = (row0 + 16 * np.arange(mi_n)[None, :, None, None] + g[:, None, None, None]
            + 8 * (c_idx // 2)[None, None, None, :]) + 0 * np.arange(ni_n)[None, None, :, None]
    cols = (col0 + 8 * np.arange(ni_n)[None, None, :, None] + 2 * t[:, None, None, None]
            + (c_idx % 2)[None, None, None, :]) + 0 * np.arange(mi_n)[None, :, None, None]
    ea_all, eb_all = A.gexp[rows], B.gexp[cols]  # (..., ktiles)
    valid = (ea_all != ZERO_EXP) & (eb_all != ZERO_EXP)
    sums = np.where(valid, ea_all + eb_all, 0)
    emin = np.where(valid, sums, np.iinfo(np.int64).max).min(axis=-1)
    emax = np.where(valid, sums, np.iinfo(np.int64).min).max(axis=-1)
    return rows, cols, ea_all, eb_all, valid, emin, emax, valid.any(axis=-1)


def run_gemm(a: np.ndarray, b: np.ndarray, desc: KernelDesc, alpha: float = 1.0, beta: float = 0.0,
             c: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """The three kernels of ``desc`` on ``a`` (m×k) and ``b`` (k×n): (C, status). C has the
    input dtype; a nonzero status means the kernel path hands the GEMM to the CPU executor.
    ``alpha``, ``beta`` and ``c`` are read in ``alpha_beta="update"`` mode only."""
    if desc.alpha_beta == "update" and beta != 0.0 and c is None:
        raise ValueError("fragments: update mode with beta != 0 needs c")
    params = desc.template_params()
    pairs = list(zip(params["kPairA"], params["kPairB"], params["kPairShift"]))
    m, k = a.shape
    n = b.shape[1]
    bm, bn = desc.block
    tk = desc.tile[1]
    m_pad, n_pad = -(-m // bm) * bm, -(-n // bn) * bn
    k_pad = max(-(-k // tk), 1) * tk
    A = pack_operand(a, desc, False, m_pad, k_pad)
    B = pack_operand(b.T, desc, True, n_pad, k_pad)
    status = A.status | B.status
    wm, wn = desc.warp_tile
    mi_n, ni_n = wm // 16, wn // 8
    ktiles, chunks = k_pad // tk, k_pad // MMA_K
    per_ktile = tk // MMA_K
    out = np.zeros((m, n), a.dtype)
    width = desc.width
    for by in range(m_pad // bm):
        for bx in range(n_pad // bn):
            m0, n0 = by * bm, bx * bn
            for warp in range(desc.warps[0] * desc.warps[1]):
                wm0, wn0 = (warp // desc.warps[1]) * wm, (warp % desc.warps[1]) * wn
                rows, cols, ea_all, eb_all, valid, emin, emax, anyv = warp_scales(A, B, m0 + wm0, n0 + wn0, mi_n, ni_n)
                if (anyv & (emax - emin + desc.partial_bits + int(ktiles).bit_length() > 126)).any():
                    status |= STATUS_SPAN
                acc = np.zeros(rows.shape, object)
                part = np.zeros(rows.shape, np.int64)
                for chunk in range(chunks):
                    for shift, mi, ni, d in chunk_products(desc, A, B, m0, n0, chunk, wm0, wn0, mi_n, ni_n, pairs):
                        part[:, mi, ni, :] += d.astype(np.int64) << shift
                    if (chunk + 1) % per_ktile == 0:
                        kt = chunk // per_ktile
                        ok = valid[..., kt] & (part != 0)
                        sh = np.where(ok, ea_all[..., kt] + eb_all[..., kt] - np.where(anyv, emin, 0), 0)
                        acc = acc + np.where(ok, part.astype(object) * (2 ** sh.astype(object)), 0)
                        part[:] = 0
                assert status & STATUS_SPAN or all(abs(v) < 2**126 for v in acc.ravel()), \
                    "two-word accumulator overflow that the span check missed"
                for idx in np.ndindex(rows.shape):
                    row, col = rows[idx], cols[idx]
                    if row < m and col < n:
                        p = round_to_f32(int(acc[idx]), int(emin[idx]) - 2 * (width - 1)) if anyv[idx] \
                            else np.float32(0.0)
                        if desc.alpha_beta == "update":
                            p = axpby(p, alpha, beta, c[row, col] if beta != 0.0 else None, out.dtype)
                        out[row, col] = p
    return out, status
