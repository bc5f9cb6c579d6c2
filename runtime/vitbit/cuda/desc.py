"""VitbitDesc: the fused VitBit kernel (seed 001, Algorithm 1; docs/numerics.md "vitbit").

Three kernels in one translation unit (templates/vitbit_pack.cu, templates/vitbit_gemm.cu):

* host: each row's (A) and column's (B) scale, RN64(amax/q_max), as the CPU executor computes
  them (a reduction; the launcher runs runtime/int8/executor.py ``quantize_symmetric``);
* ``vitbit_pack_a``: A quantized to ``bits``-bit integers, one int8 plane [M_pad][K_pad];
* ``vitbit_pack_b``: B quantized and split three ways by the executor's ``column_split``: the
  packed columns [0, N1) as uint32 words (P values per word, the first in the highest field,
  two's complement added modulo 2^32, exactly as ``pack_words``) [K_pad][G_pad], the converted
  columns [N1, N1+N2) as float32 [K_pad][N2_pad], the tensor-core columns as an int8 plane
  [N3_pad][K_pad] (k contiguous);
* ``vitbit_gemm``: one fused kernel whose thread block holds three warp roles over the same
  shared A tile (cp.async, double-buffered 32-wide K chunks): tensor warps (IMMA m16n8k32 s8 on
  the N3 columns), then INT and FP warps alternating (INT: IMAD ``reg += u32(a)·word`` on the
  packed words, the fields extracted after every ``acc`` products; FP: FFMA on the converted
  columns, exact, the FP32 sum handed to INT32 every ``fp_block`` products). Every path's
  integer sums are exact; the epilogue dequantizes RN32(RN64(RN64(S·s_i)·t_j)) as the executor.

The split ratios m and n come from the config (VitbitConfig): set, or from its ``target``'s rates
in the hardware table (runtime/model/hardware.py ``vitbit_ratios``), or without a target m = 4, the
paper's measured ratio on Orin, and n = the pack count (Eq. 1). Pure Python (no numba): the packing arithmetic (pack count, field
width, ``max_acc``, ``fp_block``, ``column_split``) is a copy of runtime/vitbit/executor.py's,
and the label parser agrees with the scheme's (tests/cuda/test_vitbit_kernels.py checks both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from mixjit.runtime.cuda.desc import (
    MMA_K,
    MMA_M,
    MMA_N,
    STATIC_SHARED_LIMIT,
    KernelSpec,
    Launch,
    TileDescription,
    UnsupportedConfig,
    cdiv,
    mma_sass,
    split_tiling,
)
from mixjit.runtime.mixpert.labels import MAX_CONFIG_INT
from mixjit.runtime.model.hardware import get_hardware, vitbit_ratios

__all__ = ["VitbitDesc", "parse_vitbit_label", "pack_count", "slot_bits", "qmax", "max_acc", "fp_block", "max_k",
           "column_split", "MIN_BITS", "MAX_BITS"]

MIN_BITS, MAX_BITS = 2, 8
_RATIO_M = 4  # VitbitConfig's m without a target (the paper's, schemes/vitbit.py PAPER_M)


def pack_count(bits: int) -> int:
    """Values packed in one 32-bit word: 2 at 6-8 bits, 3 at 5, 4 at 4 or fewer."""
    return 2 if bits >= 6 else 3 if bits == 5 else 4


def slot_bits(bits: int) -> int:
    """Width of one packed field (value and zero padding): 16, 10 or 8 bits."""
    return 32 // pack_count(bits)


def qmax(bits: int) -> int:
    return (1 << (bits - 1)) - 1


def max_acc(bits: int) -> int:
    """The most packed products one field sums without overflow."""
    return ((1 << (slot_bits(bits) - 1)) - 1) // qmax(bits) ** 2


def fp_block(bits: int) -> int:
    """Products the FP path sums in FP32 (all below 2^24, exact) before INT32 takes the sum."""
    return (1 << 24) // qmax(bits) ** 2


def max_k(bits: int) -> int:
    """The longest K whose integer sums fit INT32."""
    return ((1 << 31) - 1) // qmax(bits) ** 2


def column_split(n: int, m_ratio: int, n_ratio: int, bits: int) -> tuple[int, int, int]:
    """(N1 packed, N2 converted, N3 tensor-core) columns of B (Algorithm 1)."""
    n3 = n * m_ratio // (1 + m_ratio)
    rest = n - n3
    npk = pack_count(bits)
    n1 = (rest * n_ratio // (1 + n_ratio)) // npk * npk
    return n1, rest - n1, n3


def parse_vitbit_label(label: str) -> dict[str, int]:
    """bits, m, n, acc of a vitbit label (``bits=5,m=2``, ``bits=8,target=h100``; any subset,
    defaults filled in as VitbitConfig does). ValueError names a bad part or value."""
    fields: dict[str, int] = {}
    target = ""
    for part in filter(None, (p.strip() for p in label.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("bits", "m", "n", "acc", "target"):
            raise ValueError(f"vitbit: bad config part {part!r} in {label!r}; fields are: bits, m, n, acc, target")
        if key == "target":
            target = value.strip()
            continue
        try:
            fields[key] = int(value.strip())
        except ValueError:
            raise ValueError(f"vitbit: config field {key}={value.strip()!r} is not a valid int") from None
        if not -MAX_CONFIG_INT <= fields[key] <= MAX_CONFIG_INT:  # as the scheme's own parser checks
            raise ValueError(
                f"vitbit: config field {key}={value.strip()} must be in -{MAX_CONFIG_INT}..{MAX_CONFIG_INT}")
    bits = fields.get("bits", 8)
    if not MIN_BITS <= bits <= MAX_BITS:
        raise ValueError(f"vitbit: bits={bits} must be in {MIN_BITS}..{MAX_BITS}")
    dm, dn = vitbit_ratios(get_hardware(target), pack_count(bits)) if target else (_RATIO_M, pack_count(bits))
    out = {"bits": bits, "m": fields.get("m", dm), "n": fields.get("n", -1), "acc": fields.get("acc", -1)}
    out["m"] = dm if out["m"] == -1 else out["m"]
    out["n"] = dn if out["n"] == -1 else out["n"]
    out["acc"] = max_acc(bits) if out["acc"] == -1 else out["acc"]
    if out["m"] < 0 or out["n"] < 0:
        raise ValueError(f"vitbit: the split ratios m={out['m']}, n={out['n']} must be >= 0")
    if not 1 <= out["acc"] <= max_acc(bits):
        raise ValueError(f"vitbit: acc={out['acc']} must be in 1..{max_acc(bits)} at bits={bits}")
    return out


@dataclass(frozen=True)
class VitbitDesc(KernelSpec):
    """One VitBit kernel specialisation.

    ``block`` = (BM rows, BN3 tensor-core columns) per CTA, ``warps`` the tensor warps' grid over
    it (m16n8k32 MMAs); ``int_warps`` INT warps cover ``int_words`` packed words (P·int_words
    columns) and ``fp_warps`` FP warps ``fp_cols`` converted columns of the same BM rows. A role
    thread owns one word (column) and every (32·warps/words)-th row of the tile.
    """

    scheme: str
    config: str
    dtype: str
    bits: int
    m_ratio: int
    n_ratio: int
    acc: int
    int_warps: int = 2
    fp_warps: int = 2
    int_words: int = 16
    fp_cols: int = 16
    tiling: TileDescription = TileDescription(block=(64, 32), warps=(2, 2))

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "imma.cuh", "vitbit_pack.cu", "vitbit_gemm.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("vitbit_pack_a", "vitbit_pack_b", "vitbit_gemm")
    PACK_BLOCK: ClassVar[tuple[int, int]] = (32, 8)

    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "VitbitDesc":
        if scheme != "vitbit":
            raise UnsupportedConfig(f"cuda: VitbitDesc is the vitbit desc, not {scheme!r}")
        f = parse_vitbit_label(config)
        tiling, kw = split_tiling(VitbitDesc.tiling, kw)
        return VitbitDesc(scheme=scheme, config=config, dtype=dtype, bits=f["bits"], m_ratio=f["m"],
                          n_ratio=f["n"], acc=f["acc"], tiling=tiling, **kw)

    # -- derived quantities -----------------------------------------------------------------
    @property
    def pack(self) -> int:
        return pack_count(self.bits)

    @property
    def tensor_warps(self) -> int:
        return self.warps[0] * self.warps[1]

    @property
    def threads(self) -> int:
        return 32 * (self.tensor_warps + self.int_warps + self.fp_warps)

    @property
    def int_rows(self) -> int:
        """Rows of the tile one INT thread holds (its registers: this many words and P× sums)."""
        return self.block[0] * self.int_words // (32 * self.int_warps)

    @property
    def fp_rows(self) -> int:
        return self.block[0] * self.fp_cols // (32 * self.fp_warps)

    @property
    def name(self) -> str:
        return f"{super().name}_i{self.int_warps}x{self.int_words}_f{self.fp_warps}x{self.fp_cols}"

    def warp_role(self, warp: int) -> str:
        """``tensor`` (the first warps), then ``int`` and ``fp`` alternating (the paper's schedule)."""
        if warp < self.tensor_warps:
            return "tensor"
        return "int" if (warp - self.tensor_warps) % 2 == 0 else "fp"

    def role_index(self, warp: int) -> int:
        """The warp's index among the warps of its role."""
        return warp if warp < self.tensor_warps else (warp - self.tensor_warps) // 2

    def grid_x(self, n: int) -> int:
        """CTAs along N: enough for the longest of the three column sets."""
        n1, n2, n3 = column_split(n, self.m_ratio, self.n_ratio, self.bits)
        return max(cdiv(n3, self.block[1]), cdiv(n1 // self.pack, self.int_words), cdiv(n2, self.fp_cols), 1)

    def padded(self, m: int, n: int, k: int) -> dict[str, int]:
        """The planes' padded sizes: M_pad, K_pad, G_pad (words), N2_pad, N3_pad."""
        gx = self.grid_x(n)
        return {"m_pad": cdiv(max(m, 1), self.block[0]) * self.block[0], "k_pad": cdiv(max(k, 1), MMA_K) * MMA_K,
                "g_pad": gx * self.int_words, "n2_pad": gx * self.fp_cols, "n3_pad": gx * self.block[1]}

    @property
    def shared_bytes(self) -> int:
        return self.stages * (self.block[0] + self.block[1]) * MMA_K

    def problems(self) -> list[str]:
        out = [] if self.scheme == "vitbit" else [f"scheme {self.scheme!r} is not 'vitbit'"]
        out += self.common_problems(MMA_M, MMA_N)
        if not MIN_BITS <= self.bits <= MAX_BITS:
            out.append(f"bits={self.bits} is not in {MIN_BITS}..{MAX_BITS}")
            return out
        if not 1 <= self.acc <= max_acc(self.bits):
            out.append(f"acc={self.acc} is not in 1..{max_acc(self.bits)}: a packed field would overflow")
        if self.m_ratio < 0 or self.n_ratio < 0:
            out.append(f"the split ratios m={self.m_ratio}, n={self.n_ratio} must be >= 0")
        if self.int_warps != self.fp_warps or self.int_warps < 1:
            out.append(f"int_warps={self.int_warps}, fp_warps={self.fp_warps}: the INT and FP warps alternate, "
                       "so there must be as many of each (at least one)")
        for role, warps, cols in (("int", self.int_warps, self.int_words), ("fp", self.fp_warps, self.fp_cols)):
            threads = 32 * max(warps, 1)
            if cols < 1 or threads % cols or self.block[0] % (threads // cols):
                out.append(f"{role}: {threads} threads cannot share {cols} columns over {self.block[0]} rows evenly")
        if self.shared_bytes > STATIC_SHARED_LIMIT:
            out.append(f"block {self.block} needs {self.shared_bytes} bytes of static shared memory")
        return out

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """pack A, pack B (grid.z: packed, converted, tensor-core part), the fused GEMM.
        ValueError for a K whose integer sums could overflow INT32."""
        if k > max_k(self.bits):
            raise ValueError(f"cuda vitbit: K={k} > {max_k(self.bits)} at bits={self.bits}: the INT32 sums "
                             "could overflow (fewer bits, or split K)")
        p = self.padded(m, n, k)
        kx, ky = self.PACK_BLOCK
        b_rows = max(p["g_pad"], p["n2_pad"], p["n3_pad"])
        return (Launch("vitbit_pack_a", (p["k_pad"] // kx, p["m_pad"] // ky, 1), (kx, ky, 1)),
                Launch("vitbit_pack_b", (p["k_pad"] // kx, cdiv(b_rows, ky), 3), (kx, ky, 1)),
                Launch("vitbit_gemm", (self.grid_x(n), p["m_pad"] // self.block[0], 1), (self.threads, 1, 1),
                       self.shared_bytes))

    def main_loop_mma(self) -> tuple[str, str, int]:
        return "vitbit_gemm", mma_sass(self.arch, "s8"), self.imma_per_chunk

    def template_params(self) -> dict[str, Any]:
        return {
            "kBits": self.bits, "kPack": self.pack, "kSlot": slot_bits(self.bits),
            "kAcc": self.acc, "kFpBlock": fp_block(self.bits),
            **self.layout_params(),
            "kTensorWarps": self.tensor_warps, "kIntWarps": self.int_warps, "kFpWarps": self.fp_warps,
            "kIntWords": self.int_words, "kFpCols": self.fp_cols,
            "kIntRows": self.int_rows, "kFpRows": self.fp_rows,
            "kAlphaBetaUpdate": self.alpha_beta == "update",
            "kPackRows": self.PACK_BLOCK[1], "kPackK": self.PACK_BLOCK[0],
        }
