"""The launch code's driver calls, checked on the CPU: a driver stand-in passes every call to
cuda-bindings' real function, whose argument conversion runs before it looks for the driver
library (so a wrong argument type raises TypeError here, as it would on a GPU; not where a
device is present, see ``CALLS_REAL_BINDING``), then answers as a driver would. It runs with
and without a device. Every launcher's kernel arguments are checked against the kernels' parameter
lists in the rendered source, its grids and blocks against its desc's ``launches()``, and the
split launcher's stream order against the desc's."""

from __future__ import annotations

import ctypes
import re

import numpy as np
import pytest

from mixjit.runtime.cuda import launch
from mixjit.runtime.cuda.desc import KernelSpec
from mixjit.runtime.cuda.device import CudaDevice, DeviceStatus, probe
from mixjit.runtime.cuda.emit import render

driver = pytest.importorskip("cuda.bindings.driver")

CALLS_REAL_BINDING = not probe().available
"""Without a device, each call also goes through cuda-bindings' real function, whose argument
conversion runs before it looks for the driver library (a wrong argument type raises TypeError).
With a device that call would really run, on made-up handles, so there the stand-in only logs
and answers: this module still runs and checks the arguments against the kernels' parameter
lists, the grids and the stream order; the types are checked by the runs without a device and
by the gpu tests' real launches."""
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
        self.functions: list[str] = []  # CUfunction(i + 1) is the kernel named functions[i]
        self.uploads: list[bytes] = []  # the bytes of each host-to-device copy

    def __getattr__(self, name: str):
        real = getattr(driver, name)
        if not callable(real) or not name.startswith("cu"):
            return real

        def call(*args):
            if CALLS_REAL_BINDING:
                try:
                    real(*args)
                except _NoDriverLibrary:
                    pass  # the arguments were accepted; only the driver is missing
            self.calls.append((name, args))
            return (driver.CUresult.CUDA_SUCCESS, *self._answer(name, args))

        return call

    def launches(self) -> list[tuple[str, tuple]]:
        """(kernel name, cuLaunchKernel arguments) of each launch, in order."""
        return [(self.functions[int(args[0]) - 1], args) for name, args in self.calls if name == "cuLaunchKernel"]

    def _answer(self, name: str, args: tuple) -> tuple:
        if name == "cuMemAlloc":
            self.next_address += args[0]
            return (self.next_address,)
        if name == "cuModuleGetFunction":
            self.functions.append(args[1].decode())
            return (driver.CUfunction(len(self.functions)),)
        if name == "cuStreamCreate":
            self.streams += 1
            return (driver.CUstream(self.streams),)
        if name == "cuMemcpyHtoDAsync":
            self.uploads.append(ctypes.string_at(args[1], args[2]))
        if name == "cuMemcpyDtoHAsync":
            ctypes.memset(args[0], 0, args[2])  # the device memory reads as zeros
        return {"cuDeviceGet": (driver.CUdevice(0),), "cuDevicePrimaryCtxRetain": (driver.CUcontext(),),
                "cuModuleLoadData": (driver.CUmodule(),),
                "cuEventCreate": (driver.CUevent(),),
                "cuEventElapsedTime": (2.0,)}.get(name, ())


@pytest.fixture
def device(monkeypatch):
    monkeypatch.setattr(launch, "kernel_binary", lambda desc: desc.name.encode())  # no compiler needed
    return CudaDevice(DeviceStatus(True, "", "checking driver", "sm_90"), driver=CheckingDriver())


def _kernel_params(desc: KernelSpec) -> dict[str, list[type]]:
    """Each kernel's parameter ctypes, read from the rendered source."""
    kinds = {"int": ctypes.c_int, "i64": ctypes.c_int64, "double": ctypes.c_double}
    out = {}
    source = render(desc).source
    for name, params in re.findall(r'extern "C" __global__ void __launch_bounds__\([^)]*\)\s*(\w+)\(([^)]*)\)', source):
        out[name] = [ctypes.c_void_p if "*" in p else kinds[p.split()[0]] for p in params.split(",")]
    return out


#: (scheme, config) -> every launcher registered, with a representative config each
LAUNCHED = [("mixpert", "level=IV"), ("int8", ""), ("tf32x3", "products=3"), ("bf16xn", "products=9"), ("bf16xn", "products=3"),
            ("ozaki2", "moduli=8"), ("split", "fp16=0.25"), ("vitbit", "bits=8"), ("vitbit", "bits=4,target=h100"),
            ("dfp", "bits=8,block=1"), ("dfp", "bits=16,block=tensor"), ("dfp", "bits=16,block=2,out=dfp"), ("fp16x2", "products=3"), ("fp16x2", "products=1")]


#: launchers whose arguments are checked by their own module (with this module's driver stand-in)
CHECKED_ELSEWHERE = {"mixpert-fp64": "tests/gpu/test_gpu_mixpert_fp64.py",  # its host step reads C back
                     "complex": "tests/gpu/test_gpu_complex.py"}  # complex operands


def test_every_launcher_is_checked_here():
    assert sorted({s for s, _ in LAUNCHED} | set(CHECKED_ELSEWHERE)) == sorted(launch.kernel_schemes())


def _expected_launches(scheme, config, desc, a, b):
    m, k = a.shape
    if scheme != "split":
        return desc.launches(m, b.shape[1], k)
    from mixjit.runtime.schemes import get_scheme
    from mixjit.runtime.split.cuda.fragments import host_plan

    words = np.array(get_scheme("split").parse_config(config).words(), np.int64)
    return desc.launches(m, b.shape[1], k, host_plan(a, b, words).cols_f.size)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(37, 70, 45), (1, 1, 1), (128, 64, 32)])
@pytest.mark.parametrize("scheme,config", LAUNCHED)
def test_the_launches_match_the_kernels_the_descs_and_the_bindings(device, scheme, config, dtype, shape):
    m, k, n = shape
    rng = np.random.default_rng(m)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    c = launch.launcher_for(scheme).run(device, a, b, config)
    assert c.shape == (m, n) and c.dtype == dtype and not c.any()  # the stand-in's memory reads as zeros

    desc = launch.launcher_for(scheme).desc(config, np.dtype(dtype), "sm_90")
    params = _kernel_params(desc)
    assert sorted(params) == sorted(desc.entry_points)
    expected = _expected_launches(scheme, config, desc, a, b)
    got = device.driver.launches()
    assert [name for name, _ in got] == [e.entry for e in expected]
    for e, (name, args) in zip(expected, got):
        assert args[1:4] == e.grid and args[4:7] == e.block, name
        assert args[7] == 0, f"{name}: its shared memory is static; no dynamic shared memory is asked for"
        values, types = args[9]
        assert list(types) == params[name], name
        assert all(isinstance(v, int) for v, t in zip(values, types) if t is ctypes.c_void_p), name
        if scheme != "split":
            assert args[8] == 0, name  # everything on the stream run() queues on


def test_split_runs_its_sub_gemms_on_two_streams_between_the_packers_and_the_combine(device):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((40, 96)).astype(np.float32), rng.standard_normal((96, 24)).astype(np.float32)
    launch.launcher_for("split").run(device, a, b, "fp16=0.25")
    calls = [(name, args) for name, args in device.driver.calls
             if name in ("cuLaunchKernel", "cuEventRecord", "cuStreamWaitEvent")]
    kernels = device.driver.functions

    def label(name, args):
        if name == "cuLaunchKernel":
            return kernels[int(args[0]) - 1], int(args[8])
        return name, int(args[1 if name == "cuEventRecord" else 0])

    assert [label(*c) for c in calls] == [
        ("split_pack_a", 0), ("split_pack_b", 0),
        ("cuEventRecord", 0),  # the packers are done
        ("cuStreamWaitEvent", 1), ("int8_gemm", 1), ("cuEventRecord", 1), ("cuStreamWaitEvent", 0),
        ("cuStreamWaitEvent", 2), ("multiterm_gemm", 2), ("cuEventRecord", 2), ("cuStreamWaitEvent", 0),
        ("split_combine", 0),  # after both sub-GEMMs
    ]


def test_split_with_an_empty_part_launches_one_sub_gemm(device):
    a, b = np.ones((20, 64), np.float32), np.ones((64, 10), np.float32)
    launch.launcher_for("split").run(device, a, b, "fp16=0")
    assert [name for name, _ in device.driver.launches()] == ["split_pack_a", "split_pack_b", "int8_gemm",
                                                              "split_combine"]
    combine = device.driver.launches()[-1][1][9][0]
    assert combine[5:7] == (1, 0)  # has_i8, has_f16


def test_buffers_are_reused_and_returned(device):
    a, b = np.ones((50, 40), np.float32), np.ones((40, 30), np.float32)
    runner = launch.launcher_for("mixpert")
    runner.run(device, a, b, "level=IV")
    allocations = device.pool.allocations
    runner.run(device, a + 1, b, "level=IV")
    assert device.pool.allocations == allocations == 8  # A, B, 2 plane sets, 2 exponent grids, C, status
    assert sum(1 for name, _ in device.driver.calls if name == "cuMemFree") == 0
    assert sum(1 for name, _ in device.driver.calls if name == "cuModuleLoadData") == 1


def status_word_reads(device, monkeypatch, code: int = 1) -> None:
    """Make every status word ``device`` downloads read ``code`` (the kernels set a status bit)."""
    real = device.download

    def status(buf, shape, dtype, stream=0):
        out = real(buf, shape, dtype, stream)
        if shape == (1,):
            out[0] = code
        return out

    monkeypatch.setattr(device, "download", status)


@pytest.mark.parametrize("scheme,config", LAUNCHED)
def test_a_nonzero_status_word_hands_the_gemm_back_to_the_cpu_executor(device, monkeypatch, scheme, config):
    status_word_reads(device, monkeypatch)
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((24, 40)).astype(np.float32), rng.standard_normal((40, 16)).astype(np.float32)
    with pytest.raises(launch.HandBack, match=r"kernel status 1 \(an inf/NaN input\)"):
        launch.launcher_for(scheme).run(device, a, b, config)
    assert device.pool.cached_bytes > 0 and device.pool.cached_bytes == sum(
        cap * len(v) for cap, v in device.pool._cached.items())  # every buffer went back to the pool
    c, where = launch.CudaBackend(device, inexact=True).gemm(scheme, a, b, config)
    assert where == "cpu: kernel status 1 (an inf/NaN input)"
    assert c.tobytes() == launch.cpu_gemm(scheme, a, b, config).tobytes()


def test_status_words_are_spelled_out():
    assert launch.status_reason(2 | 4) == "kernel status 6 (a fallback tile, an exponent span too wide)"
    assert launch.status_reason(8) == "kernel status 8 (a leading part rounds to inf)"
    assert launch.status_reason(64) == "kernel status 64 (unknown bits)"


def test_a_k_beyond_exact_int32_sums_is_handed_back(device, monkeypatch):
    from mixjit.runtime.ozaki2.cuda import desc as desc_ozaki2

    monkeypatch.setattr(desc_ozaki2, "MAX_K", 31)
    with pytest.raises(launch.HandBack, match="K=32 > 31"):
        launch.launcher_for("ozaki2").run(device, np.ones((8, 32), np.float32), np.ones((32, 8), np.float32),
                                          "moduli=8")
    assert not device.driver.launches()


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ozaki2_host_steps_around_the_model_residues_give_the_cpu_executors_bits(device, monkeypatch, dtype):
    """The launcher's host shifts and CRT, fed the residues the CPU model of the kernels computes
    (runtime/ozaki2/cuda/fragments.py) where the device's would be: C bit-equal to the executor's."""
    from mixjit.runtime.ozaki2.cuda import fragments as fi

    rng = np.random.default_rng(4)
    a = (rng.standard_normal((21, 40)) * 2.0 ** rng.integers(-30, 31, (21, 1))).astype(dtype)
    b = rng.uniform(-1, 1, (40, 13)).astype(dtype)
    desc = launch.launcher_for("ozaki2").desc("moduli=12", np.dtype(dtype), "sm_90")
    _, residues, status = fi.run_ozaki2(a, b, desc)
    assert status == 0
    real = device.download

    def device_residues(buf, shape, dt, stream=0):
        return residues.copy() if shape == residues.shape else real(buf, shape, dt, stream)

    monkeypatch.setattr(device, "download", device_residues)
    c = launch.launcher_for("ozaki2").run(device, a, b, "moduli=12")
    assert c.dtype == dtype and c.tobytes() == launch.cpu_gemm("ozaki2", a, b, "moduli=12").tobytes()
    residues[0, 3, 4] = (residues[0, 3, 4] + 1) % 256  # one wrong residue: the reconstruction notices
    assert launch.launcher_for("ozaki2").run(device, a, b, "moduli=12")[3, 4] != c[3, 4]


def test_split_uploads_the_executors_k_split_scales_and_shifts(device):
    from mixjit.runtime.schemes import get_scheme
    from mixjit.runtime.split.cuda.fragments import host_plan

    rng = np.random.default_rng(6)
    a = (rng.standard_normal((30, 80)) * 2.0 ** rng.integers(-20, 21, (30, 1))).astype(np.float32)
    b = rng.standard_normal((80, 14)).astype(np.float32)
    launch.launcher_for("split").run(device, a, b, "fp16=0.25,width=16")
    plan = host_plan(a, b, np.array(get_scheme("split").parse_config("fp16=0.25,width=16").words(), np.int64))
    assert 0 < plan.cols_f.size < 80
    want = [a, b, plan.cols_i.astype(np.int32), plan.cols_f.astype(np.int32), plan.scale_a, plan.scale_b,
            plan.sigma_a.astype(np.int32), plan.sigma_b.astype(np.int32)]
    assert device.driver.uploads == [np.ascontiguousarray(x).tobytes() for x in want]


def test_a_site_gets_only_the_bit_exact_kernels_unless_inexact_is_asked_for(device):
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((24, 40)).astype(np.float32), rng.standard_normal((40, 16)).astype(np.float32)
    exact, inexact = launch.CudaBackend(device), launch.CudaBackend(device, inexact=True)
    for scheme, config in [("mixpert", "level=IV"), ("ozaki2", "moduli=8"), ("split", "fp16=0")]:
        assert exact.why_not(scheme, config) == "" and exact.gemm(scheme, a, b, config)[1] == "cuda"
    for scheme, config, why in [("tf32x3", "products=3", "FP32 tensor-core accumulation"),
                                ("bf16xn", "products=9", "FP32 tensor-core accumulation"),
                                ("split", "fp16=0.25", "the FP16 part's FP32 tensor-core accumulation")]:
        reason = f"{scheme}[{config}]'s kernels are not bit-equal to the CPU executor ({why})"
        assert exact.why_not(scheme, config) == reason
        c, where = exact.gemm(scheme, a, b, config)
        assert where == f"cpu: {reason}" and c.tobytes() == launch.cpu_gemm(scheme, a, b, config).tobytes()
        assert inexact.why_not(scheme, config) == "" and inexact.gemm(scheme, a, b, config)[1] == "cuda"


def test_vitbit_uploads_the_executors_scales_and_splits_b_by_the_configs_ratios(device):
    from mixjit.runtime.vitbit.cuda.desc import column_split
    from mixjit.runtime.vitbit.cuda.fragments import host_scales

    rng = np.random.default_rng(9)
    a = (rng.standard_normal((20, 48)) * 2.0 ** rng.integers(-8, 9, (20, 1))).astype(np.float32)
    b = rng.standard_normal((48, 90)).astype(np.float32)
    launch.launcher_for("vitbit").run(device, a, b, "bits=5,target=h100")
    scale_a, scale_b = host_scales(a, b, 5)
    assert device.driver.uploads == [x.tobytes() for x in (a, b, scale_a, scale_b)]
    desc = launch.launcher_for("vitbit").desc("bits=5,target=h100", np.dtype(np.float32), "sm_90")
    n1, n2, n3 = column_split(90, desc.m_ratio, desc.n_ratio, 5)
    assert (desc.m_ratio, desc.n_ratio) == (12, 2) and min(n1, n2, n3) > 0  # runtime/model/hardware.py vitbit_ratios
    pack_b, gemm = [args[9][0] for _, args in device.driver.launches()[1:]]
    assert pack_b[5:7] == (n1, n2) and gemm[6:8] == (n1, n2)
