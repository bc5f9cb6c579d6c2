"""The dfp scheme's kernel desc: :class:`DfpDesc` (each operand's row maxima, the shared exponent
of each block of rows, the quantization to INT8 mantissas, the INT8 GEMM of int8_gemm.cu with its
raw INT32 sums, and the exact rescaling rounded once). Pure Python (the ``emit-cuda`` pass imports
it); the label is read by :func:`parse_dfp_label`, a test checks it against the scheme's.

Served: every width (``bits`` 2..16), both outputs, no carried operands. Up to 8 bits a mantissa
is one INT8 plane (``|q| <= 127``) and the product one INT8 GEMM; wider, ``q - 128 = 256·h + l``
with two signed bytes ``h``, ``l`` (:data:`PIECES`), four INT8 GEMMs and the row sums of
``q - 128`` (dfp_quant.cu). ``out=dfp`` adds a pass over the result for its maximum before the
requantization. Carries (the producing site's exponent and mantissas kept) are not on the GPU:
such configs keep the CPU executor, and the desc says why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from mixjit.runtime.cuda.desc import (
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
from mixjit.runtime.ozaki2.cuda.desc import Ozaki2Desc

__all__ = ["DfpDesc", "parse_dfp_label", "max_k", "pieces", "REDUCE_THREADS", "MAX_KERNEL_BITS"]

#: threads of one CTA that reduces or quantizes a row of op(A) / column of op(B)
REDUCE_THREADS = 256
#: the widest mantissa the kernels take (the scheme's widest)
MAX_KERNEL_BITS = 16


def pieces(bits: int) -> int:
    """INT8 planes per mantissa: one up to 8 bits, else two (``h``, ``l`` of ``q - 128``)."""
    return 1 if bits <= 8 else 2


def max_k(bits: int) -> int:
    """The longest K whose INT32 sums are exact: ``K·(2^(bits-1) - 1)² < 2^31`` for one plane,
    ``K·128² < 2^31`` for the byte pieces (each in [-128, 127])."""
    q = (1 << (bits - 1)) - 1 if pieces(bits) == 1 else 128
    return (2**31 - 1) // (q * q)


def parse_dfp_label(label: str) -> tuple[int, int, str, int, int]:
    """(bits, rows per exponent block (0: the tensor), out, carry_a, carry_b) of a dfp label
    (``bits=8,block=1,out=fp32``; omitted fields take the scheme's defaults); ValueError names a
    bad part."""
    fields = {"bits": "16", "block": "1", "out": "fp32", "carry_a": "0", "carry_b": "0"}
    for part in filter(None, (p.strip() for p in label.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key not in fields:
            raise ValueError(f"dfp: bad config part {part!r} in {label!r}; fields are {', '.join(fields)}")
        fields[key] = value
    try:
        bits, carry_a, carry_b = int(fields["bits"]), int(fields["carry_a"]), int(fields["carry_b"])
        block = 0 if fields["block"] == "tensor" else int(fields["block"])
    except ValueError:
        raise ValueError(f"dfp: bad config {label!r}: bits, block (or 'tensor') and carries are integers") from None
    return bits, block, fields["out"], carry_a, carry_b


@dataclass(frozen=True)
class DfpDesc(KernelSpec):
    """One dfp kernel specialisation (``bits`` 2..16): row maxima, block exponents, quantizers, the
    INT8 GEMM (int8_gemm.cu: one batch up to 8 bits, four above, raw INT32 sums), the rescaling
    epilogue. The block of rows sharing an exponent is a launch argument, so every ``block`` shares
    one cubin per width."""

    scheme: str
    config: str
    dtype: str
    bits: int = 8
    block_rows: int = 1
    out: str = "fp32"
    carry_a: int = 0
    carry_b: int = 0
    tiling: TileDescription = TileDescription(block=(128, 64), warps=(2, 2))

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "imma.cuh", "dfp_quant.cu", "int8_gemm.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("dfp_amax_a", "dfp_amax_b", "dfp_exponents", "dfp_quantize_a",
                                               "dfp_quantize_b", "int8_gemm", "dfp_out_amax", "dfp_rescale")

    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "DfpDesc":
        if scheme != "dfp":
            raise UnsupportedConfig(f"cuda: DfpDesc is the dfp desc, not {scheme!r}")
        bits, block_rows, out, carry_a, carry_b = parse_dfp_label(config)
        tiling, kw = split_tiling(DfpDesc.tiling, kw)
        return DfpDesc(scheme=scheme, config=config, dtype=dtype, bits=bits, block_rows=block_rows, out=out,
                       carry_a=carry_a, carry_b=carry_b, tiling=tiling, **kw)

    #: int8_gemm.cu's geometry, which ozaki2's desc describes (one plane per batch; dfp: one batch)
    shared_bytes = Ozaki2Desc.shared_bytes
    padded = Ozaki2Desc.padded

    def problems(self) -> list[str]:
        out = [] if self.scheme == "dfp" else [f"scheme {self.scheme!r} is not 'dfp'"]
        out += self.common_problems(MMA_M, MMA_N)
        if not 2 <= self.bits <= MAX_KERNEL_BITS:
            out.append(f"bits={self.bits}: the scheme's widths are 2..{MAX_KERNEL_BITS}")
        if self.block_rows < 0:
            out.append(f"block={self.block_rows}: a number of rows >= 1, or 'tensor'")
        if self.out not in ("fp32", "dfp"):
            out.append(f"out={self.out!r}: 'fp32' or 'dfp'")
        if self.carry_a or self.carry_b:
            out.append("carried operands (carry_a, carry_b): the kernels quantize both operands themselves")
        if self.alpha_beta != "product":
            out.append("alpha_beta='update': the kernels write the product only")
        return out

    @property
    def batches(self) -> int:
        """INT8 GEMMs (int8_gemm's grid.z): one per pair of pieces."""
        return pieces(self.bits) ** 2

    def blocks(self, rows: int) -> int:
        """Exponent blocks of an operand with ``rows`` rows (of op(A), or columns of op(B))."""
        return 1 if self.block_rows == 0 else max(cdiv(rows, self.block_rows), 1)

    def rows_per_block(self, rows: int) -> int:
        """Rows sharing one exponent: ``block_rows``, or every row (``block=tensor``)."""
        return max(rows, 1) if self.block_rows == 0 else self.block_rows

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """row maxima of A and B (a CTA per row), A's and B's block exponents (a CTA per block),
        the quantizers (a CTA per padded row), the INT8 GEMM, (out=dfp) the result's maximum, the
        rescaling. ValueError for K beyond exact INT32 sums."""
        if k > max_k(self.bits):
            raise ValueError(f"cuda dfp: K={k} > {max_k(self.bits)}: the INT32 sums of {self.bits}-bit mantissas could "
                             "overflow; use the CPU executor")
        m_pad, n_pad, _ = self.padded(m, n, k)
        t = (REDUCE_THREADS, 1, 1)
        quant_shared = 8 if pieces(self.bits) == 2 else 0  # the row sum
        return (Launch("dfp_amax_a", (m, 1, 1), t, 8), Launch("dfp_amax_b", (n, 1, 1), t, 8),  # s_amax
                Launch("dfp_exponents", (self.blocks(m), 1, 1), t, 8), Launch("dfp_exponents", (self.blocks(n), 1, 1), t, 8),
                Launch("dfp_quantize_a", (m_pad, 1, 1), t, quant_shared),
                Launch("dfp_quantize_b", (n_pad, 1, 1), t, quant_shared),
                Launch("int8_gemm", (n_pad // self.block[1], m_pad // self.block[0], self.batches), (self.threads, 1, 1),
                       self.shared_bytes),
                *([Launch("dfp_out_amax", (cdiv(n, 32), cdiv(m, 8), 1), (32, 8, 1))] if self.out == "dfp" else []),
                Launch("dfp_rescale", (cdiv(n, 32), cdiv(m, 8), 1), (32, 8, 1)))

    def main_loop_mma(self) -> tuple[str, str, int]:
        return "int8_gemm", mma_sass(self.arch, "s8"), self.imma_per_chunk

    def template_params(self) -> dict[str, Any]:
        return {**self.layout_params(), "kReduceThreads": REDUCE_THREADS, "kMagnitudeBits": self.bits - 1,
                "kPieces": pieces(self.bits), "kOutDfp": self.out == "dfp",
                "kEpilogueModulus": False, "kNumModuli": 1, "kModuli": (1,)}
