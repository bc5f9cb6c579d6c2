"""vitbit: low-bit integer GEMM with VitBit's register operand packing (seed 001).

Operands are quantized to symmetric ``bits``-bit integers (per-row A, per-column B
scales, as int8 with ``q_max = 2^(bits-1) − 1``). Algorithm 1 splits the columns of
B: a share for the tensor cores (ratio ``m`` : 1 against the CUDA cores) and, of
the rest, a packed share for the INT cores and a converted share for the FP cores
(ratio ``n`` : 1). Packed columns hold 2 (6–8 bits), 3 (5 bits) or 4 (<= 4 bits)
values per 32-bit word with zero padding, so one 32-bit multiply forms that many
products. docs/numerics.md, section "vitbit". The CPU work is done by
runtime/vitbit/executor.py; :func:`emulate_integer_product` is the word-level
emulation of the three paths (uint32 multiplies, field extraction) that the tests
check the executor against, and the specification a GPU kernel must meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mixjit.runtime.int8 import executor as ei8
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work, register
from mixjit.runtime.schemes.emulation import NONFINITE_REASON, check_operands, parse_label
from mixjit.runtime.vitbit import executor as ex

__all__ = ["VitbitConfig", "PAPER_M", "default_ratios", "vitbit_quantize", "pack_words", "packed_products", "emulate_integer_product"]

_MASK32 = 0xFFFFFFFF


#: the paper's tensor : CUDA-core ratio, measured on Jetson AGX Orin (seed 001, §3.3)
PAPER_M = 4


def default_ratios(bits: int, target: str = "") -> tuple[int, int]:
    """``(m, n)`` a config takes when it names none: from ``target``'s rates in the hardware
    table (runtime/model/hardware.py ``vitbit_ratios``), or without a target the paper's m = 4 and
    Eq. 1's n = the pack count (INT and FP cores equally fast)."""
    if not target:
        return PAPER_M, ex.pack_count(bits)
    from mixjit.runtime.model.hardware import get_hardware, vitbit_ratios

    return vitbit_ratios(get_hardware(target), ex.pack_count(bits))


@dataclass(frozen=True)
class VitbitConfig(Config):
    """``bits``: integer width with the sign (2..8); ``m``: tensor : CUDA-core column
    ratio; ``n``: packed : converted column ratio; ``target``: the GPU whose rates give
    m and n when they are not set (:func:`default_ratios`: without one, the paper's m = 4
    and n = the pack count, Eq. 1); ``acc``: packed products summed in one word before
    its fields are extracted (default: the most that cannot overflow). m, n and target
    move columns between exact paths: they change the modeled time, never the result."""

    bits: int = 8
    m: int = -1
    n: int = -1
    acc: int = -1
    target: str = ""

    def __post_init__(self) -> None:
        if not ex.MIN_BITS <= self.bits <= ex.MAX_BITS:
            raise ValueError(f"vitbit: bits={self.bits} must be in {ex.MIN_BITS}..{ex.MAX_BITS}")
        dm, dn = default_ratios(self.bits, self.target)
        if self.m == -1:
            object.__setattr__(self, "m", dm)
        if self.n == -1:
            object.__setattr__(self, "n", dn)
        if self.acc == -1:
            object.__setattr__(self, "acc", ex.max_acc(self.bits))
        if self.m < 0 or self.n < 0:
            raise ValueError(f"vitbit: the split ratios m={self.m}, n={self.n} must be >= 0")
        if not 1 <= self.acc <= ex.max_acc(self.bits):
            raise ValueError(f"vitbit: acc={self.acc} must be in 1..{ex.max_acc(self.bits)} at bits={self.bits}: "
                             "more packed products per word would overflow a field")

    @property
    def label(self) -> str:
        """``bits=…``, then the target and the fields that differ from their defaults."""
        dm, dn = default_ratios(self.bits, self.target)
        parts = [f"bits={self.bits}"] + ([f"target={self.target}"] if self.target else [])
        if self.m != dm:
            parts.append(f"m={self.m}")
        if self.n != dn:
            parts.append(f"n={self.n}")
        if self.acc != ex.max_acc(self.bits):
            parts.append(f"acc={self.acc}")
        return ",".join(parts)

    def words(self) -> tuple[int, ...]:
        """The config as int64 words: layout ``W_*`` in runtime/vitbit/executor.py."""
        return (self.bits, self.m, self.n, self.acc)


def _check(config: Config) -> VitbitConfig:
    if not isinstance(config, VitbitConfig):
        raise TypeError(f"vitbit: expected a VitbitConfig, got {type(config).__name__}")
    return config


def vitbit_quantize(x: np.ndarray, bits: int, transpose: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(q, s)``: the integers (int64, rows of ``x``, or of ``x.T``) and scales the
    executor quantizes an operand to (A: ``transpose=False``; B: ``True``)."""
    q3, s, _ = ei8.quantize_symmetric(np.asarray(x), transpose, float(ex.qmax(bits)))
    rows = s.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    q = q3.transpose(1, 0, 2).reshape(rows, -1)[:, :kk]
    return q.astype(np.int64), s


def pack_words(qb_cols: np.ndarray, bits: int) -> np.ndarray:
    """Pack the columns of integer matrix ``qb_cols`` (K × n1, n1 a multiple of the pack
    count) into uint32 words (K × n1/count): column ``g·count + p`` in the field at bit
    ``s·(count−1−p)`` (Algorithm 1's order, s = slot width), each signed value added in
    two's complement modulo 2^32 (for non-negative values this is Algorithm 1's OR)."""
    npk, s = ex.pack_count(bits), ex.slot_bits(bits)
    kk, n1 = qb_cols.shape
    if n1 % npk:
        raise ValueError(f"vitbit: {n1} packed columns is not a multiple of the pack count {npk}")
    words = np.zeros((kk, n1 // npk), dtype=np.int64)
    for p in range(npk):
        words += qb_cols[:, p::npk].astype(np.int64) << (s * (npk - 1 - p))
    return (words & _MASK32).astype(np.uint32)


def _extract(reg: np.ndarray, bits: int) -> list[np.ndarray]:
    """The signed fields of accumulated words ``reg`` (uint32), field p at bit s·(count−1−p):
    from the lowest field up, each sign-extended and its borrow returned to the rest."""
    npk, s = ex.pack_count(bits), ex.slot_bits(bits)
    r = reg.astype(np.int64)
    fields: list[np.ndarray] = [np.empty(0)] * npk
    for p in range(npk - 1, 0, -1):
        f = r & ((1 << s) - 1)
        f = np.where(f >= 1 << (s - 1), f - (1 << s), f)
        fields[p] = f
        r = (r - f) >> s
    top = 32 - s * (npk - 1)
    f = r & ((1 << top) - 1)
    fields[0] = np.where(f >= 1 << (top - 1), f - (1 << top), f)
    return fields


def packed_products(qa: np.ndarray, words: np.ndarray, bits: int, acc: int) -> np.ndarray:
    """The INT-core path: for each row of ``qa`` (m × K) and word column, 32-bit
    multiply-adds ``reg = reg + uint32(a)·word (mod 2^32)``, the fields extracted into
    INT32-wide sums after every ``acc`` of them. Returns the sums (m × n1), int64."""
    npk = ex.pack_count(bits)
    m, kk = qa.shape
    g = words.shape[1]
    sums = np.zeros((m, g * npk), dtype=np.int64)
    a32 = (qa.astype(np.int64) & _MASK32).astype(np.uint32)
    with np.errstate(over="ignore"):
        for k0 in range(0, kk, acc):
            reg = np.zeros((m, g), dtype=np.uint32)
            for k in range(k0, min(kk, k0 + acc)):
                reg = reg + a32[:, k:k + 1] * words[k][None, :]  # uint32 arithmetic wraps mod 2^32
            for p, f in enumerate(_extract(reg, bits)):
                sums[:, p::npk] += f
    return sums


def emulate_integer_product(qa: np.ndarray, qb: np.ndarray, config: VitbitConfig) -> np.ndarray:
    """The integer GEMM (m × N, int64) as VitBit's three paths compute it: packed
    words on the INT cores (:func:`packed_products`), converted columns in FP32 blocks
    of ``fp_block(bits)`` products added into INT32, and the tensor-core columns as an
    exact integer product."""
    cfg = _check(config)
    n1, n2, n3 = ex.column_split(qb.shape[1], cfg.m, cfg.n, cfg.bits)
    out = np.zeros((qa.shape[0], qb.shape[1]), dtype=np.int64)
    if n1:
        out[:, :n1] = packed_products(qa, pack_words(qb[:, :n1], cfg.bits), cfg.bits, cfg.acc)
    if n2:
        fb = ex.fp_block(cfg.bits)
        a32, b32 = qa.astype(np.float32), qb[:, n1:n1 + n2].astype(np.float32)
        for k0 in range(0, qa.shape[1], fb):
            out[:, n1:n1 + n2] += (a32[:, k0:k0 + fb] @ b32[k0:k0 + fb]).astype(np.int64)
    out[:, n1 + n2:] = qa @ qb[:, n1 + n2:]
    return out


@register
class Vitbit(Scheme):
    name = "vitbit"
    executor = CompiledExecutor("vitbit", catalog.plan_code("vitbit"),
                                ex.vitbit_gemm, ex.N_WORDS, ex.N_STATS, ex.STATUS_MESSAGES)
    summary = "low-bit (2..8) integer GEMM, VitBit packing + tensor/INT/FP split (exact integer sums)"

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        # 5 bits and fewer (3 and 4 values per word) by label: their error passes 0.1 on
        # plain data, beyond what the tuner's candidates and the accuracy table assume
        return [VitbitConfig(bits) for bits in (8, 6)]

    def parse_config(self, text: str) -> Config:
        return parse_label(text, VitbitConfig, self.name, partial=True)

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        cfg = _check(config)
        a, b = check_operands(self.name, a, b)
        c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        stats = np.zeros(ex.N_STATS, dtype=np.int64)
        status = ex.vitbit_gemm(a, b, c, np.array(cfg.words(), dtype=np.int64), stats)
        if status != ex.OK:
            raise ValueError(f"vitbit: {ex.STATUS_MESSAGES[status]}")
        n_nf = int(stats[ex.STAT_NONFINITE])
        extra = {"n_packed": int(stats[ex.STAT_N_PACKED]), "n_converted": int(stats[ex.STAT_N_CONVERTED]),
                 "n_tensor": int(stats[ex.STAT_N_TENSOR])}
        return c, RunStats(fallbacks=n_nf, units=c.size, fallback_unit="element",
                           fallback_reason=NONFINITE_REASON if n_nf else "", extra=extra)

    def products(self, config: Config) -> int:
        _check(config)
        return 1

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        cfg = _check(config)
        n1, n2, n3 = ex.column_split(n, cfg.m, cfg.n, cfg.bits)
        npk = ex.pack_count(cfg.bits)
        in_bytes = np.dtype(dtype).itemsize
        # the three paths of the fused kernel, concurrent (warp roles): tensor-core columns
        # as an INT8 MMA, packed columns as INT32 IMADs (one per word: npk products), converted
        # columns as FP32 FFMAs (modeled: runtime/model/costmodel.py, concurrent Work)
        ops = {"int8": 2.0 * m * n3 * k, "int32": 2.0 * m * k * n1 / npk, "fp32": 2.0 * m * k * n2}
        # quantize A (max + convert, int8 and fp32 copies) and B (max + convert/pack)
        packing = (2 * in_bytes + 5) * m * k + (2 * in_bytes + 1) * k * n + 8 * (m + n)
        return Work(ops={c: v for c, v in ops.items() if v} or {"int8": 0.0}, bytes_moved=float(packing),
                    concurrent=True)
