"""The hardware table (runtime/model/hardware.py): every entry complete and internally
consistent, the published INT8/FP32 ratios kept, lookups that name the fix."""

from __future__ import annotations

import pytest

from mixjit.runtime.model.hardware import HARDWARE, PRECISION_CLASSES, REQUIRED_CLASSES, get_hardware

REAL = sorted(n for n, h in HARDWARE.items() if h.real)
# parts whose FP16/BF16 tensor rate with FP32 accumulation is half the FP16-accumulate
# rate (GeForce): INT8 is 4x the FP32-accumulate FP16 rate there, 2x elsewhere
GEFORCE = {"rtx3090", "rtx4090"}


def test_the_issue_parts_are_all_there():
    wanted = {"a100-pcie-40gb", "a100", "h100", "h200", "b200", "gb200", "rtx3090", "rtx4090", "l40s",
              "jetson-agx-orin"}
    assert wanted <= set(REAL)
    assert not get_hardware("patent-0066").real  # the partition calculator's worked example stays


@pytest.mark.parametrize("name", REAL)
def test_every_real_entry_is_complete(name):
    hw = get_hardware(name)
    assert hw.name == name and hw.arch.startswith("sm_") and hw.source
    assert hw.sm_count > 0 and hw.mem_bw_gbs > 0 and hw.launch_us > 0
    assert set(hw.peak_tops) <= set(PRECISION_CLASSES)
    for cls in REQUIRED_CLASSES:
        assert hw.peak_tops[cls] > 0, f"{name} has no {cls} rate"
    assert {"int8", "fp16", "bf16", "tf32"} <= set(hw.mma)
    assert hw.mma["int8"].k == 2 * hw.mma["fp16"].k == 4 * hw.mma["tf32"].k
    for cls, e in hw.efficiency.items():
        assert cls in hw.peak_tops and 0 < e <= 1, f"{name}: efficiency {cls}={e}"
    for cls, shape in hw.wgmma.items():
        assert cls in hw.peak_tops and shape.k == hw.mma[cls].k


@pytest.mark.parametrize("name", REAL)
def test_tensor_rates_follow_the_architecture(name):
    p = get_hardware(name).peak_tops
    assert p["bf16"] == p["fp16"]
    ratio = 4 if name in GEFORCE else 2
    # L40S's datasheet rounds its sparse figures (733 vs 2 x 362.05): 2.5% slack
    assert p["int8"] == pytest.approx(ratio * p["fp16"], rel=0.025)
    assert p["fp16"] == pytest.approx(2 * p["tf32"], rel=0.025)
    if "fp8" in p:
        assert p["fp8"] == pytest.approx(2 * p["fp16"], rel=0.025)
    if "fp64_tensor" in p:
        assert p["fp64_tensor"] >= p["fp64"]


@pytest.mark.parametrize(
    "name, int8_over_fp32",
    # /work/shared/ANCHORS.md: A100 32x (MixPert Table 1), H100 SXM 29.5x, B200 about 60x; GB200 62.5x
    # (Blackwell datasheet: INT8 10 POPS sparse, FP32 80 TFLOPS)
    [("a100", 32.0), ("a100-pcie-40gb", 32.0), ("h100", 29.5), ("h200", 29.5), ("b200", 60.0), ("gb200", 62.5)],
)
def test_published_int8_to_fp32_ratios(name, int8_over_fp32):
    p = get_hardware(name).peak_tops
    assert p["int8"] / p["fp32"] == pytest.approx(int8_over_fp32, rel=0.02)


def test_dgemm_runs_on_fp64_tensor_cores_where_faster():
    assert get_hardware("a100").dgemm_class() == "fp64_tensor"
    assert get_hardware("h100").dgemm_class() == "fp64_tensor"
    assert get_hardware("rtx3090").dgemm_class() == "fp64"  # no FP64 tensor rate
    assert get_hardware("b200").dgemm_class() == "fp64"  # tensor FP64 no faster than SIMT
    assert get_hardware("gb200").dgemm_class() == "fp64"


def test_unknown_hardware_lists_the_known_names():
    with pytest.raises(ValueError, match="unknown hardware 'a1000'; known: .*a100-pcie-40gb.*h100"):
        get_hardware("a1000")


def test_a_gb200_is_a_b200_at_more_power():
    """The GB200's GPU is a B200 (same SMs, MMA shapes, FP64 = FP64 tensor), run at up to 1,200 W
    against HGX B200's 1,000 W: every published rate a little higher, none lower."""
    gb200, b200 = get_hardware("gb200"), get_hardware("b200")
    assert (gb200.arch, gb200.sm_count, gb200.mma, gb200.wgmma) == (b200.arch, b200.sm_count, b200.mma, b200.wgmma)
    assert set(gb200.peak_tops) == set(b200.peak_tops)
    assert all(1.0 <= gb200.peak_tops[c] / b200.peak_tops[c] <= 1.15 for c in b200.peak_tops), gb200.peak_tops


@pytest.mark.parametrize("name", ["b200", "gb200"])
def test_blackwell_parts_are_tuning_targets(name):
    """A part of the table is a ``target=`` of @mixjit and mixopt's tune pass (the one list of names)."""
    from mixjit.tuning.driver import check_target

    assert check_target(name, "target") == name
