"""int8: plain symmetric INT8 quantization, per-row scale for A, per-column for B.

The cheap approximate scheme, for error-tolerant code (k-means assignment, kNN
candidate search). ``sa_i = max_k|a_ik| / 127``, ``qa_ik = rint(a_ik / sa_i)`` (and
likewise per column of B), the integer GEMM is exact, and
``C = RN32((S·sa_i)·sb_j)`` with float64 products. docs/numerics.md, section "int8".
``encoding=sf16|sf8|pct<p>`` replaces the quantizer by an operand encoding
(runtime/int8/encodings.py; docs/numerics.md, "Operand encodings").
The work is done by the compiled executor runtime/int8/executor.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mixjit.runtime.int8 import executor as ei8
from mixjit.runtime.int8.encodings import encoding_words, parse_encoding
from mixjit.runtime.model.encoding_cost import encoded_work, encoding_products
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work, register
from mixjit.runtime.schemes.emulation import NONFINITE_REASON, check_operands, parse_label

__all__ = ["Int8Config"]


@dataclass(frozen=True)
class Int8Config(Config):
    """An int8 config: per-row (A) / per-column (B) symmetric scales (``scale=row-col``,
    the only one); ``encoding``: ``int8`` (that quantization), or an operand encoding
    ``sf16``, ``sf8``, ``pct<p>`` (runtime/int8/encodings.py). The label leaves out the
    default encoding."""

    scale: str = "row-col"
    encoding: str = "int8"

    def __post_init__(self) -> None:
        parse_encoding(self.encoding)

    @property
    def label(self) -> str:
        return f"scale={self.scale}" + ("" if self.encoding == "int8" else f",encoding={self.encoding}")

    def words(self) -> tuple[int, ...]:
        """The config as int64 words for the compiled executor (and a plan table):
        layout ``W_*`` in runtime/int8/executor.py."""
        if self.scale != "row-col":
            raise ValueError(f"int8: unknown scale {self.scale!r}; the only one is 'row-col'")
        return (ei8.SCALE_ROW_COL, *encoding_words(self.encoding))


@register
class Int8(Scheme):
    name = "int8"
    executor = CompiledExecutor("int8", catalog.plan_code("int8"),
                                ei8.int8_gemm, ei8.N_WORDS, ei8.N_STATS, ei8.STATUS_MESSAGES)
    summary = "symmetric INT8 quantization (per-row A / per-column B scales), exact integer GEMM"

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [Int8Config()]

    def parse_config(self, text: str) -> Config:
        cfg = parse_label(text, Int8Config, self.name, partial=True)
        self._check(cfg)
        return cfg

    def _check(self, config: Config) -> None:
        if not isinstance(config, Int8Config) or config.scale != "row-col":
            raise ValueError(f"int8: unknown config {config!r}; the scale is {Int8Config().label!r}, "
                             "optionally with encoding=sf16|sf8|pct<p>")

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        self._check(config)
        a, b = check_operands(self.name, a, b)
        c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        stats = np.zeros(ei8.N_STATS, dtype=np.int64)
        status = ei8.int8_gemm(a, b, c, np.array(config.words(), dtype=np.int64), stats)
        if status != ei8.OK:
            raise ValueError(f"int8: {ei8.STATUS_MESSAGES[status]}")
        n_nf = int(stats[ei8.STAT_NONFINITE])
        extra = {}
        if config.encoding != "int8":  # type: ignore[attr-defined]
            extra = {"outliers": int(stats[ei8.STAT_OUTLIERS]), "unity": int(stats[ei8.STAT_UNITY]),
                     "zeros": int(stats[ei8.STAT_ZEROS])}
        return c, RunStats(
            fallbacks=n_nf,
            units=c.size,
            fallback_unit="element",
            fallback_reason=NONFINITE_REASON if n_nf else "",
            extra=extra,
        )

    def products(self, config: Config) -> int:
        self._check(config)
        return encoding_products(config.encoding)  # type: ignore[attr-defined]

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        self._check(config)
        in_bytes = np.dtype(dtype).itemsize
        enc = config.encoding  # type: ignore[attr-defined]
        if enc != "int8":
            return encoded_work(enc, m, n, k, in_bytes)
        # packing: a max pass and a quantize pass over each operand, writing int8;
        # the dequantization is fused into the GEMM epilogue (scales: m + n floats)
        packing = (2 * in_bytes + 1) * (m * k + k * n) + 8 * (m + n)
        return Work(ops={"int8": 2.0 * m * n * k}, bytes_moved=float(packing))
