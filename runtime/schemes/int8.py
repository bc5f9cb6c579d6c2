"""int8: plain symmetric INT8 quantization, per-row scale for A, per-column for B.

The cheap approximate scheme, for error-tolerant code (k-means assignment, kNN
candidate search). ``sa_i = max_k|a_ik| / 127``, ``qa_ik = rint(a_ik / sa_i)`` (and
likewise per column of B), the integer GEMM is exact, and
``C = RN32((S·sa_i)·sb_j)`` with float64 products. docs/numerics.md, section "int8".
The work is done by the compiled executor runtime/executor_int8.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mixjit.runtime import executor_int8 as ei8
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work, register
from mixjit.runtime.schemes.emulation import NONFINITE_REASON, check_operands, parse_label

__all__ = ["Int8Config"]


@dataclass(frozen=True)
class Int8Config(Config):
    """The one int8 config: per-row (A) / per-column (B) symmetric scales."""

    scale: str = "row-col"

    def words(self) -> tuple[int, ...]:
        """The config as int64 words for the compiled executor (and a plan table):
        layout ``W_*`` in runtime/executor_int8.py."""
        if self.scale != "row-col":
            raise ValueError(f"int8: unknown scale {self.scale!r}; the only one is 'row-col'")
        return (ei8.SCALE_ROW_COL,)


@register
class Int8(Scheme):
    name = "int8"
    executor = CompiledExecutor("int8", 6, ei8.int8_gemm, ei8.N_WORDS, ei8.N_STATS, ei8.STATUS_MESSAGES)
    summary = "symmetric INT8 quantization (per-row A / per-column B scales), exact integer GEMM"

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [Int8Config()]

    def parse_config(self, text: str) -> Config:
        cfg = parse_label(text, Int8Config, self.name)
        self._check(cfg)
        return cfg

    def _check(self, config: Config) -> None:
        if config != Int8Config():
            raise ValueError(f"int8: unknown config {config!r}; the only config is {Int8Config().label!r}")

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        self._check(config)
        a, b = check_operands(self.name, a, b)
        c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        stats = np.zeros(ei8.N_STATS, dtype=np.int64)
        status = ei8.int8_gemm(a, b, c, np.array(config.words(), dtype=np.int64), stats)
        if status != ei8.OK:
            raise ValueError(f"int8: {ei8.STATUS_MESSAGES[status]}")
        n_nf = int(stats[ei8.STAT_NONFINITE])
        return c, RunStats(
            fallbacks=n_nf,
            units=c.size,
            fallback_unit="element",
            fallback_reason=NONFINITE_REASON if n_nf else "",
        )

    def products(self, config: Config) -> int:
        self._check(config)
        return 1

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        self._check(config)
        in_bytes = np.dtype(dtype).itemsize
        # packing: a max pass and a quantize pass over each operand, writing int8;
        # the dequantization is fused into the GEMM epilogue (scales: m + n floats)
        packing = (2 * in_bytes + 1) * (m * k + k * n) + 8 * (m + n)
        return Work(ops={"int8": 2.0 * m * n * k}, bytes_moved=float(packing))
