"""dfp: dynamic fixed point (seed 004, Intel's dynamic precision management).

Each operand becomes integer mantissas of ``bits`` bits (INT8 or INT16) with one
shared exponent per tensor or per block of rows of A (columns of B). The exponent is
the right shift that brings the block's absolute maximum under the format's dynamic
range (2^(bits-1) − 1). The integer GEMM is exact; C is its value rounded once to
float32 (``out=fp32``), or requantized to a dynamic fixed-point tensor whose own
shared exponent comes from its maximum's leading-zero count (``out=dfp``, claims
4–7), which a following dfp GEMM reads back losslessly (claims 8/14). A site whose
operand is such an output can carry it (``carry_a`` / ``carry_b``: the width of the
producing site): the operand keeps the producer's shared exponent and mantissas
instead of being quantized to this site's config (passes/dfp_chain.py sets them
along chains of the GEMM DAG).
docs/numerics.md, section "dfp". The work is done by runtime/dfp/executor.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mixjit.runtime.dfp import executor as ex
from mixjit.runtime.mixpert.labels import MAX_CONFIG_INT
from mixjit.runtime.numerics.executor_common import row_form
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work, register
from mixjit.runtime.schemes.emulation import NONFINITE_REASON, check_operands, parse_label

__all__ = ["DfpConfig", "dfp_quantize"]

_OUTS = {"fp32": ex.OUT_FP32, "dfp": ex.OUT_DFP}


@dataclass(frozen=True)
class DfpConfig(Config):
    """``bits``: mantissa width with the sign (8 = INT8, 16 = INT16; 2..16 accepted);
    ``block``: ``"tensor"`` (one exponent per operand) or a number of rows of A
    (columns of B) that share one exponent (``"1"``: per row / column);
    ``out``: ``"fp32"`` (C rounded once) or ``"dfp"`` (C as a per-tensor DFP tensor);
    ``carry_a`` / ``carry_b``: 0, or the ``bits`` of the dfp site (``out=dfp``) whose
    output A / B is: that operand keeps the producer's exponent and mantissas
    (docs/numerics.md, "dfp", chains). The label leaves out carries that are 0."""

    bits: int = 16
    block: str = "1"
    out: str = "fp32"
    carry_a: int = 0
    carry_b: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.block, int) and not isinstance(self.block, bool):
            object.__setattr__(self, "block", str(self.block))  # DfpConfig(8, 32) means block="32"
        if not ex.MIN_BITS <= self.bits <= ex.MAX_BITS:
            raise ValueError(f"dfp: bits={self.bits} must be in {ex.MIN_BITS}..{ex.MAX_BITS} (8 = INT8, 16 = INT16)")
        if self.block != "tensor" and not (self.block.isascii() and self.block.isdigit()
                                           and 1 <= int(self.block) <= MAX_CONFIG_INT):
            raise ValueError(f"dfp: block={self.block!r}; use 'tensor' or a number of rows in 1..{MAX_CONFIG_INT} "
                             "(e.g. '1', '32')")
        if self.out not in _OUTS:
            raise ValueError(f"dfp: out={self.out!r}; use 'fp32' or 'dfp'")
        for name in ("carry_a", "carry_b"):
            width = getattr(self, name)
            if width != 0 and not ex.MIN_BITS <= width <= ex.MAX_BITS:
                raise ValueError(f"dfp: {name}={width}; use 0 (no carry) or the producing dfp site's bits "
                                 f"({ex.MIN_BITS}..{ex.MAX_BITS})")

    @property
    def label(self) -> str:
        """``bits=…,block=…,out=…``, then the carries that are set (``carry_a=16``)."""
        text = f"bits={self.bits},block={self.block},out={self.out}"
        return text + "".join(f",{n}={getattr(self, n)}" for n in ("carry_a", "carry_b") if getattr(self, n))

    @property
    def block_rows(self) -> int:
        """Rows per exponent block, 0 for the whole tensor."""
        return 0 if self.block == "tensor" else int(self.block)

    def words(self) -> tuple[int, ...]:
        """The config as int64 words for the compiled executor: layout ``W_*`` in runtime/dfp/executor.py."""
        return (self.bits, self.block_rows, _OUTS[self.out], self.carry_a, self.carry_b)

    def widths(self) -> tuple[int, int]:
        """The mantissa widths of A and B when their carries hold (a carry keeps the producer's)."""
        return (self.carry_a or self.bits, self.carry_b or self.bits)


def dfp_quantize(x: np.ndarray, bits: int = 16, block: str = "tensor") -> tuple[np.ndarray, np.ndarray]:
    """``(q, exps)``: the rows of 2-D ``x`` (FP32 domain) as the integer mantissas and
    shared exponents dfp gives A: ``x ≈ q[i]·2^exps[i // rows_per_block]``."""
    cfg = DfpConfig(bits=bits, block=block)
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"dfp_quantize: expected a 2-D array, got shape {x.shape}")
    raw = row_form(x.astype(np.float64, copy=False), False)[0]
    q, exps, _ = ex.quantize_blocks(raw, cfg.bits, cfg.block_rows)
    return q, exps


def _check(config: Config) -> DfpConfig:
    if not isinstance(config, DfpConfig):
        raise TypeError(f"dfp: expected a DfpConfig, got {type(config).__name__}")
    return config


@register
class Dfp(Scheme):
    name = "dfp"
    executor = CompiledExecutor("dfp", catalog.plan_code("dfp"),
                                ex.dfp_gemm, ex.N_WORDS, ex.N_STATS, ex.STATUS_MESSAGES)
    summary = "dynamic fixed point: INT8/INT16 mantissas, shared exponent per tensor or row block (seed 004)"

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [DfpConfig(16, "1"), DfpConfig(16, "tensor"), DfpConfig(8, "1"), DfpConfig(8, "tensor")]

    def parse_config(self, text: str) -> Config:
        return parse_label(text, DfpConfig, self.name, partial=True)

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        cfg = _check(config)
        a, b = check_operands(self.name, a, b)
        c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        stats = np.zeros(ex.N_STATS, dtype=np.int64)
        status = ex.dfp_gemm(a, b, c, np.array(cfg.words(), dtype=np.int64), stats)
        if status != ex.OK:
            raise ValueError(f"dfp: {ex.STATUS_MESSAGES[status]}")
        n_nf = int(stats[ex.STAT_NONFINITE])
        extra = {"carries": int(stats[ex.STAT_CARRIES])}
        if cfg.carry_a or cfg.carry_b:
            extra["carry_misses"] = int(stats[ex.STAT_CARRY_MISSES])
        if cfg.out == "dfp":
            extra["out_exponent"] = int(stats[ex.STAT_OUT_EXPONENT])
        return c, RunStats(fallbacks=n_nf, units=c.size, fallback_unit="element",
                           fallback_reason=NONFINITE_REASON if n_nf else "", extra=extra)

    def products(self, config: Config) -> int:
        # an INT16 mantissa is a signed high byte and an unsigned low byte, two INT8
        # pieces (up to 8 bits, one): pieces(A) x pieces(B) IMMA products, 1 or 4
        # without carries, 2 for a 16-bit operand carried into an 8-bit site
        wa, wb = _check(config).widths()
        return (1 if wa <= 8 else 2) * (1 if wb <= 8 else 2)

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        cfg = _check(config)
        in_bytes = np.dtype(dtype).itemsize
        wa, wb = cfg.widths()
        blocks_a = 1 if cfg.block == "tensor" else -(-m // cfg.block_rows)
        blocks_b = 1 if cfg.block == "tensor" else -(-n // cfg.block_rows)
        # a max pass and a shift pass over each operand, mantissas written, 2-byte exponents;
        # a carried operand's mantissas and exponent are handed over by the site that
        # wrote them (read once, no max or shift pass: modeled, the CPU executor
        # recovers them from the float32 values, which hold them exactly);
        # out=dfp: the epilogue writes the INT32 accumulators, a pass reads them for the
        # maximum, and one more reads them and writes the requantized C
        packing = (_operand_bytes(in_bytes, wa, bool(cfg.carry_a)) * m * k + 2 * blocks_a
                   + _operand_bytes(in_bytes, wb, bool(cfg.carry_b)) * n * k + 2 * blocks_b)
        epilogue = 12 * m * n if cfg.out == "dfp" else 0
        return Work(ops={"int8": 2.0 * m * n * k * self.products(cfg)}, bytes_moved=float(packing + epilogue))


def _operand_bytes(in_bytes: int, width: int, carried: bool) -> int:
    """Bytes moved per element to pack one operand: a carried one is only read as mantissas."""
    mant_bytes = 1 if width <= 8 else 2
    return mant_bytes if carried else 2 * in_bytes + mant_bytes
