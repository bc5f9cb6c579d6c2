"""Pieces shared by the emulation schemes (tf32x3, bf16xn, fp16x2, int8, split).

* the FP32 domain: every emulation scheme first rounds its inputs to float32 and
  returns ``RN32`` of its exact result, widened to the input dtype;
* the non-finite rule: an output element whose row of A or column of B holds an
  inf or NaN is the IEEE value of the float64 dot product (order independent:
  float32 products cannot overflow float64), NaN written as the quiet NaN;
* the multi-term float split engine (:func:`multiterm_gemm`): split each operand
  into parts of a low-precision format, keep a list of part pairs, and round the
  exact sum of the kept products once (runtime/exactsum.py);
* a small text parser for config labels.

The semantics are written out in docs/numerics.md (sections "Common conventions for
the emulation schemes", "tf32x3", "bf16x3, bf16x6, bf16x9", "fp16x2").
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Callable, ClassVar, Sequence

import numpy as np

from mixjit.runtime.exactsum import round_exact_sum
from mixjit.runtime.formats import round_to_bf16, round_to_fp16, round_to_tf32
from mixjit.runtime.schemes.base import Config, RunStats, Scheme, Work

__all__ = [
    "PartFormat",
    "PART_FORMATS",
    "PAIR_ORDER",
    "kept_pairs",
    "split_parts",
    "multiterm_gemm",
    "to_fp32",
    "finite_or_zero",
    "nonfinite_fixup",
    "check_products",
    "parse_label",
    "ProductsConfig",
    "MultiTermScheme",
]

# ---------------------------------------------------------------- FP32 domain


def to_fp32(x: np.ndarray) -> np.ndarray:
    """The operand in the FP32 domain: float32, RN from float64 (overflow gives ±inf)."""
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float32)


def nonfinite_fixup(c: np.ndarray, a32: np.ndarray, b32: np.ndarray) -> int:
    """Apply the non-finite rule to ``c`` in place; return the number of elements set."""
    bad_r = ~np.isfinite(a32).all(axis=1)
    bad_c = ~np.isfinite(b32).all(axis=0)
    nr, nc = int(bad_r.sum()), int(bad_c.sum())
    if nr == 0 and nc == 0:
        return 0
    a64, b64 = a32.astype(np.float64), b32.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        if nr:
            c[bad_r, :] = (a64[bad_r] @ b64).astype(np.float32)
        if nc:
            c[:, bad_c] = (a64 @ b64[:, bad_c]).astype(np.float32)
    c[np.isnan(c)] = np.float32(np.nan)
    return nr * c.shape[1] + nc * c.shape[0] - nr * nc


def finite_or_zero(x32: np.ndarray) -> np.ndarray:
    """``x32`` with inf/NaN replaced by 0 (their outputs are set by the non-finite rule)."""
    return np.where(np.isfinite(x32), x32, np.float32(0.0))


# ---------------------------------------------------------- multi-term engine


@dataclass(frozen=True)
class PartFormat:
    """A low-precision format that float32 operands are split into.

    ``scaled`` formats (FP16) have a narrow exponent range: each row of A and each
    column of B is first multiplied by a power of two ``2^s`` that puts its largest
    magnitude in ``[2^14, 2^15)``, and each residual is multiplied by
    ``2^residual_shift`` before it is rounded, so residuals stay in the normal range.
    Unscaled formats (TF32, BF16) share float32's exponent range.
    """

    name: str
    round: Callable[[np.ndarray], np.ndarray]
    scaled: bool = False
    residual_shift: int = 0
    #: storage bytes of one part element (packing traffic in the cost model)
    part_bytes: int = 2


PART_FORMATS: dict[str, PartFormat] = {
    "tf32": PartFormat("tf32", round_to_tf32, part_bytes=4),
    "bf16": PartFormat("bf16", round_to_bf16),
    "fp16": PartFormat("fp16", round_to_fp16, scaled=True, residual_shift=11),
}

#: the order in which part pairs (p, q) are kept: by p+q, then by p
PAIR_ORDER: tuple[tuple[int, int], ...] = (
    (0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (2, 0), (1, 2), (2, 1), (2, 2),
)

#: top of the scaled range: a scaled row's largest magnitude lies in [2^14, 2^15)
SCALED_TOP_EXP = 15


def kept_pairs(products: int) -> tuple[tuple[int, int], ...]:
    """The first ``products`` pairs of :data:`PAIR_ORDER`."""
    if not 1 <= products <= len(PAIR_ORDER):
        raise ValueError(f"products must be in 1..{len(PAIR_ORDER)}, got {products}")
    return PAIR_ORDER[:products]


def split_parts(x32: np.ndarray, fmt: PartFormat, nparts: int, axis: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Split finite float32 ``x32`` into ``nparts`` parts of ``fmt``.

    Returns the parts as float64 arrays in the units of ``x32`` (scales undone,
    exactly), and a boolean mask of the elements whose leading part overflowed to
    ±inf (only possible for unscaled formats, for |x| near FLT_MAX). ``axis`` is the
    reduction axis of the GEMM: 1 for A (one scale per row), 0 for B (per column).
    """
    if not fmt.scaled:
        parts32 = []
        r = x32
        for _ in range(nparts):
            p = fmt.round(r)
            parts32.append(p)
            with np.errstate(invalid="ignore"):
                r = r - p  # exact in float32
        overflow = np.isinf(parts32[0])
        if overflow.any():  # rare: |x| near FLT_MAX; these rows/columns fall back
            parts32 = [np.where(overflow, np.float32(0.0), p) for p in parts32]
        return [p.astype(np.float64) for p in parts32], overflow
    amax = np.abs(x32).max(axis=axis, keepdims=True).astype(np.float64)
    _, e = np.frexp(amax)  # amax = f * 2^e, f in [0.5, 1)
    shift = np.where(amax > 0, SCALED_TOP_EXP - e, 0)
    r = np.ldexp(x32.astype(np.float64), shift)  # exact; |r| < 2^15
    parts = []
    for i in range(nparts):
        s = shift + i * fmt.residual_shift
        scaled = np.ldexp(r, i * fmt.residual_shift)
        p = fmt.round(scaled.astype(np.float32)).astype(np.float64)
        parts.append(np.ldexp(p, -s))
        r = r - np.ldexp(p, -i * fmt.residual_shift)  # exact in float64
    return parts, np.zeros(x32.shape, dtype=bool)


def multiterm_gemm(a: np.ndarray, b: np.ndarray, fmt: str, products: int) -> tuple[np.ndarray, RunStats]:
    """``RN32`` of the exact sum of the kept part products of ``a @ b``.

    ``a`` (m×k) and ``b`` (k×n) are float32 or float64 (rounded to float32 first);
    ``fmt`` is ``"tf32"``, ``"bf16"`` or ``"fp16"``; the first ``products`` pairs of
    :data:`PAIR_ORDER` are kept. Returns a float32 array and the run statistics.
    This is the executor of tf32x3, bf16xn and fp16x2, and it may be called on
    single tiles (e.g. as a per-tile fallback).
    """
    pf = PART_FORMATS[fmt]
    pairs = kept_pairs(products)
    nparts = 1 + max(max(p, q) for p, q in pairs)
    a32, b32 = to_fp32(a), to_fp32(b)
    m, n = a32.shape[0], b32.shape[1]
    a_fin, b_fin = finite_or_zero(a32), finite_or_zero(b32)
    a_parts, a_ovf = split_parts(a_fin, pf, nparts, axis=1)
    b_parts, b_ovf = split_parts(b_fin, pf, nparts, axis=0)
    c, slow = round_exact_sum(a_parts, b_parts, pairs)
    # part overflow: the affected rows/columns are computed from the unsplit float32
    # values (a correctly rounded float32 dot product)
    ovf_r = a_ovf.any(axis=1)
    ovf_c = b_ovf.any(axis=0)
    n_ovf = 0
    if ovf_r.any() or ovf_c.any():
        a64, b64 = a_fin.astype(np.float64), b_fin.astype(np.float64)
        if ovf_r.any():
            c[ovf_r, :], s1 = round_exact_sum([a64[ovf_r]], [b64], [(0, 0)])
            slow += s1
        if ovf_c.any():
            c[:, ovf_c], s2 = round_exact_sum([a64], [b64[:, ovf_c]], [(0, 0)])
            slow += s2
        nr, nc = int(ovf_r.sum()), int(ovf_c.sum())
        n_ovf = nr * n + nc * m - nr * nc
    n_nf = nonfinite_fixup(c, a32, b32)
    stats = RunStats(
        fallbacks=n_ovf + n_nf,
        units=m * n,
        fallback_unit="element",
        fallback_reason=_reason(n_nf, n_ovf, pf.name),
        extra={"nonfinite": n_nf, "part_overflow": n_ovf, "slow_path_elements": slow},
    )
    return c, stats


def _reason(n_nf: int, n_ovf: int, fmt: str) -> str:
    reasons = []
    if n_nf:
        reasons.append("inf/NaN in its row of A or column of B: IEEE propagation")
    if n_ovf:
        reasons.append(f"|x| rounds past the {fmt} range in its row/column: exact float32 dot product")
    return "; ".join(reasons)


# -------------------------------------------------------------- config labels


def parse_label(text: str, cls: type[Config], scheme: str) -> Config:
    """Parse ``"f1=v1,f2=v2"`` (any order, all fields required) into config ``cls``.

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
    if missing:
        raise ValueError(f"{scheme}: config {text!r} lacks {', '.join(missing)}; write e.g. {cls().label!r}")
    return cls(**values)


def _convert(val: str, typ: object, scheme: str, key: str) -> object:
    try:
        if typ is int:
            return int(val)
        if typ is float:
            return float(val)
        if typ is str:
            return val
        # float | str
        try:
            return float(val)
        except ValueError:
            return val
    except ValueError:
        raise ValueError(f"{scheme}: config field {key}={val!r} is not a valid {getattr(typ, '__name__', typ)}") from None


def check_products(scheme: str, products: int, allowed: Sequence[int]) -> None:
    """Raise ValueError if ``products`` is not one of the scheme's configs."""
    if products not in allowed:
        raise ValueError(f"{scheme}: products={products} is not a config; choose one of {list(allowed)}")


# ------------------------------------------------------- multi-term schemes


@dataclass(frozen=True)
class ProductsConfig(Config):
    """Config of a multi-term scheme: how many part products are kept."""

    products: int = 3


class MultiTermScheme(Scheme):
    """Base of tf32x3, bf16xn and fp16x2: subclasses set ``fmt`` and ``allowed``."""

    fmt: ClassVar[str]
    #: the kept-product counts offered as configs, most precise first
    allowed: ClassVar[tuple[int, ...]]

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        return [ProductsConfig(p) for p in self.allowed]

    def parse_config(self, text: str) -> Config:
        cfg = parse_label(text, ProductsConfig, self.name)
        check_products(self.name, cfg.products, self.allowed)
        return cfg

    def _products(self, config: Config) -> int:
        if not isinstance(config, ProductsConfig):
            raise TypeError(f"{self.name}: expected a ProductsConfig, got {type(config).__name__}")
        check_products(self.name, config.products, self.allowed)
        return config.products

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        c, stats = multiterm_gemm(a, b, self.fmt, self._products(config))
        return c.astype(a.dtype, copy=False), stats

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
