"""MixPert's kernel desc: :class:`KernelDesc`, one MixPert kernel specialisation.

The scheme and its config (segment layout, kept pairs, alignment, rounding, the alignment
tile), the input dtype, and the shared :class:`~mixjit.runtime.cuda.desc.TileDescription`
(CTA tile, warp grid, pipeline depth, arch, transposes, alpha/beta mode). The CPU fragment
model (:mod:`mixjit.runtime.mixpert.cuda.fragments`) is driven by it, so the model proves
exactly the index arithmetic the generated code runs.

Pure Python: no numba, numpy or CUDA import (the ``emit-cuda`` pass imports it).
:func:`parse_label` reads MixPert labels with the scheme's own parser, which lives in the pure
module :mod:`mixjit.runtime.mixpert.labels` for that reason (the scheme's module loads the
numba executor); tests/cuda/test_desc.py checks the defaults agree with the scheme's config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from mixjit.runtime.cuda.desc import (
    MMA_K,
    MMA_M,
    MMA_N,
    KernelSpec,
    Launch,
    TileDescription,
    UnsupportedConfig,
    cdiv,
    mma_sass,
    split_tiling,
)
from mixjit.runtime.mixpert.labels import LEVELS, parse_label_fields

__all__ = ["KernelDesc", "parse_label", "MOST_PRECISE", "ACC_BITS"]

#: accumulator headroom: the exact per-element accumulator is two 64-bit words
ACC_BITS = 126


#: the MixPert scheme's most precise config (``MixPert().configs()[0]``; a test checks)
MOST_PRECISE = "segments=4,pairs=sig6,align=row"
_DEFAULTS = {"segments": 3, "seg0_bits": 7, "digits": "magnitude", "align": "tile", "rounding": "round",
             "tile": (16, 32, 8), "fallback": 8}


def parse_label(label: str) -> dict[str, Any]:
    """The fields of a ``mixpert`` config label (``level=IV,align=row``): segments, seg0_bits,
    digits, pairs, align, rounding, tile, fallback (-1 for ``off``), defaults filled in. Read by
    the scheme's own parser (``runtime/mixpert/labels.py``); ValueError names a bad part."""
    fields = parse_label_fields(label, _DEFAULTS["segments"])
    return {**_DEFAULTS, "pairs": LEVELS["IV"], **fields}


@dataclass(frozen=True)
class KernelDesc(KernelSpec):
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
    tiling: TileDescription = TileDescription(block=(64, 32), warps=(4, 2))

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "imma.cuh", "mixpert_common.cuh", "mixpert_pack.cu",
                                         "mixpert_gemm.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("mixpert_pack_a", "mixpert_pack_b", "mixpert_gemm")

    # -- construction -----------------------------------------------------------------------
    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "KernelDesc":
        """The desc of ``scheme[config]`` (a mixpert label such as ``level=IV``; for ``mixpert-fp64``,
        the family's other scheme, its :class:`~mixjit.runtime.mixpert.cuda.fp64_desc.Fp64Desc`);
        UnsupportedConfig names what the kernels lack (another scheme, a tile that is not a
        multiple of the MMA shape, ...), ValueError a malformed label."""
        if scheme == "mixpert-fp64":  # the family's other scheme: its own desc (one cuda_desc per family)
            from mixjit.runtime.mixpert.cuda.fp64_desc import Fp64Desc

            return Fp64Desc.for_config(scheme, config, dtype, **kw)
        if scheme != "mixpert":
            raise UnsupportedConfig(f"cuda: KernelDesc is the mixpert desc, not {scheme!r}: use "
                                    "mixjit.runtime.cuda.registry.kernel_desc")
        tiling, kw = split_tiling(KernelDesc.tiling, kw)
        return KernelDesc(scheme=scheme, config=config, dtype=dtype, **parse_label(config), tiling=tiling, **kw)

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
    def partial_bits(self) -> int:
        """Bits of one k-tile's combined pair sum: < tk * 2^(2W) (|segment products| summed)."""
        return 2 * self.width + max(self.tile[1] - 1, 0).bit_length() + 1

    def problems(self) -> list[str]:
        """Why this desc cannot be generated (empty when it can)."""
        tm, tk, tn = self.tile
        bm, bn = self.block
        out = [] if self.scheme == "mixpert" else [f"scheme {self.scheme!r} is not 'mixpert'"]
        out += self.common_problems(MMA_M, MMA_N)
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
        if bm % tm or bn % tn:
            out.append(f"block {bm}x{bn} is not a multiple of the alignment tile {tm}x{tn}")
        if self.partial_bits > 62:
            out.append(f"W={self.width} bits: a k-tile's pair sum ({self.partial_bits} bits) overflows int64")
        return out

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """pack A, pack B, GEMM (mixpert_pack.cu, mixpert_gemm.cu); shared bytes are the GEMM's tiles."""
        tm, tk, tn = self.tile
        m_pad, n_pad = cdiv(m, self.block[0]) * self.block[0], cdiv(n, self.block[1]) * self.block[1]
        k_pad = max(cdiv(k, tk), 1) * tk
        smem = self.stages * (len(self.a_segments) * self.block[0] + len(self.b_segments) * self.block[1]) * MMA_K
        return (Launch("mixpert_pack_a", (k_pad // tk, m_pad // tm, 1), (tk, tm, 1)),
                Launch("mixpert_pack_b", (k_pad // tk, n_pad // tn, 1), (tk, tn, 1)),
                Launch("mixpert_gemm", (n_pad // self.block[1], m_pad // self.block[0], 1), (self.threads, 1, 1), smem))

    def main_loop_mma(self) -> tuple[str, str, int]:
        return "mixpert_gemm", mma_sass(self.arch, "s8"), len(self.pairs) * self.imma_per_chunk

    def template_params(self) -> dict[str, Any]:
        """The typed compile-time parameters the templates declare (name -> Python value)."""
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
            **self.layout_params(),
            "kAlphaBetaUpdate": self.alpha_beta == "update",
            "kNumPairs": len(self.pairs),
            "kPairA": tuple(self.a_segments.index(p) for p, _ in self.pairs),
            "kPairB": tuple(self.b_segments.index(r) for _, r in self.pairs),
            "kPairShift": self.pair_shifts,
            "kPlanesA": len(self.a_segments), "kPlanesB": len(self.b_segments),
            "kSegA": self.a_segments, "kSegB": self.b_segments,
            "kAccBits": ACC_BITS, "kPartialBits": self.partial_bits,
        }
