"""CPU model of the generated tf32x3 / bf16xN kernels (multiterm_pack.cu, multiterm_gemm.cu).

Driven by the same :class:`~mixjit.runtime.multiterm.cuda.desc.MultiTermDesc` as the generated
code, it runs the packer (split into parts, plane layout, status bits), the ``cp.async`` copy of
each 64-byte K chunk unit by unit, the per-lane fragment loads at the template's word offsets,
and the MMA evaluated from the PTX ISA's fragment tables (:func:`a_element`, :func:`b_element`;
C as m16n8k32's, :func:`mixjit.runtime.cuda.fragments.c_element`), so a wrong load offset or
layout gives a wrong product.

What it can prove, and what it cannot. The PTX ISA does not say where a float MMA's FP32
accumulator rounds. The model therefore has two accumulators:

* ``accumulate="exact"``: every MMA adds its products exactly (Python integers in units of
  2^-298), and the output is rounded once to float32: the scheme's own semantics. Bit-equal to
  the CPU executor on any data proves the packer, the planes, the fragment layouts and the pair
  selection.
* ``accumulate="fp32"``: the accumulator is rounded to float32 (RN) after each MMA, one
  plausible hardware behaviour. Where every partial sum is exact in FP32 all behaviours agree,
  so bit-equality with the executor on such data checks the kernel's accumulation structure;
  elsewhere the hardware result differs from the executor by FP32 accumulation error
  (docs/cuda.md states the bound), which no CPU model can pin down bit for bit.

NumPy and Python integers only; no numba.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixjit.runtime.cuda.fragments import LANES, SIGMA_TOP, axpby, c_element, range_shift, rn16_bits, round_to_f32
from mixjit.runtime.multiterm.cuda.desc import CHUNK_BYTES, PAD_BYTES, MultiTermDesc

__all__ = ["a_element", "b_element", "mma", "pack_parts", "gemm_planes", "run_gemm", "A_LOADS", "B_LOADS",
           "STATUS_NONFINITE", "STATUS_PART_OVERFLOW", "STATUS_TINY_PART", "EXACT_SCALE", "fp16x2_sigma", "pack_fp16x2",
           "run_fp16x2"]

STATUS_NONFINITE, STATUS_PART_OVERFLOW, STATUS_TINY_PART = 1, 8, 16
#: the kernel's fragment loads (multiterm_gemm.cu): register j of a lane's A fragment is the
#: word at [row g + A_LOADS[j][0]][k-step word + t + A_LOADS[j][1]] of its 16-row slice; B's at
#: [col g][word + t + B_LOADS[j]]; tests read these offsets back out of the template
A_LOADS = ((0, 0), (8, 0), (0, 4), (8, 4))
B_LOADS = (0, 4)
#: exact values are integers in units of 2^-EXACT_SCALE: every part is a multiple of 2^-149
EXACT_SCALE = 298
STEP_WORDS = 8


# -- the PTX ISA fragment tables (element i of a lane's fragment -> matrix position) ----------
def a_element(fmt: str, lane: int | np.ndarray, i: int) -> tuple:
    """(row, k) of A held by element ``i`` of ``lane``'s A fragment. tf32 m16n8k8: 4 elements
    (one per register); bf16 m16n8k16: 8 elements (two per register, the first in the low half)."""
    g, t = lane // 4, lane % 4
    if fmt == "tf32":
        return g + 8 * (i % 2), t + 4 * (i // 2)
    return g + 8 * ((i // 2) % 2), 2 * t + (i % 2) + 8 * (i // 4)


def b_element(fmt: str, lane: int | np.ndarray, i: int) -> tuple:
    """(k, col) of B held by element ``i`` of ``lane``'s B fragment (tf32: 2, bf16: 4 elements)."""
    g, t = lane // 4, lane % 4
    if fmt == "tf32":
        return t + 4 * i, g
    return 2 * t + (i % 2) + 8 * (i // 2), g


def _values(fmt: str, regs: np.ndarray) -> np.ndarray:
    """The part values (float32) of 32-bit registers: (..., r) -> (..., r) tf32 or (..., 2r) bf16/f16."""
    regs = np.ascontiguousarray(regs, np.uint32)
    if fmt == "tf32":
        return regs.view(np.float32)
    if fmt == "f16":
        return regs.view(np.float16).astype(np.float32)
    halves = regs.view(np.uint16).astype(np.uint32) << 16  # little endian: low half first
    return halves.view(np.float32)


def _exact(x: np.ndarray) -> np.ndarray:
    """float32 values as exact integers in units of 2^-149 (object array)."""
    scaled = np.ldexp(x.astype(np.float64), 149)
    return np.array([int(v) for v in scaled.ravel()], dtype=object).reshape(x.shape)


def _tables(fmt: str) -> tuple:
    """The A, B and C fragment tables of ``fmt`` as index arrays (element × lane)."""
    na, nb = (4, 2) if fmt == "tf32" else (8, 4)
    out = []
    for element, n in ((lambda lane, i: a_element(fmt, lane, i), na), (lambda lane, i: b_element(fmt, lane, i), nb),
                       (c_element, 4)):
        pos = [element(LANES, i) for i in range(n)]
        out.append((np.stack([np.broadcast_to(p[0], LANES.shape) for p in pos]),
                    np.stack([np.broadcast_to(p[1], LANES.shape) for p in pos])))
    return tuple(out)


_TABLES = {fmt: _tables(fmt) for fmt in ("tf32", "bf16", "f16")}


def mma(fmt: str, a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """acc + A·B for one warp, exactly: ``a`` (32 lanes × 4 u32), ``b`` (32 × 2 u32), ``acc``
    (32 × 4, integers in units of 2^-298) -> the new acc. A and B are assembled and D is
    distributed through the PTX fragment tables."""
    mk = 8 if fmt == "tf32" else 16
    a_table, b_table, c_table = _TABLES[fmt]
    A = np.zeros((16, mk), object)
    B = np.zeros((mk, 8), object)
    A[a_table] = _exact(_values(fmt, a)).T
    B[b_table] = _exact(_values(fmt, b)).T
    D = A.dot(B)
    return acc + D[c_table].T


# -- packer ------------------------------------------------------------------------------------
@dataclass
class PackedParts:
    """One packed operand: planes as bytes (parts × rows_pad × k_pad·part_bytes) and the status."""

    planes: np.ndarray
    status: int


def _round_part(bits: np.ndarray, tf32: bool) -> np.ndarray:
    """multiterm_pack.cu round_part on uint32 patterns (with the kernel's 32-bit wrap)."""
    b = bits.astype(np.uint64)
    if tf32:
        r = (b + 0xFFF + ((b >> 13) & 1)) & ~np.uint64(0x1FFF)
    else:
        r = (b + 0x7FFF + ((b >> 16) & 1)) & np.uint64(0xFFFF0000)
    return (r & 0xFFFFFFFF).astype(np.uint32)


def pack_parts(rows_k: np.ndarray, desc: MultiTermDesc, rows_pad: int, k_pad: int) -> PackedParts:
    """multiterm_pack.cu for one operand given as its rows × K view (A: op(A); B: op(B).T)."""
    tf32 = desc.fmt.name == "tf32"
    v = np.zeros((rows_pad, k_pad), np.float32)
    with np.errstate(over="ignore"):
        v[: rows_k.shape[0], : rows_k.shape[1]] = rows_k.astype(np.float32)  # RN32, overflow to inf
    status = 0
    bad = ((v.view(np.uint32) >> 23) & 0xFF) == 0xFF
    if bad.any():
        status |= STATUS_NONFINITE
        v[bad] = 0.0
    dtype = np.uint32 if tf32 else np.uint16
    planes = np.zeros((desc.parts, rows_pad, k_pad), dtype)
    for p in range(desc.parts):
        bits = v.view(np.uint32)
        if (((bits & 0x7F800000) == 0) & ((bits & 0x7FFFFF) != 0)).any():
            status |= STATUS_TINY_PART
        part = _round_part(bits, tf32)
        over = (part & 0x7F800000) == 0x7F800000
        if over.any():
            status |= STATUS_PART_OVERFLOW
            part = np.where(over, np.uint32(0), part)
        planes[p] = part if tf32 else (part >> 16).astype(np.uint16)
        v = v - part.view(np.float32)
    return PackedParts(planes.view(np.uint8).reshape(desc.parts, rows_pad, -1), status)


# -- the GEMM kernel ---------------------------------------------------------------------------
def _load_chunk(desc, parts: int, pa: np.ndarray, pb: np.ndarray, m0: int, n0: int, chunk: int) -> tuple:
    """multiterm_gemm.cu load_chunk: the 16-byte cp.async units of one chunk into padded rows."""
    bm, bn = desc.block
    row = CHUNK_BYTES + PAD_BYTES
    sa = np.zeros((parts, bm, row), np.uint8)
    sb = np.zeros((parts, bn, row), np.uint8)
    units = CHUNK_BYTES // 16
    k0 = chunk * CHUNK_BYTES
    units_a = parts * bm * units
    for u in range(units_a + parts * bn * units):
        if u < units_a:
            part, r, q = u // (bm * units), (u // units) % bm, u % units
            sa[part, r, 16 * q:16 * q + 16] = pa[part, m0 + r, k0 + 16 * q:k0 + 16 * q + 16]
        else:
            v = u - units_a
            part, c, q = v // (bn * units), (v // units) % bn, v % units
            sb[part, c, 16 * q:16 * q + 16] = pb[part, n0 + c, k0 + 16 * q:k0 + 16 * q + 16]
    return sa.view(np.uint32), sb.view(np.uint32)  # (parts, rows, row words)


def gemm_planes(planes_a: np.ndarray, planes_b: np.ndarray, desc, m: int, n: int, accumulate: str) -> np.ndarray:
    """multiterm_gemm.cu on packed planes (bytes, parts × rows_pad × row bytes): the m×n sums as
    exact integers in units of 2^-298 (``accumulate="fp32"``: each rounded to float32 after every
    MMA, as one plausible hardware accumulator). With ``desc.lo_shift`` (fp16x2) the pairs holding a
    lo part sum in their own accumulator, added as ``acc_lo·2^-lo_shift`` (:func:`_combine`). ``desc`` gives the format, the issue order of
    the pairs, the block and warp grid (a MultiTermDesc, or split's FP16 part)."""
    if accumulate not in ("exact", "fp32"):
        raise ValueError(f"fragments_multiterm: accumulate={accumulate!r}; use 'exact' or 'fp32'")
    parts, m_pad, row_bytes = planes_a.shape
    n_pad = planes_b.shape[1]
    fmt = desc.fmt.name
    lo_shift = getattr(desc, "lo_shift", 0)
    wm, wn = desc.warp_tile
    mi_n, ni_n = wm // 16, wn // 8
    g, t = LANES // 4, LANES % 4
    sums = np.zeros((m, n), object)
    for by in range(m_pad // desc.block[0]):
        for bx in range(n_pad // desc.block[1]):
            m0, n0 = by * desc.block[0], bx * desc.block[1]
            for warp in range(desc.warps[0] * desc.warps[1]):
                wm0, wn0 = (warp // desc.warps[1]) * wm, (warp % desc.warps[1]) * wn
                acc = np.zeros((mi_n, ni_n, 32, 4), object)
                acc_lo = np.zeros((mi_n, ni_n, 32, 4), object)  # the pairs with a lo part (desc.lo_shift > 0)
                for chunk in range(row_bytes // CHUNK_BYTES):
                    sa, sb = _load_chunk(desc, parts, planes_a, planes_b, m0, n0, chunk)
                    for step in range(CHUNK_BYTES // 4 // STEP_WORDS):
                        w0 = step * STEP_WORDS
                        for pa, pb in desc.issue_order:
                            into = acc_lo if lo_shift and pa + pb > 0 else acc
                            for mi in range(mi_n):
                                r = wm0 + 16 * mi + g
                                fa = np.stack([sa[pa, r + dr, w0 + t + dc] for dr, dc in A_LOADS], axis=1)
                                for ni in range(ni_n):
                                    cidx = wn0 + 8 * ni + g
                                    fb = np.stack([sb[pb, cidx, w0 + t + dc] for dc in B_LOADS], axis=1)
                                    into[mi, ni] = mma(fmt, fa, fb, into[mi, ni])
                                    if accumulate == "fp32":
                                        into[mi, ni] = _round_fp32(into[mi, ni])
                if lo_shift:
                    acc = _combine(acc, acc_lo, lo_shift, accumulate)
                for mi in range(mi_n):
                    for ni in range(ni_n):
                        for ci in range(4):
                            rows = m0 + wm0 + 16 * mi + g + 8 * (ci // 2)
                            cols = n0 + wn0 + 8 * ni + 2 * t + ci % 2
                            ok = (rows < m) & (cols < n)
                            sums[rows[ok], cols[ok]] = acc[mi, ni, ok, ci]
    return sums


def run_gemm(a: np.ndarray, b: np.ndarray, desc: MultiTermDesc, accumulate: str = "exact", alpha: float = 1.0,
             beta: float = 0.0, c: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """The three kernels of ``desc`` on ``a`` (m×k) and ``b`` (k×n): (C, status), C in the input
    dtype; a nonzero status means the launcher hands the GEMM to the CPU executor.
    ``accumulate`` is ``"exact"`` or ``"fp32"`` (module docstring)."""
    if desc.alpha_beta == "update" and beta != 0.0 and c is None:
        raise ValueError("fragments_multiterm: update mode with beta != 0 needs c")
    m, k = a.shape
    n = b.shape[1]
    pack_a, pack_b, gemm = desc.launches(m, n, k)
    m_pad = pack_a.grid[1] * pack_a.block[1]
    n_pad = pack_b.grid[1] * pack_b.block[1]
    k_pad = pack_a.grid[0] * pack_a.block[0]
    assert gemm.grid == (n_pad // desc.block[1], m_pad // desc.block[0], 1) and gemm.block[0] == desc.threads
    A = pack_parts(a, desc, m_pad, k_pad)
    B = pack_parts(b.T, desc, n_pad, k_pad)
    sums = gemm_planes(A.planes, B.planes, desc, m, n, accumulate)
    out = np.zeros((m, n), a.dtype)
    for row, col in np.ndindex(m, n):
        p = round_to_f32(int(sums[row, col]), -EXACT_SCALE)
        if desc.alpha_beta == "update":
            p = axpby(p, alpha, beta, c[row, col] if beta != 0.0 else None, out.dtype)
        out[row, col] = p
    return out, A.status | B.status


def _round_fp32(acc: np.ndarray) -> np.ndarray:
    """The accumulator rounded to float32 (RN), kept as exact integers in units of 2^-298."""
    out = np.empty(acc.shape, object)
    for idx in np.ndindex(acc.shape):
        f = round_to_f32(int(acc[idx]), -EXACT_SCALE)
        out[idx] = int(np.ldexp(np.float64(f), EXACT_SCALE)) if np.isfinite(f) else acc[idx]
    return out


def _combine(acc: np.ndarray, acc_lo: np.ndarray, shift: int, accumulate: str) -> np.ndarray:
    """multiterm_gemm.cu's epilogue with kLoShift: ``acc + acc_lo·2^-shift`` (exact integers in units
    of 2^-298), exactly, or (``fp32``) as the kernel's float32 multiply and add."""
    if accumulate == "exact":
        assert all(int(v) % (1 << shift) == 0 for v in acc_lo.ravel())  # FP16 products: multiples of 2^-48
        return acc + np.vectorize(lambda v: int(v) >> shift, otypes=[object])(acc_lo)
    out = np.empty(acc.shape, object)
    for idx in np.ndindex(acc.shape):
        hi = round_to_f32(int(acc[idx]), -EXACT_SCALE)
        lo = np.float32(round_to_f32(int(acc_lo[idx]), -EXACT_SCALE) * np.float32(2.0 ** -shift))
        f = np.float32(hi + lo)
        out[idx] = int(np.ldexp(np.float64(f), EXACT_SCALE)) if np.isfinite(f) else acc[idx]
    return out


# -- fp16x2: row shifts, range-scaled FP16 parts, rescaling (fp16x2_pack.cu) ----------------------
def fp16x2_sigma(rows_k: np.ndarray) -> tuple[np.ndarray, int]:
    """fp16x2_sigma for an operand's rows × K view: (sigma per row: 14 - floor(log2 amax) over its
    finite float32-rounded values, 0 without them; status)."""
    with np.errstate(over="ignore"):  # float64 inputs beyond float32's range round to inf, as on the device
        x = rows_k.astype(np.float32).astype(np.float64)
    finite = np.isfinite(x)
    amax = np.where(finite, np.abs(x), 0.0).max(axis=1, initial=0.0)
    return range_shift(amax), 0 if finite.all() else STATUS_NONFINITE


def pack_fp16x2(rows_k: np.ndarray, desc: MultiTermDesc, rows_pad: int, k_pad: int, sigma: np.ndarray) -> np.ndarray:
    """fp16x2_pack for one operand: the planes as bytes (parts × rows_pad × k_pad·2): hi = RN16(y),
    lo = RN16((y - hi)·2^11) of y = x·2^sigma (inf/NaN as 0), the top-binade rule with one part."""
    with np.errstate(over="ignore"):
        x = rows_k.astype(np.float32).astype(np.float64)
    rows, k = x.shape
    y = np.zeros((rows_pad, k_pad))
    y[:rows, :k] = np.ldexp(np.where(np.isfinite(x), x, 0.0), sigma[:, None])
    s = np.zeros(rows_pad, np.int64)
    s[:rows] = sigma
    top = ((s == SIGMA_TOP) & (desc.products == 1))[:, None]
    planes = np.zeros((desc.parts, rows_pad, k_pad), np.uint16)
    planes[0] = rn16_bits(y, top)
    if desc.parts == 2:
        hi = planes[0].view(np.float16).astype(np.float64)
        planes[1] = rn16_bits((y - hi) * 2048.0, np.zeros_like(top))
    return planes.view(np.uint8).reshape(desc.parts, rows_pad, -1)


def run_fp16x2(a: np.ndarray, b: np.ndarray, desc: MultiTermDesc, accumulate: str = "exact") -> tuple[np.ndarray, int]:
    """The kernels of an fp16x2 ``desc`` on ``a`` (m×k) and ``b`` (k×n): (C in the input dtype,
    status). ``accumulate="exact"`` is the scheme's own semantics (bit-equal to the CPU executor)."""
    (m, k), n = a.shape, b.shape[1]
    m_pad, n_pad, k_pad = desc.padded(m, n, k)
    sigma_a, status_a = fp16x2_sigma(a)
    sigma_b, status_b = fp16x2_sigma(b.T)
    sums = gemm_planes(pack_fp16x2(a, desc, m_pad, k_pad, sigma_a), pack_fp16x2(b.T, desc, n_pad, k_pad, sigma_b),
                       desc, m, n, accumulate)
    out = np.zeros((m, n), a.dtype)
    for row, col in np.ndindex(m, n):
        out[row, col] = round_to_f32(int(sums[row, col]), -EXACT_SCALE - int(sigma_a[row] + sigma_b[col])) + np.float32(0)
    return out, status_a | status_b
