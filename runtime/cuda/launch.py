"""Run the generated MixPert kernels on a GPU through cuda-bindings (driver API).

**Not yet run on a GPU** (no development or CI machine has one): the tests that exercise this
module are marked ``gpu`` and skip with the reason :func:`device_status` gives.

:func:`mixpert_gemm` packs A and B on the device, runs the INT8 MMA GEMM, and reads the status
word. When the kernels hand the GEMM back (an inf/NaN input, a fallback tile, an exponent span
beyond the two-word accumulator: docs/cuda.md), or when no device exists, it runs the CPU
executor instead, so the result always follows docs/numerics.md.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from mixjit.runtime.cuda.build import build
from mixjit.runtime.cuda.desc import KernelDesc
from mixjit.runtime.cuda.emit import render

__all__ = ["NoDevice", "device_status", "device_arch", "mixpert_gemm", "KernelModule"]


class NoDevice(RuntimeError):
    """No usable CUDA device (no driver, no GPU, or cuda-bindings not installed)."""


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NoDevice("cuda-bindings is not installed (`pip install cuda-bindings`)") from exc
    return driver


def _check(result: Any, what: str) -> Any:
    """Unpack a driver call's ``(CUresult, *values)``; RuntimeError naming the call on failure."""
    err, *values = result if isinstance(result, tuple) else (result,)
    driver = _driver()
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuda: {what} failed: {err!r}")
    return values[0] if len(values) == 1 else tuple(values)


@lru_cache(maxsize=1)
def _context() -> tuple[Any, Any]:
    """(device, primary context) of device 0, made current; NoDevice with the reason if none."""
    driver = _driver()
    try:
        _check(driver.cuInit(0), "cuInit")
        if _check(driver.cuDeviceGetCount(), "cuDeviceGetCount") < 1:
            raise NoDevice("the CUDA driver reports no device")
        device = _check(driver.cuDeviceGet(0), "cuDeviceGet")
        ctx = _check(driver.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
        _check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    except NoDevice:
        raise
    except Exception as exc:  # no driver library, no device, driver errors
        raise NoDevice(f"no usable CUDA device: {exc}") from exc
    return device, ctx


def device_status() -> tuple[bool, str]:
    """(whether a CUDA device can run the kernels, why not)."""
    try:
        _context()
        arch = device_arch()
    except NoDevice as exc:
        return False, str(exc)
    if int(arch[3:]) < 80:
        return False, f"the device is {arch}; the INT8 m16n8k32 MMA kernels need sm_80 or newer"
    return True, ""


def device_arch() -> str:
    """``sm_XY`` of device 0 (the cubin target: sm_90 for every sm_9x, else sm_80)."""
    driver = _driver()
    device, _ = _context()
    attr = driver.CUdevice_attribute
    major = _check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "attr")
    minor = _check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "attr")
    return f"sm_{major}{minor}"


def _target(arch: str) -> str:
    return "sm_90" if arch.startswith("sm_9") else "sm_80"


@dataclass
class KernelModule:
    """A loaded cubin and its three entry points."""

    module: Any
    pack_a: Any
    pack_b: Any
    gemm: Any

    @staticmethod
    @lru_cache(maxsize=64)
    def load(desc: KernelDesc) -> "KernelModule":
        driver = _driver()
        _context()
        data = build(render(desc)).read_bytes()
        module = _check(driver.cuModuleLoadData(data), "cuModuleLoadData")
        get = lambda name: _check(driver.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction {name}")
        return KernelModule(module, get("mixpert_pack_a"), get("mixpert_pack_b"), get("mixpert_gemm"))


class _Buffer:
    def __init__(self, nbytes: int) -> None:
        self.driver = _driver()
        self.ptr = _check(self.driver.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc")
        self.nbytes = nbytes

    def __del__(self) -> None:
        self.driver.cuMemFree(self.ptr)


def _upload(array: np.ndarray) -> _Buffer:
    array = np.ascontiguousarray(array)
    buf = _Buffer(array.nbytes)
    _check(_driver().cuMemcpyHtoD(buf.ptr, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")
    return buf


def _download(buf: _Buffer, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    out = np.empty(shape, dtype)
    _check(_driver().cuMemcpyDtoH(out.ctypes.data, buf.ptr, out.nbytes), "cuMemcpyDtoH")
    return out


def _launch(function: Any, grid: tuple[int, int], block: tuple[int, int], args: tuple, types: tuple) -> None:
    driver = _driver()
    _check(driver.cuLaunchKernel(function, grid[0], grid[1], 1, block[0], block[1], 1, 0, 0, (args, types), 0),
           "cuLaunchKernel")


def _cpu_gemm(a: np.ndarray, b: np.ndarray, config: str) -> np.ndarray:
    from mixjit.runtime.schemes import get_scheme  # the numba executor, loaded only when needed

    scheme = get_scheme("mixpert")
    return scheme.run(a, b, scheme.parse_config(config))


def mixpert_gemm(a: np.ndarray, b: np.ndarray, config: str = "level=IV") -> tuple[np.ndarray, str]:
    """``a @ b`` under ``mixpert[config]``: (C, where it ran: ``"cuda"`` or ``"cpu: <why>"``).
    The CUDA result is bit-equal to the CPU executor's by construction (docs/cuda.md; GPU
    tests check it where a device exists)."""
    ok, why = device_status()
    if min(a.shape[0], a.shape[1], b.shape[1]) == 0:
        ok, why = False, "an empty GEMM (no kernel is launched for it)"
    if not ok:
        return _cpu_gemm(a, b, config), f"cpu: {why}"
    dtype = np.dtype(a.dtype)
    desc = KernelDesc.for_config("mixpert", config, dtype="f64" if dtype == np.float64 else "f32",
                                 arch=_target(device_arch()))
    kernels = KernelModule.load(desc)
    (m, k), n = a.shape, b.shape[1]
    bm, bn = desc.block
    tm, tk, tn = desc.tile
    m_pad, n_pad, k_pad = -(-m // bm) * bm, -(-n // bn) * bn, max(-(-k // tk), 1) * tk
    da, db = _upload(a.astype(dtype)), _upload(b.astype(dtype))
    pa = _Buffer(len(desc.a_segments) * m_pad * k_pad)
    pb = _Buffer(len(desc.b_segments) * n_pad * k_pad)
    ga, gb = _Buffer(4 * m_pad * k_pad // tk), _Buffer(4 * n_pad * k_pad // tk)
    status = _upload(np.zeros(1, np.uint32))
    out = _Buffer(m * n * dtype.itemsize)
    i64, i32, f64 = ctypes.c_int64, ctypes.c_int, ctypes.c_double
    _launch(kernels.pack_a, (k_pad // tk, m_pad // tm), (tk, tm),
            (da.ptr, k, m, k, m_pad, k_pad, pa.ptr, ga.ptr, status.ptr), (None, i64, i32, i32, i32, i32, None, None, None))
    _launch(kernels.pack_b, (k_pad // tk, n_pad // tn), (tk, tn),
            (db.ptr, n, n, k, n_pad, k_pad, pb.ptr, gb.ptr, status.ptr), (None, i64, i32, i32, i32, i32, None, None, None))
    _launch(kernels.gemm, (n_pad // bn, m_pad // bm), (desc.threads, 1),
            (pa.ptr, pb.ptr, ga.ptr, gb.ptr, m, n, m_pad, n_pad, k_pad, out.ptr, n, 1.0, 0.0, out.ptr, n, status.ptr),
            (None, None, None, None, i32, i32, i32, i32, i32, None, i64, f64, f64, None, i64, None))
    _check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")
    code = int(_download(status, (1,), np.uint32)[0])
    if code:
        return _cpu_gemm(a, b, config), f"cpu: kernel status {code} (docs/cuda.md)"
    return _download(out, (m, n), dtype), "cuda"
