"""KernelDesc: everything a generated CUDA kernel is specialised to, as one frozen value.

Like CUTLASS python's ``TileDescription``: the scheme and its config (segment layout, kept
pairs, alignment, rounding, the alignment tile), the input dtype, the CTA tile and warp grid,
the pipeline depth, the target arch, the transposes and the alpha/beta mode. The template
renderer (:mod:`mixjit.runtime.cuda.emit`), the build cache (:mod:`mixjit.runtime.cuda.build`)
and the CPU fragment model (:mod:`mixjit.runtime.cuda.fragments`) are all driven by it, so the
model proves exactly the index arithmetic the generated code runs.

Pure Python: no numba, numpy or CUDA import (the ``emit-cuda`` pass imports it).
:func:`parse_label` reads MixPert labels with the scheme's own parser, which lives in the pure
module :mod:`mixjit.runtime.mixpert_labels` for that reason (the scheme's module loads the
numba executor); tests/cuda/test_desc.py checks the defaults agree with the scheme's config.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mixjit.runtime.mixpert_labels import LEVELS, parse_label_fields

__all__ = ["KernelDesc", "UnsupportedConfig", "parse_label", "MOST_PRECISE", "ARCHS", "ALPHA_BETA_MODES", "MMA_M", "MMA_N", "MMA_K"]

#: the m16n8k32 INT8 MMA shape (``mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32``)
MMA_M, MMA_N, MMA_K = 16, 8, 32
#: targets the backend builds cubins for
ARCHS = ("sm_80", "sm_90")
#: ``product``: the kernel writes P = RN(X); ``update``: out = alpha*P + beta*C in the output dtype
ALPHA_BETA_MODES = ("product", "update")
DTYPES = ("f32", "f64")
#: accumulator headroom: the exact per-element accumulator is two 64-bit words
ACC_BITS = 126


#: the MixPert scheme's most precise config (``MixPert().configs()[0]``; a test checks)
MOST_PRECISE = "segments=4,pairs=sig6,align=row"
_DEFAULTS = {"segments": 3, "seg0_bits": 7, "digits": "magnitude", "align": "tile", "rounding": "round",
             "tile": (16, 32, 8), "fallback": 8}


def parse_label(label: str) -> dict[str, Any]:
    """The fields of a ``mixpert`` config label (``level=IV,align=row``): segments, seg0_bits,
    digits, pairs, align, rounding, tile, fallback (-1 for ``off``), defaults filled in. Read by
    the scheme's own parser (``runtime/mixpert_labels.py``); ValueError names a bad part."""
    fields = parse_label_fields(label, _DEFAULTS["segments"])
    return {**_DEFAULTS, "pairs": LEVELS["IV"], **fields}


class UnsupportedConfig(ValueError):
    """A config the CUDA kernels do not implement (the site keeps its CPU executor)."""


@dataclass(frozen=True)
class KernelDesc:
    """One MixPert kernel specialisation (pack A, pack B, INT8 MMA GEMM with exact epilogue).

    ``config`` is the scheme's config label (``level=IV``); the layout fields below are
    parsed from it by :meth:`for_config`. ``block`` is the CTA tile (BM, BN), ``warps`` the
    warp grid (WM, WN); each warp computes (BM/WM)×(BN/WN) with m16n8k32 MMAs. ``stages`` is
    the cp.async pipeline depth over 32-wide K chunks.
    """

    scheme: str
    config: str
    dtype: str
    segments: int
    seg0_bits: int
    digits: str
    pairs: tuple[tuple[int, int], ...]
    align: str
    rounding: str
    tile: tuple[int, int, int]
    fallback: int
    arch: str = "sm_80"
    block: tuple[int, int] = (64, 32)
    warps: tuple[int, int] = (4, 2)
    stages: int = 2
    trans_a: bool = False
    trans_b: bool = False
    alpha_beta: str = "product"

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise UnsupportedConfig(f"cuda: {self.scheme}[{self.config}] has no CUDA kernel: " + "; ".join(problems))

    # -- construction -----------------------------------------------------------------------
    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "KernelDesc":
        """The desc of ``scheme[config]`` (a mixpert label such as ``level=IV``); UnsupportedConfig
        names what the kernels lack (another scheme, a tile that is not a
        multiple of the MMA shape, ...), ValueError a malformed label."""
        if scheme != "mixpert":
            raise UnsupportedConfig(f"cuda: scheme {scheme!r} has no CUDA kernel yet (only 'mixpert')")
        fields = parse_label(config)
        return KernelDesc(scheme=scheme, config=config, dtype=dtype, **fields, **kw)

    # -- derived quantities (what the templates read) ---------------------------------------
    @property
    def digit_bits(self) -> int:
        """Bits per segment below segment 0: 7 (sign-magnitude) or 8 (balanced radix-256 digits)."""
        return 8 if self.digits == "balanced" else 7

    @property
    def width(self) -> int:
        """Mantissa bits W = seg0_bits + b*(segments-1)."""
        return self.seg0_bits + self.digit_bits * (self.segments - 1)

    @property
    def balanced_offset(self) -> int:
        """128*R, R = (256^s - 1)/255: maps balanced digits to bytes (0 for sign-magnitude)."""
        return 128 * ((256 ** self.segments - 1) // 255) if self.digits == "balanced" else 0

    @property
    def max_aligned(self) -> int:
        """127*R, the largest aligned value balanced digits hold (2^62 - 1: no limit otherwise)."""
        return 127 * ((256 ** self.segments - 1) // 255) if self.digits == "balanced" else 2**62 - 1

    @property
    def pair_shifts(self) -> tuple[int, ...]:
        """Per kept pair (p, r): the weight exponent b(s-1-p) + b(s-1-r) (docs/numerics.md step 5)."""
        s, b = self.segments, self.digit_bits
        return tuple(b * (s - 1 - p) + b * (s - 1 - r) for p, r in self.pairs)

    @property
    def a_segments(self) -> tuple[int, ...]:
        """The A segments some kept pair reads (only those planes are packed and loaded)."""
        return tuple(sorted({p for p, _ in self.pairs}))

    @property
    def b_segments(self) -> tuple[int, ...]:
        return tuple(sorted({r for _, r in self.pairs}))

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.block[0] // self.warps[0], self.block[1] // self.warps[1]

    @property
    def threads(self) -> int:
        return 32 * self.warps[0] * self.warps[1]

    @property
    def partial_bits(self) -> int:
        """Bits of one k-tile's combined pair sum: < tk * 2^(2W) (|segment products| summed)."""
        return 2 * self.width + max(self.tile[1] - 1, 0).bit_length() + 1

    @property
    def name(self) -> str:
        """A C identifier naming this specialisation (also the file stem)."""
        text = f"{self.scheme}_{self.config}_{self.dtype}_{self.block[0]}x{self.block[1]}_w{self.warps[0]}x" \
               f"{self.warps[1]}_s{self.stages}_{self.arch}_{'t' if self.trans_a else 'n'}" \
               f"{'t' if self.trans_b else 'n'}_{self.alpha_beta}"
        return re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_")

    def problems(self) -> list[str]:
        """Why this desc cannot be generated (empty when it can)."""
        out = []
        tm, tk, tn = self.tile
        bm, bn = self.block
        if self.scheme != "mixpert":
            out.append(f"scheme {self.scheme!r} is not 'mixpert'")
        if self.dtype not in DTYPES:
            out.append(f"dtype {self.dtype!r} is not one of {DTYPES}")
        if self.arch not in ARCHS:
            out.append(f"arch {self.arch!r} is not one of {ARCHS}")
        if self.alpha_beta not in ALPHA_BETA_MODES:
            out.append(f"alpha_beta {self.alpha_beta!r} is not one of {ALPHA_BETA_MODES}")
        if any(not (0 <= i < self.segments and 0 <= j < self.segments) for i, j in self.pairs) or not self.pairs:
            out.append(f"pairs {self.pairs} must be a non-empty subset of 0..{self.segments - 1} squared")
        if self.digits not in ("magnitude", "balanced"):
            out.append(f"digits {self.digits!r} is not 'magnitude' or 'balanced'")
        if self.digits == "balanced" and self.segments > 7:
            out.append(f"balanced digits need at most 7 segments, got {self.segments}")
        if tk % MMA_K:
            out.append(f"tile k={tk} is not a multiple of the MMA k={MMA_K}")
        if tm * tk > 1024 or tn * tk > 1024:
            out.append(f"alignment tile {tm}x{tk}x{tn} needs more than 1024 packer threads per tile")
        if bm % self.warps[0] or bn % self.warps[1]:
            out.append(f"block {bm}x{bn} is not divisible by the warp grid {self.warps}")
        else:
            wm, wn = self.warp_tile
            if wm % MMA_M or wn % MMA_N:
                out.append(f"warp tile {wm}x{wn} is not a multiple of the MMA {MMA_M}x{MMA_N}")
        if bm % tm or bn % tn:
            out.append(f"block {bm}x{bn} is not a multiple of the alignment tile {tm}x{tn}")
        if self.partial_bits > 62:
            out.append(f"W={self.width} bits: a k-tile's pair sum ({self.partial_bits} bits) overflows int64")
        if self.stages != 2:
            out.append(f"stages={self.stages}: the main loop is double-buffered (stages=2)")
        return out

    def template_params(self) -> dict[str, Any]:
        """The typed compile-time parameters the templates declare (name -> Python value)."""
        wm, wn = self.warp_tile
        return {
            "kSegments": self.segments,
            "kWidth": self.width,
            "kBalanced": self.digits == "balanced",
            "kDigitBits": self.digit_bits,
            "kBalancedOffset": self.balanced_offset,
            "kMaxAligned": self.max_aligned,
            "kRoundNearest": self.rounding == "round",
            "kAlignRow": self.align == "row",
            "kTileM": self.tile[0], "kTileK": self.tile[1], "kTileN": self.tile[2],
            "kFallbackBits": self.fallback,
            "kBlockM": self.block[0], "kBlockN": self.block[1],
            "kWarpsM": self.warps[0], "kWarpsN": self.warps[1],
            "kWarpTileM": wm, "kWarpTileN": wn,
            "kStages": self.stages,
            "kTransA": self.trans_a, "kTransB": self.trans_b,
            "kAlphaBetaUpdate": self.alpha_beta == "update",
            "kNumPairs": len(self.pairs),
            "kPairA": tuple(self.a_segments.index(p) for p, _ in self.pairs),
            "kPairB": tuple(self.b_segments.index(r) for _, r in self.pairs),
            "kPairShift": self.pair_shifts,
            "kPlanesA": len(self.a_segments), "kPlanesB": len(self.b_segments),
            "kSegA": self.a_segments, "kSegB": self.b_segments,
            "kAccBits": ACC_BITS, "kPartialBits": self.partial_bits,
        }
