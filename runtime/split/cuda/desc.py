"""SplitDesc: the split INT8+FP16 GEMM of the patent (seed 000 [0058]-[0078]; docs/numerics.md "split").

Two sub-GEMMs on two streams, then a combine:

* host: the slice ranking and the K split (the executor's ``fp16_columns``: the partition
  calculator runtime/model/partition.py sizes ``fp16=auto``), each row's / column's INT8 scale and
  FP16 range shift;
* ``split_pack_a`` / ``split_pack_b``: gather the two column sets into an INT8 plane
  (quantized) and an FP16 plane (range-scaled RN16);
* stream 0: ``int8_gemm`` (templates/int8_gemm.cu, raw INT32 sums: exact for K < 2^17);
  stream 1: ``multiterm_gemm`` with FP16 parts (templates/multiterm_gemm.cu, one part, HMMA
  with FP32 accumulation);
* ``split_combine`` (after both): dequantize, add, round once.

The CTA tile can be sized by the partition calculator (:meth:`SplitDesc.sized`: its tm × tn,
capped at 128 by static shared memory). Bit-equal to the CPU executor where the FP16 part's
FP32 accumulation is exact, in particular always for ``fp16=0`` (docs/cuda.md).

Pure Python (no numba).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from mixjit.runtime.cuda.desc import (
    MMA_K,
    STATIC_SHARED_LIMIT,
    KernelSpec,
    Launch,
    TileDescription,
    UnsupportedConfig,
    cdiv,
    mma_sass,
    split_tiling,
)
from mixjit.runtime.model.hardware import HARDWARE, get_hardware
from mixjit.runtime.model.partition import partition_sizes
from mixjit.runtime.multiterm.cuda.desc import CHUNK_BYTES, FORMATS, PAD_BYTES

__all__ = ["SplitDesc", "parse_split_label", "MAX_K"]

#: INT32 accumulation of INT8 products (|q| <= 127) is exact while K·127² < 2^31
MAX_K = (2**31 - 1) // 127**2
_FIELDS = {"fp16": "auto", "width": "32", "rank": "p99", "target": "a100"}


def parse_split_label(label: str) -> dict[str, str]:
    """The fields of a split label (``fp16=0.25,width=32,rank=p99,target=a100``, any subset),
    defaults filled in. ValueError names an unknown field or a bad value; the scheme's parser
    (runtime/schemes/split.py) agrees on what it accepts (a test checks)."""
    fields = dict(_FIELDS)
    for part in filter(None, (p.strip() for p in label.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key not in _FIELDS:
            raise ValueError(f"split: bad config part {part!r} in {label!r}; fields are {', '.join(_FIELDS)}")
        fields[key] = value
    try:
        fp16 = fields["fp16"]
        if fp16 != "auto" and not 0.0 <= float(fp16) <= 1.0:
            raise ValueError
        if int(fields["width"]) < 1:
            raise ValueError
    except ValueError:
        raise ValueError(f"split: fp16={fields['fp16']!r} / width={fields['width']!r} in {label!r}: use a fraction "
                         "in [0, 1] or 'auto', and a width >= 1") from None
    rank = fields["rank"]
    if rank != "index":
        try:
            q = float(rank[1:]) if rank.startswith("p") else -1.0
        except ValueError:
            q = -1.0
        if not 0.0 < q <= 100.0:
            raise ValueError(f"split: rank={rank!r}; use 'pQ' with 0 < Q <= 100 or 'index'")
    if fields["target"] not in HARDWARE:
        raise ValueError(f"split: unknown target {fields['target']!r}; known: {', '.join(sorted(HARDWARE))}")
    return fields


@dataclass(frozen=True)
class SplitDesc(KernelSpec):
    """One split kernel specialisation: pack, INT8 GEMM, FP16 GEMM, combine (one translation unit)."""

    scheme: str
    config: str
    dtype: str
    target: str = "a100"
    tiling: TileDescription = TileDescription(block=(64, 64), warps=(2, 1))

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "imma.cuh", "split_pack.cu", "int8_gemm.cu",
                                            "multiterm_gemm.cu", "split_combine.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("split_pack_a", "split_pack_b", "int8_gemm", "multiterm_gemm",
                                               "split_combine")
    PACK_BLOCK: ClassVar[tuple[int, int]] = (32, 8)
    COMBINE_BLOCK: ClassVar[tuple[int, int]] = (32, 8)

    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "SplitDesc":
        if scheme != "split":
            raise UnsupportedConfig(f"cuda: SplitDesc is the split desc, not {scheme!r}")
        fields = parse_split_label(config)
        tiling, kw = split_tiling(SplitDesc.tiling, kw)
        return SplitDesc(scheme=scheme, config=config, dtype=dtype, target=fields["target"], tiling=tiling, **kw)

    @staticmethod
    def sized(config: str, m: int, n: int, k: int, dtype: str = "f32", **kw: Any) -> "SplitDesc":
        """The desc with the CTA tile of the partition calculator for an m×n×k GEMM on the config's
        target ([0067]: the tm×tn that best fills whole waves of SMs), capped at 128×128 (static
        shared memory), and a warp grid of 32×64 warp tiles."""
        target = parse_split_label(config)["target"]
        part = partition_sizes(m, n, k, get_hardware(target))
        bm, bn = min(part.tile_m, 128), min(part.tile_n, 128)
        return SplitDesc.for_config("split", config, dtype, block=(bm, bn), warps=(bm // 32, bn // 64), **kw)

    @property
    def fmt(self):
        """The FP16 part's format (templates/multiterm_gemm.cu with one part)."""
        return FORMATS["f16"]

    @property
    def issue_order(self) -> tuple[tuple[int, int], ...]:
        return ((0, 0),)

    @property
    def shared_bytes(self) -> dict[str, int]:
        """Static shared memory of the two GEMMs."""
        bm, bn = self.block
        return {"int8_gemm": self.stages * (bm + bn) * MMA_K,
                "multiterm_gemm": self.stages * (bm + bn) * (CHUNK_BYTES + PAD_BYTES)}

    def problems(self) -> list[str]:
        out = [] if self.scheme == "split" else [f"scheme {self.scheme!r} is not 'split'"]
        out += self.common_problems(16, 8)  # both GEMMs tile their warps by m16n8 MMAs
        if max(self.shared_bytes.values()) > STATIC_SHARED_LIMIT:
            out.append(f"block {self.block} needs {max(self.shared_bytes.values())} bytes of static shared memory")
        return out

    def padded(self, m: int, n: int, k_i: int, k_f: int) -> tuple[int, int, int, int]:
        """(M_pad, N_pad, Ki_pad, Kf_pad): the planes' shapes (K parts: multiples of 32 elements)."""
        return (cdiv(m, self.block[0]) * self.block[0], cdiv(n, self.block[1]) * self.block[1],
                cdiv(k_i, 32) * 32, cdiv(k_f, 32) * 32)

    def launches(self, m: int, n: int, k: int, k_fp16: int | None = None) -> tuple[Launch, ...]:
        """pack A, pack B, the INT8 GEMM (stream 0) and the FP16 GEMM (stream 1) when their K part is
        not empty, then the combine after both. ``k_fp16`` (the FP16 columns) defaults to the
        partition calculator's for the target; ValueError for an INT8 K beyond exact INT32 sums."""
        if k_fp16 is None:
            k_fp16 = partition_sizes(m, n, k, get_hardware(self.target)).k_fp16
        k_i = k - k_fp16
        if k_i > MAX_K:
            raise ValueError(f"cuda split: the INT8 part's K={k_i} > {MAX_K}: its INT32 sums could overflow")
        m_pad, n_pad, ki_pad, kf_pad = self.padded(m, n, k_i, k_fp16)
        kx, ky = self.PACK_BLOCK
        kmax = max(ki_pad, kf_pad, kx)
        shared = self.shared_bytes
        out = [Launch("split_pack_a", (kmax // kx, m_pad // ky, 2), (kx, ky, 1)),
               Launch("split_pack_b", (kmax // kx, n_pad // ky, 2), (kx, ky, 1))]
        gemm_grid = (n_pad // self.block[1], m_pad // self.block[0], 1)
        if k_i:
            out.append(Launch("int8_gemm", gemm_grid, (self.threads, 1, 1), shared["int8_gemm"], stream=0))
        if k_fp16:
            out.append(Launch("multiterm_gemm", gemm_grid, (self.threads, 1, 1), shared["multiterm_gemm"], stream=1))
        cx, cy = self.COMBINE_BLOCK
        out.append(Launch("split_combine", (cdiv(n, cx), cdiv(m, cy), 1), (cx, cy, 1)))
        return tuple(out)

    def main_loop_mma(self) -> tuple[str, str, int]:
        return "int8_gemm", mma_sass(self.arch, "s8"), self.imma_per_chunk

    def template_params(self) -> dict[str, Any]:
        return {
            **self.layout_params(),
            "kAlphaBetaUpdate": self.alpha_beta == "update",
            "kPackRows": self.PACK_BLOCK[1], "kPackK": self.PACK_BLOCK[0],
            # the INT8 part: raw INT32 sums
            "kEpilogueModulus": False, "kNumModuli": 1,
            # the FP16 part: multiterm_gemm.cu with one FP16 part, its sums stored as they are
            "kFormat": self.fmt.code, "kParts": 1, "kPartBytes": self.fmt.part_bytes,
            "kChunkBytes": CHUNK_BYTES, "kPadBytes": PAD_BYTES, "kMmaK": self.fmt.mma[2],
            "kGemmUpdate": False, "kNumPairs": 1, "kLoShift": 0,
            "kModuli": (1,), "kPairA": (0,), "kPairB": (0,),
        }
