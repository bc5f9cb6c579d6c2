"""Kernel descs: everything a generated CUDA kernel is specialised to, as one frozen value.

:class:`KernelSpec` is what every family's desc gives the renderer
(:mod:`mixjit.runtime.cuda.emit`), the build cache (:mod:`mixjit.runtime.cuda.build`), a
launcher (:meth:`KernelSpec.launches`) and its CPU model: template files, entry points, typed
template parameters, the problems that rule a config out, and the SASS MMA the main loop must
contain. The families' descs: mixpert/cuda/desc.py (``KernelDesc``), multiterm/cuda/desc.py
(tf32x3, bf16xN), ozaki2/cuda/desc.py, split/cuda/desc.py, vitbit/cuda/desc.py;
runtime/cuda/registry.py maps a scheme to its desc.

:class:`TileDescription` (as CUTLASS python's) is the one tiling description every family's
desc composes (its ``tiling`` field): the CTA tile and warp grid, the pipeline depth, the
target arch, the transposes and the alpha/beta mode. A desc's ``for_config(..., **fields)``
takes those fields by name (:func:`split_tiling` sorts them out) over the family's default
tiling, and the desc reads them back as its own attributes (``desc.block``, ``desc.arch``).

Pure Python: no numba, numpy or CUDA import (the ``emit-cuda`` pass imports it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Mapping

__all__ = ["KernelSpec", "Launch", "TileDescription", "split_tiling", "UnsupportedConfig", "ARCHS", "Target",
           "TARGETS", "MMA_PTX", "mma_sass", "target_for", "ALPHA_BETA_MODES", "DTYPES", "MMA_M", "MMA_N", "MMA_K",
           "STATIC_SHARED_LIMIT", "cdiv"]

#: the m16n8k32 INT8 MMA shape (``mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32``)
MMA_M, MMA_N, MMA_K = 16, 8, 32
#: ``product``: the kernel writes P = RN(X); ``update``: out = alpha*P + beta*C in the output dtype
ALPHA_BETA_MODES = ("product", "update")
DTYPES = ("f32", "f64")
#: the most static shared memory a kernel may declare (48 KiB; more needs dynamic shared memory)
STATIC_SHARED_LIMIT = 48 * 1024


@dataclass(frozen=True)
class Target:
    """One cubin target the backend builds (``arch``, nvcc's ``-arch``) and the devices it loads on.

    A cubin built for compute capability X.y loads on the devices of capability X.z, z >= y
    (binary compatibility within a major version); an arch-specific target (``specific``, the
    ``a`` suffix: ``sm_100a``) loads on capability X.y alone. ``sass`` maps each tensor-core MMA
    the kernels issue (a key of :data:`MMA_PTX`) to the SASS opcode ptxas emits for it on this
    target: what the SASS checks require of a main loop."""

    arch: str
    cc: tuple[int, int]
    specific: bool
    parts: str
    sass: Mapping[str, str]

    def loads_on(self, major: int, minor: int) -> bool:
        """Whether a device of compute capability ``major.minor`` loads this target's cubins."""
        if self.specific:
            return (major, minor) == self.cc
        return major == self.cc[0] and minor >= self.cc[1]


#: the tensor-core MMAs the kernels issue (every family's main loop), by kind
MMA_PTX = {
    "s8": "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
    "tf32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    "bf16": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "f16": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
}
#: their SASS (cuobjdump of nvcc 13.0 cubins): the same opcode on every target below, Blackwell
#: included; tests/cuda checks each family's main loop for it on every target
_MMA_SASS = {"s8": "IMMA.16832.S8.S8", "tf32": "HMMA.1688.F32.TF32", "bf16": "HMMA.16816.F32.BF16",
             "f16": "HMMA.16816.F32"}
#: the targets the backend builds cubins for (docs/cuda.md "Architectures" says why these)
TARGETS: dict[str, Target] = {t.arch: t for t in (
    Target("sm_80", (8, 0), False, "A100, A30, RTX 30, L40S, RTX 40, Jetson Orin (cc 8.x)", _MMA_SASS),
    Target("sm_90", (9, 0), False, "H100, H200, GH200 (cc 9.0)", _MMA_SASS),
    Target("sm_100a", (10, 0), True, "B200, GB200 (cc 10.0 only)", _MMA_SASS),
    Target("sm_103a", (10, 3), True, "B300, GB300 (cc 10.3 only)", _MMA_SASS),
    Target("sm_120", (12, 0), False, "RTX 50, RTX PRO 6000 Blackwell (cc 12.0), DGX Spark GB10 (cc 12.1)",
           _MMA_SASS),
)}
#: target names, in build order
ARCHS = tuple(TARGETS)


def mma_sass(arch: str, kind: str) -> str:
    """The SASS opcode of the ``kind`` MMA (a key of :data:`MMA_PTX`) on target ``arch``."""
    try:
        return TARGETS[arch].sass[kind]
    except KeyError:
        raise ValueError(f"cuda: no SASS known for MMA {kind!r} on {arch!r}: targets {', '.join(ARCHS)}, "
                         f"MMAs {', '.join(MMA_PTX)} (runtime/cuda/desc.py TARGETS)") from None


def target_for(major: int, minor: int) -> Target | None:
    """The target whose cubins a device of compute capability ``major.minor`` loads (the newest
    such), or None where the backend builds none for it."""
    loading = [t for t in TARGETS.values() if t.loads_on(major, minor)]
    return max(loading, key=lambda t: t.cc) if loading else None


class UnsupportedConfig(ValueError):
    """A config the CUDA kernels do not implement (the site keeps its CPU executor)."""


@dataclass(frozen=True)
class Launch:
    """How to launch one entry point: grid and block (x, y, z), its static shared memory, and the
    stream it runs on (split: 0 and 1 run concurrently; every other launch waits for those before it)."""

    entry: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0
    stream: int = 0


class KernelSpec:
    """What every kernel desc gives the renderer, the build cache, the launcher and its CPU model.

    Subclasses are frozen dataclasses with at least the fields ``scheme``, ``config``, ``dtype``
    and ``tiling`` (a :class:`TileDescription`, whose fields read as the desc's own: ``block``,
    ``warps``, ``stages``, ``arch``, ``trans_a``, ``trans_b``, ``alpha_beta``); they set ``templates`` (the template files of the translation unit, the first
    one ``common.cuh``) and ``entry_points``, and implement :meth:`template_params`,
    :meth:`problems` and :meth:`launches`.
    """

    templates: ClassVar[tuple[str, ...]] = ()
    entry_points: ClassVar[tuple[str, ...]] = ()
    scheme: str  # fields of every subclass (see above), declared here for the type checker
    config: str

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise UnsupportedConfig(f"cuda: {self.scheme}[{self.config}] has no CUDA kernel: " + "; ".join(problems))

    def template_params(self) -> dict[str, Any]:
        """The typed compile-time parameters the templates declare (name -> Python value)."""
        raise NotImplementedError

    def problems(self) -> list[str]:
        """Why this desc cannot be generated (empty when it can)."""
        raise NotImplementedError

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """The kernels to launch, in order, for an m×n×k GEMM."""
        raise NotImplementedError

    def main_loop_mma(self) -> tuple[str, str, int]:
        """(GEMM entry point, its SASS MMA opcode on this desc's arch (:func:`mma_sass`), how many
        of them one warp issues per K chunk): what the SASS check requires of the main loop."""
        raise NotImplementedError

    def layout_params(self) -> dict[str, Any]:
        """The template parameters of the CTA tile, warp grid, pipeline and operand layout, which
        every GEMM template reads (each desc's :meth:`template_params` includes them)."""
        wm, wn = self.warp_tile
        return {
            "kBlockM": self.block[0], "kBlockN": self.block[1],
            "kWarpsM": self.warps[0], "kWarpsN": self.warps[1],
            "kWarpTileM": wm, "kWarpTileN": wn,
            "kStages": self.stages,
            "kTransA": self.trans_a, "kTransB": self.trans_b,
        }

    @property
    def imma_per_chunk(self) -> int:
        """m16n8k32 MMAs one warp issues per 32-wide K chunk for one pair of INT8 planes."""
        wm, wn = self.warp_tile
        return (wm // MMA_M) * (wn // MMA_N)

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.tiling.warp_tile

    @property
    def threads(self) -> int:
        return self.tiling.threads

    # the tiling's fields, read as the desc's own
    block = property(lambda self: self.tiling.block)
    warps = property(lambda self: self.tiling.warps)
    stages = property(lambda self: self.tiling.stages)
    arch = property(lambda self: self.tiling.arch)
    trans_a = property(lambda self: self.tiling.trans_a)
    trans_b = property(lambda self: self.tiling.trans_b)
    alpha_beta = property(lambda self: self.tiling.alpha_beta)

    @property
    def name(self) -> str:
        """A C identifier naming this specialisation (also the file stem)."""
        text = f"{self.scheme}_{self.config}_{self.dtype}_{self.block[0]}x{self.block[1]}_w{self.warps[0]}x" \
               f"{self.warps[1]}_s{self.stages}_{self.arch}_{'t' if self.trans_a else 'n'}" \
               f"{'t' if self.trans_b else 'n'}_{self.alpha_beta}"
        return re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_")

    def target_problems(self) -> list[str]:
        """The checks every desc shares, GEMM or not: dtype, arch, alpha/beta mode."""
        out = []
        if self.dtype not in DTYPES:
            out.append(f"dtype {self.dtype!r} is not one of {DTYPES}")
        if self.arch not in ARCHS:
            out.append(f"arch {self.arch!r} is not one of {ARCHS}")
        if self.alpha_beta not in ALPHA_BETA_MODES:
            out.append(f"alpha_beta {self.alpha_beta!r} is not one of {ALPHA_BETA_MODES}")
        return out

    def common_problems(self, mma_m: int, mma_n: int) -> list[str]:
        """The checks every GEMM desc shares: :meth:`target_problems`, warp grid and tile."""
        out = self.target_problems()
        bm, bn = self.block
        if bm % self.warps[0] or bn % self.warps[1]:
            out.append(f"block {bm}x{bn} is not divisible by the warp grid {self.warps}")
        else:
            wm, wn = self.warp_tile
            if wm % mma_m or wn % mma_n:
                out.append(f"warp tile {wm}x{wn} is not a multiple of the MMA {mma_m}x{mma_n}")
        if self.stages != 2:
            out.append(f"stages={self.stages}: the main loop is double-buffered (stages=2)")
        return out


@dataclass(frozen=True)
class TileDescription:
    """How one kernel is tiled and launched, the part every family's desc shares (CUTLASS's
    ``TileDescription``): ``block`` the CTA tile (BM, BN), ``warps`` the warp grid (WM, WN; each
    warp computes (BM/WM)×(BN/WN)), ``stages`` the pipeline depth over K chunks, ``arch`` the
    target, ``trans_a``/``trans_b`` the operand layouts, ``alpha_beta`` the output mode."""

    block: tuple[int, int] = (64, 32)
    warps: tuple[int, int] = (2, 2)
    stages: int = 2
    arch: str = "sm_80"
    trans_a: bool = False
    trans_b: bool = False
    alpha_beta: str = "product"

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.block[0] // self.warps[0], self.block[1] // self.warps[1]

    @property
    def threads(self) -> int:
        return 32 * self.warps[0] * self.warps[1]


TILING_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TileDescription))
"""The names a desc's ``for_config`` takes as tiling fields."""


def split_tiling(default: TileDescription, kw: dict[str, Any]) -> tuple[TileDescription, dict[str, Any]]:
    """(``default`` with the tiling fields of ``kw`` put in, the other fields of ``kw``): how a
    desc's ``for_config`` takes ``block=``, ``arch=``, ... (or a whole ``tiling=``) by name."""
    tiling = {k: v for k, v in kw.items() if k in TILING_FIELDS}
    rest = {k: v for k, v in kw.items() if k not in TILING_FIELDS}
    if "tiling" in rest:
        if tiling:
            raise TypeError(f"give the tiling either as tiling= or as fields ({', '.join(tiling)}), not both")
        return rest.pop("tiling"), rest
    return TileDescription(**{**{f: getattr(default, f) for f in TILING_FIELDS}, **tiling}), rest


def cdiv(a: int, b: int) -> int:
    """⌈a / b⌉ for positive b."""
    return -(-a // b)
