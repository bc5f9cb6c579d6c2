"""The warp-level pieces every CPU model of a generated kernel shares: the PTX ISA fragment
tables of ``mma.m16n8k32`` with .s8 operands (which lane holds which element of A, B and C),
the MMA itself as the ISA defines it, the kernels' fragment load offsets, the 32-bit shared
memory word a lane loads, the single rounding to float32 (mixpert_common.cuh) and the
alpha/beta update epilogue.

The MMA is evaluated from the *PTX tables* (:func:`a_element`, :func:`b_element`,
:func:`c_element`), independently of a kernel's load offsets, so a wrong load address or
layout in a template shows up as a wrong result. Each family's model (mixpert/cuda/fragments.py,
multiterm/, ozaki2/, split/, vitbit/) is built on these. NumPy only; no numba.
"""

from __future__ import annotations

import numpy as np

__all__ = ["a_element", "b_element", "c_element", "mma_m16n8k32", "round_to_f32", "round_to_float", "axpby", "u32", "A_LOADS",
           "B_LOADS", "LANES", "rn16_bits", "range_shift", "SIGMA_TOP"]

#: the kernel's fragment loads from shared memory (mixpert_gemm.cu, and the other INT8 GEMMs):
#: register j of a lane's A fragment is the 32-bit word at [row + A_LOADS[j][0]][A_LOADS[j][1] + 4t]
#: of its warp's 16-row slice (row = g), B's at [col g][B_LOADS[j] + 4t]; tests/cuda/test_fragments.py
#: reads these offsets back out of the template
A_LOADS = ((0, 0), (8, 0), (0, 16), (8, 16))
B_LOADS = (0, 16)
LANES = np.arange(32)


# -- the PTX ISA fragment tables for mma.m16n8k32 with .s8 operands ---------------------------
def a_element(lane: int | np.ndarray, i: int) -> tuple:
    """(row, col) of A (16×32, .row) held by element ``i`` (0..15) of ``lane``'s A fragment
    (four .b32 registers, element i in byte i%4 of register i//4)."""
    g, t = lane // 4, lane % 4
    row = g if (i < 4 or 8 <= i < 12) else g + 8
    col = t * 4 + (i & 3) + (16 if i >= 8 else 0)
    return row, col


def b_element(lane: int | np.ndarray, i: int) -> tuple:
    """(k, col) of B (32×8, .col) held by element ``i`` (0..7) of ``lane``'s B fragment."""
    g, t = lane // 4, lane % 4
    return t * 4 + (i & 3) + (16 if i >= 4 else 0), g


def c_element(lane: int | np.ndarray, i: int) -> tuple:
    """(row, col) of C/D (16×8, .s32) held by element ``i`` (0..3) of ``lane``."""
    g, t = lane // 4, lane % 4
    return g + (8 if i >= 2 else 0), t * 2 + (i & 1)


def _bytes(regs: np.ndarray) -> np.ndarray:
    """Signed bytes of little-endian u32 registers: (..., r) -> (..., 4r)."""
    return np.ascontiguousarray(regs.astype(np.uint32)).view(np.int8).reshape(*regs.shape[:-1], -1)


def _table(element, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A fragment table as index arrays: (first, second) coordinates, each n × 32 (element, lane)."""
    pos = [element(LANES, i) for i in range(n)]
    return np.stack([p[0] for p in pos]), np.stack([np.broadcast_to(p[1], LANES.shape) for p in pos])


_A_TABLE, _B_TABLE, _C_TABLE = _table(a_element, 16), _table(b_element, 8), _table(c_element, 4)


def mma_m16n8k32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """D = A·B for one warp: ``a`` (32 lanes × 4 u32), ``b`` (32 × 2 u32) -> d (32 × 4 int32),
    assembling A and B and distributing D through the PTX fragment tables."""
    A = np.zeros((16, 32), np.int64)
    B = np.zeros((32, 8), np.int64)
    A[_A_TABLE] = _bytes(a).T
    B[_B_TABLE] = _bytes(b).T
    D = A @ B
    assert np.abs(D).max(initial=0) < 2**31, "INT32 MMA accumulator overflow"
    return D[_C_TABLE].T.astype(np.int32)


# -- packer ------------------------------------------------------------------------------------
# -- epilogue rounding -------------------------------------------------------------------------
#: (significand bits, largest exponent, exponent of the smallest subnormal's lsb, negated) per format
_FORMATS = {np.dtype(np.float32): (24, 127, 149), np.dtype(np.float64): (53, 1023, 1074)}


def round_to_float(acc: int, scale: int, dtype: type) -> np.floating:
    """RN(acc * 2^scale) in ``dtype`` (float32: mixpert_common.cuh round_to_f32; float64:
    mixpert_fp64_common.cuh round_to_f64), ties to even, gradual underflow, overflow to inf; a
    zero result (exact, or after rounding: underflow) is +0, as the CPU executors write it."""
    kind = np.dtype(dtype)
    digits, emax, tiny = _FORMATS[kind]
    if acc == 0:
        return kind.type(0.0)
    neg = acc < 0
    mag = -acc if neg else acc
    nb = mag.bit_length()
    lead = nb - 1 + scale
    if lead > emax:
        return kind.type(-np.inf if neg else np.inf)
    keep = min(lead + tiny + 1, digits)
    drop = nb - keep
    if drop <= 0:
        q = mag << -drop
    elif drop > nb:
        q = 0
    else:
        q = mag >> drop
        round_bit = (mag >> (drop - 1)) & 1
        sticky = (mag & ((1 << (drop - 1)) - 1)) != 0
        if round_bit and (sticky or q & 1):
            q += 1
    if q == 0:
        return kind.type(0.0)
    with np.errstate(over="ignore"):  # rounding up past the largest finite value gives inf, as RN does
        r = kind.type(np.ldexp(np.float64(q), scale + drop))
    return -r if neg else r


def round_to_f32(acc: int, scale: int) -> np.float32:
    """mixpert_common.cuh round_to_f32: RN32(acc * 2^scale) (:func:`round_to_float`)."""
    return round_to_float(acc, scale, np.float32)


def u32(tile: np.ndarray, rows: np.ndarray, col0: np.ndarray) -> np.ndarray:
    """The 32-bit shared-memory word at byte (row, col0) of a [rows][32] int8 tile, per lane."""
    b = tile[rows[:, None], col0[:, None] + np.arange(4)]
    return np.ascontiguousarray(b.astype(np.int8)).view(np.uint32)[:, 0]


def axpby(p: np.float32, alpha: float, beta: float, c: np.floating | None, dtype: np.dtype) -> np.floating:
    """The update epilogue of every family's GEMM (mixpert_gemm.cu's first): alpha*P (+ beta*C), each operation rounded in C's dtype."""
    t = dtype.type
    with np.errstate(all="ignore"):
        value = t(alpha) * t(p)
        return value if beta == 0.0 else value + t(beta) * t(c)


# -- FP16 range scaling (split, fp16x2: common.cuh) ---------------------------------------------
#: the shift of a row whose largest element is in float32's top binade
SIGMA_TOP = 14 - 127


def range_shift(amax: np.ndarray) -> np.ndarray:
    """The FP16 range shift of rows with largest finite magnitudes ``amax``: 14 - floor(log2 amax)
    (so the row's largest scaled value lies in [2^14, 2^15)), 0 for an all-zero row."""
    _, e = np.frexp(amax)
    return np.where(amax > 0, 15 - e, 0).astype(np.int64)
_FP16_SUB_MAGIC = 402653184.0  # 1.5 * 2^28


def rn16_bits(y: np.ndarray, top: np.ndarray) -> np.ndarray:
    """common.cuh rn16_bits on float64 values (|y| < 2^15): the FP16 bit patterns, ties to even, FP16
    subnormals; ``top``: the top-binade rule (a hi rounding up to 2^15 is truncated to 2^15 - 2^4)."""
    u = y.view(np.uint64)
    wide = (u + np.uint64(0x1FFFFFFFFFF) + ((u >> np.uint64(42)) & np.uint64(1))) & ~np.uint64(0x3FFFFFFFFFF)
    h = np.where(np.abs(y) >= 2.0 ** -14, wide.view(np.float64), (y + _FP16_SUB_MAGIC) - _FP16_SUB_MAGIC)
    h = np.where(top & (np.abs(h) == 32768.0), np.copysign(32752.0, h), h)
    return h.astype(np.float16).view(np.uint16)  # exact: h is an FP16 value
