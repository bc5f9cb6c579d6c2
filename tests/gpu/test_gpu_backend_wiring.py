"""Backend choice at run time, tested on the CPU: a fake GemmDevice that runs the scheme's CPU
executor stands in for the GPU, so these tests prove that a routed site really goes through the
device executor (the ctypes callback in the entry's executor table), gives the CPU executor's
result bit for bit, and switches backend without recompiling."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from numba import prange

from mixjit import backends, device_executor, entry, gemm, mixjit
from mixjit.plan import get_plan, set_plan
from mixjit.report import sites_report
from mixjit.runtime.cuda.device import probe
from mixjit.runtime.cuda.launch import cpu_gemm


class FakeDevice:
    """A GemmDevice with kernels for ``schemes``; its GEMMs run the CPU executor and are logged."""

    name = "fake"

    def __init__(self, schemes=("mixpert",), fail: Exception | None = None, where: str = "cuda",
                 refuse: str = "") -> None:
        self.schemes, self.fail, self.where, self.refuse = schemes, fail, where, refuse
        self.calls: list[tuple[str, str, tuple[int, int], tuple[int, int]]] = []
        self.asked_dtypes: set[np.dtype] = set()
        self.threads: set[int] = set()

    def status(self):
        return True, ""

    def why_not(self, scheme, config, dtype=np.float32):
        self.asked_dtypes.add(np.dtype(dtype))
        if scheme not in self.schemes:
            return f"scheme {scheme!r} has no fake kernel"
        return self.refuse if self.refuse and self.refuse in config else ""

    def gemm(self, scheme, a, b, config):
        self.calls.append((scheme, config, a.shape, b.shape))
        self.threads.add(threading.get_ident())
        if self.fail is not None:
            raise self.fail
        return cpu_gemm(scheme, np.array(a), np.array(b), config), self.where


@mixjit(schemes=("mixpert",), tune="never")
def _two_sites(a, b, c):
    p = a.T @ b  # a strided (transposed) operand
    c[1:, :] -= a[:, 1:].T @ b  # a fused update: alpha = -1, beta = 1, C a view
    return p


def _operands(seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((40, 23)).astype(np.float32)  # used as a.T: 23 x 40
    b = rng.uniform(-1, 1, (40, 17)).astype(np.float32)
    c = rng.standard_normal((23, 17)).astype(np.float32)
    return a, b, c


def _run(a, b, c):
    c = c.copy()
    p = _two_sites(a, b, c)
    return p, c


def _site_ids(fn):
    return [s.id for s in fn.sites if s.taken]


def test_a_routed_site_runs_through_the_device_callback_bit_equal_without_recompiling():
    a, b, c0 = _operands()
    fake = FakeDevice()
    with backends.use_device(fake):
        _run(a, b, c0)  # compiles once; the sites' plans are routed to the fake device
        sites = _site_ids(_two_sites)
        for sid in sites:  # routed, whatever an earlier test left behind
            backends.set_backend(sid, "auto")
        fake.calls.clear()
        p_dev, c_dev = _run(a, b, c0)
        assert len(fake.calls) == 2 and {call[0] for call in fake.calls} == {"mixpert"}
        assert [(s.backend.runs, s.backend.reason) for s in _two_sites.sites] == [("fake", ""), ("fake", "")]
        assert sites_report(_two_sites).count("] on fake") == 2
        code = backends.install_device_executor()
        assert all(entry.plan_row(s)[0] == code for s in sites)
        assert all(backends.device_calls(s).get("cuda", 0) >= 1 for s in sites)

        for sid in sites:
            backends.set_backend(sid, "cpu")
        p_cpu, c_cpu = _run(a, b, c0)
        assert len(fake.calls) == 2  # the CPU executor ran, not the device
        assert all(entry.plan_row(s)[0] == entry.EXECUTORS["mixpert"] for s in sites)
        assert [s.backend.runs for s in _two_sites.sites] == ["cpu", "cpu"]
        assert " on " not in sites_report(_two_sites)
    assert len(_two_sites.overloads) == 1  # one compilation served both backends
    assert p_dev.tobytes() == p_cpu.tobytes() and c_dev.tobytes() == c_cpu.tobytes()
    config = get_plan(sites[0]).config
    assert p_dev.tobytes() == gemm(np.ascontiguousarray(a.T), b, "mixpert", config).tobytes()
    want = c0.copy()
    want[1:, :] = want[1:, :] - gemm(np.ascontiguousarray(a[:, 1:].T), b, "mixpert", config)
    assert c_dev.tobytes() == want.tobytes()


def test_leaving_use_device_routes_the_sites_back():
    a, b, c0 = _operands(1)
    fake = FakeDevice()
    with backends.use_device(fake):
        _run(a, b, c0)
        for sid in _site_ids(_two_sites):
            backends.set_backend(sid, "auto")
        assert {s.backend.runs for s in _two_sites.sites} == {"fake"}
    calls = len(fake.calls)
    _run(a, b, c0)
    assert len(fake.calls) == calls
    assert all(s.backend.runs == "cpu" for s in _two_sites.sites)


def test_a_device_error_runs_the_call_on_the_cpu_and_says_so():
    a, b, c0 = _operands(2)
    _run(a, b, c0)
    expected = _run(a, b, c0)
    fake = FakeDevice(fail=RuntimeError("cuLaunchKernel failed: CUDA_ERROR_LAUNCH_FAILED"))
    with backends.use_device(fake):
        sites = _site_ids(_two_sites)
        for sid in sites:
            backends.set_backend(sid, "auto")
        with pytest.warns(RuntimeWarning, match="device error"):
            got = _run(a, b, c0)
        assert fake.calls
        for sid in sites:
            assert isinstance(backends.last_error(sid), RuntimeError)
            assert any(k.startswith("cpu: device error: RuntimeError: cuLaunchKernel") for k in backends.device_calls(sid))
    assert all(x.tobytes() == y.tobytes() for x, y in zip(got, expected))


def test_handed_back_gemms_and_configs_without_a_kernel_are_counted_and_explained():
    a, b, c0 = _operands(3)
    with backends.use_device(FakeDevice(where="cpu: kernel status 1 (inf/NaN input)")):
        _run(a, b, c0)
        sites = _site_ids(_two_sites)
        before = backends.device_calls(sites[0]).get("cpu: kernel status 1 (inf/NaN input)", 0)
        for sid in sites:
            backends.set_backend(sid, "auto")
        _run(a, b, c0)
        assert backends.device_calls(sites[0])["cpu: kernel status 1 (inf/NaN input)"] == before + 1
    config = get_plan(sites[0]).config
    fake = FakeDevice(refuse=config)
    with backends.use_device(fake):
        choice = backends.set_backend(sites[0], "cuda")
        assert (choice.requested, choice.runs, choice.reason) == ("cuda", "cpu", config)
        assert entry.plan_row(sites[0])[0] == entry.EXECUTORS["mixpert"]


def test_the_device_executor_reports_a_call_it_cannot_run():
    code = backends.install_device_executor()
    assert code not in entry.EXECUTORS.values() and code == backends.install_device_executor()
    unrouted = entry.new_site()
    status = device_executor.device_gemm(unrouted, entry.DTYPE_F32, 2, 2, 2, 1.0, 0.0, 0, 8, 4, 0, 8, 4, 0, 8, 4)
    assert status == backends.STATUS_FAILED
    assert "never routed" in str(backends.last_error(unrouted))
    assert "last_error(site)" in entry.ENTRY_ERRORS[entry.executor_status(code, backends.STATUS_FAILED)]


def test_backend_values_are_checked():
    with pytest.raises(ValueError, match="backend='gpu'; choose one of 'auto', 'cpu', 'cuda'"):
        mixjit(backend="gpu")
    with pytest.raises(ValueError, match="choose one of"):
        backends.set_backend(entry.new_site(), "GPU")


@pytest.mark.skipif(probe().available, reason="a CUDA device is present")
def test_without_a_device_auto_runs_the_cpu_and_cuda_is_refused_with_the_reason():
    status = probe()
    assert not status.available and "libcuda" in status.reason
    with pytest.raises(backends.NoDeviceError, match="needs a CUDA device, but no CUDA driver"):
        mixjit(backend="cuda")
    a, b, c0 = _operands(4)
    _run(a, b, c0)
    for sid in _site_ids(_two_sites):
        choice = backends.set_backend(sid, "auto")
        assert (choice.runs, choice.reason) == ("cpu", status.reason)
        with pytest.raises(backends.NoDeviceError, match="use backend='auto'"):
            backends.set_backend(sid, "cuda")
        set_plan(sid, get_plan(sid))  # as the tuner does: the refused request was not kept
        assert backends.backend_of(sid) == choice


def test_while_profiling_a_routed_site_runs_its_compiled_cpu_executor_which_records_statistics():
    a, b, c0 = _operands(5)
    fake = FakeDevice()
    with backends.use_device(fake):
        _run(a, b, c0)
        sites = _site_ids(_two_sites)
        for sid in sites:
            backends.set_backend(sid, "auto")
        want = _run(a, b, c0)
        entry.reset_profile(sites)
        entry.set_profiling(True)
        try:
            calls = len(fake.calls)
            got = _run(a, b, c0)
        finally:
            entry.set_profiling(False)
        assert len(fake.calls) == calls  # the device did not run them
        assert all(backends.device_calls(s)[backends.PROFILING] >= 1 for s in sites)
        assert all(entry.site_stats(s).any() for s in sites)  # the MixPert executor's statistics
        assert [entry.shape_log(s)[0][0][:3] for s in sites] == [(23, 17, 40), (22, 17, 40)]  # (m, n, k)
    assert all(x.tobytes() == y.tobytes() for x, y in zip(got, want))


@mixjit(schemes=("mixpert",), tune="never", parallel=True)
def _batched(a, b, out):
    for i in prange(a.shape[0]):
        out[i] = a[i] @ b[i]
    return out


def test_a_site_inside_prange_reaches_the_device_from_the_worker_threads():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((6, 9, 33)).astype(np.float32)
    b = rng.standard_normal((6, 33, 5)).astype(np.float32)
    fake = FakeDevice()
    with backends.use_device(fake):
        _batched(a, b, np.zeros((6, 9, 5), np.float32))
        (sid,) = _site_ids(_batched)
        backends.set_backend(sid, "auto")
        fake.calls.clear()
        got = _batched(a, b, np.zeros((6, 9, 5), np.float32))
        assert len(fake.calls) == 6 and backends.backend_of(sid).runs == "fake"
        assert fake.threads - {threading.get_ident()}, "no call came from a Numba worker thread"
    config = get_plan(sid).config
    for i in range(6):
        assert got[i].tobytes() == gemm(a[i], b[i], "mixpert", config).tobytes()


@mixjit(schemes=("complex",), tune="never")
def _complex_sites(a, b, c):
    p = a @ b
    c[1:, :] -= a[1:, :] @ b  # a fused update: alpha = -1, beta = 1
    return p


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf * 0 in the update, as on the CPU
def test_a_complex_site_is_routed_with_its_dtype_and_updates_c_as_the_cpu_executor_does():
    """The policy asks the device with the site's dtype (complex64), the routed site runs through
    the device executor, and its C = alpha*P + beta*C is Numba's complex arithmetic bit for bit,
    also where P's parts are infinite or NaN (NumPy's complex multiply may differ there)."""
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((9, 7)) + 1j * rng.standard_normal((9, 7))).astype(np.complex64)
    b = (rng.standard_normal((7, 5)) + 1j * rng.standard_normal((7, 5))).astype(np.complex64)
    b[0, 0] = complex(np.inf, 1.0)  # a non-finite part in some products
    c0 = (rng.standard_normal((9, 5)) + 1j * rng.standard_normal((9, 5))).astype(np.complex64)
    c0[2, 3] = complex(np.nan, -0.0)
    fake = FakeDevice(schemes=("complex",))
    with backends.use_device(fake):
        c_dev = c0.copy()
        p_dev = _complex_sites(a, b, c_dev)
        sites = _site_ids(_complex_sites)
        for sid in sites:
            backends.set_backend(sid, "auto")
        before = len(fake.calls)
        c_dev = c0.copy()
        p_dev = _complex_sites(a, b, c_dev)
        assert [backends.backend_of(s).runs for s in sites] == ["fake", "fake"]
        assert np.dtype(np.complex64) in fake.asked_dtypes and len(fake.calls) - before == 2
        for sid in sites:
            backends.set_backend(sid, "cpu")
        c_cpu = c0.copy()
        p_cpu = _complex_sites(a, b, c_cpu)
        for sid in sites:
            backends.set_backend(sid, "auto")
    assert p_dev.tobytes() == p_cpu.tobytes()
    assert c_dev.tobytes() == c_cpu.tobytes()
