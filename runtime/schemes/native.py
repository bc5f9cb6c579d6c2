"""native: the platform BLAS in the input precision (sgemm / dgemm).

The one scheme that is not bit-specified: BLAS's accumulation order (blocking,
vector width, threads, FMA use) is implementation-defined, so results can differ
between BLAS builds, machines and thread counts. It is the reference point for
speed and the plan of a site that needs no emulation. docs/numerics.md, "native".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mixjit.runtime.schemes.base import NATIVE_EXECUTOR, Config, RunStats, Scheme, Work, register
from mixjit.runtime.schemes.emulation import parse_label

_ACCUMULATE = ("blas",)


@dataclass(frozen=True)
class NativeConfig(Config):
    """``accumulate="blas"``: whatever order the linked BLAS uses."""

    accumulate: str = "blas"


@register
class Native(Scheme):
    name = "native"
    summary = "platform BLAS in the input precision (accumulation order implementation-defined)"
    executor = NATIVE_EXECUTOR
    dtypes = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64), np.dtype(np.complex128))

    def executor_words(self, config: Config) -> tuple[int, ...]:
        self._check(config)
        return ()

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [NativeConfig()]

    def parse_config(self, text: str) -> Config:
        cfg = parse_label(text, NativeConfig, self.name)
        self._check(cfg)
        return cfg

    def _check(self, config: Config) -> None:
        if not isinstance(config, NativeConfig) or config.accumulate not in _ACCUMULATE:
            raise ValueError(f"native: unknown config {config!r}; the only config is {NativeConfig().label!r}")

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        self._check(config)
        return np.matmul(a, b), RunStats(units=1, fallback_unit="gemm")

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        """One GEMM at the input precision's rate; a complex one is four real products' flops
        (cgemm/zgemm: four real multiply-adds per complex one)."""
        self._check(config)
        dt = np.dtype(dtype)
        cls = "fp64" if dt in (np.float64, np.complex128) else "fp32"
        real_products = 4 if dt.kind == "c" else 1
        return Work(ops={cls: real_products * 2.0 * m * n * k}, bytes_moved=0.0)

    def products(self, config: Config) -> int:
        self._check(config)
        return 1
