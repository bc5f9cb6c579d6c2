"""MixPert: FP32 (``mixpert``) and FP64 (``mixpert-fp64``) GEMM emulation from INT8
segment products (paper §3.2-3.3; Ozaki scheme I for FP64).

Both schemes share one config type, one data packer (runtime/mixpert/segments.py) and one
executor (runtime/mixpert/executor.py); they differ in their config family and in
the domain (inputs rounded to, and C rounded to, float32 or float64). Semantics:
docs/numerics.md, sections "mixpert" and "mixpert-fp64".

Config labels: ``level=IV`` (levels I-IV and ``full`` are the paper's (l, r) pair
sets on 3 segments), or the general form
``segments=4,pairs=sig3,align=row,rounding=trunc,tile=16x32x8,fallback=off``
where ``pairs`` is ``sigN`` (all pairs with i+j <= N), ``slicesLsigN`` (pairs whose
slices of L segments have i//L + j//L <= N) or a list like ``00.01.10``.
Fields equal to the scheme's defaults are left out of the label.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from mixjit.runtime.mixpert import executor as ex
from mixjit.runtime.mixpert.executor import Prepared, prepare, run_mixpert
from mixjit.runtime.mixpert.labels import (
    LEVELS,
    MAX_CONFIG_INT,
    MAX_SEG0_BITS,
    MAX_SEGMENTS,
    Pairs,
    parse_label_fields,
    significance_pairs,
    slice_pairs,
)
from mixjit.runtime.mixpert.pair_blocks import plan_blocks
from mixjit.runtime.mixpert.segments import BALANCED, MAGNITUDE, ROUND_NEAREST, ROUND_TRUNC, width
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work, register

__all__ = [
    "MixPertConfig",
    "MixPertFP64Config",
    "LEVELS",
    "significance_pairs",
    "slice_pairs",
    "config_from_words",
    "MixPert",
    "MixPertFP64",
    "FP32_PRECISE",
    "FP64_PRECISE",
]

@dataclass(frozen=True)
class MixPertConfig(Config):
    """A MixPert config: segment layout, kept pairs, alignment, fallback.

    ``segments`` INT8 segments per element; ``seg0_bits`` significant bits held by
    segment 0, *counting the implied leading one* (stored explicitly there): 7 is
    the paper's layout (x0 in [64, 127] = the implied one + 6 mantissa bits, then
    7 bits in each further segment: 7+7+7 = 21 significant bits = 20 of float32's
    23 stored mantissa bits plus the implied one); ``pairs`` the kept (A segment, B segment) products; ``align`` one
    exponent per ``tile`` or per ``row`` of a tile (row of A / column of B);
    ``digits``: ``magnitude`` (sign-magnitude segments, 7 bits below segment 0, the
    paper's) or ``balanced`` (signed radix-256 digits in [-128, 127], 8 bits each);
    ``rounding`` of the alignment shift (``round``: nearest-even, ``trunc``);
    ``tile`` = (tm, tk, tn), A tiles tm×tk and B tiles tk×tn; ``fallback``: a tile
    whose exponent spread exceeds this many bits is computed by tf32x3 (-1: never).
    """

    segments: int = 3
    pairs: Pairs = LEVELS["IV"]
    seg0_bits: int = 7
    digits: str = "magnitude"
    align: str = "tile"
    rounding: str = "round"
    tile: tuple[int, int, int] = (16, 32, 8)
    fallback: int = 8

    #: the domain: inputs rounded to it, C rounded to it
    domain: ClassVar[str] = "fp32"

    def __post_init__(self) -> None:
        object.__setattr__(self, "pairs", tuple(sorted(set((int(i), int(j)) for i, j in self.pairs))))
        object.__setattr__(self, "tile", tuple(int(t) for t in self.tile))
        if not 1 <= self.segments <= MAX_SEGMENTS:
            raise ValueError(f"mixpert: segments={self.segments} must be in 1..{MAX_SEGMENTS}")
        if not 1 <= self.seg0_bits <= MAX_SEG0_BITS:
            raise ValueError(
                f"mixpert: seg0_bits={self.seg0_bits} must be in 1..{MAX_SEG0_BITS} (significant bits of segment 0, "
                "implied one included; a signed INT8 holds 7 magnitude bits)"
            )
        if self.digits not in ("magnitude", "balanced"):
            raise ValueError(f"mixpert: digits={self.digits!r} must be 'magnitude' or 'balanced'")
        if self.digits == "balanced" and self.segments > 7:
            raise ValueError(f"mixpert: digits=balanced supports at most 7 segments (56 bits), got {self.segments}")
        if width(self.segments, self.seg0_bits, self._digit_code) > 62:
            raise ValueError("mixpert: segments and seg0_bits give more than 62 mantissa bits; use fewer segments")
        if not self.pairs:
            raise ValueError("mixpert: pairs is empty; keep at least the (0, 0) pair")
        for i, j in self.pairs:
            if not (0 <= i < self.segments and 0 <= j < self.segments):
                raise ValueError(f"mixpert: pair ({i},{j}) is outside 0..{self.segments - 1}")
        if self.align not in ("tile", "row"):
            raise ValueError(f"mixpert: align={self.align!r} must be 'tile' or 'row'")
        if self.rounding not in ("round", "trunc"):
            raise ValueError(f"mixpert: rounding={self.rounding!r} must be 'round' or 'trunc'")
        if len(self.tile) != 3 or min(self.tile) < 1 or max(self.tile) > MAX_CONFIG_INT:
            raise ValueError(f"mixpert: tile={self.tile} must be three sizes in 1..{MAX_CONFIG_INT} (tm, tk, tn)")
        if not -1 <= self.fallback <= MAX_CONFIG_INT:
            raise ValueError(
                f"mixpert: fallback={self.fallback} must be a bit count in 0..{MAX_CONFIG_INT}, or -1 (off)")

    @property
    def _digit_code(self) -> int:
        return BALANCED if self.digits == "balanced" else MAGNITUDE

    def words(self) -> tuple[int, ...]:
        """The config as int64 words for the compiled executor (and the @mixjit plan
        table): layout ``W_*`` in runtime/mixpert/executor.py; :func:`config_from_words`
        inverts it. Words ``0..N_LAYOUT_WORDS-1`` fix how an operand is split."""
        w = [0] * ex.N_WORDS
        w[ex.W_SEGMENTS] = self.segments
        w[ex.W_SEG0_BITS] = self.seg0_bits
        w[ex.W_DIGITS] = self._digit_code
        w[ex.W_ALIGN] = ex.ALIGN_ROW if self.align == "row" else ex.ALIGN_TILE
        w[ex.W_ROUNDING] = ROUND_NEAREST if self.rounding == "round" else ROUND_TRUNC
        w[ex.W_TM], w[ex.W_TK], w[ex.W_TN] = self.tile
        w[ex.W_FALLBACK] = self.fallback
        w[ex.W_DOMAIN] = ex.DOMAIN_FP32 if self.domain == "fp32" else ex.DOMAIN_FP64
        bits = sum(1 << (ex.PAIR_STRIDE * i + j) for i, j in self.pairs)
        w[ex.W_PAIRS0] = bits & ((1 << 63) - 1)
        w[ex.W_PAIRS1] = bits >> 63
        return tuple(w)

    @property
    def label(self) -> str:
        defaults = {f.name: f.default for f in dataclasses.fields(type(self))}
        parts = []
        if self.segments != defaults["segments"]:
            parts.append(f"segments={self.segments}")
        level = next((k for k, v in LEVELS.items() if v == self.pairs), None) if self.segments == 3 else None
        if level is not None:
            parts.append(f"level={level}")
        else:
            parts.append(f"pairs={_pairs_text(self.segments, self.pairs)}")
        for name in ("seg0_bits", "digits", "align", "rounding"):
            if getattr(self, name) != defaults[name]:
                parts.append(f"{name}={getattr(self, name)}")
        if self.tile != defaults["tile"]:
            parts.append("tile=" + "x".join(map(str, self.tile)))
        if self.fallback != defaults["fallback"]:
            parts.append(f"fallback={'off' if self.fallback < 0 else self.fallback}")
        return ",".join(parts)


@dataclass(frozen=True)
class MixPertFP64Config(MixPertConfig):
    """A ``mixpert-fp64`` config (float64 domain). Defaults: 8 segments (55 bits, so
    the element split is exact), pairs with i+j <= 7, row alignment, no fallback.
    ``seg0_bits`` stays 6 here so that the 9-segment config fits 62 bits (6 + 8*7)."""

    segments: int = 8
    seg0_bits: int = 6
    pairs: Pairs = significance_pairs(8, 7)
    align: str = "row"
    fallback: int = -1

    domain: ClassVar[str] = "fp64"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.fallback != -1:
            raise ValueError("mixpert-fp64: tile fallback is not offered (fallback=off); use align=row for wide data")


def config_from_words(words: Sequence[int]) -> MixPertConfig:
    """The config whose :meth:`MixPertConfig.words` are ``words`` (a
    ``MixPertFP64Config`` when the domain word says float64)."""
    w = [int(v) for v in words]
    if len(w) < ex.N_WORDS:
        raise ValueError(f"mixpert: {len(w)} config words, expected {ex.N_WORDS}")
    bits = w[ex.W_PAIRS0] | (w[ex.W_PAIRS1] << 63)
    segments = w[ex.W_SEGMENTS]
    if not 1 <= segments <= MAX_SEGMENTS:  # checked before the loop over segments^2 pairs
        raise ValueError(f"mixpert: segments word {segments} must be in 1..{MAX_SEGMENTS}")
    pairs = tuple((i, j) for i in range(segments) for j in range(segments) if bits >> (ex.PAIR_STRIDE * i + j) & 1)
    cls = MixPertFP64Config if w[ex.W_DOMAIN] == ex.DOMAIN_FP64 else MixPertConfig
    return cls(
        segments=segments,
        pairs=pairs,
        seg0_bits=w[ex.W_SEG0_BITS],
        digits="balanced" if w[ex.W_DIGITS] == BALANCED else "magnitude",
        align="row" if w[ex.W_ALIGN] == ex.ALIGN_ROW else "tile",
        rounding="round" if w[ex.W_ROUNDING] == ROUND_NEAREST else "trunc",
        tile=(w[ex.W_TM], w[ex.W_TK], w[ex.W_TN]),
        fallback=w[ex.W_FALLBACK],
    )


def _pairs_text(segments: int, pairs: Pairs) -> str:
    for limit in range(2 * segments - 1):
        if significance_pairs(segments, limit) == pairs:
            return f"sig{limit}"
    for size in range(2, segments):
        for limit in range(2 * ((segments - 1) // size) + 1):
            if slice_pairs(segments, size, limit) == pairs:
                return f"slices{size}sig{limit}"
    return ".".join(f"{i}{j}" for i, j in pairs)


def parse_mixpert_config(text: str, cls: type[MixPertConfig]) -> MixPertConfig:
    """Parse a label (see the module docstring) into ``cls``; unknown parts raise."""
    return cls(**parse_label_fields(text, next(f.default for f in dataclasses.fields(cls) if f.name == "segments")))


class _MixPertBase(Scheme):
    """Shared scheme code; subclasses set the config class and the config family."""

    executor = CompiledExecutor("mixpert", catalog.plan_code("mixpert"),
                                ex.mixpert_gemm, ex.N_WORDS, ex.N_STATS, ex.STATUS_MESSAGES,
                                profile_stats=True, max_stat=ex.STAT_WIDEST_SPAN)

    config_cls: ClassVar[type[MixPertConfig]]

    def parse_config(self, text: str) -> Config:
        return parse_mixpert_config(text, self.config_cls)

    def _check(self, config: Config) -> MixPertConfig:
        if not isinstance(config, self.config_cls):
            raise TypeError(f"{self.name}: expected a {self.config_cls.__name__}, got {type(config).__name__}")
        return config

    def prepare_a(self, a: np.ndarray, config: Config) -> Prepared:
        """Split and align A once, for several GEMMs under ``config``."""
        return prepare(a, "A", np.array(self._check(config).words()))

    def prepare_b(self, b: np.ndarray, config: Config) -> Prepared:
        """Split and align B once, for several GEMMs under ``config``."""
        return prepare(b, "B", np.array(self._check(config).words()))

    def run_with_stats(self, a, b, config: Config) -> tuple[np.ndarray, RunStats]:
        """C = A @ B; ``a`` / ``b`` may be arrays or operands from prepare_a / prepare_b.
        Runs the compiled executor (the same code the @mixjit entry calls)."""
        cfg = self._check(config)
        words = np.array(cfg.words(), dtype=np.int64)
        for p, want in ((a, "A"), (b, "B")):
            if not isinstance(p, Prepared):
                continue
            if p.side != want:
                raise ValueError(f"{self.name}: operand {want} was prepared as {p.side}; use prepare_{want.lower()}")
            if not p.same_layout(words):
                raise ValueError(f"{self.name}: operand {want} was prepared under another config; prepare it with {cfg.label!r}")
        c, st = run_mixpert(a, b, words)
        reasons = []
        if st.fallback_tiles:
            reasons.append(f"exponent spread above {cfg.fallback} bits: tile product computed by tf32x3")
        if st.recomputed_elements:
            why = "error bound above native gamma_K|A||B|" if cfg.domain == "fp64" else "an input element aligned to 0"
            reasons.append(f"{why}: output recomputed exactly")
        extra = {
            "nonfinite_elements": st.nonfinite_elements,
            "exact_path_rows": st.exact_path_rows,
            "exact_path_cols": st.exact_path_cols,
            "certified_elements": st.certified_elements,
            "slow_path_elements": st.slow_path_elements,
            "recomputed_elements": st.recomputed_elements,
        }
        if cfg.domain == "fp64":
            # no tile fallback: the unit is the output element the guarantee sent to the exact path
            stats = RunStats(
                fallbacks=st.recomputed_elements,
                units=int(c.size),
                fallback_unit="element",
                fallback_reason="; ".join(reasons),
                extra=extra,
            )
        else:
            stats = RunStats(
                fallbacks=st.fallback_tiles,
                units=st.tiles,
                fallback_unit="tile",
                fallback_reason="; ".join(reasons),
                extra=extra,
            )
        return c, stats

    def products(self, config: Config) -> int:
        return len(self._check(config).pairs)

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        cfg = self._check(config)
        in_bytes = np.dtype(dtype).itemsize
        tm, tk, tn = cfg.tile
        # packing reads each operand and writes the INT8 segments the kept pairs use
        # (A's segments 0..max i, B's 0..max j) plus one exponent byte per alignment
        # group; the k-tile conversion happens in registers
        seg_a = 1 + max(i for i, _ in cfg.pairs)
        seg_b = 1 + max(j for _, j in cfg.pairs)
        k_tiles = -(-k // tk)
        groups_a = k_tiles * (m if cfg.align == "row" else -(-m // tm))
        groups_b = k_tiles * (n if cfg.align == "row" else -(-n // tn))
        packing = (in_bytes + seg_a) * m * k + (in_bytes + seg_b) * k * n + groups_a + groups_b
        return Work(ops={"int8": 2.0 * m * n * k * len(cfg.pairs)}, bytes_moved=float(packing))

    def dgemms(self, config: Config, k: int) -> int:
        """Exact float64 GEMMs the CPU executor's fast path runs for inner size ``k``."""
        cfg = self._check(config)
        return len(plan_blocks(cfg.pairs, cfg.segments, cfg.seg0_bits, k, cfg._digit_code))


@register
class MixPert(_MixPertBase):
    name = "mixpert"
    summary = "FP32 emulation from INT8 mantissa segments with tile-shared exponents (MixPert)"
    config_cls = MixPertConfig

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        """Most precise first: :data:`FP32_PRECISE` (at or below float32 BLAS's error),
        then the paper's levels on 3 segments."""
        return [FP32_PRECISE] + [MixPertConfig(pairs=LEVELS[k]) for k in ("full", "IV", "III", "II", "I")]


@register
class MixPertFP64(_MixPertBase):
    name = "mixpert-fp64"
    summary = "FP64 emulation from INT8 mantissa segments, Ozaki scheme I style (i+j <= s-1)"
    dtypes = (np.dtype(np.float64),)
    config_cls = MixPertFP64Config

    def configs(self, dtype: np.dtype | type = np.float64) -> Sequence[Config]:
        """Most precise first: :data:`FP64_PRECISE` (6 exact dgemms for K <= 2048),
        then Ozaki truncations on 9, 8 and 7 segments."""
        return [FP64_PRECISE] + [MixPertFP64Config(segments=s, pairs=significance_pairs(s, s - 1)) for s in (9, 8, 7)]


#: mixpert-fp64's most precise config, what sites run before tuning: 9 segments
#: (W = 62 bits) in 3 slices of 3 (20 + 21 + 21 bits), slice pairs I + J <= 2 (six
#: slice products, each one exact dgemm of 41-42 bits for K <= 2048), one alignment
#: group per row of A / column of B over up to 4096 of K (no span along K, so no
#: span reserve). Label ``segments=9,pairs=slices3sig2,tile=16x4096x8``.
FP64_PRECISE = MixPertFP64Config(segments=9, pairs=slice_pairs(9, 3, 2), tile=(16, 4096, 8))


#: mixpert's most precise config, what float32 sites run before tuning: 4 segments
#: (W = 28 bits, 7 + 7 + 7 + 7), every pair (16 INT8 products), one alignment group
#: per row of an A tile / column of a B tile. Its X is the exact product of the
#: aligned operands, which keep float32's 24 bits for every element within 4
#: binades of its group's largest, so RN32(X) is within a few percent of the
#: correctly rounded product: below float32 BLAS at every size (docs/results/accuracy.md).
#: On the CPU its pairs are one rectangle, one float64 GEMM with a certified
#: rounding (runtime/mixpert/paths/wide.py). Label ``segments=4,pairs=sig6,align=row``.
FP32_PRECISE = MixPertConfig(segments=4, pairs=significance_pairs(4, 6), align="row")
