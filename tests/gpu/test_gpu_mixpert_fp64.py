"""mixpert-fp64 on the device. Without one (every machine here), with test_gpu_launch_abi.py's driver
stand-in: the launcher's kernel arguments against the kernels' parameter lists, its grids against
the desc's, its hand-back on a status word, and its host step (step 6) on a P taken from the CPU
model of the kernels, which gives the CPU executor's bits. On a GPU (tests marked ``gpu``, skipped
with the probe's reason elsewhere): the kernels plus the host step are bit-equal to the CPU executor
on random, scaled, cancelling and subnormal data, ragged shapes and several k-tiles."""

from __future__ import annotations

import numpy as np
import pytest
from test_gpu_launch import on_gpu
from test_gpu_launch_abi import _kernel_params, device  # noqa: F401  (device: the stand-in's fixture)

from mixjit.runtime.cuda import launch
from mixjit.runtime.mixpert.cuda.fp64_fragments import run_gemm64
from mixjit.runtime.mixpert.cuda.host_check import guarantee_on_host
from mixjit.runtime.schemes import get_scheme

SCHEME = get_scheme("mixpert-fp64")
PRECISE = "segments=9,pairs=slices3sig2,tile=16x4096x8"


def _words(config: str) -> np.ndarray:
    return np.array(SCHEME.parse_config(config).words(), np.int64)


def _inputs(kind: str, m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if kind == "scaled":  # rows and columns over 120 binades, a zero row and column
        a *= np.exp2(rng.integers(-60, 60, (m, 1)))
        b *= np.exp2(rng.integers(-60, 60, (1, n)))
        a[0], b[:, -1] = 0.0, 0.0
    elif kind == "cancel":  # outputs the guarantee check recomputes
        b[:, 0] = 1.0
        a[:, k // 2:2 * (k // 2)] = -a[:, :k // 2]
        a[:, -1] += 2.0**-40
    elif kind == "tiny":  # subnormal inputs and results
        a *= 2.0**-1000
        b *= 2.0**-60
    return a, b


@pytest.mark.parametrize("config", [PRECISE, ""])
@pytest.mark.parametrize("shape", [(37, 70, 45), (1, 1, 1), (128, 64, 32)])
def test_the_launches_match_the_kernels_the_desc_and_the_bindings(device, config, shape):  # noqa: F811
    m, k, n = shape
    a, b = _inputs("random", m, k, n, seed=m)
    c = launch.launcher_for("mixpert-fp64").run(device, a, b, config)
    p = np.zeros((m, n))  # the stand-in's memory reads as zeros: P = 0, then the host step
    guarantee_on_host(a, b, p, _words(config))
    assert c.dtype == np.float64 and c.tobytes() == p.tobytes()

    desc = launch.launcher_for("mixpert-fp64").desc(config, np.dtype(np.float64), "sm_90")
    params = _kernel_params(desc)
    assert sorted(params) == sorted(desc.entry_points)
    expected, got = desc.launches(m, n, k), device.driver.launches()
    assert [name for name, _ in got] == [e.entry for e in expected]
    for e, (name, args) in zip(expected, got):
        assert args[1:4] == e.grid and args[4:7] == e.block, name
        assert args[7] == 0 and args[8] == 0, name  # static shared memory; the one stream
        values, types = args[9]
        assert list(types) == params[name], name
    assert device.driver.uploads[:2] == [a.tobytes(), b.tobytes()]


@pytest.mark.parametrize("config", [PRECISE, "segments=7,pairs=sig6", "segments=9,pairs=sig8,tile=16x64x8"])
@pytest.mark.parametrize("kind", ["random", "scaled", "cancel"])
def test_the_host_step_on_the_kernels_p_gives_the_executors_bits(device, monkeypatch, config, kind):  # noqa: F811
    """The launcher's download of P answered by the CPU model of the kernels: C is the executor's."""
    a, b = _inputs(kind, 40, 150, 24, seed=3)
    model_p, status = run_gemm64(a, b, launch.launcher_for("mixpert-fp64").desc(config, np.dtype(np.float64), "sm_90"))
    assert status == 0
    real = device.download

    def from_model(buf, shape, dtype, stream=0):
        return model_p.copy() if shape == model_p.shape and dtype == np.float64 else real(buf, shape, dtype, stream)

    monkeypatch.setattr(device, "download", from_model)
    c = launch.launcher_for("mixpert-fp64").run(device, a, b, config)
    assert c.tobytes() == launch.cpu_gemm("mixpert-fp64", a, b, config).tobytes()


def test_a_nonzero_status_word_hands_the_gemm_back(device, monkeypatch):  # noqa: F811
    real = device.download

    def status(buf, shape, dtype, stream=0):
        out = real(buf, shape, dtype, stream)
        if shape == (1,):
            out[0] = 4
        return out

    monkeypatch.setattr(device, "download", status)
    a, b = _inputs("random", 24, 40, 16, seed=2)
    with pytest.raises(launch.HandBack, match=r"kernel status 4 \(an exponent span too wide\)"):
        launch.launcher_for("mixpert-fp64").run(device, a, b, PRECISE)
    c, where = launch.CudaBackend(device).gemm("mixpert-fp64", a, b, PRECISE)
    assert where == "cpu: kernel status 4 (an exponent span too wide)"
    assert c.tobytes() == launch.cpu_gemm("mixpert-fp64", a, b, PRECISE).tobytes()


def test_what_the_launcher_serves_and_why_not():
    runner = launch.launcher_for("mixpert-fp64")
    assert all(runner.why_not(c.label, np.dtype(np.float64), "sm_90") == "" for c in SCHEME.configs())
    assert "float64 operands only" in runner.why_not("", np.dtype(np.float32), "sm_90")
    assert "sign-magnitude digits only" in runner.why_not("digits=balanced", np.dtype(np.float64), "sm_80")
    assert runner.inexact(PRECISE) == ""  # bit-equal: a @mixjit site runs it


# -- on a GPU -------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [c.label for c in SCHEME.configs()] + ["segments=9,pairs=slices3sig2,tile=16x64x8"])
@pytest.mark.parametrize("kind", ["random", "scaled", "cancel", "tiny"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (37, 70, 45), (64, 4100, 40), (513, 1000, 257)],
                         ids=lambda s: "x".join(map(str, s)))
@on_gpu
def test_gpu_bit_equal_to_the_cpu_executor(config, kind, shape):
    a, b = _inputs(kind, *shape, seed=sum(shape))
    c, where = launch.cuda_gemm(a, b, "mixpert-fp64", config)
    assert where == "cuda", where
    assert c.tobytes() == launch.cpu_gemm("mixpert-fp64", a, b, config).tobytes()


@on_gpu
def test_gpu_hands_back_an_inf_and_a_span_too_wide():
    a, b = _inputs("random", 20, 64, 12, seed=5)
    a[3, 3] = np.inf
    c, where = launch.cuda_gemm(a, b, "mixpert-fp64", "")
    assert where.startswith("cpu: kernel status 1") and c.tobytes() == launch.cpu_gemm(
        "mixpert-fp64", a, b, "").tobytes()
    a[3, 3], a[0, 40] = 1.0, 2.0**200  # two k-tiles of 32, 200 binades apart
    c, where = launch.cuda_gemm(a, b, "mixpert-fp64", "")
    assert where.startswith("cpu: kernel status 4") and c.tobytes() == launch.cpu_gemm(
        "mixpert-fp64", a, b, "").tobytes()
