"""split: the patent's split-precision GEMM (seed 000, [0058]–[0078]).

K is cut into slices of ``width`` columns; the slices are ranked by importance
(magnitude percentile of A's slice times that of B's slice, as in seed 002's
selective quantization); the most important ``fp16`` fraction runs as a range-scaled
FP16 sub-GEMM, the rest as a symmetric INT8 sub-GEMM; the INT8 result is
dequantized and the two are summed, exactly, then rounded once to float32.
``fp16=auto`` takes the fraction from the partition-size calculator
(runtime/model/partition.py) for the config's ``target`` GPU. ``encoding=sf16|sf8|pct<p>``
encodes the INT8 part's operands instead (runtime/int8/encodings.py). docs/numerics.md, "split".
The work is done by the compiled executor runtime/split/executor.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from mixjit.runtime.int8.encodings import encoding_words, parse_encoding
from mixjit.runtime.model.encoding_cost import encoding_products, outlier_share
from mixjit.runtime.model.hardware import HARDWARE, get_hardware
from mixjit.runtime.model.partition import partition_sizes
from mixjit.runtime.numerics.executor_common import row_form
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work, register
from mixjit.runtime.schemes.emulation import NONFINITE_REASON, check_operands, parse_label
from mixjit.runtime.split import executor as esp

__all__ = ["SplitConfig", "slice_importance", "fp16_slices"]


@dataclass(frozen=True)
class SplitConfig(Config):
    """``fp16``: fraction of K slices run in FP16 (0..1) or ``"auto"`` (calculator);
    ``width``: slice width in K; ``rank``: ``"pQ"`` (Q-th magnitude percentile,
    0 < Q <= 100) or ``"index"`` (no ranking: the first slices go to FP16);
    ``target``: the GPU whose MMA shapes drive ``fp16=auto``; ``encoding``: the INT8
    part's operand encoding, ``int8`` (symmetric quantization) or ``sf16``, ``sf8``,
    ``pct<p>`` (runtime/int8/encodings.py; the label leaves out the default)."""

    fp16: float | str = "auto"
    width: int = 32
    rank: str = "p99"
    target: str = "a100"
    encoding: str = "int8"

    @property
    def label(self) -> str:
        text = f"fp16={self.fp16},width={self.width},rank={self.rank},target={self.target}"
        return text + ("" if self.encoding == "int8" else f",encoding={self.encoding}")

    def words(self) -> tuple[int, ...]:
        """The config as int64 words for the compiled executor (and a plan table):
        layout ``W_*`` in runtime/split/executor.py."""
        cfg = _check(self)
        k8 = k16 = unit = num = exp = 0
        if cfg.fp16 == "auto":
            hw = get_hardware(cfg.target)
            if "int8" not in hw.mma or "fp16" not in hw.mma:
                raise ValueError(f"split: target {cfg.target!r} has no int8/fp16 MMA shape for fp16=auto")
            mode, k8, k16 = esp.FP16_AUTO, hw.mma["int8"].k, hw.mma["fp16"].k
            unit = math.lcm(k8, k16)
        else:
            mode = esp.FP16_FIXED
            share = Fraction(cfg.fp16)
            num, exp = share.numerator, share.denominator.bit_length() - 1
        q = _percentile(cfg.rank)
        rank = esp.RANK_INDEX if q is None else esp.RANK_PERCENTILE
        qbits = int(np.float64(q if q is not None else 0.0).view(np.int64))
        return (mode, num, exp, k8, k16, unit, cfg.width, rank, qbits, *encoding_words(cfg.encoding))


def _check(config: Config) -> SplitConfig:
    if not isinstance(config, SplitConfig):
        raise TypeError(f"split: expected a SplitConfig, got {type(config).__name__}")
    f = config.fp16
    if isinstance(f, str):
        if f != "auto":
            raise ValueError(f"split: fp16={f!r}; use a fraction in [0, 1] or 'auto'")
    elif not 0.0 <= f <= 1.0:
        raise ValueError(f"split: fp16={f} is outside [0, 1]")
    if config.width < 1:
        raise ValueError(f"split: width={config.width}; the slice width must be >= 1")
    _percentile(config.rank)
    parse_encoding(config.encoding)
    if config.target not in HARDWARE:
        raise ValueError(f"split: unknown target {config.target!r}; known: {', '.join(sorted(HARDWARE))}")
    return config


def _percentile(rank: str) -> float | None:
    """The percentile Q of a ``"pQ"`` rank rule, None for ``"index"``."""
    if rank == "index":
        return None
    try:
        q = float(rank[1:]) if rank.startswith("p") else math.nan
    except ValueError:
        q = math.nan
    if not 0.0 < q <= 100.0:
        raise ValueError(f"split: rank={rank!r}; use 'pQ' with 0 < Q <= 100 (e.g. 'p99', 'p100' = max) or 'index'")
    return q


def fp16_fraction(config: SplitConfig, m: int, n: int, k: int) -> Fraction:
    """The FP16 share of K: the config's number, or the calculator's for ``auto``."""
    if config.fp16 == "auto":
        return partition_sizes(m, n, k, get_hardware(config.target)).fp16_fraction
    return Fraction(config.fp16)


def _row_forms(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = check_operands("split", a, b)
    return row_form(a, False)[0], row_form(b, True)[0]


def slice_importance(a: np.ndarray, b: np.ndarray, width: int, rank: str) -> np.ndarray:
    """Importance of each K slice: ``P_Q(|A[:, s]|) · P_Q(|B[s, :]|)`` in float64
    (``rank="pQ"``), or ``-s`` (``rank="index"``). Runs the executor's ranking."""
    if width < 1:
        raise ValueError(f"split: width={width}; the slice width must be >= 1")
    q = _percentile(rank)
    ar, br = _row_forms(a, b)
    kind = esp.RANK_INDEX if q is None else esp.RANK_PERCENTILE
    return esp.slice_importance(ar, br, width, kind, 0.0 if q is None else q)


def fp16_slices(a: np.ndarray, b: np.ndarray, config: SplitConfig) -> np.ndarray:
    """Boolean mask over K: True for the columns of the slices that run in FP16.

    ``n16 = floor(f·nslices + 1/2)`` slices, the most important first, ties broken
    by the lower slice index. Runs the executor's ranking.
    """
    ar, br = _row_forms(a, b)
    return esp.fp16_columns(ar, br, np.array(config.words(), dtype=np.int64))


@register
class Split(Scheme):
    name = "split"
    executor = CompiledExecutor("split", catalog.plan_code("split"),
                                esp.split_gemm, esp.N_WORDS, esp.N_STATS, esp.STATUS_MESSAGES)
    summary = "split-precision GEMM: important K slices in range-scaled FP16, the rest INT8 (patent)"

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [SplitConfig(fp16=f) for f in ("auto", 0.25, 0.125, 0.0625, 0.0)]

    def parse_config(self, text: str) -> Config:
        return _check(parse_label(text, SplitConfig, self.name, partial=True))

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        cfg = _check(config)
        a, b = check_operands(self.name, a, b)
        c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        stats = np.zeros(esp.N_STATS, dtype=np.int64)
        status = esp.split_gemm(a, b, c, np.array(cfg.words(), dtype=np.int64), stats)
        if status != esp.OK:
            raise ValueError(f"split: {esp.STATUS_MESSAGES[status]}")
        n_nf = int(stats[esp.STAT_NONFINITE])
        return c, RunStats(
            fallbacks=n_nf,
            units=c.size,
            fallback_unit="element",
            fallback_reason=NONFINITE_REASON if n_nf else "",
            extra={"k_fp16": int(stats[esp.STAT_K_FP16]), "k_int8": int(stats[esp.STAT_K_INT8]),
                   "slow_path_elements": int(stats[esp.STAT_SLOW_ELEMENTS]),
                   **({} if cfg.encoding == "int8" else {"outliers": int(stats[esp.STAT_OUTLIERS]),
                                                         "unity": int(stats[esp.STAT_UNITY]),
                                                         "zeros": int(stats[esp.STAT_ZEROS])})},
        )

    def products(self, config: Config) -> int:
        return encoding_products(_check(config).encoding)

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        cfg = _check(config)
        nsl = -(-k // cfg.width) if k else 0
        n16 = math.floor(fp16_fraction(cfg, m, n, k) * nsl + Fraction(1, 2))
        k16 = min(k, n16 * cfg.width)
        in_bytes = np.dtype(dtype).itemsize
        # ranking pass (read both operands), then per part a max pass and a convert
        # pass writing int8 (1 byte) or fp16 (2 bytes); combination fused in the epilogue
        elems16 = (m + n) * k16
        elems8 = (m + n) * (k - k16)
        packing = in_bytes * (m + n) * k + (2 * in_bytes + 2) * elems16 + (2 * in_bytes + 1) * elems8 + 8 * (m + n)
        ops = {"int8": 2.0 * m * n * (k - k16), "fp16": 2.0 * m * n * k16}
        if cfg.encoding != "int8":  # see runtime/model/encoding_cost.py: dense products + sparse FP32 correction
            phi = outlier_share(cfg.encoding)
            ops["int8"] *= encoding_products(cfg.encoding)
            ops["fp32"] = 2.0 * 2.0 * phi * m * n * (k - k16)
            packing += 8 * phi * elems8 + (elems8 if encoding_products(cfg.encoding) > 1 else 0)
        return Work(ops=ops, bytes_moved=float(packing))
