"""mixpert-fp64's kernel desc: :class:`Fp64Desc`, one specialisation of the float64 MixPert kernels.

The same fields as MixPert's :class:`~mixjit.runtime.mixpert.cuda.desc.KernelDesc` (segment
layout, kept pairs, alignment, rounding, the alignment tile, the shared tiling), read from a
``mixpert-fp64`` label with that scheme's defaults. Its kernels (mixpert_fp64_pack.cu,
mixpert_fp64_gemm.cu) split float64 elements into up to 9 sign-magnitude INT8 segments, run one
INT8 MMA per kept pair, sum the pairs of one weight (a *diagonal* p + r) in an INT32 MMA
accumulator and everything exactly in a wide integer, and write ``P = RN64(X)``; the guarantee
check and its recomputations (step 6) run on the host (runtime/mixpert/cuda/host_check.py).
The CPU model (runtime/mixpert/cuda/fp64_fragments.py) is driven by it.

Pure Python: no numba, numpy or CUDA import (the ``emit-cuda`` pass imports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from mixjit.runtime.cuda.desc import (
    MMA_K,
    MMA_M,
    MMA_N,
    STATIC_SHARED_LIMIT,
    Launch,
    TileDescription,
    UnsupportedConfig,
    cdiv,
    mma_sass,
    split_tiling,
)
from mixjit.runtime.mixpert.cuda.desc import KernelDesc
from mixjit.runtime.mixpert.labels import parse_label_fields, significance_pairs

__all__ = ["Fp64Desc", "parse_fp64_label", "ACC_WORDS", "ACC_BITS", "PACK_THREADS"]

#: the exact per-element accumulator: four 64-bit words, of which a sum may fill 254 bits
ACC_WORDS = 4
ACC_BITS = 64 * ACC_WORDS - 2
#: threads of one packer CTA (one alignment tile, however long its k-tile)
PACK_THREADS = 256
#: largest |INT8 digit| (7-bit magnitudes; segment 0 holds at most 7 bits too)
_DIGIT_MAX = 127

#: mixpert-fp64's config defaults (``MixPertFP64Config``; tests/cuda/test_mixpert_fp64_model.py checks)
_DEFAULTS = {"segments": 8, "seg0_bits": 6, "digits": "magnitude", "align": "row", "rounding": "round",
             "tile": (16, 32, 8), "fallback": -1, "pairs": significance_pairs(8, 7)}


def parse_fp64_label(label: str) -> dict[str, Any]:
    """The fields of a ``mixpert-fp64`` config label (``segments=9,pairs=sig8``), defaults filled
    in, read by the scheme's own parser; ValueError names a bad part."""
    return {**_DEFAULTS, **parse_label_fields(label, _DEFAULTS["segments"])}


@dataclass(frozen=True)
class Fp64Desc(KernelDesc):
    """One mixpert-fp64 kernel specialisation (pack A, pack B, INT8 MMA GEMM with exact epilogue).

    The default tiling is small per warp (16×8: one MMA tile) because each thread holds one INT32
    accumulator per diagonal and a four-word exact accumulator per output element."""

    tiling: TileDescription = TileDescription(block=(32, 32), warps=(2, 4))

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "imma.cuh", "mixpert_common.cuh", "mixpert_fp64_common.cuh",
                                         "mixpert_fp64_pack.cu", "mixpert_fp64_gemm.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("mixpert_fp64_pack_a", "mixpert_fp64_pack_b", "mixpert_fp64_gemm")

    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f64", **kw: Any) -> "Fp64Desc":
        """The desc of ``mixpert-fp64[config]``; UnsupportedConfig names what the kernels lack,
        ValueError a malformed label."""
        if scheme != "mixpert-fp64":
            raise UnsupportedConfig(f"cuda: Fp64Desc is the mixpert-fp64 desc, not {scheme!r}: use "
                                    "mixjit.runtime.cuda.registry.kernel_desc")
        tiling, kw = split_tiling(Fp64Desc.tiling, kw)
        return Fp64Desc(scheme=scheme, config=config, dtype=dtype, **parse_fp64_label(config), tiling=tiling, **kw)

    # -- derived quantities (what the templates read) ---------------------------------------
    @property
    def diagonals(self) -> tuple[int, ...]:
        """The distinct p + r of the kept pairs, ascending: one INT32 accumulator each."""
        return tuple(sorted({p + r for p, r in self.pairs}))

    @property
    def diagonal_shifts(self) -> tuple[int, ...]:
        """Per diagonal: its weight exponent b(2(s-1) - (p + r))."""
        return tuple(self.digit_bits * (2 * (self.segments - 1) - d) for d in self.diagonals)

    @property
    def flush_chunks(self) -> int:
        """K chunks after which the diagonals go into the exact accumulator (at the latest; also at
        each k-tile's end): the most whose sums stay below 2^31 for the fullest diagonal."""
        fullest = max(sum(1 for p, r in self.pairs if p + r == d) for d in self.diagonals)
        most = (2**31 - 1) // (MMA_K * fullest * _DIGIT_MAX * _DIGIT_MAX)
        return max(1, min(most, self.tile[1] // MMA_K))

    @property
    def shared_bytes(self) -> int:
        """The GEMM's static shared memory: every kept plane's tiles, per stage."""
        return self.stages * (len(self.a_segments) * self.block[0] + len(self.b_segments) * self.block[1]) * MMA_K

    def problems(self) -> list[str]:
        """Why this desc cannot be generated (empty when it can)."""
        tm, tk, tn = self.tile
        bm, bn = self.block
        out = [] if self.scheme == "mixpert-fp64" else [f"scheme {self.scheme!r} is not 'mixpert-fp64'"]
        out += self.common_problems(MMA_M, MMA_N)
        if self.dtype != "f64":
            out.append(f"dtype {self.dtype!r}: mixpert-fp64 takes float64 operands only")
        if self.alpha_beta != "product":
            out.append("alpha_beta='update': the guarantee check (step 6) runs on the host on P itself, so the "
                       "kernel writes P only (the site applies alpha and beta)")
        if any(not (0 <= i < self.segments and 0 <= j < self.segments) for i, j in self.pairs) or not self.pairs:
            out.append(f"pairs {self.pairs} must be a non-empty subset of 0..{self.segments - 1} squared")
        if self.digits != "magnitude":
            out.append(f"digits {self.digits!r}: the float64 kernels pack sign-magnitude digits only")
        if self.fallback != -1:
            out.append("tile fallback: mixpert-fp64 has none (fallback=off)")
        if self.width > 62:
            out.append(f"W={self.width} bits: more than the 62 the executors hold")
        if tk % MMA_K:
            out.append(f"tile k={tk} is not a multiple of the MMA k={MMA_K}")
        if bm % tm or bn % tn:
            out.append(f"block {bm}x{bn} is not a multiple of the alignment tile {tm}x{tn}")
        if self.partial_bits + 1 > ACC_BITS:
            out.append(f"a k-tile's pair sum ({self.partial_bits} bits) overflows the {ACC_BITS}-bit accumulator")
        if self.shared_bytes > STATIC_SHARED_LIMIT:
            out.append(f"{self.shared_bytes} bytes of shared tiles exceed {STATIC_SHARED_LIMIT}: use a smaller block")
        return out

    def k_pad(self, k: int) -> int:
        """K as the planes hold it: rounded up to the MMA's k (at least one chunk)."""
        return max(cdiv(k, MMA_K), 1) * MMA_K

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """pack A, pack B, GEMM (mixpert_fp64_pack.cu, mixpert_fp64_gemm.cu)."""
        tm, tk, tn = self.tile
        m_pad, n_pad = cdiv(m, self.block[0]) * self.block[0], cdiv(n, self.block[1]) * self.block[1]
        ktiles = cdiv(self.k_pad(k), tk)
        return (Launch("mixpert_fp64_pack_a", (ktiles, m_pad // tm, 1), (PACK_THREADS, 1, 1)),
                Launch("mixpert_fp64_pack_b", (ktiles, n_pad // tn, 1), (PACK_THREADS, 1, 1)),
                Launch("mixpert_fp64_gemm", (n_pad // self.block[1], m_pad // self.block[0], 1), (self.threads, 1, 1),
                       self.shared_bytes))

    def main_loop_mma(self) -> tuple[str, str, int]:
        return "mixpert_fp64_gemm", mma_sass(self.arch, "s8"), len(self.pairs) * self.imma_per_chunk

    def template_params(self) -> dict[str, Any]:
        """The typed compile-time parameters the templates declare (name -> Python value)."""
        return {
            "kSegments": self.segments,
            "kWidth": self.width,
            "kDigitBits": self.digit_bits,
            "kRoundNearest": self.rounding == "round",
            "kAlignRow": self.align == "row",
            "kTileM": self.tile[0], "kTileK": self.tile[1], "kTileN": self.tile[2],
            **self.layout_params(),
            "kPackThreads": PACK_THREADS,
            "kNumPairs": len(self.pairs),
            "kNumDiags": len(self.diagonals),
            "kFlushChunks": self.flush_chunks,
            "kPlanesA": len(self.a_segments), "kPlanesB": len(self.b_segments),
            "kAccWords": ACC_WORDS, "kAccBits": ACC_BITS, "kPartialBits": self.partial_bits,
            "kPairA": tuple(self.a_segments.index(p) for p, _ in self.pairs),
            "kPairB": tuple(self.b_segments.index(r) for _, r in self.pairs),
            "kPairDiag": tuple(self.diagonals.index(p + r) for p, r in self.pairs),
            "kDiagShift": self.diagonal_shifts,
            "kSegA": self.a_segments, "kSegB": self.b_segments,
        }
