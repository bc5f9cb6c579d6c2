"""The complex launcher (runtime/complex/cuda/launchers.py). On the CPU, through the driver
stand-in of test_gpu_launch_abi.py: the real scheme's launches for each product of the parts, in
the desc's product order, then ``complex_combine`` with the arguments of its parameter list, the
grid and block of the desc; the parts uploaded as the executor splits them; a real product's status
hands the whole GEMM back to the complex executor; every buffer goes back to the pool. On a GPU
(``gpu``-marked, skipped with the probe's reason elsewhere): bit equality with the CPU executor for
complex64 under mixpert and complex128 under ozaki2, both forms, NaN for NaN."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from mixjit.runtime.complex.cuda.host import part_operands
from mixjit.runtime.cuda import launch
from mixjit.runtime.cuda.device import CudaDevice, DeviceStatus, probe

pytest.importorskip("cuda.bindings.driver")
from test_gpu_launch_abi import CheckingDriver, _kernel_params, status_word_reads  # noqa: E402  (tests/gpu on sys.path)

STATUS = probe()
#: (complex dtype, label): one real kernel family per parts' dtype
CASES = [(np.complex64, f"form={f},real=mixpert(level=IV)") for f in (4, 3)] + \
        [(np.complex128, f"form={f},real=ozaki2(moduli=8)") for f in (4, 3)]


@pytest.fixture
def device(monkeypatch):
    monkeypatch.setattr(launch, "kernel_binary", lambda desc: desc.name.encode())  # no compiler needed
    return CudaDevice(DeviceStatus(True, "", "checking driver", "sm_90"), driver=CheckingDriver())


def _operands(dtype, m, k, n, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((m, k)) + 1j * rng.standard_normal((m, k))).astype(dtype)
    b = (rng.standard_normal((k, n)) + 1j * rng.standard_normal((k, n))).astype(dtype)
    return a, b


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    g, w = got.view(got.real.dtype), want.view(want.real.dtype)
    u = f"u{g.itemsize}"
    return got.dtype == want.dtype and bool(((g.view(u) == w.view(u)) | (np.isnan(g) & np.isnan(w))).all())


# -- on the CPU: the launch ABI ---------------------------------------------------------------

@pytest.mark.parametrize("shape", [(37, 70, 45), (1, 1, 1)])
@pytest.mark.parametrize("dtype,config", CASES)
def test_the_real_launches_then_the_combine_match_the_kernels_and_the_descs(device, dtype, config, shape):
    m, k, n = shape
    a, b = _operands(dtype, m, k, n)
    launcher = launch.launcher_for("complex")
    c = launcher.run(device, a, b, config)
    assert c.shape == (m, n) and c.dtype == dtype and not c.any()  # the stand-in's memory reads as zeros

    desc = launcher.desc(config, np.dtype(dtype), "sm_90")
    real_params, params = _kernel_params(desc.real), _kernel_params(desc)
    assert sorted(params) == ["complex_combine"]
    expected = [*desc.real.launches(m, n, k) * len(desc.products()), *desc.launches(m, n, k)]
    got = device.driver.launches()
    assert [name for name, _ in got] == [e.entry for e in expected]
    for e, (name, args) in zip(expected, got):
        assert args[1:4] == e.grid and args[4:7] == e.block and args[7] == 0 and args[8] == 0, name
        values, types = args[9]
        assert list(types) == (params if name == "complex_combine" else real_params)[name], name
        assert all(isinstance(v, int) for v, t in zip(values, types) if t is ctypes.c_void_p), name
    values = got[-1][1][9][0]
    assert values[4:7] == (n, m, n) and values[8] == n and values[9:11] == (1.0, 0.0)  # ld_part, m, n; ldo; product
    assert len(set(values[:len(desc.products())])) == len(desc.products())  # one buffer per real product


@pytest.mark.parametrize("form", [4, 3])
def test_the_parts_are_uploaded_as_the_executor_splits_them(device, form):
    a, b = _operands(np.complex64, 20, 33, 9, seed=form)
    a[0, 0] = complex(3e38, 3e38)  # form 3: Ar + Ai overflows to inf in the host's IEEE sum, as in the executor
    launch.launcher_for("complex").run(device, a, b, f"form={form},real=mixpert(level=IV)")
    desc = launch.launcher_for("complex").desc(f"form={form},real=mixpert(level=IV)", np.dtype(np.complex64), "sm_90")
    parts = [x for pair in part_operands(a, b, desc.products()) for x in pair]
    assert [p.dtype for p in parts] == [np.float32] * 2 * form
    assert device.driver.uploads[:2 * form] == [p.tobytes() for p in parts]  # mixpert uploads A, B per product
    assert np.isinf(parts[-2][0, 0]) == (form == 3)
    assert parts[0].tobytes() == np.ascontiguousarray(a.real).tobytes()
    assert len(device.driver.uploads) == 3 * form  # then the form real products, for the epilogue


@pytest.mark.parametrize("dtype,config", CASES)
def test_a_real_products_status_hands_the_gemm_back(device, monkeypatch, dtype, config):
    status_word_reads(device, monkeypatch)
    a, b = _operands(dtype, 24, 40, 16, seed=2)
    with pytest.raises(launch.HandBack, match=r"kernel status 1 \(an inf/NaN input\)"):
        launch.launcher_for("complex").run(device, a, b, config)
    assert "complex_combine" not in [name for name, _ in device.driver.launches()]
    assert device.pool.cached_bytes > 0 and device.pool.cached_bytes == sum(
        cap * len(v) for cap, v in device.pool._cached.items())  # every buffer went back to the pool
    c, where = launch.CudaBackend(device).gemm("complex", a, b, config)
    assert where == "cpu: kernel status 1 (an inf/NaN input)"
    assert c.tobytes() == launch.cpu_gemm("complex", a, b, config).tobytes()


def test_buffers_are_reused_across_gemms(device):
    a, b = _operands(np.complex64, 30, 20, 10)
    runner = launch.launcher_for("complex")
    runner.run(device, a, b, "form=4,real=mixpert(level=IV)")
    allocations = device.pool.allocations
    runner.run(device, a + 1, b, "form=4,real=mixpert(level=IV)")
    assert device.pool.allocations == allocations
    assert sum(1 for name, _ in device.driver.calls if name == "cuMemFree") == 0


def test_which_complex_gemms_the_kernels_take():
    launcher, backend = launch.launcher_for("complex"), launch.CudaBackend()
    c64, c128 = np.dtype(np.complex64), np.dtype(np.complex128)
    assert launcher.why_not("form=4,real=mixpert(level=IV)", c64, "sm_90") == ""
    assert launcher.why_not("form=3,real=ozaki2(moduli=8)", c128, "sm_80") == ""
    assert launcher.why_not("form=4,real=mixpert(level=IV)", np.dtype(np.float32), "sm_90") == \
        "float32 operands (the complex kernels take complex64 or complex128)"
    assert launcher.why_not("", c128, "sm_90") == ""  # complex128's default: over mixpert-fp64's kernels
    assert "real products run native[], which has none" in launcher.why_not("form=4,real=native()", c128, "sm_90")
    assert launcher.why_not("form=4,real=dfp()", c128, "sm_90") == ""  # over dfp's kernels (16 bits)
    assert "mode=accurate" in launcher.why_not("form=4,real=ozaki2(mode=accurate)", c128, "sm_90")
    # bit-equal exactly when the real kernels are: a @mixjit site takes only those
    assert launcher.inexact("form=4,real=mixpert(level=IV)") == "" == launcher.inexact("form=3,real=split(fp16=0)")
    assert "FP32 tensor-core accumulation" in launcher.inexact("form=4,real=bf16x3()")
    assert "not bit-equal to the CPU executor" in backend.why_not("complex", "form=4,real=tf32x3(products=3)", c64)
    assert launch.CudaBackend(inexact=True).why_not("complex", "form=4,real=tf32x3(products=3)", c64) == ""


# -- on a GPU ---------------------------------------------------------------------------------

def on_gpu(test):
    """Mark ``test`` ``gpu`` and skip it, with the probe's reason, where no device can run kernels."""
    return pytest.mark.gpu(pytest.mark.skipif(not STATUS.available, reason=f"no CUDA device: {STATUS.reason}")(test))


@pytest.mark.parametrize("shape", [(64, 32, 32), (37, 70, 45), (1, 1, 1), (513, 1000, 257)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype,config", CASES)
@on_gpu
def test_gpu_complex_gemm_bit_equal_to_the_cpu_executor(dtype, config, shape):
    m, k, n = shape
    rng = np.random.default_rng(sum(shape))
    a, b = _operands(dtype, m, k, n, seed=sum(shape))
    cases = [(a, b), (a * (1 + 0j), b.real * 2.0**20 + 1j * b.imag)]  # the real parts 2^20 times the imaginary
    big = 2.0 ** (np.finfo(dtype).maxexp // 2 + 4)
    cases.append((np.full((m, k), big * (1 + 1j), dtype), np.full((k, n), big * (1 - 1j), dtype)))  # inf - inf
    cases.append((a * rng.choice([0.0, 1.0], (m, 1)), b))  # zero rows
    for a, b in cases:
        c, where = launch.cuda_gemm(a.astype(dtype), b.astype(dtype), "complex", config)
        assert where == "cuda", where
        assert _same_bits(c, launch.cpu_gemm("complex", a.astype(dtype), b.astype(dtype), config)), config


@on_gpu
def test_gpu_non_finite_parts_are_handed_back():
    a, b = _operands(np.complex64, 8, 16, 4)
    a[2, 3] = complex(0.0, np.nan)
    c, where = launch.cuda_gemm(a, b, "complex", "form=4,real=mixpert(level=IV)")
    assert where.startswith("cpu: kernel status") and _same_bits(
        c, launch.cpu_gemm("complex", a, b, "form=4,real=mixpert(level=IV)"))


def test_a_mixjit_complex_site_is_routed_to_the_device_and_launches_the_complex_kernels(device):
    """The backend policy asks the device with the site's dtype (complex64), so a @mixjit complex
    site runs through the device executor: the real kernels and the epilogue are launched on the
    stand-in driver (whose memory reads as zeros; the update's bits against the CPU executor are
    checked with a device that computes: tests/gpu/test_gpu_backend_wiring.py)."""
    from mixjit import backends, mixjit

    @mixjit(schemes=("complex",), tune="never")
    def f(a, b):
        return a @ b

    a, b = _operands(np.complex64, 6, 5, 4)
    with backends.use_device(launch.CudaBackend(device)):
        c = f(a, b)
        (site,) = f.sites
        assert site.backend.runs == "cuda", site.backend.reason
        backends.set_backend(site.id, "cpu")  # leave no routed row behind
    names = [name for name, *_ in device.driver.launches()]
    assert "complex_combine" in names and len(names) > 1, names  # real products, then the epilogue
    assert c.shape == (6, 4) and c.dtype == np.complex64
