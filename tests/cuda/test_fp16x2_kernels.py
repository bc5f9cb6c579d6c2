"""fp16x2's kernels: the CPU model (runtime/multiterm/cuda/fragments.py ``run_fp16x2``: row shifts,
range-scaled FP16 hi and lo parts, the float MMA GEMM with the lo pairs in their own accumulator, the
rescaling) with an exact accumulator bit-equal to the CPU executor; with an FP32 accumulator within
docs/cuda.md's bound, and bit-equal where the sums are exact; the desc's refusals. The builds are
tests/cuda/test_kernels_build.py's; the GPU runs tests/gpu/test_gpu_launch.py's accumulator tests."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.cuda.desc import UnsupportedConfig
from mixjit.runtime.cuda.launch import cpu_gemm
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.multiterm.cuda import fragments as fm
from mixjit.runtime.multiterm.cuda.desc import FP16_LO_SHIFT, Fp16x2Desc


def _inputs(kind: str, m: int, k: int, n: int, dtype, seed: int):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if kind == "wide":  # rows and columns over many binades, values far below their row's maximum
        a *= np.exp2(rng.integers(-120, 120, (m, 1))) * np.exp2(rng.integers(-40, 1, (m, k)))
        b *= np.exp2(rng.integers(-100, 100, (1, n)))
        a[0], b[:, -1] = 0.0, 0.0
    elif kind == "edges":  # float32's top binade (sigma = -113), beyond FLT_MAX, tiny results, cancellation
        a, b = np.resize(a, (max(m, 4), k)), np.resize(b, (k, max(n, 3)))
        a[0] = np.float32(3.4e38) * np.sign(a[0])
        a[1], b[:, 1] = -1e-30, 1e-30
        a[2, : k // 2 * 2] = np.tile([1.0, -1.0], k // 2)
        a[3] = (2.0 - 2.0 ** -23) * 2.0**127  # FLT_MAX: hi rounds up to 2^15 at sigma = -113
    return a.astype(dtype), b.astype(dtype)


def _desc(config: str, a: np.ndarray, **fields) -> Fp16x2Desc:
    desc = kernel_desc("fp16x2", config, "f64" if a.dtype == np.float64 else "f32", **fields)
    assert isinstance(desc, Fp16x2Desc)
    return desc


@pytest.mark.parametrize("config", ["products=3", "products=1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["random", "wide", "edges"])
@pytest.mark.parametrize("shape", [(17, 33, 9), (1, 1, 1), (40, 20, 35)])
def test_exact_accumulator_is_the_executors_bits(config, dtype, kind, shape):
    a, b = _inputs(kind, *shape, dtype, seed=sum(shape))
    got, status = fm.run_fp16x2(a, b, _desc(config, a))
    want = cpu_gemm("fp16x2", a, b, config)
    assert status == 0 and got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_the_lo_pairs_weight_is_checked(monkeypatch):
    """The check has teeth: the lo pairs summed at weight 1 (no second accumulator) change the bits."""
    a, b = _inputs("random", 16, 32, 8, np.float32, seed=2)
    monkeypatch.setattr(Fp16x2Desc, "lo_shift", 0)
    got, _ = fm.run_fp16x2(a, b, _desc("products=3", a))
    assert got.tobytes() != cpu_gemm("fp16x2", a, b, "products=3").tobytes()


def test_the_fp32_accumulator_is_within_the_bound_and_exact_where_the_sums_are():
    a, b = _inputs("random", 24, 48, 16, np.float32, seed=4)
    desc = _desc("products=3", a)
    got, _ = fm.run_fp16x2(a, b, desc, accumulate="fp32")
    want = cpu_gemm("fp16x2", a, b, "products=3").astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    rounds = -(-a.shape[1] // desc.fmt.mma[2]) * len(desc.pairs)
    bound = 2 * ulp + rounds * 2.0**-23 * (1 + 2.0**-9) ** 2 * (np.abs(a).astype(np.float64) @ np.abs(b))
    err = np.abs(got - want)
    assert (err <= bound).all() and (err > 0).any()  # the FP32 accumulator does round here
    small = np.random.default_rng(5).integers(-8, 9, (24, 48)).astype(np.float32)  # every sum exact in FP32
    got, _ = fm.run_fp16x2(small, small.T.copy(), desc, accumulate="fp32")
    assert got.tobytes() == cpu_gemm("fp16x2", small, small.T.copy(), "products=3").tobytes()


def test_an_inf_sets_the_status_and_update_mode_stays_on_the_cpu():
    a, b = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32)
    a[1, 1] = np.inf
    assert fm.run_fp16x2(a, b, _desc("products=3", a))[1] == fm.STATUS_NONFINITE
    with pytest.raises(UnsupportedConfig, match="product only"):
        kernel_desc("fp16x2", "products=3", alpha_beta="update")
    assert FP16_LO_SHIFT == 11 and _desc("products=3", a).template_params()["kLoShift"] == 11
    assert kernel_desc("tf32x3", "products=3").template_params()["kLoShift"] == 0
