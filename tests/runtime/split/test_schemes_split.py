"""The split scheme's pieces: the partition-size calculator (patent [0066]–[0067]),
the hardware table it reads, slice ranking and the fp16=auto config."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mixjit.runtime.model.hardware import HARDWARE, Hardware, MmaShape, get_hardware
from mixjit.runtime.model.partition import partition_sizes
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.split import SplitConfig, fp16_slices, slice_importance


def test_calculator_reproduces_the_patent_example():
    # [0066]: 40 SMs, INT8 8x8x16, FP16 16x16x8, MatMul 512x640x768 -> K split 16:8,
    # INT8 512x640x512 + FP16 512x640x256; [0067]: 64x128 tiles, 8x5 = 40 tiles
    p = partition_sizes(512, 640, 768, get_hardware("patent-0066"))
    assert (p.k_int8, p.k_fp16) == (512, 256)
    assert (p.tile_m, p.tile_n, p.tiles, p.waves) == (64, 128, 40, 1)
    assert p.fp16_fraction == Fraction(1, 3)


@pytest.mark.parametrize("target", ["a100", "h100"])
def test_calculator_on_real_shapes(target):
    hw = get_hardware(target)
    # int8 k32 : fp16 k16 -> one third to FP16, in units of lcm(32, 16) = 32
    p = partition_sizes(1024, 1024, 1000, hw)
    assert p.k_fp16 % 32 == 0 and p.k_int8 + p.k_fp16 == 1000
    assert abs(p.k_fp16 - 1000 / 3) <= 16
    assert p.tiles == -(-1024 // p.tile_m) * -(-1024 // p.tile_n)
    assert p.waves == -(-p.tiles // hw.sm_count)


def test_calculator_prefers_full_waves():
    hw = Hardware("toy", "x", sm_count=16, mma={"int8": MmaShape(16, 8, 32), "fp16": MmaShape(16, 8, 16)}, peak_tops={}, mem_bw_gbs=0)
    p = partition_sizes(256, 512, 64, hw)
    assert p.tiles % 16 == 0  # e.g. 64x128: 4x4 = 16 tiles, one full wave
    assert (p.tile_m, p.tile_n) == (64, 128)


def test_calculator_edge_cases():
    hw = get_hardware("a100")
    assert partition_sizes(8, 8, 0, hw).k_fp16 == 0
    assert partition_sizes(8, 8, 16, hw).k_fp16 == 0  # less than half a 32-unit
    with pytest.raises(ValueError, match="non-negative"):
        partition_sizes(-1, 4, 4, hw)
    no_int8 = Hardware("x", "x", 1, mma={"fp16": MmaShape(16, 8, 16)}, peak_tops={}, mem_bw_gbs=0)
    with pytest.raises(ValueError, match="int8"):
        partition_sizes(4, 4, 4, no_int8)
    with pytest.raises(ValueError, match="known: a100"):
        get_hardware("no-such-gpu")


def test_hardware_table_is_consistent():
    # what the calculator reads; the rates are checked in test_hardware.py
    for hw in HARDWARE.values():
        assert hw.sm_count > 0 and {"int8", "fp16"} <= set(hw.mma)
        if hw.real:
            assert hw.mma["int8"].k == 2 * hw.mma["fp16"].k == 4 * hw.mma["tf32"].k


def test_slices_ranked_by_magnitude_percentile():
    a = np.ones((4, 12), dtype=np.float32)
    b = np.ones((12, 3), dtype=np.float32)
    a[:, 8] = 50.0  # slice 2 (width 4) holds the outlier column of A
    b[5, :] = 10.0  # slice 1 holds the outlier row of B
    imp = slice_importance(a, b, 4, "p100")
    assert imp.tolist() == [1.0, 10.0, 50.0]
    # p50 of slice 2's 16 values (4 of them 50) is still 1
    assert slice_importance(a, b, 4, "p50").tolist() == [1.0, 1.0, 1.0]
    mask = fp16_slices(a, b, SplitConfig(fp16=0.34, width=4, rank="p100"))
    assert mask.tolist() == [False] * 8 + [True] * 4  # floor(0.34*3 + 1/2) = 1 slice
    # ties go to the lower slice index
    mask = fp16_slices(a, b, SplitConfig(fp16=0.34, width=4, rank="p50"))
    assert mask.tolist() == [True] * 4 + [False] * 8


def test_auto_uses_the_calculator():
    s = get_scheme("split")
    rng = np.random.default_rng(0)
    a, b = rng.random((8, 96), dtype=np.float32), rng.random((96, 8), dtype=np.float32)
    _, stats = s.run_with_stats(a, b, s.parse_config("fp16=auto,width=32,rank=p99,target=a100"))
    assert (stats.extra["k_fp16"], stats.extra["k_int8"]) == (32, 64)  # 96/3 = 32
    w = s.work(s.default_config(), 8, 8, 96)
    assert w.ops == {"int8": 2.0 * 8 * 8 * 64, "fp16": 2.0 * 8 * 8 * 32}


@pytest.mark.parametrize(
    "label,match",
    [("fp16=1.5,width=32,rank=p99,target=a100", "outside"), ("fp16=most,width=32,rank=p99,target=a100", "auto"),
     ("fp16=auto,width=0,rank=p99,target=a100", "width"), ("fp16=auto,width=32,rank=q9,target=a100", "pQ"),
     ("fp16=auto,width=32,rank=p0,target=a100", "pQ"), ("fp16=auto,width=32,rank=p99,target=tpu", "target"),
     ("fp16=auto,size=3", "bad config part"), ("fp16=0.25,width=-1", "width")],
)
def test_bad_split_configs_are_named(label, match):
    with pytest.raises(ValueError, match=match):
        get_scheme("split").parse_config(label)


@pytest.mark.parametrize(
    "label,want",
    [("fp16=0.25", SplitConfig(fp16=0.25)), ("fp16=auto", SplitConfig()), ("rank=index", SplitConfig(rank="index")),
     ("width=16,target=h100", SplitConfig(width=16, target="h100")), ("fp16=0.0625,rank=p50", SplitConfig(fp16=0.0625, rank="p50"))],
)
def test_partial_split_labels_take_the_defaults(label, want):
    # docs/numerics.md lists the configs by their fp16 share alone ("0.25", ...)
    s = get_scheme("split")
    assert s.parse_config(label) == want
    rng = np.random.default_rng(1)
    a, b = rng.random((3, 40), dtype=np.float32), rng.random((40, 2), dtype=np.float32)
    assert np.array_equal(s.run(a, b, s.parse_config(label)), s.run(a, b, want))


F32MAX = float(np.finfo(np.float32).max)


@pytest.mark.parametrize("fp16", ["1.0", "0.5", "auto"])
def test_split_of_flt_max_scale_inputs_stays_finite(fp16):
    # RN16 of FLT_MAX * 2^-113 carries to 2^15, i.e. 2^128 unscaled: the hi part is
    # truncated instead (mixpert's carry rule), so finite sums below FLT_MAX stay finite
    s = get_scheme("split")
    cfg = s.parse_config(f"fp16={fp16},width=1,rank=p100")
    a = np.array([[F32MAX, 1.0], [-F32MAX, 0.5]], dtype=np.float32)
    b = np.array([[1.0], [1.0]], dtype=np.float32)
    c = s.run(a, b, cfg)
    assert np.isfinite(c).all(), c
    # the truncated hi is FLT_MAX's 11 leading bits: 1 - 2^-11 of 2^128 (within 2^-11)
    assert abs(float(c[0, 0]) / F32MAX - 1.0) < 2.0**-10
    assert float(c[1, 0]) == -float(c[0, 0])


def test_fp16x2_hi_alone_of_flt_max_stays_finite():
    s = get_scheme("fp16x2")
    a = np.array([[F32MAX]], dtype=np.float32)
    b = np.array([[1.0]], dtype=np.float32)
    assert np.isfinite(s.run(a, b, s.parse_config("products=1"))).all()
    assert s.run(a, b, s.parse_config("products=3"))[0, 0] == np.float32(F32MAX)
