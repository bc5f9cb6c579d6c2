"""Pieces shared by the emulation schemes (tf32x3, bf16xn, fp16x2, int8, split).

* the multi-term float schemes' Python face (:func:`multiterm_gemm`,
  :class:`MultiTermScheme`, :class:`ProductsConfig`): split each operand into parts
  of a low-precision format, keep a list of part pairs, and round the exact sum of
  the kept products once; the work is done by the compiled executor
  runtime/multiterm/executor.py (the same code compiled callers run);
* :func:`run_stats`: an executor's stats array as RunStats;
* a small text parser for config labels.

The semantics are written out in docs/numerics.md (sections "Common conventions for
the emulation schemes", "tf32x3", "bf16x3, bf16x6, bf16x9", "fp16x2").
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from mixjit.runtime.mixpert.labels import MAX_CONFIG_INT
from mixjit.runtime.multiterm import executor as emt
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work

__all__ = [
    "PartFormat",
    "PART_FORMATS",
    "PAIR_ORDER",
    "kept_pairs",
    "multiterm_gemm",
    "check_operands",
    "NONFINITE_REASON",
    "parse_label",
    "check_products",
    "ProductsConfig",
    "MultiTermScheme",
]

NONFINITE_REASON = "inf/NaN in its row of A or column of B: IEEE propagation"


def check_operands(scheme: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a``, ``b`` as 2-D float32/float64 arrays with matching inner dimensions, or a
    ValueError (shapes) / TypeError (dtypes) that names the problem."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"{scheme}: A and B must be 2-D, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"{scheme}: inner dimensions differ: A is {a.shape[0]}x{a.shape[1]}, "
                         f"B is {b.shape[0]}x{b.shape[1]}")
    if a.dtype not in (np.float32, np.float64) or b.dtype not in (np.float32, np.float64):
        raise TypeError(f"{scheme}: A and B must be float32 or float64, got {a.dtype} and {b.dtype}; "
                         "convert with .astype(np.float32)")
    return a, b


# ---------------------------------------------------------- multi-term engine


@dataclass(frozen=True)
class PartFormat:
    """A low-precision format that float32 operands are split into (cost-model facts;
    the rounding itself is compiled in runtime/multiterm/executor.py).

    ``scaled`` formats (FP16) have a narrow exponent range: each row of A and each
    column of B is first multiplied by a power of two ``2^s`` that puts its largest
    magnitude in ``[2^14, 2^15)``, and each residual is multiplied by
    ``2^residual_shift`` before it is rounded, so residuals stay in the normal range.
    Unscaled formats (TF32, BF16) share float32's exponent range.
    """

    name: str
    scaled: bool = False
    residual_shift: int = 0
    #: storage bytes of one part element (packing traffic in the cost model)
    part_bytes: int = 2


PART_FORMATS: dict[str, PartFormat] = {
    "tf32": PartFormat("tf32", part_bytes=4),
    "bf16": PartFormat("bf16"),
    "fp16": PartFormat("fp16", scaled=True, residual_shift=11),
}

#: the order in which part pairs (p, q) are kept: by p+q, then by p
PAIR_ORDER: tuple[tuple[int, int], ...] = (
    (0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (2, 0), (1, 2), (2, 1), (2, 2),
)


def kept_pairs(products: int) -> tuple[tuple[int, int], ...]:
    """The first ``products`` pairs of :data:`PAIR_ORDER`."""
    if not 1 <= products <= len(PAIR_ORDER):
        raise ValueError(f"products must be in 1..{len(PAIR_ORDER)}, got {products}")
    return PAIR_ORDER[:products]


def multiterm_gemm(a: np.ndarray, b: np.ndarray, fmt: str, products: int) -> tuple[np.ndarray, RunStats]:
    """``RN32`` of the exact sum of the kept part products of ``a @ b``.

    ``a`` (m×k) and ``b`` (k×n) are float32 or float64 (rounded to float32 first);
    ``fmt`` is ``"tf32"``, ``"bf16"`` or ``"fp16"``; the first ``products`` pairs of
    :data:`PAIR_ORDER` are kept. Returns C in ``a``'s dtype and the run statistics.
    Runs the compiled executor (runtime/multiterm/executor.py).
    """
    if fmt not in emt.FORMAT_CODES:
        raise ValueError(f"unknown part format {fmt!r}; known: {', '.join(emt.FORMAT_CODES)}")
    kept_pairs(products)
    a, b = check_operands(f"{fmt} multi-term", a, b)
    c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    stats = np.zeros(emt.N_STATS, dtype=np.int64)
    words = np.array([emt.FORMAT_CODES[fmt], products], dtype=np.int64)
    status = emt.multiterm_gemm(a, b, c, words, stats)
    if status != emt.OK:
        raise ValueError(f"{fmt} multi-term: {emt.STATUS_MESSAGES[status]}")
    n_nf, n_ovf = int(stats[emt.STAT_NONFINITE]), int(stats[emt.STAT_PART_OVERFLOW])
    return c, RunStats(
        fallbacks=n_ovf + n_nf,
        units=c.size,
        fallback_unit="element",
        fallback_reason=_reason(n_nf, n_ovf, fmt),
        extra={"nonfinite": n_nf, "part_overflow": n_ovf, "slow_path_elements": int(stats[emt.STAT_SLOW_ELEMENTS])},
    )


def _reason(n_nf: int, n_ovf: int, fmt: str) -> str:
    reasons = []
    if n_nf:
        reasons.append(NONFINITE_REASON)
    if n_ovf:
        reasons.append(f"|x| rounds past the {fmt} range in its row/column: exact float32 dot product")
    return "; ".join(reasons)


# -------------------------------------------------------------- config labels


def parse_label(text: str, cls: type[Config], scheme: str, partial: bool = False) -> Config:
    """Parse ``"f1=v1,f2=v2"`` (any order) into config ``cls``: every field is
    required, or with ``partial`` the missing ones take their defaults.

    Field values are converted with the field's annotated type (int, float, str, or
    ``float | str``, where a text that is not a number stays text).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if text.strip() == "default" and not fields:
        return cls()
    hints = typing.get_type_hints(cls)
    values: dict[str, object] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or key not in fields:
            known = ", ".join(fields) or "none (label 'default')"
            raise ValueError(f"{scheme}: bad config part {item!r} in {text!r}; fields are: {known}")
        values[key] = _convert(val.strip(), hints[key], scheme, key)
    missing = [f for f in fields if f not in values]
    if missing and not partial:
        raise ValueError(f"{scheme}: config {text!r} lacks {', '.join(missing)}; write e.g. {cls().label!r}")
    return cls(**values)


def _convert(val: str, typ: object, scheme: str, key: str) -> object:
    try:
        if typ is int:
            v = int(val)
        elif typ is float:
            return float(val)
        elif typ is str:
            return val
        else:  # float | str
            try:
                return float(val)
            except ValueError:
                return val
    except ValueError:
        raise ValueError(f"{scheme}: config field {key}={val!r} is not a valid {getattr(typ, '__name__', typ)}") from None
    if not -MAX_CONFIG_INT <= v <= MAX_CONFIG_INT:  # the executors read config words as int64
        raise ValueError(f"{scheme}: config field {key}={val} must be in -{MAX_CONFIG_INT}..{MAX_CONFIG_INT}")
    return v


def check_products(scheme: str, products: int, allowed: Sequence[int]) -> None:
    """Raise ValueError if ``products`` is not one of the scheme's configs."""
    if products not in allowed:
        raise ValueError(f"{scheme}: products={products} is not a config; choose one of {list(allowed)}")


# ------------------------------------------------------- multi-term schemes


@dataclass(frozen=True)
class ProductsConfig(Config):
    """Config of a multi-term scheme: how many part products are kept. Each scheme
    subclasses it to name its part format (``fmt``), which :meth:`words` encodes."""

    products: int = 3
    fmt: ClassVar[str] = ""

    def words(self) -> tuple[int, ...]:
        """The config as int64 words for the compiled executor (and a plan table):
        ``(format code, products)``, layout ``W_*`` in runtime/multiterm/executor.py."""
        if self.fmt not in emt.FORMAT_CODES:
            raise TypeError("ProductsConfig has no part format; use the scheme's config "
                            "(scheme.parse_config(...) or scheme.configs())")
        return (emt.FORMAT_CODES[self.fmt], self.products)


class MultiTermScheme(Scheme):
    """Base of tf32x3, bf16xn and fp16x2: subclasses set ``fmt`` and ``allowed``."""

    executor = CompiledExecutor("multiterm", catalog.plan_code("multiterm"),
                                emt.multiterm_gemm, emt.N_WORDS, emt.N_STATS, emt.STATUS_MESSAGES)

    fmt: ClassVar[str]
    #: the kept-product counts offered as configs, most precise first
    allowed: ClassVar[tuple[int, ...]]
    #: the scheme's ProductsConfig subclass (its ``fmt`` is the scheme's)
    config_class: ClassVar[type[ProductsConfig]]

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [self.config_class(p) for p in self.allowed]

    def parse_config(self, text: str) -> Config:
        cfg = parse_label(text, self.config_class, self.name)
        check_products(self.name, cfg.products, self.allowed)
        return cfg

    def _products(self, config: Config) -> int:
        if not isinstance(config, ProductsConfig):
            raise TypeError(f"{self.name}: expected a ProductsConfig, got {type(config).__name__}")
        check_products(self.name, config.products, self.allowed)
        return config.products

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        return multiterm_gemm(a, b, self.fmt, self._products(config))

    def products(self, config: Config) -> int:
        return self._products(config)

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        pf = PART_FORMATS[self.fmt]
        pairs = kept_pairs(self._products(config))
        nparts = 1 + max(max(p, q) for p, q in pairs)
        in_bytes = np.dtype(dtype).itemsize
        # packing: read each operand (twice for scaled formats: max pass + split
        # pass) and write its parts. The kept products accumulate in registers, so
        # there is no epilogue pass beyond writing C, which every scheme does.
        reads = in_bytes * (2 if pf.scaled else 1)
        packing = (reads + nparts * pf.part_bytes) * (m * k + k * n)
        if pf.part_bytes == 4 and not pf.scaled:
            # TF32 parts are float32 bit patterns that the tensor core reads as they
            # are: the split happens in registers in the GEMM mainloop (CUTLASS's
            # OpMultiplyAddFastF32), so float32 operands need no packing pass and
            # float64 ones one rounding pass to float32 (read 8 bytes, write 4).
            packing = 0 if in_bytes == 4 else (in_bytes + 4) * (m * k + k * n)
        return Work(ops={self.fmt: 2.0 * m * n * k * len(pairs)}, bytes_moved=float(packing))
