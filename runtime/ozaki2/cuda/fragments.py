"""CPU model of the batched INT8 tensor-core GEMM (templates/int8_gemm.cu) and of the Ozaki-II
residue kernels (templates/ozaki2_residues.cu) that feed it.

Driven by the same desc as the generated code (:class:`~mixjit.runtime.ozaki2.cuda.desc.Ozaki2Desc`):
the residue planes, the ``cp.async`` copy of each 32-byte K chunk unit by unit, the per-lane
fragment loads at the template's byte offsets, the MMA evaluated from the PTX tables
(:func:`mixjit.runtime.cuda.fragments.mma_m16n8k32`), the exact INT32 accumulation and the
modulo epilogue. Integer arithmetic only, so the model is bit-exact by construction; tests
compare its residues and, after the host's CRT, its output with the CPU executor bit for bit.

The host steps around the kernels (:func:`host_shifts` before, :func:`host_reconstruct` after)
are the CPU executor's own compiled functions, as the launch path calls them.
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.cuda.desc import MMA_K, Launch
from mixjit.runtime.cuda.fragments import A_LOADS, B_LOADS, LANES, mma_m16n8k32, u32
from mixjit.runtime.ozaki2 import executor as ex
from mixjit.runtime.ozaki2.cuda.desc import Ozaki2Desc

__all__ = ["residue_planes", "int8_gemm", "host_shifts", "host_reconstruct", "run_ozaki2", "STATUS_NONFINITE"]

STATUS_NONFINITE = 1


def residue_planes(rows_k: np.ndarray, shift: np.ndarray, moduli: tuple[int, ...], rows_pad: int,
                   k_pad: int) -> tuple[np.ndarray, int]:
    """ozaki2_residues.cu for one operand as its rows × K view: (planes l × rows_pad × k_pad int8,
    status). a' = trunc(x·2^shift[row]) in float64, symmetric residues by fmod."""
    v = np.zeros((rows_pad, k_pad), np.float64)
    v[: rows_k.shape[0], : rows_k.shape[1]] = rows_k
    bad = ~np.isfinite(v)
    status = STATUS_NONFINITE if bad.any() else 0
    v[bad] = 0.0
    s = np.zeros(rows_pad, np.int64)
    s[: shift.shape[0]] = shift
    with np.errstate(over="ignore"):
        scaled = np.where(v == 0.0, 0.0, np.trunc(np.ldexp(v, s[:, None])))
    mag = np.abs(scaled)
    planes = np.empty((len(moduli), rows_pad, k_pad), np.int8)
    for l, p in enumerate(moduli):
        res = np.fmod(mag, p).astype(np.int64)
        res = np.where(scaled < 0, (p - res) % p, res)
        planes[l] = np.where(res >= (p + 1) // 2, res - p, res)
    return planes, status


def _load_chunk(desc, pa: np.ndarray, pb: np.ndarray, m0: int, n0: int, chunk: int) -> tuple:
    """int8_gemm.cu load_chunk: the 16-byte cp.async units of one K chunk, by the kernel's
    unit -> (row, half) formulas (all units of the CTA at once)."""
    bm, bn = desc.block
    k0 = chunk * MMA_K
    sixteen = np.arange(16)
    tiles = []
    for rows_total, origin, plane in ((bm, m0, pa), (bn, n0, pb)):
        u = np.arange(2 * rows_total)
        row, half = u // 2, u % 2
        tile = np.zeros((rows_total, 2, 16), np.int8)
        tile[row, half] = plane[(origin + row)[:, None], k0 + 16 * half[:, None] + sixteen]
        tiles.append(tile.reshape(rows_total, MMA_K))
    return tiles[0], tiles[1]


def int8_gemm(planes_a: np.ndarray, planes_b: np.ndarray, desc, m: int, n: int, gemm: Launch | None = None) -> np.ndarray:
    """int8_gemm.cu over every batch z (grid.z): (batches × m × n), int16 residues in [0, p_z)
    with the modulo epilogue (ozaki2), else the raw int32 sums (split). ``gemm`` is its launch
    (default: the desc's for this shape)."""
    batches, m_pad, k_pad = planes_a.shape
    n_pad = planes_b.shape[1]
    params = desc.template_params()
    if gemm is None:
        gemm = next(launch for launch in desc.launches(m, n, k_pad) if launch.entry == "int8_gemm")
    modulus = params["kEpilogueModulus"]
    out = np.zeros((batches, m, n), np.int16 if modulus else np.int32)
    wm, wn = desc.warp_tile
    mi_n, ni_n = wm // 16, wn // 8
    g, t = LANES // 4, LANES % 4
    assert gemm.grid == (n_pad // desc.block[1], m_pad // desc.block[0], batches), gemm
    for z in range(gemm.grid[2]):
        for by in range(gemm.grid[1]):
            for bx in range(gemm.grid[0]):
                m0, n0 = by * desc.block[0], bx * desc.block[1]
                for warp in range(gemm.block[0] // 32):
                    wm0, wn0 = (warp // desc.warps[1]) * wm, (warp % desc.warps[1]) * wn
                    acc = np.zeros((mi_n, ni_n, 32, 4), np.int64)
                    for chunk in range(k_pad // MMA_K):
                        sa, sb = _load_chunk(desc, planes_a[z], planes_b[z], m0, n0, chunk)
                        for mi in range(mi_n):
                            r = wm0 + 16 * mi + g
                            fa = np.stack([u32(sa, r + dr, dc + 4 * t) for dr, dc in A_LOADS], axis=1)
                            for ni in range(ni_n):
                                cidx = wn0 + 8 * ni + g
                                fb = np.stack([u32(sb, cidx, dc + 4 * t) for dc in B_LOADS], axis=1)
                                acc[mi, ni] += mma_m16n8k32(fa, fb)
                    assert np.abs(acc).max(initial=0) < 2**31, "INT32 accumulator overflow"
                    for mi in range(mi_n):
                        for ni in range(ni_n):
                            for ci in range(4):
                                rows = m0 + wm0 + 16 * mi + g + 8 * (ci // 2)
                                cols = n0 + wn0 + 8 * ni + 2 * t + ci % 2
                                ok = (rows < m) & (cols < n)
                                v = acc[mi, ni, :, ci]
                                if modulus:
                                    p = params["kModuli"][z]
                                    v = v % p  # Python/NumPy %: already in [0, p), as the kernel's r += p
                                out[z, rows[ok], cols[ok]] = v[ok]
    return out


def host_shifts(a: np.ndarray, b: np.ndarray, moduli: int) -> tuple[np.ndarray, np.ndarray]:
    """The fast-mode shifts of the rows of A and the columns of B, computed by the CPU
    executor's own functions (what the launch path does before the residue kernels)."""
    g = ex.scale_bits(moduli)
    atop, _ = ex.row_tops(a, False)
    btop, _ = ex.row_tops(b, True)
    return ex.fast_shifts(a, False, atop, g), ex.fast_shifts(b, True, btop, g)


def host_reconstruct(res: np.ndarray, sa: np.ndarray, sb: np.ndarray, to32: bool) -> np.ndarray:
    """The exact CRT and the single rounding (steps 4-5) of the residues ``res`` (N × m × n), by
    the CPU executor's compiled functions (what the launch path does after the residue GEMM)."""
    n_moduli, m, n = res.shape
    digits = np.zeros(ex.MAX_MODULI, np.int64)
    limbs = np.zeros(ex.LIMBS, np.int64)
    parts = np.zeros(ex.MAX_PARTIALS)
    out = np.empty((m, n), np.float32 if to32 else np.float64)
    for i in range(m):
        for j in range(n):
            sign = ex.reconstruct(res, i, j, n_moduli, digits, limbs)
            out[i, j] = ex.round_out(limbs, sign, -(int(sa[i]) + int(sb[j])), to32, parts)
    return out


def run_ozaki2(a: np.ndarray, b: np.ndarray, desc: Ozaki2Desc) -> tuple[np.ndarray, np.ndarray, int]:
    """Host shifts, the three kernels, the host CRT: (C, residues N × m × n, status). A nonzero
    status means the launcher hands the GEMM to the CPU executor."""
    m, k = a.shape
    n = b.shape[1]
    m_pad, n_pad, k_pad = desc.padded(m, n, k)
    sa, sb = host_shifts(a, b, desc.moduli)
    pa, status_a = residue_planes(a, sa, desc.moduli_table, m_pad, k_pad)
    pb, status_b = residue_planes(b.T, sb, desc.moduli_table, n_pad, k_pad)
    res = int8_gemm(pa, pb, desc, m, n)
    return host_reconstruct(res, sa, sb, a.dtype == np.float32), res, status_a | status_b
