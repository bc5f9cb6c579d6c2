"""CPU model of the VitBit kernels (templates/vitbit_pack.cu, templates/vitbit_gemm.cu), driven by
the same :class:`~mixjit.runtime.vitbit.cuda.desc.VitbitDesc` as the generated code.

The host step (:func:`host_scales`) is the CPU executor's own quantization scales. The packers
are modelled by their formulas (quantize, pack P values into a uint32 word modulo 2^32, convert,
transpose). The fused GEMM is modelled CTA by CTA and warp role by warp role: the cp.async copy
of each K chunk's A and tensor-core tiles unit by unit, the tensor warps' fragment loads at the
template's offsets with the MMA evaluated from the PTX tables
(:func:`mixjit.runtime.cuda.fragments.mma_m16n8k32`), the INT threads' uint32 IMADs on packed
words with the field extraction after every ``acc`` k-steps (uint32 arithmetic, as the kernel),
the FP threads' FP32 FMAs with the hand-over to INT32 every ``fp_block`` k-steps, and the
dequantizing epilogue. Tests compare its integer sums with the scheme's word-level emulation
and its output with the CPU executor bit for bit. NumPy only (the host scales call the
executor's compiled quantizer, as the launch path does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixjit.runtime.cuda.desc import MMA_K, Launch
from mixjit.runtime.cuda.fragments import A_LOADS, B_LOADS, LANES, axpby, mma_m16n8k32, u32
from mixjit.runtime.int8 import executor as ei8
from mixjit.runtime.vitbit.cuda.desc import VitbitDesc, column_split, fp_block, pack_count, qmax, slot_bits

__all__ = ["Planes", "host_scales", "pack_a", "pack_b", "extract_fields", "gemm", "run_vitbit", "STATUS_NONFINITE"]

STATUS_NONFINITE = 1
_MASK32 = np.int64(0xFFFFFFFF)


@dataclass
class Planes:
    """What the packers write: A's int8 plane, B's packed words, converted floats and tensor plane."""

    a: np.ndarray  # [m_pad][k_pad] int8
    words: np.ndarray  # [k_pad][g_pad] uint32
    conv: np.ndarray  # [k_pad][n2_pad] float32
    tens: np.ndarray  # [n3_pad][k_pad] int8


def host_scales(a: np.ndarray, b: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of A and column of B: RN64(amax/q_max), by the executor's own quantizer."""
    return (ei8.quantize_symmetric(a, False, float(qmax(bits)))[1],
            ei8.quantize_symmetric(b, True, float(qmax(bits)))[1])


def _quantize(rows_k: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, int]:
    """vitbit_pack.cu quantize on a rows × K view: q = rint(RN64(RN32(x)/s)), 0 where s = 0 or x is
    not finite (which sets the status)."""
    with np.errstate(over="ignore"):
        x = rows_k.astype(np.float32).astype(np.float64)
    bad = ~np.isfinite(x)
    x = np.where(bad, 0.0, x)
    s = scale[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(s == 0.0, 0.0, np.rint(x / np.where(s == 0.0, 1.0, s)))
    return q.astype(np.int64), STATUS_NONFINITE if bad.any() else 0


def pack_a(a: np.ndarray, scale_a: np.ndarray, m_pad: int, k_pad: int) -> tuple[np.ndarray, int]:
    """vitbit_pack_a: (int8 plane [m_pad][k_pad], status)."""
    q, status = _quantize(a, scale_a)
    plane = np.zeros((m_pad, k_pad), np.int8)
    plane[: q.shape[0], : q.shape[1]] = q
    return plane, status


def pack_b(b: np.ndarray, scale_b: np.ndarray, desc: VitbitDesc, n1: int, n2: int,
           pads: dict[str, int]) -> tuple[Planes, int]:
    """vitbit_pack_b's three parts (grid.z 0, 1, 2); ``Planes.a`` is left empty."""
    k, n = b.shape
    q, status = _quantize(b.T, scale_b)  # n × k
    kp, npk, slot = pads["k_pad"], desc.pack, slot_bits(desc.bits)
    qp = np.zeros((pads["g_pad"] * npk, kp), np.int64)
    qp[:n1, :k] = q[:n1]
    words = np.zeros((kp, pads["g_pad"]), np.int64)
    for p in range(npk):  # word += (u32)q << kSlot*(kPack-1-p), modulo 2^32
        words = (words + ((qp[p::npk].T & _MASK32) << (slot * (npk - 1 - p)))) & _MASK32
    conv = np.zeros((kp, pads["n2_pad"]), np.float32)
    conv[:k, :n2] = q[n1:n1 + n2].T
    tens = np.zeros((pads["n3_pad"], kp), np.int8)
    tens[: n - n1 - n2, :k] = q[n1 + n2:]
    return Planes(np.empty((0, 0), np.int8), words.astype(np.uint32), conv, tens), status


def extract_fields(reg: np.ndarray, bits: int) -> list[np.ndarray]:
    """vitbit_gemm.cu extract_fields on uint32 words: the kPack signed fields (field p at bit
    kSlot·(kPack−1−p)), lowest first, each sign-extended and its borrow returned, in uint32."""
    npk, slot = pack_count(bits), slot_bits(bits)
    half = 1 << (slot - 1)
    r = reg.astype(np.int64)
    fields: list[np.ndarray] = [np.empty(0)] * npk
    for p in range(npk - 1, 0, -1):
        f = ((r & ((1 << slot) - 1)) ^ half) - half
        fields[p] = f
        r = ((r - f) & _MASK32) >> slot
    top = 32 - slot * (npk - 1)
    fields[0] = ((r & ((1 << top) - 1)) ^ (1 << (top - 1))) - (1 << (top - 1))
    return fields


def _load_tiles(desc: VitbitDesc, plane_a: np.ndarray, tens: np.ndarray, m0: int, c0: int,
                chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """vitbit_gemm.cu load_tiles: the 16-byte cp.async units u -> (row, half) of one K chunk."""
    bm, bn = desc.block
    k0 = chunk * MMA_K
    tile = np.zeros((bm + bn, 2, 16), np.int8)
    u = np.arange(2 * (bm + bn))
    row, half = u // 2, u % 2
    src_a = row < bm
    cols = k0 + 16 * half[:, None] + np.arange(16)
    tile[row[src_a], half[src_a]] = plane_a[m0 + row[src_a, None], cols[src_a]]
    tile[row[~src_a], half[~src_a]] = tens[c0 + row[~src_a, None] - bm, cols[~src_a]]
    tile = tile.reshape(bm + bn, MMA_K)
    return tile[:bm], tile[bm:]


def _tensor_warp(desc: VitbitDesc, role_warp: int, sa: np.ndarray, sb: np.ndarray, acc: np.ndarray) -> None:
    """One tensor warp's fragment loads and MMAs for one chunk (acc: kMmaM × kMmaN × 32 × 4)."""
    wm, wn = desc.warp_tile
    wm0, wn0 = (role_warp // desc.warps[1]) * wm, (role_warp % desc.warps[1]) * wn
    g, t = LANES // 4, LANES % 4
    for mi in range(wm // 16):
        r = wm0 + 16 * mi + g
        fa = np.stack([u32(sa, r + dr, dc + 4 * t) for dr, dc in A_LOADS], axis=1)
        for ni in range(wn // 8):
            col = wn0 + 8 * ni + g
            fb = np.stack([u32(sb, col, dc + 4 * t) for dc in B_LOADS], axis=1)
            acc[mi, ni] += mma_m16n8k32(fa, fb)


def gemm(planes: Planes, desc: VitbitDesc, m: int, n: int, n1: int, n2: int, launch: Launch) -> np.ndarray:
    """vitbit_gemm's exact integer sums S (m × n, int64), before the epilogue's dequantization."""
    bm, bn3 = desc.block
    k_pad = planes.a.shape[1]
    npk = desc.pack
    out = np.zeros((m, n), np.int64)
    ti, tf = 32 * desc.int_warps, 32 * desc.fp_warps
    int_groups, fp_groups = ti // desc.int_words, tf // desc.fp_cols
    rt_i, rt_f = np.arange(ti), np.arange(tf)
    int_rows = rt_i[:, None] // desc.int_words + int_groups * np.arange(desc.int_rows)  # ti × kIntRows
    fp_rows = rt_f[:, None] // desc.fp_cols + fp_groups * np.arange(desc.fp_rows)
    wm, wn = desc.warp_tile
    g, t = LANES // 4, LANES % 4
    for by in range(launch.grid[1]):
        for bx in range(launch.grid[0]):
            m0 = by * bm
            acc = np.zeros((desc.tensor_warps, wm // 16, wn // 8, 32, 4), np.int64)
            word_col = bx * desc.int_words + rt_i % desc.int_words
            reg = np.zeros(int_rows.shape, np.int64)  # uint32 values
            isum = np.zeros(int_rows.shape + (npk,), np.int64)
            steps = 0
            fp_col = bx * desc.fp_cols + rt_f % desc.fp_cols
            facc = np.zeros(fp_rows.shape, np.float32)
            fsum = np.zeros(fp_rows.shape, np.int64)
            fsteps = 0
            for chunk in range(k_pad // MMA_K):
                sa, sb = _load_tiles(desc, planes.a, planes.tens, m0, bx * bn3, chunk)
                for w in range(desc.tensor_warps):
                    _tensor_warp(desc, w, sa, sb, acc[w])
                for kk in range(MMA_K):
                    k = chunk * MMA_K + kk
                    a_int = sa[int_rows, kk].astype(np.int64) & _MASK32  # (u32)(int) of the int8
                    reg = (reg + a_int * planes.words[k, word_col].astype(np.int64)[:, None]) & _MASK32  # IMAD
                    steps += 1
                    if steps == desc.acc:
                        for p, f in enumerate(extract_fields(reg, desc.bits)):
                            isum[..., p] += f
                        reg[:] = 0
                        steps = 0
                    b = planes.conv[k, fp_col][:, None]
                    facc = (sa[fp_rows, kk].astype(np.float64) * b + facc).astype(np.float32)  # FFMA
                    fsteps += 1
                    if fsteps == fp_block(desc.bits):
                        fsum += np.rint(facc).astype(np.int64)
                        facc[:] = 0
                        fsteps = 0
            for p, f in enumerate(extract_fields(reg, desc.bits)):
                isum[..., p] += f
            fsum += np.rint(facc).astype(np.int64)
            assert np.abs(isum).max(initial=0) < 2**31 and np.abs(fsum).max(initial=0) < 2**31, "INT32 overflow"
            # tensor epilogue
            base = n1 + n2 + bx * bn3
            for w in range(desc.tensor_warps):
                wm0, wn0 = (w // desc.warps[1]) * wm, (w % desc.warps[1]) * wn
                for mi in range(wm // 16):
                    for ni in range(wn // 8):
                        for c in range(4):
                            rows = m0 + wm0 + 16 * mi + g + 8 * (c // 2)
                            cols = base + wn0 + 8 * ni + 2 * t + c % 2
                            ok = (rows < m) & (cols < n)
                            out[rows[ok], cols[ok]] = acc[w, mi, ni, ok, c]
            # INT epilogue: field p of word column w -> column w*kPack + p
            rows = m0 + int_rows
            for p in range(npk):
                cols = np.broadcast_to((word_col * npk + p)[:, None], rows.shape)
                ok = (rows < m) & (cols < n1)
                out[rows[ok], cols[ok]] = isum[..., p][ok]
            rows = m0 + fp_rows
            cols = np.broadcast_to(fp_col[:, None], rows.shape)
            ok = (rows < m) & (cols < n2)
            out[rows[ok], n1 + cols[ok]] = fsum[ok]
    return out


def run_vitbit(a: np.ndarray, b: np.ndarray, desc: VitbitDesc, alpha: float = 1.0, beta: float = 0.0,
               c: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Host scales, the three kernels of ``desc`` and the epilogue: (C in the input dtype, the
    integer sums S, status). A nonzero status means the launcher hands the GEMM to the CPU
    executor. ``alpha``, ``beta``, ``c`` are read in ``alpha_beta="update"`` mode only."""
    if desc.alpha_beta == "update" and beta != 0.0 and c is None:
        raise ValueError("fragments_vitbit: update mode with beta != 0 needs c")
    m, k = a.shape
    n = b.shape[1]
    launches = {launch.entry: launch for launch in desc.launches(m, n, k)}
    n1, n2, _ = column_split(n, desc.m_ratio, desc.n_ratio, desc.bits)
    pads = desc.padded(m, n, k)
    scale_a, scale_b = host_scales(a, b, desc.bits)
    plane_a, status_a = pack_a(a, scale_a, pads["m_pad"], pads["k_pad"])
    planes, status_b = pack_b(b, scale_b, desc, n1, n2, pads)
    planes.a = plane_a
    sums = gemm(planes, desc, m, n, n1, n2, launches["vitbit_gemm"])
    out = np.zeros((m, n), a.dtype)
    with np.errstate(over="ignore"):
        d = (sums.astype(np.float64) * scale_a[:, None]) * scale_b[None, :]  # RN64(RN64(S·s_i)·t_j)
        p = d.astype(np.float32)
    for i, j in np.ndindex(m, n):
        out[i, j] = axpby(p[i, j], alpha, beta, c[i, j] if beta != 0.0 else None, out.dtype) \
            if desc.alpha_beta == "update" else p[i, j]
    return out, sums, status_a | status_b
