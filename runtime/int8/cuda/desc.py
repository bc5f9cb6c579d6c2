"""The int8 scheme's kernel desc: :class:`Int8Desc` (quantize A, quantize B, the INT8 GEMM of
int8_gemm.cu with its raw INT32 sums, the dequantization). Pure Python (the ``emit-cuda`` pass
imports it); the label is read by :func:`parse_int8_label`, a test checks it against the scheme's."""

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

__all__ = ["Int8Desc", "parse_int8_label", "MAX_K", "QUANT_THREADS"]

#: INT32 accumulation of |q| <= 127 products is exact while K·127² < 2^31
MAX_K = (2**31 - 1) // (127 * 127)
#: threads of one quantizer CTA (one row of op(A) or column of op(B))
QUANT_THREADS = 256


def parse_int8_label(label: str) -> tuple[str, str]:
    """(scale, encoding) of an int8 label (``scale=row-col``, ``encoding=sf16``); ValueError names
    a bad part."""
    fields = {"scale": "row-col", "encoding": "int8"}
    for part in filter(None, (p.strip() for p in label.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key not in fields:
            raise ValueError(f"int8: bad config part {part!r} in {label!r}; fields are scale, encoding")
        fields[key] = value
    return fields["scale"], fields["encoding"]


@dataclass(frozen=True)
class Int8Desc(KernelSpec):
    """One int8 kernel specialisation: quantizers, the INT8 GEMM (int8_gemm.cu, one batch, raw INT32
    sums), the dequantization epilogue."""

    scheme: str
    config: str
    dtype: str
    scale: str = "row-col"
    encoding: str = "int8"
    tiling: TileDescription = TileDescription(block=(128, 64), warps=(2, 2))

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "imma.cuh", "int8_quant.cu", "int8_gemm.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("int8_quantize_a", "int8_quantize_b", "int8_gemm", "int8_dequantize")

    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "Int8Desc":
        if scheme != "int8":
            raise UnsupportedConfig(f"cuda: Int8Desc is the int8 desc, not {scheme!r}")
        scale, encoding = parse_int8_label(config)
        tiling, kw = split_tiling(Int8Desc.tiling, kw)
        return Int8Desc(scheme=scheme, config=config, dtype=dtype, scale=scale, encoding=encoding, tiling=tiling,
                        **kw)

    #: int8_gemm.cu's geometry, which ozaki2's desc describes (one plane per batch; int8: one batch)
    shared_bytes = Ozaki2Desc.shared_bytes
    padded = Ozaki2Desc.padded

    def problems(self) -> list[str]:
        out = [] if self.scheme == "int8" else [f"scheme {self.scheme!r} is not 'int8'"]
        out += self.common_problems(MMA_M, MMA_N)
        if self.scale != "row-col":
            out.append(f"scale={self.scale!r}: the only scaling is 'row-col'")
        if self.encoding != "int8":
            out.append(f"encoding={self.encoding}: the operand encodings are not on the GPU (plain int8 only)")
        if self.alpha_beta != "product":
            out.append("alpha_beta='update': the kernels write the product only")
        return out

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """quantize A, quantize B (a CTA per padded row), the INT8 GEMM, the dequantization. ValueError
        for K beyond exact INT32 sums."""
        if k > MAX_K:
            raise ValueError(f"cuda int8: K={k} > {MAX_K}: the INT32 sums could overflow; use the CPU executor")
        m_pad, n_pad, _ = self.padded(m, n, k)
        return (Launch("int8_quantize_a", (m_pad, 1, 1), (QUANT_THREADS, 1, 1)),
                Launch("int8_quantize_b", (n_pad, 1, 1), (QUANT_THREADS, 1, 1)),
                Launch("int8_gemm", (n_pad // self.block[1], m_pad // self.block[0], 1), (self.threads, 1, 1),
                       self.shared_bytes),
                Launch("int8_dequantize", (cdiv(n, 32), cdiv(m, 8), 1), (32, 8, 1)))

    def main_loop_mma(self) -> tuple[str, str, int]:
        return "int8_gemm", mma_sass(self.arch, "s8"), self.imma_per_chunk

    def template_params(self) -> dict[str, Any]:
        return {**self.layout_params(), "kQuantThreads": QUANT_THREADS, "kEpilogueModulus": False, "kNumModuli": 1,
                "kModuli": (1,)}
