"""GPU specifications used by the partition-size calculator and the cost model.

Peak rates are NVIDIA's published figures for *dense* (non-sparse) math, in TFLOPS
(TOPS for integers), a multiply-add counted as 2 operations. Where a datasheet gives
only the 2:4-sparse tensor-core figure, the dense one is half of it. The classes
(``peak_tops`` keys) are those of ``Work.ops``:

* ``fp32``: FP32 on the SIMT cores (cuBLAS SGEMM; there is no FP32 tensor-core MMA);
* ``fp64``: FP64 on the SIMT cores; ``fp64_tensor``: FP64 tensor-core MMA where the
  part has it (sm_80, sm_90, sm_100 data-center parts). DGEMM uses the faster of the two;
* ``tf32``, ``bf16``, ``fp16``, ``fp8``: tensor-core MMA **with FP32 accumulation**
  (the emulation schemes accumulate in FP32). On GeForce parts (RTX 3090, RTX 4090)
  this is half the FP16-accumulate rate the marketing tables lead with;
* ``int8``: tensor-core INT8 MMA with INT32 accumulation.

Every figure carries its source in a comment next to it. Abbreviations:

* [A100-WP] "NVIDIA A100 Tensor Core GPU Architecture" whitepaper (2020), Table 1
  (peaks, 108 SMs, 1410 MHz) and Table 3.
* [A100-DS] "NVIDIA A100 Tensor Core GPU" datasheet (2021): memory bandwidth of the
  40GB PCIe (1,555 GB/s) and 80GB SXM (2,039 GB/s) parts; peaks equal to [A100-WP].
* [H100-DS] "NVIDIA H100 Tensor Core GPU" datasheet (2023), H100 SXM column
  (tensor figures with sparsity; dense = half). [H100-WP] "NVIDIA H100 Tensor Core GPU
  Architecture" whitepaper (2022): 132 SMs on H100 SXM5.
* [H200-DS] "NVIDIA H200 Tensor Core GPU" datasheet (2024), H200 SXM column (same GPU
  as H100 SXM, 141 GB HBM3e at 4.8 TB/s).
* [GH200-DS] "NVIDIA GH200 Grace Hopper Superchip" datasheet (2023), 96 GB HBM3
  variant (4 TB/s); the GPU is an H100 (132 SMs).
* [B200-DS] "NVIDIA HGX B200" / DGX B200 datasheet (2024): per-GPU figures are the
  8-GPU totals / 8, tensor figures with sparsity halved. [BW-WP] "NVIDIA Blackwell
  Architecture Technical Brief" (2024): 148 SMs in B200 (2 dies × 74).
* [BW-DS] "NVIDIA Blackwell" datasheet (2025), "Individual Blackwell GPU Specifications",
  GB200 NVL72 column (the GPU of a GB200 superchip at up to 1,200 W; tensor figures with
  sparsity, halved here): FP8 10 PFLOPS, INT8 10 POPS, FP16/BF16 5 PFLOPS, TF32 2.5 PFLOPS,
  FP32 80 TFLOPS, FP64/FP64 Tensor Core 40 TFLOPS, 186 GB HBM3E at 8 TB/s. The GPU is a
  B200 [BW-WP]. (Checked against the table as reproduced at
  zdszero.github.io/Computer/Artificial_Intelligence/Hardware.html, whose HGX B200 column
  agrees with [B200-DS].)
* [GA102-WP] "NVIDIA Ampere GA102 GPU Architecture" whitepaper (2020), Table 9
  (GeForce RTX 3090: 82 SMs, 1695 MHz boost, 936 GB/s).
* [ADA-WP] "NVIDIA Ada GPU Architecture" whitepaper (2022), Appendix A Table 2
  (GeForce RTX 4090: 128 SMs, 2520 MHz boost, 1008 GB/s).
* [L40S-DS] "NVIDIA L40S GPU" datasheet (2023): peaks (sparse halved), 864 GB/s;
  142 SMs = 18,176 CUDA cores / 128 per Ada SM.
* [ORIN-DS] "NVIDIA Jetson AGX Orin Series Technical Brief" (2022) and the Jetson AGX
  Orin 64GB module datasheet: 2048 CUDA cores and 64 tensor cores (16 Ampere SMs) at
  1.3 GHz, 5.3 FP32 TFLOPS, 170 sparse INT8 TOPS (GPU only, DLAs excluded),
  204.8 GB/s LPDDR5.
* [PTX] PTX ISA, "Warp Level Matrix Multiply-Accumulate Instructions" (``mma.sync``:
  m16n8k32 s8, m16n8k16 f16/bf16, m16n8k8 tf32, m8n8k4 f64, m16n8k32 e4m3 on sm_89+),
  "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" (sm_90 ``wgmma``: m64nNk32
  s8/e4m3, m64nNk16 f16/bf16, m64nNk8 tf32, N up to 256) and "TensorCore 5th
  Generation Family Instructions" (sm_100 ``tcgen05.mma``: M up to 128 per CTA, N up
  to 256, K = 32 bytes of operand).
* ``derived``: a figure the sources do not state, computed from ones they do (the
  computation is in the comment).

``launch_us`` (kernel launch overhead) is a modeling assumption, not a datasheet
figure: launching a kernel costs a few µs of host and driver time (NVIDIA Technical
Blog, "Getting Started with CUDA Graphs", 2019, measures overheads of this order);
we take 4 µs on x86 hosts and 8 µs on Jetson's Arm cores.

``efficiency`` holds the fraction of peak a large, well-tiled GEMM of a class
sustains *on that part*, where a published measurement exists (the cost model uses
its defaults elsewhere). Each value is fitted by tools/calibrate_costmodel.py, which
prints the fit next to the value here; docs/costmodel.md records both.

``int32_tops`` is the INT32 multiply-add rate of the SIMT cores, the rate VitBit's packed
path runs at (seed 001: one IMAD on a packed word forms 2–4 products). The datasheets
above do not all state it; every value is ``derived`` from the SM's INT32 lanes (the
architecture whitepapers: 64 INT32 lanes per SM on GA100, GH100, GA10x and AD10x), the SM
count and the clock the part's FP32 peak implies (FP32 peak / (SMs × FP32 lanes × 2)).
``int32_shares_fp32`` marks the parts whose INT32 lanes are half of their FP32 lanes
(GA10x, AD10x, GA10B: 64 of the 128 FP32 lanes per SM also do INT32): while INT32 work
runs there, FP32 keeps only the other half. :func:`vitbit_ratios` derives VitBit's split
ratios from these rates.

``patent-0066`` is the hypothetical device of the split-precision patent's worked
example (seed 000, [0066]: 40 SMs, INT8 tensor unit 8×8×16, FP16 16×16×8). It is not a
real GPU and has no rates; it exists so that the partition calculator can be checked
against the patent's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["MmaShape", "Hardware", "HARDWARE", "PRECISION_CLASSES", "REQUIRED_CLASSES", "get_hardware",
           "vitbit_ratios"]

#: every precision class the table knows (``fp64_tensor`` only where distinct)
PRECISION_CLASSES = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
#: classes every real GPU entry must rate
REQUIRED_CLASSES = ("fp64", "fp32", "tf32", "bf16", "fp16", "int8")


@dataclass(frozen=True)
class MmaShape:
    """One tensor-core instruction computes an m×n×k product."""

    m: int
    n: int
    k: int


@dataclass(frozen=True)
class Hardware:
    """Specs of one GPU (see the module docstring for the classes and sources).

    ``peak_tops``: dense peak tera-operations per second per precision class;
    ``mma``: the warp-level ``mma.sync`` shape per tensor-core class; ``wgmma``: the
    largest warpgroup/CTA-level MMA shape (sm_90 ``wgmma``, sm_100 ``tcgen05``);
    ``mem_bw_gbs``: DRAM bandwidth, GB/s; ``launch_us``: kernel launch overhead, µs;
    ``efficiency``: measured sustained fraction of peak per class (see module doc);
    ``real``: False for the patent's hypothetical device."""

    name: str
    arch: str
    sm_count: int
    mma: Mapping[str, MmaShape]
    peak_tops: Mapping[str, float]
    mem_bw_gbs: float
    real: bool = True
    #: warpgroup / CTA-level MMA shapes (sm_90 wgmma, sm_100 tcgen05), largest N
    wgmma: Mapping[str, MmaShape] = field(default_factory=dict)
    launch_us: float = 4.0
    efficiency: Mapping[str, float] = field(default_factory=dict)
    #: one line naming the sources of this entry's figures
    source: str = ""
    #: INT32 multiply-add rate of the SIMT cores, TOPS (0: not rated); see the module docstring
    int32_tops: float = 0.0
    #: the INT32 lanes are half of the FP32 lanes: INT32 work takes them from FP32
    int32_shares_fp32: bool = False

    def dgemm_class(self) -> str:
        """The class native float64 GEMMs run on: tensor FP64 where the part has it."""
        tensor = self.peak_tops.get("fp64_tensor", 0.0)
        return "fp64_tensor" if tensor > self.peak_tops.get("fp64", 0.0) else "fp64"


# [PTX] mma.sync shapes, identical on sm_80, sm_86, sm_87, sm_89, sm_90 and sm_100
_MMA_AMPERE = {
    "int8": MmaShape(16, 8, 32),
    "fp16": MmaShape(16, 8, 16),
    "bf16": MmaShape(16, 8, 16),
    "tf32": MmaShape(16, 8, 8),
}
_MMA_FP64 = {"fp64_tensor": MmaShape(8, 8, 4)}  # [PTX] m8n8k4 f64, sm_80 and later
_MMA_FP8 = {"fp8": MmaShape(16, 8, 32)}  # [PTX] m16n8k32 e4m3/e5m2, sm_89 and later
# [PTX] sm_90 wgmma: m64nNk(32 bytes), N up to 256
_WGMMA_HOPPER = {
    "int8": MmaShape(64, 256, 32),
    "fp8": MmaShape(64, 256, 32),
    "fp16": MmaShape(64, 256, 16),
    "bf16": MmaShape(64, 256, 16),
    "tf32": MmaShape(64, 256, 8),
}
# [PTX] sm_100 tcgen05.mma, one CTA: M = 128, N up to 256, K = 32 bytes
_TCGEN05 = {
    "int8": MmaShape(128, 256, 32),
    "fp8": MmaShape(128, 256, 32),
    "fp16": MmaShape(128, 256, 16),
    "bf16": MmaShape(128, 256, 16),
    "tf32": MmaShape(128, 256, 8),
}

# The four Hopper-generation entries share the GPU (H100 SXM5, 132 SMs, [H100-WP]).
_HOPPER_PEAKS = {
    "fp64": 34.0,  # [H100-DS] FP64 34 TFLOPS
    "fp64_tensor": 67.0,  # [H100-DS] FP64 Tensor Core 67
    "fp32": 67.0,  # [H100-DS] FP32 67
    "tf32": 494.5,  # [H100-DS] TF32 Tensor Core 989 sparse / 2
    "bf16": 989.5,  # [H100-DS] BF16 Tensor Core 1,979 sparse / 2
    "fp16": 989.5,  # [H100-DS] FP16 Tensor Core 1,979 sparse / 2
    "fp8": 1979.0,  # [H100-DS] FP8 Tensor Core 3,958 sparse / 2
    "int8": 1979.0,  # [H100-DS] INT8 Tensor Core 3,958 TOPS sparse / 2
}

_A100_PEAKS = {
    "fp64": 9.7,  # [A100-WP] Table 1, FP64 (SIMT)
    "fp64_tensor": 19.5,  # [A100-WP] Table 1, FP64 Tensor Core
    "fp32": 19.5,  # [A100-WP] Table 1 (also MixPert Table 1)
    "tf32": 156.0,  # [A100-WP] Table 1 (also MixPert Table 1)
    "bf16": 312.0,  # [A100-WP] Table 1, FP32 accumulate is full rate (also MixPert Table 1)
    "fp16": 312.0,  # [A100-WP] Table 1 (also MixPert Table 1)
    "int8": 624.0,  # [A100-WP] Table 1 (also MixPert Table 1)
}

# derived: 64 INT32 lanes per SM (GA100 SM [A100-WP]) x 108 SMs x 2 x 1.41 GHz = 19.5 TOPS
_A100_INT32 = 19.5
# derived: 64 INT32 lanes per SM (GH100 SM [H100-WP]) x 132 SMs x 2 x 1.98 GHz (FP32 67 / (132 x 128 x 2))
_HOPPER_INT32 = 33.5

HARDWARE: dict[str, Hardware] = {
    "a100-pcie-40gb": Hardware(
        name="a100-pcie-40gb",
        arch="sm_80",
        sm_count=108,  # [A100-WP] Table 1
        mma={**_MMA_AMPERE, **_MMA_FP64},
        peak_tops=_A100_PEAKS,  # [A100-DS]: the PCIe part has the SXM part's peaks
        mem_bw_gbs=1555.0,  # [A100-DS] A100 40GB PCIe
        int32_tops=_A100_INT32,
        # fitted by tools/calibrate_costmodel.py to MixPert (seed 003) Table 1 measured
        # rates (FP32 17.7, 3xTF32 32.0, 6xBF16 35.6 TFLOPS) and §4.2's 2.71x at n = 24576;
        # fp16 is not measured there and takes bf16's value (one tensor-core datapath on sm_80)
        efficiency={"fp32": 0.91, "tf32": 0.62, "bf16": 0.69, "fp16": 0.69, "int8": 0.62},
        source="A100-WP Table 1, A100-DS (PCIe 40GB); efficiency: MixPert Table 1 / §4.2",
    ),
    "a100": Hardware(
        name="a100",
        arch="sm_80",
        sm_count=108,  # [A100-WP] Table 1
        mma={**_MMA_AMPERE, **_MMA_FP64},
        peak_tops=_A100_PEAKS,
        mem_bw_gbs=2039.0,  # [A100-DS] A100 80GB SXM
        int32_tops=_A100_INT32,
        source="A100-WP Table 1, A100-DS (SXM 80GB)",
    ),
    "h100": Hardware(
        name="h100",
        arch="sm_90",
        sm_count=132,  # [H100-WP] H100 SXM5
        mma={**_MMA_AMPERE, **_MMA_FP64, **_MMA_FP8},
        wgmma=_WGMMA_HOPPER,
        peak_tops=_HOPPER_PEAKS,
        mem_bw_gbs=3350.0,  # [H100-DS] H100 SXM, 3.35 TB/s
        int32_tops=_HOPPER_INT32,
        source="H100-DS (SXM column), H100-WP",
    ),
    "h200": Hardware(
        name="h200",
        arch="sm_90",
        sm_count=132,  # [H200-DS]: the H100 SXM5 GPU [H100-WP]
        mma={**_MMA_AMPERE, **_MMA_FP64, **_MMA_FP8},
        wgmma=_WGMMA_HOPPER,
        peak_tops=_HOPPER_PEAKS,  # [H200-DS] H200 SXM: same peaks as [H100-DS]
        mem_bw_gbs=4800.0,  # [H200-DS] 4.8 TB/s
        int32_tops=_HOPPER_INT32,
        source="H200-DS (SXM column), H100-WP",
    ),
    "gh200": Hardware(
        name="gh200",
        arch="sm_90",
        sm_count=132,  # [GH200-DS]: an H100 GPU [H100-WP]
        mma={**_MMA_AMPERE, **_MMA_FP64, **_MMA_FP8},
        wgmma=_WGMMA_HOPPER,
        peak_tops=_HOPPER_PEAKS,  # [GH200-DS] GPU peaks equal [H100-DS] SXM
        mem_bw_gbs=4000.0,  # [GH200-DS] 96GB HBM3, 4 TB/s
        int32_tops=_HOPPER_INT32,
        # fitted by tools/calibrate_costmodel.py to the GEMMul8 numerical results
        # (github.com/UCHINO-Yuki/GEMMul8_numerical_results): SGEMM 51.4 TFLOPS at
        # n = 8192, INT8 GEMM about 1589 TOPS, DGEMM about 62 TFLOPS
        efficiency={"fp32": 0.77, "int8": 0.82, "fp64_tensor": 0.93},
        source="GH200-DS (96GB HBM3), H100-DS; efficiency: GEMMul8 numerical results",
    ),
    "b200": Hardware(
        name="b200",
        arch="sm_100",
        sm_count=148,  # [BW-WP] 2 dies x 74 SMs
        mma={**_MMA_AMPERE, **_MMA_FP64, **_MMA_FP8},
        wgmma=_TCGEN05,
        peak_tops={
            "fp64": 37.0,  # [B200-DS] FP64 296 TFLOPS / 8 GPUs
            "fp64_tensor": 37.0,  # [B200-DS] FP64 Tensor Core 296 / 8 (same rate as SIMT)
            "fp32": 75.0,  # [B200-DS] FP32 600 / 8
            "tf32": 1125.0,  # [B200-DS] TF32 Tensor Core 18 PFLOPS sparse / 8 / 2
            "bf16": 2250.0,  # [B200-DS] BF16 36 PFLOPS sparse / 8 / 2
            "fp16": 2250.0,  # [B200-DS] FP16 36 PFLOPS sparse / 8 / 2
            "fp8": 4500.0,  # [B200-DS] FP8 72 PFLOPS sparse / 8 / 2
            "int8": 4500.0,  # [B200-DS] INT8 72 POPS sparse / 8 / 2
        },
        mem_bw_gbs=8000.0,  # [B200-DS] 64 TB/s / 8 GPUs
        int32_tops=37.5,  # derived, assumption: Hopper's 64 INT32 lanes per 128 FP32 lanes (FP32 75 / 2)
        source="HGX/DGX B200 datasheet (per GPU = total / 8, dense = sparse / 2), Blackwell brief",
    ),
    "gb200": Hardware(
        name="gb200",
        arch="sm_100",
        sm_count=148,  # [BW-WP]: a GB200's GPU is a B200 (2 dies x 74 SMs)
        mma={**_MMA_AMPERE, **_MMA_FP64, **_MMA_FP8},
        wgmma=_TCGEN05,
        peak_tops={
            "fp64": 40.0,  # [BW-DS] FP64/FP64 Tensor Core 40 TFLOPS
            "fp64_tensor": 40.0,  # [BW-DS] the same figure (tensor FP64 no faster than SIMT, as on B200)
            "fp32": 80.0,  # [BW-DS] FP32 80 TFLOPS
            "tf32": 1250.0,  # [BW-DS] TF32 Tensor Core 2.5 PFLOPS sparse / 2
            "bf16": 2500.0,  # [BW-DS] FP16/BF16 Tensor Core 5 PFLOPS sparse / 2
            "fp16": 2500.0,  # [BW-DS] FP16/BF16 Tensor Core 5 PFLOPS sparse / 2
            "fp8": 5000.0,  # [BW-DS] FP8/FP6 Tensor Core 10 PFLOPS sparse / 2
            "int8": 5000.0,  # [BW-DS] INT8 Tensor Core 10 POPS sparse / 2
        },
        mem_bw_gbs=8000.0,  # [BW-DS] 8 TB/s per GPU
        int32_tops=40.0,  # derived, assumption: Hopper's 64 INT32 lanes per 128 FP32 lanes (FP32 80 / 2)
        source="Blackwell datasheet, GB200 NVL72 column (per GPU, dense = sparse / 2), Blackwell brief",
    ),
    "rtx3090": Hardware(
        name="rtx3090",
        arch="sm_86",
        sm_count=82,  # [GA102-WP] Table 9
        mma=_MMA_AMPERE,
        peak_tops={
            "fp64": 0.556,  # derived: [GA102-WP] FP64 rate is 1/64 of FP32 (35.58 / 64)
            "fp32": 35.6,  # [GA102-WP] Table 9, peak FP32
            "tf32": 35.6,  # [GA102-WP] Table 9, peak TF32 Tensor 35.6 (71 sparse)
            "bf16": 71.0,  # [GA102-WP] Table 9, BF16 Tensor with FP32 accumulate
            "fp16": 71.0,  # [GA102-WP] Table 9, FP16 Tensor with FP32 accumulate
            "int8": 284.0,  # [GA102-WP] Table 9, peak INT8 Tensor TOPS
        },
        mem_bw_gbs=936.0,  # [GA102-WP] Table 9
        int32_tops=17.8,  # derived: 64 of the 128 FP32 lanes per SM do INT32 [GA102-WP]: 35.6 / 2
        int32_shares_fp32=True,
        # fitted by tools/calibrate_costmodel.py to MixPert (seed 003) Table 1's measured
        # SGEMM (21.7 TFLOPS) and §4.6's MixPert speedup on larger matrices (1.30x)
        efficiency={"fp32": 0.61, "int8": 0.81},
        source="GA102-WP Table 9; efficiency: MixPert Table 1 / §4.6",
    ),
    "rtx4090": Hardware(
        name="rtx4090",
        arch="sm_89",
        sm_count=128,  # [ADA-WP] Table 2
        mma={**_MMA_AMPERE, **_MMA_FP8},
        peak_tops={
            "fp64": 1.29,  # derived: FP64 is 1/64 of FP32 on Ada (82.6 / 64)
            "fp32": 82.6,  # [ADA-WP] Table 2, peak FP32
            "tf32": 82.6,  # [ADA-WP] Table 2, TF32 Tensor 82.6 (165.2 sparse)
            "bf16": 165.2,  # [ADA-WP] Table 2, BF16 Tensor with FP32 accumulate
            "fp16": 165.2,  # [ADA-WP] Table 2, FP16 Tensor with FP32 accumulate
            "fp8": 330.3,  # [ADA-WP] Table 2, FP8 Tensor with FP32 accumulate
            "int8": 660.6,  # [ADA-WP] Table 2, peak INT8 Tensor TOPS
        },
        mem_bw_gbs=1008.0,  # [ADA-WP] Table 2
        int32_tops=41.3,  # derived: 64 of the 128 FP32 lanes per SM do INT32 [ADA-WP]: 82.6 / 2
        int32_shares_fp32=True,
        source="ADA-WP Appendix A Table 2",
    ),
    "l40s": Hardware(
        name="l40s",
        arch="sm_89",
        sm_count=142,  # [L40S-DS] 18,176 CUDA cores / 128 per SM
        mma={**_MMA_AMPERE, **_MMA_FP8},
        peak_tops={
            "fp64": 1.43,  # derived: FP64 is 1/64 of FP32 on Ada (91.6 / 64)
            "fp32": 91.6,  # [L40S-DS] FP32 91.6 TFLOPS
            "tf32": 183.0,  # [L40S-DS] TF32 Tensor 366 sparse / 2
            "bf16": 362.05,  # [L40S-DS] BF16 Tensor 733 sparse; dense 362.05
            "fp16": 362.05,  # [L40S-DS] FP16 Tensor 733 sparse; dense 362.05
            "fp8": 733.0,  # [L40S-DS] FP8 Tensor 1,466 sparse / 2
            "int8": 733.0,  # [L40S-DS] INT8 Tensor 1,466 TOPS sparse / 2
        },
        mem_bw_gbs=864.0,  # [L40S-DS]
        int32_tops=45.8,  # derived: an Ada SM [ADA-WP], 64 of 128 FP32 lanes do INT32: 91.6 / 2
        int32_shares_fp32=True,
        source="L40S-DS",
    ),
    "jetson-agx-orin": Hardware(
        name="jetson-agx-orin",
        arch="sm_87",
        sm_count=16,  # [ORIN-DS] 2048 CUDA cores / 128 per Ampere SM
        mma=_MMA_AMPERE,
        peak_tops={
            "fp64": 0.083,  # derived: 1/64 of FP32, as on the other non-A100 Ampere parts
            "fp32": 5.3,  # [ORIN-DS] 5.3 FP32 TFLOPS
            "tf32": 21.25,  # derived: A100-class SM (sm_87), TF32 = INT8 / 4 = 85 / 4
            "bf16": 42.5,  # derived: FP16/BF16 = INT8 / 2 = 85 / 2 (A100-class tensor core)
            "fp16": 42.5,  # derived: as bf16
            "int8": 85.0,  # [ORIN-DS] GPU 170 sparse INT8 TOPS / 2
        },
        mem_bw_gbs=204.8,  # [ORIN-DS] LPDDR5
        int32_tops=2.65,  # derived, assumption: a GA10x-type SM (64 of 128 FP32 lanes do INT32): 5.3 / 2
        int32_shares_fp32=True,
        launch_us=8.0,  # assumption: Arm host cores (see module docstring)
        source="Jetson AGX Orin technical brief and 64GB module datasheet; derived rates marked",
    ),
    "patent-0066": Hardware(
        name="patent-0066",
        arch="hypothetical",
        sm_count=40,
        mma={"int8": MmaShape(8, 8, 16), "fp16": MmaShape(16, 16, 8)},
        peak_tops={},
        mem_bw_gbs=0.0,
        real=False,
        source="split-precision patent (seed 000) [0066] worked example; not a real GPU",
    ),
}


def get_hardware(name: str) -> Hardware:
    """Look up a GPU by name (``"a100"``, ``"h100"``, ...); the error lists the known ones."""
    try:
        return HARDWARE[name]
    except KeyError:
        raise ValueError(f"unknown hardware {name!r}; known: {', '.join(sorted(HARDWARE))}") from None


def vitbit_ratios(hw: Hardware, pack: int) -> tuple[int, int]:
    """VitBit's split ratios for ``hw`` at ``pack`` values per 32-bit word (seed 001, Algorithm 1):
    ``(m, n)`` = (tensor-core : CUDA-core columns, packed : converted columns), each rounded to
    an integer (half up), so that the paths finish together at the part's peak rates.

    Per column of B, the tensor path runs at the INT8 tensor-core rate R_t; the packed path forms
    ``pack`` products per IMAD at the INT32 rate R_i; the converted path runs FFMA at the FP32
    rate left while INT32 runs, R_f (the FP32 peak, less R_i where the lanes are shared). The INT
    and FP paths run concurrently, so n = pack·R_i / R_f (Eq. 1's pack count where R_i = R_f),
    and m = R_t / (pack·R_i + R_f). Peak rates, not measured ones: the paper measured m = 4 on
    Orin, where the peaks give about 11 (its CUDA-core GEMM ran further below peak)."""
    if pack < 1:
        raise ValueError(f"vitbit_ratios: pack={pack} must be at least 1")
    r_t, r_fp = hw.peak_tops.get("int8", 0.0), hw.peak_tops.get("fp32", 0.0)
    if r_t <= 0 or r_fp <= 0 or hw.int32_tops <= 0:
        rated = ", ".join(sorted(n for n, h in HARDWARE.items() if h.int32_tops > 0))
        raise ValueError(f"hardware {hw.name!r} does not rate INT8 tensor, FP32 and INT32 math, which the VitBit "
                         f"split ratios need; parts that do: {rated}")
    r_f = r_fp - hw.int32_tops if hw.int32_shares_fp32 else r_fp
    packed = pack * hw.int32_tops
    return int(r_t / (packed + r_f) + 0.5), int(packed / r_f + 0.5)  # rounded half up
