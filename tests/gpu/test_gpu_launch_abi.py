"""The launch code's driver calls, checked on the CPU: a driver stand-in passes every call to
cuda-bindings' real function, whose argument conversion runs before it looks for the driver
library (so a wrong argument type raises TypeError here, as it would on a GPU), then answers
as a driver would. The MixPert launcher's kernel arguments are checked against the kernels'
parameter lists in the rendered source."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from mixjit.runtime.cuda import launch
from mixjit.runtime.cuda.desc import KernelDesc
from mixjit.runtime.cuda.device import CudaDevice, DeviceStatus, probe
from mixjit.runtime.cuda.emit import render

pytestmark = pytest.mark.skipif(probe().available, reason="with a device the calls would really run: "
                                                          "the gpu tests cover them")

driver = pytest.importorskip("cuda.bindings.driver")
try:
    from cuda.pathfinder import DynamicLibNotFoundError as _NoDriverLibrary
except ImportError:  # pragma: no cover - older cuda-bindings
    _NoDriverLibrary = RuntimeError


class CheckingDriver:
    """cuda-bindings' driver module with the driver replaced: each call is converted by the real
    binding (TypeError on a bad argument), then logged and answered with success and a value."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []
        self.next_address = 0x10000
        self.streams = 0

    def __getattr__(self, name: str):
        real = getattr(driver, name)
        if not callable(real) or not name.startswith("cu"):
            return real

        def call(*args):
            try:
                real(*args)
            except _NoDriverLibrary:
                pass  # the arguments were accepted; only the driver is missing
            self.calls.append((name, args))
            return (driver.CUresult.CUDA_SUCCESS, *self._answer(name, args))

        return call

    def _answer(self, name: str, args: tuple) -> tuple:
        if name == "cuMemAlloc":
            self.next_address += args[0]
            return (self.next_address,)
        if name == "cuStreamCreate":
            self.streams += 1
            return (driver.CUstream(self.streams),)
        if name == "cuMemcpyDtoHAsync":
            ctypes.memset(args[0], 0, args[2])  # the device memory reads as zeros
        return {"cuDeviceGet": (driver.CUdevice(0),), "cuDevicePrimaryCtxRetain": (driver.CUcontext(),),
                "cuModuleLoadData": (driver.CUmodule(),), "cuModuleGetFunction": (driver.CUfunction(),),
                "cuEventCreate": (driver.CUevent(),),
                "cuEventElapsedTime": (2.0,)}.get(name, ())


@pytest.fixture
def device(monkeypatch):
    monkeypatch.setattr(launch, "kernel_binary", lambda desc: desc.name.encode())  # no compiler needed
    return CudaDevice(DeviceStatus(True, "", "checking driver", "sm_90"), driver=CheckingDriver())


def _kernel_params(desc: KernelDesc) -> dict[str, list[type]]:
    """Each kernel's parameter ctypes, read from the rendered source."""
    kinds = {"int": ctypes.c_int, "i64": ctypes.c_int64, "double": ctypes.c_double}
    out = {}
    source = render(desc).source
    for name, params in re.findall(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*(\w+)\(([^)]*)\)', source):
        out[name] = [ctypes.c_void_p if "*" in p else kinds[p.split()[0]] for p in params.split(",")]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(37, 70, 45), (1, 1, 1), (128, 64, 32)])
def test_the_mixpert_launches_match_the_kernels_and_the_bindings(device, dtype, shape):
    m, k, n = shape
    a, b = np.ones((m, k), dtype), np.ones((k, n), dtype)
    c = launch.launcher_for("mixpert").run(device, a, b, "level=IV")
    assert c.shape == (m, n) and c.dtype == dtype and not c.any()  # the stand-in's memory reads as zeros

    desc = launch.MixpertLauncher.desc("level=IV", np.dtype(dtype), "sm_90")
    params = _kernel_params(desc)
    launches = [args for name, args in device.driver.calls if name == "cuLaunchKernel"]
    assert len(launches) == 3 and sorted(params) == ["mixpert_gemm", "mixpert_pack_a", "mixpert_pack_b"]
    (bm, bn), (tm, tk, tn) = desc.block, desc.tile
    m_pad, n_pad, k_pad = -(-m // bm) * bm, -(-n // bn) * bn, -(-k // tk) * tk
    expected = {  # kernel -> grid, block (the templates' comments), in launch order
        "mixpert_pack_a": ((k_pad // tk, m_pad // tm, 1), (tk, tm, 1)),
        "mixpert_pack_b": ((k_pad // tk, n_pad // tn, 1), (tk, tn, 1)),
        "mixpert_gemm": ((n_pad // bn, m_pad // bm, 1), (desc.threads, 1, 1)),
    }
    for (name, (grid, block)), args in zip(expected.items(), launches):
        assert args[1:4] == grid and args[4:7] == block, name
        values, types = args[9]
        assert list(types) == params[name], name
        assert all(isinstance(v, int) for v, t in zip(values, types) if t is ctypes.c_void_p), name


def test_buffers_are_reused_and_returned(device):
    a, b = np.ones((50, 40), np.float32), np.ones((40, 30), np.float32)
    runner = launch.launcher_for("mixpert")
    runner.run(device, a, b, "level=IV")
    allocations = device.pool.allocations
    runner.run(device, a + 1, b, "level=IV")
    assert device.pool.allocations == allocations == 8  # A, B, 2 plane sets, 2 exponent grids, C, status
    assert sum(1 for name, _ in device.driver.calls if name == "cuMemFree") == 0
    assert sum(1 for name, _ in device.driver.calls if name == "cuModuleLoadData") == 1


def test_a_nonzero_status_word_hands_the_gemm_back(device, monkeypatch):
    real = device.download

    def status_one(buf, shape, dtype, stream=0):
        out = real(buf, shape, dtype, stream)
        if shape == (1,):
            out[0] = 1
        return out

    monkeypatch.setattr(device, "download", status_one)
    with pytest.raises(launch.HandBack, match="kernel status 1"):
        launch.launcher_for("mixpert").run(device, np.ones((8, 8), np.float32), np.ones((8, 8), np.float32),
                                           "level=IV")
    assert device.pool.cached_bytes > 0  # the buffers went back to the pool


def test_concurrent_parts_run_on_their_own_streams_and_the_default_stream_waits(device):
    seen = []
    device.concurrently([seen.append, seen.append])
    calls = [(name, args) for name, args in device.driver.calls if name.startswith(("cuEvent", "cuStream"))]
    names = [name for name, _ in calls]
    part = ["cuStreamCreate", "cuStreamWaitEvent", "cuEventCreate", "cuEventRecord", "cuStreamWaitEvent"]
    assert names == ["cuEventCreate", "cuEventRecord", *part, *part, *["cuEventDestroy"] * 3]
    assert [int(s) for s in seen] == [1, 2]  # each part got its own stream, not the default one
    waits_on_default = [args for name, args in calls if name == "cuStreamWaitEvent" and isinstance(args[0], int)]
    assert len(waits_on_default) == 2
    assert sum(1 for n in names if n == "cuEventDestroy") == 3
    assert device.time_ms(lambda: None, repeats=4) == 0.5  # the stand-in's 2 ms over 4 runs


def test_a_mixjit_site_reaches_the_driver_through_the_device_executor(device):
    from mixjit import backends, gemm, mixjit
    from mixjit.plan import get_plan

    @mixjit(schemes=("mixpert",), tune="never")
    def f(a, b, c):
        c[1:, :] -= a[1:, :] @ b
        return a @ b

    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((20, 30)), rng.standard_normal((30, 10)), rng.standard_normal((20, 10))
    with backends.use_device(launch.CudaBackend(device)):
        out = c.copy()
        p = f(a, b, out)  # routed at registration: the stand-in device runs both GEMMs
        assert [(s.backend.runs, s.backend.reason) for s in f.sites] == [("cuda", ""), ("cuda", "")]
        assert all(backends.device_calls(s.id) == {"cuda": 1} for s in f.sites)
    assert sum(1 for name, _ in device.driver.calls if name == "cuLaunchKernel") == 6
    # the stand-in's memory reads as zeros, so the products came from the device: P = 0 and
    # C[1:] = -1 * 0 + 1 * C[1:]
    assert not p.any() and out.tobytes() == c.tobytes()
    assert f(a, b, c.copy()).tobytes() == gemm(a, b, "mixpert", get_plan(f.sites[1].id).config).tobytes()
