"""Ozaki2Desc: the Ozaki-II residue kernels (docs/numerics.md "ozaki2" steps 2-3).

On the GPU: ``ozaki2_residues_a`` / ``ozaki2_residues_b`` turn the scaled, truncated operands
into one INT8 residue plane per modulus (A row-major, B column-major), and ``int8_gemm`` (one
batch per modulus, grid.z) multiplies each pair of planes on the INT8 tensor cores with exact
INT32 accumulation and reduces the sums modulo p_l (int16 residues c_l in [0, p_l)).

On the host, as the CPU executor computes them: the per-row/column shifts (step 2, fast mode:
O(mk + kn) exponent work) before the launch, and the exact CRT reconstruction and the single
rounding (steps 4-5, O(N²) integer operations per output element) after it, from the N·m·n
residues copied back. Accurate mode's bound GEMM is not on the GPU yet (UnsupportedConfig).

Pure Python (no numba): the moduli table is a copy of runtime/ozaki2/executor.py's (a test checks).
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

__all__ = ["Ozaki2Desc", "MODULI", "MAX_K", "parse_ozaki2_label"]

#: GEMMul8's moduli table (runtime/ozaki2/executor.py MODULI)
MODULI = (256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191, 181, 179, 173)
#: INT32 accumulation is exact while K·2^14 < 2^31 (residues in [-128, 127])
MAX_K = (1 << 17) - 1
_DEFAULT_MODULI = 14  # Ozaki2Config's default


def parse_ozaki2_label(label: str) -> tuple[int, str]:
    """(moduli, mode) of an ozaki2 label (``moduli=8``, ``moduli=8,mode=accurate``, ``kblock=B``
    is the CPU executor's alone and ignored); ValueError names a bad part."""
    fields = {}
    for part in filter(None, (p.strip() for p in label.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key not in ("moduli", "mode", "kblock"):
            raise ValueError(f"ozaki2: bad config part {part!r} in {label!r}; fields are moduli, mode, kblock")
        fields[key] = value
    try:
        moduli = int(fields.get("moduli", _DEFAULT_MODULI))
    except ValueError:
        raise ValueError(f"ozaki2: moduli={fields['moduli']!r} is not an integer") from None
    if not 1 <= moduli <= len(MODULI):
        raise ValueError(f"ozaki2: moduli={moduli} must be in 1..{len(MODULI)}")
    mode = fields.get("mode", "fast")
    if mode not in ("fast", "accurate"):
        raise ValueError(f"ozaki2: mode={mode!r} must be 'fast' or 'accurate'")
    return moduli, mode


@dataclass(frozen=True)
class Ozaki2Desc(KernelSpec):
    """One ozaki2 kernel specialisation: residues of A and B, the batched INT8 residue GEMM."""

    scheme: str
    config: str
    dtype: str
    moduli: int
    mode: str = "fast"
    tiling: TileDescription = TileDescription(block=(128, 64), warps=(2, 2))

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "imma.cuh", "ozaki2_residues.cu", "int8_gemm.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("ozaki2_residues_a", "ozaki2_residues_b", "int8_gemm")
    PACK_BLOCK: ClassVar[tuple[int, int]] = (32, 8)

    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "Ozaki2Desc":
        if scheme != "ozaki2":
            raise UnsupportedConfig(f"cuda: Ozaki2Desc is the ozaki2 desc, not {scheme!r}")
        moduli, mode = parse_ozaki2_label(config)
        tiling, kw = split_tiling(Ozaki2Desc.tiling, kw)
        return Ozaki2Desc(scheme=scheme, config=config, dtype=dtype, moduli=moduli, mode=mode, tiling=tiling, **kw)

    @property
    def moduli_table(self) -> tuple[int, ...]:
        return MODULI[:self.moduli]

    @property
    def shared_bytes(self) -> int:
        return self.stages * (self.block[0] + self.block[1]) * MMA_K

    def problems(self) -> list[str]:
        out = [] if self.scheme == "ozaki2" else [f"scheme {self.scheme!r} is not 'ozaki2'"]
        out += self.common_problems(MMA_M, MMA_N)
        if self.mode != "fast":
            out.append(f"mode={self.mode}: the accurate mode's bound GEMM is not on the GPU yet (fast mode only)")
        if self.alpha_beta != "product":
            out.append("alpha_beta='update': the output is formed on the host after the CRT (product mode only)")
        return out

    def padded(self, m: int, n: int, k: int) -> tuple[int, int, int]:
        """(M_pad, N_pad, K_pad) of the residue planes."""
        return (cdiv(m, self.block[0]) * self.block[0], cdiv(n, self.block[1]) * self.block[1],
                max(cdiv(k, MMA_K), 1) * MMA_K)

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """residues of A, of B (one thread per padded element, all moduli), the residue GEMM (grid.z:
        one modulus each). ValueError for K beyond exact INT32 accumulation."""
        if k > MAX_K:
            raise ValueError(f"cuda ozaki2: K={k} > {MAX_K}: the INT32 residue sums could overflow; "
                             "split K into blocks (not implemented) or use the CPU executor")
        m_pad, n_pad, k_pad = self.padded(m, n, k)
        kx, ky = self.PACK_BLOCK
        return (Launch("ozaki2_residues_a", (k_pad // kx, m_pad // ky, 1), (kx, ky, 1)),
                Launch("ozaki2_residues_b", (k_pad // kx, n_pad // ky, 1), (kx, ky, 1)),
                Launch("int8_gemm", (n_pad // self.block[1], m_pad // self.block[0], self.moduli),
                       (self.threads, 1, 1), self.shared_bytes))

    def main_loop_mma(self) -> tuple[str, str, int]:
        return "int8_gemm", mma_sass(self.arch, "s8"), self.imma_per_chunk

    def template_params(self) -> dict[str, Any]:
        return {
            **self.layout_params(),
            "kPackRows": self.PACK_BLOCK[1], "kPackK": self.PACK_BLOCK[0],
            "kEpilogueModulus": True,
            "kNumModuli": self.moduli,
            "kModuli": self.moduli_table,
        }
