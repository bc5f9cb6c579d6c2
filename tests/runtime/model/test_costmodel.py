"""The GPU cost model (runtime/model/costmodel.py). Every figure here is modeled; the tests
check relations (monotonicity, quantization, who wins where) and the published
calibration targets within the tolerances docs/costmodel.md states, never a number
copied from the model."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import pathlib
import sys

import numpy as np
import pytest

from mixjit.runtime.model.costmodel import ModeledTime, modeled_calls_time, modeled_speedup, modeled_time
from mixjit.runtime.model.hardware import HARDWARE, Hardware, MmaShape, get_hardware
from mixjit.runtime.schemes import all_schemes, scheme_aliases

ROOT = pathlib.Path(__file__).resolve().parents[3]

REAL = sorted(n for n, h in HARDWARE.items() if h.real)
F32, F64 = np.float32, np.float64
# the FP32-accurate half-precision emulations (MixPert Table 1 / §4.6 compare these)
HALF_EMULATIONS = [("tf32x3", "products=3"), ("bf16x6", None), ("bf16x9", None), ("fp16x2", "products=3")]


def _calibration():
    spec = importlib.util.spec_from_file_location("calibrate_costmodel", ROOT / "tools" / "calibrate_costmodel.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------ the API


def test_result_parts_add_up_and_say_modeled():
    t = modeled_time("mixpert", "level=IV", 2048, 1024, 512, F32, "a100")
    assert isinstance(t, ModeledTime)
    assert t.seconds == pytest.approx(t.compute + t.memory + t.launch)
    assert t.compute > 0 and t.memory > 0 and t.launch > 0
    assert t.kernels == 3  # pack A, pack B, one fused GEMM
    assert t.flops == 2.0 * 2048 * 1024 * 512 and t.tflops == pytest.approx(t.flops / t.seconds / 1e12)
    assert str(t).startswith("modeled ") and "a100" in str(t) and "mixpert[" in str(t)
    native = modeled_time("native", "accumulate=blas", 2048, 1024, 512, F32, "a100")
    assert native.kernels == 1 and native.memory == 0


def test_scheme_aliases_labels_and_configs_agree():
    s = all_schemes()["bf16xn"]
    by_alias = modeled_time("bf16x6", None, 512, 512, 512, F32, "h100")
    assert by_alias == modeled_time("bf16xn", "products=6", 512, 512, 512, F32, "h100")
    assert by_alias == modeled_time("bf16xn", s.parse_config("products=6"), 512, 512, 512, F32, get_hardware("h100"))
    assert by_alias.scheme == "bf16xn" and by_alias.config == "products=6"
    # no config: the scheme's most precise one
    assert modeled_time("bf16xn", None, 64, 64, 64, F32, "h100").config == s.default_config().label


def test_profiled_calls_add_up():
    one = modeled_time("int8", None, 300, 200, 100, F32, "l40s").seconds
    two = modeled_time("int8", None, 30, 20, 10, F32, "l40s").seconds
    assert modeled_calls_time("int8", None, [(300, 200, 100, 3), (30, 20, 10, 2), (5, 5, 5, 0)], F32, "l40s") \
        == pytest.approx(3 * one + 2 * two)
    with pytest.raises(ValueError, match="call count must be non-negative"):
        modeled_calls_time("int8", None, [(3, 2, 1, -1)], F32, "l40s")


def _every_scheme_config():
    for name, s in sorted(all_schemes().items()):
        for dt in s.dtypes:
            for cfg in s.configs(dt):
                yield name, cfg, dt
    for alias in sorted(scheme_aliases()):
        yield alias, None, np.dtype(F32)


@pytest.mark.parametrize("target", REAL)
def test_every_scheme_and_config_gets_a_finite_positive_time(target):
    for name, cfg, dt in _every_scheme_config():
        for m, n, k in [(1, 1, 1), (64, 48, 40), (1000, 7, 3000), (4096, 4096, 4096)]:
            t = modeled_time(name, cfg, m, n, k, dt, target)
            assert math.isfinite(t.seconds) and t.seconds > 0, (name, cfg, dt, target, (m, n, k))
            assert t.kernels >= 1


def test_native_float32_runs_on_simt_and_float64_on_fp64_tensor_cores():
    n = 8192
    hw = get_hardware("a100")
    f32 = modeled_time("native", None, n, n, n, F32, hw)
    f64 = modeled_time("native", None, n, n, n, F64, hw)
    assert f32.detail[0][0] == "fp32" and f64.detail[0][0] == "fp64"
    # FP64 tensor cores (19.5 TFLOPS) beat the 9.7 TFLOPS SIMT FP64 rate: only the
    # tensor path can reach above the SIMT peak
    assert hw.peak_tops["fp64"] < f64.tflops <= hw.peak_tops["fp64_tensor"]
    assert f32.tflops <= hw.peak_tops["fp32"]


# ---------------------------------------------------------------- shape effects


@pytest.mark.parametrize("target", ["a100", "h100", "rtx3090", "jetson-agx-orin"])
def test_time_grows_with_every_dimension(target):
    for name, cfg, dt in _every_scheme_config():
        prev = None
        for n in (16, 32, 64, 128, 256, 512, 1024, 2048, 4096):
            t = modeled_time(name, cfg, n, n, n, dt, target).seconds
            assert prev is None or t >= prev, (name, cfg, n)
            prev = t
        base = modeled_time(name, cfg, 300, 200, 100, dt, target).seconds
        for m, n, k in [(600, 200, 100), (300, 400, 100), (300, 200, 200)]:
            assert modeled_time(name, cfg, m, n, k, dt, target).seconds >= base, (name, cfg, (m, n, k))


@pytest.mark.parametrize("scheme, config", [("native", None), ("mixpert", "level=IV"), ("int8", None)])
def test_time_grows_in_unit_steps(scheme, config):
    hw = get_hardware("a100")
    for dim in range(3):
        prev = 0.0
        for step in range(0, 300, 3):
            shape = [1000, 1000, 1000]
            shape[dim] += step
            t = modeled_time(scheme, config, *shape, F32, hw).seconds
            assert t >= prev, (dim, shape)
            prev = t


def test_wave_quantization():
    # 4 SMs: 256x256 is four 128x128 tiles, one full wave; 257x257 needs a ninth tile
    # row/column, so at least a second wave: the rate drops far more than the +0.8% work
    toy = Hardware("toy", "sm_80", sm_count=4, mma={"int8": MmaShape(16, 8, 32)},
                   peak_tops={"int8": 100.0, "fp32": 10.0}, mem_bw_gbs=1e6, launch_us=0.0)
    full = modeled_time("int8", None, 256, 256, 1 << 16, F32, toy)
    spill = modeled_time("int8", None, 257, 257, 1 << 16, F32, toy)
    assert spill.tflops < 0.75 * full.tflops


def test_mma_k_quantization():
    # INT8 MMA k = 32: one more column of k costs a whole k-step of every product
    hw = get_hardware("a100")
    exact = modeled_time("mixpert", "level=IV", 4096, 4096, 4096, F32, hw)
    ragged = modeled_time("mixpert", "level=IV", 4096, 4096, 4097, F32, hw)
    assert ragged.compute / exact.compute > 1 + 0.5 * 32 / 4096


def test_more_sms_and_bandwidth_never_hurt():
    base = get_hardware("a100")
    bigger = dataclasses.replace(base, name="a100x", sm_count=2 * base.sm_count,
                                 peak_tops={c: 2 * v for c, v in base.peak_tops.items()}, mem_bw_gbs=2 * base.mem_bw_gbs)
    for shape in [(128, 128, 128), (4096, 64, 4096), (8192, 8192, 8192)]:
        assert modeled_time("mixpert", None, *shape, F32, bigger).seconds <= modeled_time("mixpert", None, *shape, F32, base).seconds


@pytest.mark.parametrize("target", REAL)
def test_less_precise_configs_are_never_slower(target):
    # the tuner lowers a site one config at a time to get faster: along a scheme's
    # configs (most precise first, fewer products each step) the modeled time of a
    # large GEMM must not grow. Not split: its configs all cost one product, and a
    # small FP16 share runs as a memory-bound kernel of its own, so less FP16 is not
    # always faster (the tuner's Pareto pruning drops such configs).
    for name, s in all_schemes().items():
        if name == "split":
            continue
        for dt in s.dtypes:
            cfgs = s.configs(dt)
            assert [s.products(c) for c in cfgs] == sorted((s.products(c) for c in cfgs), reverse=True)
            times = [modeled_time(name, c, 4096, 4096, 4096, dt, target).seconds for c in cfgs]
            assert times == sorted(times, reverse=True), (name, [c.label for c in cfgs])


# ------------------------------------------------------- who wins where (paper)


@pytest.mark.parametrize("target", ["a100-pcie-40gb", "a100"])
def test_a100_large_squares_mixpert_beats_native_fp32(target):
    for n in (2048, 8192, 24576):
        assert modeled_speedup("mixpert", "level=IV", n, n, n, F32, target) > 1.0, n


def test_a100_pcie_mixpert_at_24576_meets_the_paper_within_5_percent():
    # MixPert §4.2: 2.71x over cuBLAS FP32 at n = 24576 (a calibration target)
    assert modeled_speedup("mixpert", "level=IV", 24576, 24576, 24576, F32, "a100-pcie-40gb") == pytest.approx(2.71, rel=0.05)


@pytest.mark.parametrize("target", ["a100-pcie-40gb", "a100", "h100"])
@pytest.mark.parametrize("shape", [(64, 64, 64), (128, 128, 128), (256, 256, 256), (8192, 8, 8192), (8, 8192, 8192)])
def test_small_and_skinny_gemms_do_not_pay_off(target, shape):
    assert modeled_speedup("mixpert", "level=IV", *shape, F32, target) < 1.0


@pytest.mark.parametrize("scheme, config", HALF_EMULATIONS)
def test_rtx3090_half_precision_emulations_lose(scheme, config):
    # MixPert Table 1 / §4.6: the 3090's FP32-accumulate half-precision tensor cores are
    # only 2x its SIMT FP32, so 3xTF32 and the BF16/FP16 splits cannot beat SGEMM
    for n in (1024, 4096, 16384):
        assert modeled_speedup(scheme, config, n, n, n, F32, "rtx3090") < 1.0, n


def test_rtx3090_mixpert_still_wins_on_large_squares():
    # MixPert §4.6: 1.30x with larger matrices (a calibration target)
    assert modeled_speedup("mixpert", "level=IV", 16384, 16384, 16384, F32, "rtx3090") == pytest.approx(1.30, rel=0.05)


# -------------------------------------------------------------- calibration


@pytest.fixture(scope="module")
def calibration():
    return _calibration().run()


def test_code_efficiencies_match_the_fit(calibration):
    # model/hardware.py and costmodel.DEFAULT_EFFICIENCY hold the fitted values rounded to 0.01
    for r in calibration["fits"]:
        assert r["in_code"] == pytest.approx(r["fitted"], abs=0.0051), r
        assert r["modeled_with_code"] == pytest.approx(r["published"], rel=0.02), r
    for unit, e in calibration["defaults_fitted"].items():
        assert calibration["defaults_in_code"][unit] == pytest.approx(e, abs=0.0051), unit


def test_fig8_curve_rises_with_size(calibration):
    # MixPert §4.2: MixPert wins at every size and its speedup grows with n
    mix = calibration["fig8"]["mixpert[level=IV]"]
    sizes = sorted(mix)
    assert all(mix[n] > 1.0 for n in sizes)
    assert all(mix[a] < mix[b] for a, b in zip(sizes, sizes[1:]))


def test_checks_keep_their_relations_and_stated_tolerances(calibration):
    for r in calibration["checks"]:
        assert r["relation_holds"], r
    by_target = {r["target"]: r for r in calibration["checks"]}
    # docs/costmodel.md: the GH200 Ozaki-II cross-check is within 25%; the A100 Fig. 2
    # speedups within 15%; the RTX 3090 MixPert average within 15%
    ozaki = [r for t, r in by_target.items() if t.startswith("Ozaki-II")]
    assert len(ozaki) == 3 and all(abs(r["residual"]) <= 0.25 for r in ozaki)
    fig2 = [r for r in calibration["checks"] if "Fig. 2" in r["source"]]
    assert len(fig2) == 2 and all(abs(r["residual"]) <= 0.15 for r in fig2)
    mix3090 = by_target["MixPert / cuBLAS FP32, mean over the same sizes"]
    assert abs(mix3090["residual"]) <= 0.15


# ------------------------------------------------------------------- errors


def test_errors_name_the_fix():
    with pytest.raises(ValueError, match="unknown hardware 'a1000'; known: .*a100"):
        modeled_time("native", None, 8, 8, 8, F32, "a1000")
    with pytest.raises(ValueError, match="no peak rates .*model one of: .*a100"):
        modeled_time("native", None, 8, 8, 8, F32, "patent-0066")
    with pytest.raises(ValueError, match="unknown GEMM scheme 'mixpurt'; known schemes: .*mixpert"):
        modeled_time("mixpurt", None, 8, 8, 8, F32, "a100")
    with pytest.raises(ValueError, match="does not take float32 inputs; it accepts: float64"):
        modeled_time("mixpert-fp64", None, 8, 8, 8, F32, "a100")
    with pytest.raises(ValueError, match="fixes config 'products=6' .*use scheme 'bf16xn'"):
        modeled_time("bf16x6", "products=3", 8, 8, 8, F32, "a100")
    with pytest.raises(ValueError, match="non-negative"):
        modeled_time("native", None, -1, 8, 8, F32, "a100")
    no_int8 = Hardware("simt-only", "sm_00", 10, mma={}, peak_tops={"fp32": 1.0, "fp64": 0.5}, mem_bw_gbs=100.0)
    with pytest.raises(ValueError, match="needs int8 math, which 'simt-only' does not rate; pick a target .*a100"):
        modeled_time("mixpert", None, 8, 8, 8, F32, no_int8)
