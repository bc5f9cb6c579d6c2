"""Compiled executor of the vitbit scheme (low-bit integer GEMM with VitBit's register
operand packing, seed 001).

Semantics: docs/numerics.md, section "vitbit". Operands are quantized to symmetric
``bits``-bit integers (2..8) as in int8 with ``q_max = 2^(bits-1) − 1``; the columns
of B are split three ways (Algorithm 1: tensor cores, packed INT cores, converted FP
cores), and each path computes its integer sums exactly: the packed path because at
most ``acc`` packed products are accumulated in a 32-bit word before its fields are
extracted (:func:`max_acc`: no field can overflow), the FP path because it adds at
most :func:`fp_block` products in FP32 (below 2^24) before an INT32 accumulator
takes the block sum. So the result is the exact integer GEMM, dequantized as int8
does, and one BLAS GEMM computes it here; runtime/schemes/vitbit.py holds a
word-level emulation of the packed arithmetic that the tests check against this.

* :func:`vitbit_gemm` ``(a, b, c, params, stats) -> status``: the executor (any
  strides, float32/float64; never raises, never takes the GIL).

Word layout (``N_WORDS = 4``): ``W_BITS`` (2..8), ``W_M`` (tensor : CUDA-core
column ratio, >= 0), ``W_N`` (packed : converted column ratio, >= 0), ``W_ACC``
(packed products per extraction, 1..``max_acc(bits)``).
"""

from __future__ import annotations

from mixjit.runtime.int8.executor import quantized_gemm
from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.numerics.executor_common import ERR_FIRST_OWN, ERR_PARAMS, ERR_SHAPE, OK, SHAPE_MESSAGE

__all__ = [
    "W_BITS", "W_M", "W_N", "W_ACC", "N_WORDS", "MIN_BITS", "MAX_BITS", "STAT_NONFINITE", "STAT_N_TENSOR",
    "STAT_N_PACKED", "STAT_N_CONVERTED", "N_STATS", "OK", "ERR_PARAMS", "ERR_SHAPE", "ERR_K", "STATUS_MESSAGES",
    "pack_count", "slot_bits", "qmax", "max_acc", "fp_block", "max_k", "column_split", "vitbit_gemm",
]

W_BITS = 0
W_M = 1
W_N = 2
W_ACC = 3
N_WORDS = 4
MIN_BITS = 2
MAX_BITS = 8

STAT_NONFINITE = 0  # outputs set by the non-finite rule
STAT_N_TENSOR = 1  # columns of B on the tensor-core path (N3)
STAT_N_PACKED = 2  # columns on the packed INT-core path (N1)
STAT_N_CONVERTED = 3  # columns on the converted FP-core path (N2)
N_STATS = 4

ERR_K = ERR_FIRST_OWN
STATUS_MESSAGES: dict[int, str] = {
    ERR_PARAMS: "the config words are invalid (encode configs with VitbitConfig.words(): bits 2..8, m >= 0, "
                "n >= 0, acc 1..max_acc(bits))",
    ERR_SHAPE: SHAPE_MESSAGE,
    ERR_K: "K is too long for the INT32 accumulators (K * q_max^2 must stay below 2^31; use fewer bits "
           "or split K)",
}
"""What each non-zero status of :func:`vitbit_gemm` means."""


@cached_njit(nogil=True)
def pack_count(bits: int) -> int:
    """Values packed in one 32-bit word: 2 at 6–8 bits, 3 at 5, 4 at 4 or fewer."""
    if bits >= 6:
        return 2
    if bits == 5:
        return 3
    return 4


@cached_njit(nogil=True)
def slot_bits(bits: int) -> int:
    """Width of one packed field (the value and its zero padding): 16, 10 or 8 bits."""
    return 32 // pack_count(bits)


@cached_njit(nogil=True)
def qmax(bits: int) -> int:
    """Largest magnitude of a symmetric ``bits``-bit integer: 2^(bits-1) − 1."""
    return (1 << (bits - 1)) - 1


@cached_njit(nogil=True)
def max_acc(bits: int) -> int:
    """The most packed products one field can sum without overflow: a signed field of
    s bits holds |x| <= 2^(s-1) − 1, each product is at most q_max² in magnitude."""
    q = qmax(bits)
    return ((1 << (slot_bits(bits) - 1)) - 1) // (q * q)


@cached_njit(nogil=True)
def fp_block(bits: int) -> int:
    """Products the FP path sums in FP32 before handing the block sum to INT32: the
    most that stay exact (below 2^24)."""
    q = qmax(bits)
    return (1 << 24) // (q * q)


@cached_njit(nogil=True)
def max_k(bits: int) -> int:
    """The longest K whose integer sums fit an INT32 accumulator."""
    q = qmax(bits)
    return ((1 << 31) - 1) // (q * q)


@cached_njit(nogil=True)
def column_split(n: int, m_ratio: int, n_ratio: int, bits: int) -> tuple[int, int, int]:
    """``(n1, n2, n3)``: columns of B on the packed INT, converted FP and tensor-core
    paths (Algorithm 1): n3 = ⌊N·m/(1+m)⌋, n1 = ⌊(N−n3)·n/(1+n)⌋ rounded down to whole
    packed words, n2 = the rest. Columns [0, n1) pack, [n1, n1+n2) convert, the last
    n3 go to the tensor cores."""
    n3 = n * m_ratio // (1 + m_ratio)
    rest = n - n3
    npk = pack_count(bits)
    n1 = (rest * n_ratio // (1 + n_ratio)) // npk * npk
    return n1, rest - n1, n3


@cached_njit(nogil=True)
def _params_ok(params) -> bool:
    if params.shape[0] < N_WORDS:
        return False
    bits = params[W_BITS]
    if not MIN_BITS <= bits <= MAX_BITS:
        return False
    return params[W_M] >= 0 and params[W_N] >= 0 and 1 <= params[W_ACC] <= max_acc(bits)


@cached_njit(nogil=True)
def vitbit_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the vitbit semantics: ``a`` (m x k), ``b`` (k x n), ``c``
    (m x n), float32/float64, any strides; ``params`` the config words; ``stats``
    int64[N_STATS]. Returns 0 or an ``ERR_*`` status (``c`` is then unchanged)."""
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
    n1, n2, n3 = column_split(n, params[W_M], params[W_N], bits)
    stats[STAT_N_PACKED] = n1
    stats[STAT_N_CONVERTED] = n2
    stats[STAT_N_TENSOR] = n3
    stats[STAT_NONFINITE] = quantized_gemm(a, b, c, float(qmax(bits)))
    return OK
