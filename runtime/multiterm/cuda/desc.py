"""MultiTermDesc: the tf32x3 and bf16xN kernels (docs/numerics.md "tf32x3", "bf16x3, bf16x6, bf16x9"),
and Fp16x2Desc: fp16x2's (docs/numerics.md "fp16x2": range-scaled FP16 hi and lo parts).

Each float32 operand element is split into parts of the scheme's format (TF32: 11 significant
bits, 1:8:10; BF16: 8 bits, 1:8:7) by the packer, which writes one plane per part laid out for
the MMA (A row-major, B column-major, as mixpert's). The GEMM kernel multiplies the kept part
pairs with ``mma.sync`` (``m16n8k8 .tf32`` / ``m16n8k16 .bf16``) into one FP32 accumulator per
output element. The pairs are issued smallest first within each K step, as CUTLASS's 3xTF32
does, so the big·big product is added last.

**Not bit-equal to the CPU executor.** The scheme rounds the exact sum once; the tensor core's
FP32 accumulation rounds at points the PTX ISA does not specify. The CPU model
(runtime/multiterm/cuda/fragments.py) therefore proves the packing, plane layout, fragment
layouts and pair selection bit for bit with an exact accumulator, and the FP32 accumulator
only on data whose partial sums are exact in FP32 (docs/cuda.md).

fp16x2 packs range-scaled parts (a per-row shift first, fp16x2_pack.cu), keeps its lo parts
scaled by 2^11 (FP16's range), so the GEMM sums the pairs with a lo part in a second accumulator
(``kLoShift``), and a last kernel undoes the row and column shifts.

Pure Python (no numba): the ``emit-cuda`` pass imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from mixjit.runtime.cuda.desc import (
    STATIC_SHARED_LIMIT,
    KernelSpec,
    Launch,
    TileDescription,
    UnsupportedConfig,
    cdiv,
    mma_sass,
    split_tiling,
)

__all__ = ["MultiTermDesc", "Fp16x2Desc", "FORMATS", "PAIR_ORDER", "parse_products", "MULTITERM_SCHEMES",
           "FP16_LO_SHIFT", "REDUCE_THREADS"]

#: the pair order of every multi-term scheme (runtime/schemes/emulation.py PAIR_ORDER; a test checks)
PAIR_ORDER: tuple[tuple[int, int], ...] = ((0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (2, 0), (1, 2), (2, 1), (2, 2))


@dataclass(frozen=True)
class PartFormat:
    """A part format as the kernel stores and multiplies it."""

    name: str
    #: kFormat in the templates (common.cuh)
    code: int
    #: significant bits of a part (11 TF32, 8 BF16)
    bits: int
    #: bytes of one stored part (TF32 parts are float32 patterns with 13 zero low bits)
    part_bytes: int
    #: the MMA shape (m, n, k); ``name`` is its kind in runtime/cuda/desc.py's MMA_PTX (its PTX) and
    #: TARGETS (its SASS per target)
    mma: tuple[int, int, int]


FORMATS = {
    "tf32": PartFormat("tf32", 0, 11, 4, (16, 8, 8)),
    "bf16": PartFormat("bf16", 1, 8, 2, (16, 8, 16)),
    # split's FP16 part (split/cuda/desc.py): range-scaled, one part
    "f16": PartFormat("f16", 2, 11, 2, (16, 8, 16)),
}
#: scheme -> (part format, the products its configs offer, most precise first)
MULTITERM_SCHEMES = {"tf32x3": ("tf32", (3, 1)), "bf16xn": ("bf16", (9, 6, 3, 1)), "fp16x2": ("f16", (3, 1))}
#: fp16x2's lo part is stored as RN16((y - hi)·2^11): its pairs weigh 2^-11
FP16_LO_SHIFT = 11
#: threads of fp16x2's per-row shift CTA
REDUCE_THREADS = 256
#: bytes of K one pipeline stage holds per row and part (a 16-byte pad follows, against bank conflicts)
CHUNK_BYTES = 64
PAD_BYTES = 16


def parse_products(scheme: str, label: str) -> int:
    """``products`` of a tf32x3 / bf16xn label (``products=3``; empty: the most precise). ValueError
    names a bad label; the schemes' own parser (runtime/schemes/emulation.py) agrees (a test checks)."""
    _, allowed = MULTITERM_SCHEMES[scheme]
    fields = dict(part.partition("=")[::2] for part in filter(None, (p.strip() for p in label.split(","))))
    if set(fields) - {"products"}:
        raise ValueError(f"{scheme}: bad config {label!r}; the only field is products")
    try:
        products = int(fields.get("products", allowed[0]))
    except ValueError:
        raise ValueError(f"{scheme}: products={fields['products']!r} is not an integer") from None
    if products not in allowed:
        raise ValueError(f"{scheme}: products={products} is not a config; choose one of {list(allowed)}")
    return products


@dataclass(frozen=True)
class MultiTermDesc(KernelSpec):
    """One tf32x3 / bf16xN kernel specialisation (pack A, pack B, float MMA GEMM).

    ``block`` is the CTA tile (BM, BN), ``warps`` the warp grid; each warp computes
    (BM/WM)×(BN/WN) with m16n8 MMAs. Each stage holds 64 bytes of K per row and part
    (16 TF32 or 32 BF16 elements: two MMA k-steps).
    """

    scheme: str
    config: str
    dtype: str
    products: int
    tiling: TileDescription = TileDescription(block=(64, 32), warps=(2, 2))

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "multiterm_pack.cu", "multiterm_gemm.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("multiterm_pack_a", "multiterm_pack_b", "multiterm_gemm")
    #: the packer's CTA: 32 K elements × 8 rows
    PACK_BLOCK: ClassVar[tuple[int, int]] = (32, 8)

    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "MultiTermDesc":
        if scheme not in MULTITERM_SCHEMES:
            raise UnsupportedConfig(f"cuda: {scheme!r} is not a multi-term scheme ({', '.join(MULTITERM_SCHEMES)})")
        tiling, kw = split_tiling(MultiTermDesc.tiling, kw)
        cls = Fp16x2Desc if scheme == "fp16x2" else MultiTermDesc
        return cls(scheme=scheme, config=config, dtype=dtype, products=parse_products(scheme, config), tiling=tiling,
                   **kw)

    @property
    def fmt(self) -> PartFormat:
        return FORMATS[MULTITERM_SCHEMES[self.scheme][0]]

    @property
    def pairs(self) -> tuple[tuple[int, int], ...]:
        """The kept pairs in the scheme's order."""
        return PAIR_ORDER[:self.products]

    #: the weight exponent of pairs with a part beyond the first (0: parts are in the input's units)
    lo_shift: ClassVar[int] = 0

    @property
    def issue_order(self) -> tuple[tuple[int, int], ...]:
        """The order the kernel issues the pairs' MMAs in each K step: smallest products first."""
        return tuple(reversed(self.pairs))

    @property
    def parts(self) -> int:
        """Parts per operand: 1 + the largest part index kept (the order is symmetric in A and B)."""
        return 1 + max(max(p, q) for p, q in self.pairs)

    @property
    def chunk_k(self) -> int:
        """K elements per pipeline stage."""
        return CHUNK_BYTES // self.fmt.part_bytes

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.parts * (self.block[0] + self.block[1]) * (CHUNK_BYTES + PAD_BYTES)

    def problems(self) -> list[str]:
        out = [] if self.scheme in MULTITERM_SCHEMES else [f"scheme {self.scheme!r} is not a multi-term scheme"]
        if out:
            return out
        mm, mn, _ = self.fmt.mma
        out += self.common_problems(mm, mn)
        if self.products not in MULTITERM_SCHEMES[self.scheme][1]:
            out.append(f"products={self.products} is not a {self.scheme} config")
        if self.shared_bytes > STATIC_SHARED_LIMIT:
            out.append(f"block {self.block} needs {self.shared_bytes} bytes of static shared memory "
                       f"(limit {STATIC_SHARED_LIMIT})")
        return out

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """pack A, pack B (one thread per padded element), GEMM (one CTA per block tile)."""
        m_pad, n_pad, k_pad = self.padded(m, n, k)
        kx, ky = self.PACK_BLOCK
        return (Launch("multiterm_pack_a", (k_pad // kx, m_pad // ky, 1), (kx, ky, 1)),
                Launch("multiterm_pack_b", (k_pad // kx, n_pad // ky, 1), (kx, ky, 1)),
                Launch("multiterm_gemm", (n_pad // self.block[1], m_pad // self.block[0], 1), (self.threads, 1, 1),
                       self.shared_bytes))

    def padded(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        """(M_pad, N_pad, K_pad): the planes' shape (multiples of the block tile and of 32 in K)."""
        unit = max(self.chunk_k, self.PACK_BLOCK[0])
        return (cdiv(m, self.block[0]) * self.block[0], cdiv(n, self.block[1]) * self.block[1],
                max(cdiv(k, unit), 1) * unit)

    def main_loop_mma(self) -> tuple[str, str, int]:
        wm, wn = self.warp_tile
        steps = CHUNK_BYTES // 4 // 8  # 8-word MMA k-steps per chunk
        return "multiterm_gemm", mma_sass(self.arch, self.fmt.name), steps * len(self.pairs) * (wm // 16) * (wn // 8)

    def template_params(self) -> dict[str, Any]:
        return {
            "kFormat": self.fmt.code,
            "kParts": self.parts,
            "kPartBytes": self.fmt.part_bytes,
            "kChunkBytes": CHUNK_BYTES, "kPadBytes": PAD_BYTES,
            "kMmaK": self.fmt.mma[2],
            **self.layout_params(),
            "kGemmUpdate": self.alpha_beta == "update",
            "kPackRows": self.PACK_BLOCK[1], "kPackK": self.PACK_BLOCK[0],
            "kNumPairs": len(self.pairs), "kLoShift": self.lo_shift,
            "kPairA": tuple(p for p, _ in self.issue_order),
            "kPairB": tuple(q for _, q in self.issue_order),
        }


@dataclass(frozen=True)
class Fp16x2Desc(MultiTermDesc):
    """One fp16x2 kernel specialisation: each operand's row shifts, the range-scaled FP16 packer
    (hi and, with three products, lo), the float MMA GEMM with the lo pairs in their own
    accumulator, and the rescaling by 2^-(sigma_i + sigma_j). Product mode only."""

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "fp16x2_pack.cu", "multiterm_gemm.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("fp16x2_sigma_a", "fp16x2_sigma_b", "fp16x2_pack_a", "fp16x2_pack_b",
                                               "multiterm_gemm", "fp16x2_rescale")
    lo_shift: ClassVar[int] = FP16_LO_SHIFT

    def problems(self) -> list[str]:
        out = super().problems()
        if self.alpha_beta != "product":
            out.append("alpha_beta='update': the fp16x2 kernels write the product only")
        return out

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """the shifts of A's rows and B's columns (a CTA per row), pack A, pack B (one thread per
        padded element), the GEMM (one CTA per block tile), the rescaling (one thread per output)."""
        pack_a, pack_b, gemm = super().launches(m, n, k)
        t = (REDUCE_THREADS, 1, 1)
        return (Launch("fp16x2_sigma_a", (m, 1, 1), t, 8), Launch("fp16x2_sigma_b", (n, 1, 1), t, 8),  # s_amax
                Launch("fp16x2_pack_a", pack_a.grid, pack_a.block), Launch("fp16x2_pack_b", pack_b.grid, pack_b.block),
                gemm, Launch("fp16x2_rescale", (cdiv(n, 32), cdiv(m, 8), 1), (32, 8, 1)))

    def template_params(self) -> dict[str, Any]:
        return {**super().template_params(), "kReduceThreads": REDUCE_THREADS, "kTopTruncate": self.products == 1}
