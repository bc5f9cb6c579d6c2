"""VitBit's split ratios from the hardware table and its three-way concurrency in the cost model
(every time here is modeled): m, n balance the tensor, INT and FP paths at the part's peak rates
(runtime/model/hardware.py ``vitbit_ratios``), a config's ``target`` takes them, and the fused kernel is
modeled at its slowest path, not the sum of the three."""

from __future__ import annotations

import numpy as np
import pytest

import mixjit
from mixjit.runtime.model import costmodel
from mixjit.runtime.model.hardware import HARDWARE, get_hardware, vitbit_ratios
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.base import Work
from mixjit.runtime.schemes.vitbit import PAPER_M, VitbitConfig

VITBIT = get_scheme("vitbit")


def test_ratios_balance_the_paths_at_the_tables_rates():
    # A100: INT8 tensor 624, INT32 19.5, FP32 19.5 (separate lanes). Two values per word:
    # packed columns go at 2 x 19.5, converted at 19.5: n = 2 (Eq. 1), m = 624 / 58.5 = 10.7
    assert vitbit_ratios(get_hardware("a100"), 2) == (11, 2)
    # H100: FP32 67 beside INT32 33.5: n = 2 * 33.5 / 67 = 1, m = 1979 / (67 + 67) = 14.8
    assert vitbit_ratios(get_hardware("h100"), 2) == (15, 1)
    # RTX 4090: INT32 takes half of the FP32 lanes: FP32 keeps 82.6 - 41.3; n = 4 * 41.3 / 41.3
    assert vitbit_ratios(get_hardware("rtx4090"), 4) == (int(660.6 / (4 * 41.3 + 41.3) + 0.5), 4)
    for hw in HARDWARE.values():  # Eq. 1 exactly where INT32 and FP32 run at the same rate side by side
        if hw.real:
            fp_left = hw.peak_tops["fp32"] - (hw.int32_tops if hw.int32_shares_fp32 else 0.0)
            if hw.int32_tops == fp_left:
                assert all(vitbit_ratios(hw, p)[1] == p for p in (2, 3, 4)), hw.name
    with pytest.raises(ValueError, match="patent-0066.*parts that do: a100"):
        vitbit_ratios(get_hardware("patent-0066"), 2)


def test_a_target_gives_the_config_its_ratios_and_a_round_trip_label():
    cfg = VITBIT.parse_config("bits=8,target=h100")
    assert (cfg.m, cfg.n) == vitbit_ratios(get_hardware("h100"), 2) and cfg.label == "bits=8,target=h100"
    assert VitbitConfig(8) == VITBIT.parse_config("bits=8") and (VitbitConfig(8).m, VitbitConfig(8).n) == (PAPER_M, 2)
    set_m = VITBIT.parse_config("bits=8,target=h100,m=4")
    assert (set_m.m, set_m.n) == (4, 1) and VITBIT.parse_config(set_m.label) == set_m
    with pytest.raises(ValueError, match="unknown hardware 'nosuch'"):
        VITBIT.parse_config("bits=8,target=nosuch")


def test_the_ratios_move_columns_between_exact_paths_and_never_change_the_result():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((33, 70)).astype(np.float32), rng.standard_normal((70, 150)).astype(np.float32)
    paper = mixjit.gemm(a, b, "vitbit", "bits=6")
    for target in ("a100", "h100", "rtx4090"):
        c, stats = VITBIT.run_with_stats(a, b, VITBIT.parse_config(f"bits=6,target={target}"))
        assert np.array_equal(c, paper)
        assert stats.extra["n_tensor"] + stats.extra["n_packed"] + stats.extra["n_converted"] == 150


def test_a_concurrent_work_is_one_kernel_at_its_slowest_class():
    hw = get_hardware("a100")
    m = n = k = 2048
    ops = {"int8": 2.0 * m * n * k, "fp32": 2.0 * m * n * k / 40}
    together = costmodel.work_time(Work(ops, 0.0, concurrent=True), m, n, k, np.float32, hw)
    apart = costmodel.work_time(Work(ops, 0.0), m, n, k, np.float32, hw)
    slowest = max(t for _, t in together.detail)
    assert together.compute == slowest < apart.compute == pytest.approx(sum(t for _, t in apart.detail))
    assert together.kernels == 1 and apart.kernels == 2


def test_shared_int32_lanes_slow_the_concurrent_fp32_path():
    m = n = k = 2048
    ops = {"int32": 2.0 * m * n * k / 8, "fp32": 2.0 * m * n * k / 8}
    for name, shared in (("rtx4090", True), ("a100", False)):
        hw = get_hardware(name)
        fp32_alone = dict(costmodel.work_time(Work({"fp32": ops["fp32"]}, 0.0), m, n, k, np.float32, hw).detail)
        beside = dict(costmodel.work_time(Work(ops, 0.0, concurrent=True), m, n, k, np.float32, hw).detail)
        assert (beside["fp32"] > fp32_alone["fp32"]) == shared, name


def test_balanced_ratios_are_modeled_faster_than_the_papers_on_a_datacenter_part():
    """The paper's m = 4 (measured on Orin) leaves an A100's tensor cores a fifth of the columns
    idle-waiting on the CUDA cores; the table's m = 11 balances them (modeled)."""
    shape = (4096, 4096, 4096)
    paper = costmodel.modeled_time("vitbit", "bits=8", *shape, np.float32, "a100")
    balanced = costmodel.modeled_time("vitbit", "bits=8,target=a100", *shape, np.float32, "a100")
    assert balanced.seconds < paper.seconds
    assert "modeled" in str(balanced)
