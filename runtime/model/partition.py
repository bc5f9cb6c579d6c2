"""The split-precision patent's partition-size calculator (seed 000, [0060]–[0069]).

Inputs: the GEMM's M, N, K and the hardware's native MMA shapes and SM count.
Outputs: how many of the K columns go to the INT8 and to the FP16 sub-GEMM, and the
output tile shape that fills the SMs.

* K split: the two sub-GEMMs get K in the ratio of the native K depths of their MMA
  instructions, ``k_int8 : k_fp16 = mma_k(int8) : mma_k(fp16)`` ([0066]: 16:8 = 2:1),
  so that both issue the same number of MMA instructions. ``k_fp16`` is rounded (half
  up) to a multiple of ``lcm(mma_k(int8), mma_k(fp16))``; the rest is INT8.
* Tile shape ([0067]): among tiles tm×tn with tm, tn in {64, 128, 256} (multiples of
  the native M and N of both formats), pick the one whose tile count best fills whole
  waves of SMs (utilization ``tiles / (waves·SMs)``), then the fewest waves, then the
  squarest tile, then the wider N. The patent's 512×640 on 40 SMs gives 64×128,
  8×5 = 40 tiles.

The patent calls these "optimal suggestions" that later steps may override ([0069]);
the split scheme uses ``fp16_fraction`` when its config says ``fp16=auto``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from mixjit.runtime.model.hardware import Hardware

__all__ = ["Partition", "partition_sizes"]

# Threadblock tiles smaller than 64 cannot reuse operands enough to feed the tensor
# cores from shared memory; CUTLASS's tensor-op GEMMs use 64..256 (e.g. 128x128x32).
_TILE_SIZES = (64, 128, 256)


@dataclass(frozen=True)
class Partition:
    """Result of the calculator for one m×n×k GEMM."""

    k_int8: int
    k_fp16: int
    tile_m: int
    tile_n: int
    tiles: int
    waves: int

    @property
    def fp16_fraction(self) -> Fraction:
        """``k_fp16 / K`` as an exact fraction (0 for K = 0)."""
        total = self.k_int8 + self.k_fp16
        return Fraction(self.k_fp16, total) if total else Fraction(0)


def partition_sizes(m: int, n: int, k: int, hw: Hardware) -> Partition:
    """Partition an m×n×k GEMM into INT8 and FP16 sub-GEMMs along K for ``hw``."""
    if min(m, n, k) < 0:
        raise ValueError(f"GEMM dimensions must be non-negative, got {m}x{n}x{k}")
    try:
        i8, f16 = hw.mma["int8"], hw.mma["fp16"]
    except KeyError as e:
        raise ValueError(f"hardware {hw.name!r} has no {e.args[0]} MMA shape; the split scheme needs int8 and fp16") from None
    unit = math.lcm(i8.k, f16.k)
    share = Fraction(k * f16.k, (i8.k + f16.k) * unit)  # k_fp16 in units, exact
    k_fp16 = min(k, unit * math.floor(share + Fraction(1, 2)))
    mult_m, mult_n = math.lcm(i8.m, f16.m), math.lcm(i8.n, f16.n)
    best = None
    for tm in (t for t in _TILE_SIZES if t % mult_m == 0):
        for tn in (t for t in _TILE_SIZES if t % mult_n == 0):
            tiles = max(1, -(-m // tm)) * max(1, -(-n // tn))
            waves = -(-tiles // hw.sm_count)
            key = (-Fraction(tiles, waves * hw.sm_count), waves, abs(math.log2(tm / tn)), -tn)
            if best is None or key < best[0]:
                best = (key, tm, tn, tiles, waves)
    _, tm, tn, tiles, waves = best
    return Partition(k_int8=k - k_fp16, k_fp16=k_fp16, tile_m=tm, tile_n=tn, tiles=tiles, waves=waves)
