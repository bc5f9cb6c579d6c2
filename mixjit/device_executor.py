"""The device executor: how a GEMM site routed to a device reaches it from compiled code.

The run-time entry calls executors through a table of C addresses (``mixjit.entry``). The
device executor is one more slot in that table, holding a ctypes callback with the entry's C
signature (:func:`install`). A routed site's plan row names that slot in word 0; the callback
(it takes the GIL) asks the plan table for the site's route (scheme, config, device, the code
of its CPU executor: ``DeviceLog.route``), views A, B and C in place, asks the device for
P = A @ B (``GemmDevice.gemm``: bit-equal to the scheme's CPU executor), and writes
``C = alpha * P + beta * C`` element by element in C's dtype, the arithmetic of the entry's own
executors. A call costs a ctypes round-trip (~20 µs) on top of the device's work: worth it for
the GEMMs a GPU is for. While the tuner profiles (``mixjit.entry.profiling()``), the site's
compiled CPU executor runs the call instead: it records the statistics the tuner reads (the
kernels record none). Where each call ran, and the last error, go back to the plan table
(``DeviceLog.called`` / ``DeviceLog.failed``), which owns every per-site record.
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from mixjit.entry import ENTRY_OK, NUMPY_DTYPES, executor_address, install_executor, profiling

if TYPE_CHECKING:
    from mixjit.runtime.cuda.launch import GemmDevice

__all__ = ["Route", "DeviceLog", "install", "device_gemm", "STATUS_FAILED", "PROFILING"]

STATUS_FAILED = 1
"""The device executor's status when a call could not run at all (``mixjit.backends.last_error``)."""
PROFILING = "cpu: profiling (the tuner reads the CPU executor's statistics)"
"""The ``device_calls`` key of calls a routed site ran on its CPU executor while profiling."""


class Route(NamedTuple):
    """Where a routed site's calls go: its scheme and config, the device, and the plan code of
    its CPU executor (profiling calls run there)."""

    scheme: str
    config: str
    device: "GemmDevice"
    cpu_code: int


class DeviceLog(Protocol):
    """What the device executor asks of the owner of per-site state (mixjit.plan)."""

    def route(self, site: int) -> Route | None: ...
    def called(self, site: int, where: str) -> None: ...
    def failed(self, site: int, error: BaseException, device_error: bool) -> bool:
        """Record ``error`` (``device_error``: the device failed and the call ran on the CPU);
        True for the site's first device error (the executor warns then)."""
        ...


def _view(ptr: int | None, rows: int, cols: int, s0: int, s1: int, dtype: np.dtype) -> np.ndarray:
    """A rows x cols array of ``dtype`` over foreign memory at ``ptr`` with byte strides (s0, s1)."""
    if rows == 0 or cols == 0:
        return np.empty((rows, cols), dtype)
    ptr = ptr or 0
    lo = ptr + min(0, (rows - 1) * s0) + min(0, (cols - 1) * s1)
    hi = ptr + max(0, (rows - 1) * s0) + max(0, (cols - 1) * s1) + dtype.itemsize
    raw = (ctypes.c_char * (hi - lo)).from_address(lo)
    return np.ndarray((rows, cols), dtype, buffer=raw, offset=ptr - lo, strides=(s0, s1))


def _axpby(c: np.ndarray, p: np.ndarray, alpha: float, beta: float) -> None:
    """c = alpha * p + beta * c in c's dtype, each operation rounded on its own (the entry's
    ``_axpby``: beta == 0 overwrites c, so NaNs in c do not survive). Complex: Numba's complex
    product with ``alpha + 0i`` (and ``beta + 0i``), term by term as Numba computes it
    (``(xr*yr - xi*yi, xr*yi + xi*yr)``), never NumPy's complex multiply, whose loops may fuse."""
    if np.iscomplexobj(c):
        zero = c.real.dtype.type(0.0)
        tr, ti = _cmul(c.real.dtype.type(alpha), zero, p.real, p.imag)
        if beta != 0.0:
            ur, ui = _cmul(c.real.dtype.type(beta), zero, c.real, c.imag)
            tr, ti = tr + ur, ti + ui
        c.real[...], c.imag[...] = tr, ti
        return
    av, bv = c.dtype.type(alpha), c.dtype.type(beta)
    if beta == 0.0:
        c[...] = av * p
    else:
        c[...] = av * p + bv * c


def _c_is_p(m: int, n: int, k: int, alpha: float, beta: float, a: int | None, as0: int, as1: int, b: int | None,
            bs0: int, bs1: int, c: int | None, cs0: int, cs1: int, isz: int) -> bool:
    """The CPU executors' rule (mixjit.entry.executors._c_is_p): alpha 1, beta 0 and C overlapping
    neither operand, so C is P itself."""
    from mixjit.entry.blas import _may_overlap

    return (alpha == 1.0 and beta == 0.0
            and not _may_overlap(c or 0, m, n, cs0, cs1, a or 0, m, k, as0, as1, isz)
            and not _may_overlap(c or 0, m, n, cs0, cs1, b or 0, k, n, bs0, bs1, isz))


def _cmul(xr: Any, xi: Any, yr: np.ndarray, yi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x * y`` for complex ``x = xr + xi i`` by Numba's formula, each operation rounded on its own."""
    return np.subtract(xr * yr, xi * yi), np.add(xr * yi, xi * yr)


_log: DeviceLog | None = None


def device_gemm(site: int, dtype_code: int, m: int, n: int, k: int, alpha: float, beta: float,
                a: int | None, as0: int, as1: int, b: int | None, bs0: int, bs1: int,
                c: int | None, cs0: int, cs1: int) -> int:
    """The device executor: runs in the entry's place for a routed site; 0 or STATUS_FAILED."""
    from mixjit.runtime.cuda.launch import cpu_gemm

    log = _log
    if log is None:
        return STATUS_FAILED
    try:
        route = log.route(site)
        if route is None:
            raise RuntimeError(f"site {site} names the device executor but was never routed to a device")
        if profiling():
            status = _cpu_executor(route.cpu_code, dtype_code)(site, dtype_code, m, n, k, alpha, beta, a, as0, as1,
                                                               b, bs0, bs1, c, cs0, cs1)
            log.called(site, PROFILING)
            return status
        dt = np.dtype(NUMPY_DTYPES[dtype_code])
        if m == 0 or n == 0:
            return ENTRY_OK
        av, bv = _view(a, m, k, as0, as1, dt), _view(b, k, n, bs0, bs1, dt)
        dev = route.device
        try:
            p, where = dev.gemm(route.scheme, av, bv, route.config)
            if not isinstance(p, np.ndarray) or p.shape != (m, n) or p.dtype != dt:
                raise RuntimeError(f"device {dev.name!r} returned {getattr(p, 'shape', p)!r} "
                                   f"{getattr(p, 'dtype', '')}, not a {m}x{n} {dt} product")
        except Exception as exc:  # a device error: this call runs on the CPU, and says so
            p, where = cpu_gemm(route.scheme, av, bv, route.config), f"cpu: device error: {type(exc).__name__}: {exc}"
            if log.failed(site, exc, device_error=True):
                _warn(site, where)
        cv = _view(c, m, n, cs0, cs1, dt)
        if _c_is_p(m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1, dt.itemsize):
            cv[...] = p  # as the CPU executors write P straight into C (no multiply by 1 + 0i)
        else:
            _axpby(cv, p, alpha, beta)
        log.called(site, where)
        return ENTRY_OK
    except BaseException as exc:  # an exception must not cross the C frame: the entry reports it
        log.failed(site, exc, device_error=False)
        return STATUS_FAILED


_cpu_executors: dict[tuple[int, int], Any] = {}


def _cpu_executor(code: int, dtype_code: int) -> Any:
    """The compiled CPU executor with plan code ``code`` for entry dtype code ``dtype_code``,
    callable from Python (ctypes releases the GIL around the call)."""
    fn = _cpu_executors.get((code, dtype_code))
    if fn is None:
        fn = _cpu_executors[code, dtype_code] = _ENTRY_PROTOTYPE(executor_address(code, dtype_code))
    return fn


def _warn(site: int, what: str) -> None:
    try:
        warnings.warn(f"mixjit: GEMM site {site} {what}; it ran on the CPU executor (mixjit.backends."
                      "device_calls and last_error say more)", RuntimeWarning, stacklevel=2)
    except Exception:  # warnings turned into errors must not fail a call that succeeded
        pass


_ENTRY_PROTOTYPE = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_double, ctypes.c_double,
    ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
)
_install_lock = threading.Lock()
_callback: Any = None
_code: int | None = None


def install(log: DeviceLog) -> int:
    """The plan code of the device executor, installing the callback in the entry's executor
    table the first time (the entry itself is unchanged: it calls whatever address a slot holds);
    ``log`` is the owner of the routes and records it reads and writes."""
    global _callback, _code, _log
    with _install_lock:
        _log = log
        if _code is None:
            _callback = _ENTRY_PROTOTYPE(device_gemm)  # kept alive for the process
            address = ctypes.cast(_callback, ctypes.c_void_p).value
            _code = install_executor("device", address, {
                STATUS_FAILED: "the device executor could not run the GEMM; mixjit.backends.last_error(site) "
                               "has the exception (backend='cpu' runs the site on its CPU executor)"})
        return _code
