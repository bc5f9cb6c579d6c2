"""Which backend a ``@mixjit`` GEMM site runs on: its CPU executor, or a GEMM device (CUDA).

Each site asks for a backend: ``"auto"`` (the default: the device where one exists and has a
kernel for the site's scheme and config, else the CPU executor), ``"cpu"``, or ``"cuda"`` (a
device is required: without one, asking raises, naming the reason). The choice is made when a
plan is written (``mixjit.plan.set_plan`` calls :func:`route`) and again whenever the site's plan
or backend changes; the compiled function is never recompiled.

How a site reaches the device: the run-time entry calls executors through a table of C
addresses (``mixjit.entry``). The *device executor* is one more slot in that table, holding a
ctypes callback with the entry's C signature (:func:`install_device_executor`). A routed site's
plan row names that slot in word 0; the callback (it takes the GIL) looks up the site's scheme,
config and device, views A, B and C in place, asks the device for P = A @ B (``GemmDevice.gemm``:
bit-equal to the scheme's CPU executor), and writes ``C = alpha * P + beta * C`` element by
element in C's dtype, the arithmetic of the entry's own executors. A call costs a ctypes
round-trip (~20 µs) on top of the device's work: worth it for the GEMMs a GPU is for.

``backend_of(site)`` says what a site runs on and why (``f.sites[i].backend``);
``device_calls(site)`` counts where its calls ran (``"cuda"``, or ``"cpu: <why>"`` when the
device handed a GEMM back); ``use_device(d)`` swaps the device the sites use (tests pass a fake
one that implements ``GemmDevice`` with the CPU executor). cuda-bindings is imported only when a
site asks for a device and a CUDA driver is present (``mixjit.runtime.cuda.device.probe``).
"""

from __future__ import annotations

import ctypes
import threading
import warnings
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from mixjit.entry import (
    DTYPE_F64,
    ENTRY_OK,
    EXEC_NATIVE,
    EXEC_REFERENCE,
    executor_address,
    install_executor,
    load_executor,
    profiling,
)

if TYPE_CHECKING:
    from mixjit.plan import SitePlan
    from mixjit.runtime.cuda.launch import GemmDevice

__all__ = ["BACKENDS", "BackendChoice", "check_backend", "request", "set_backend", "route", "backend_of",
           "device_calls", "last_error", "use_device", "current_device", "NoDeviceError"]

BACKENDS = ("auto", "cpu", "cuda")
"""What a site may ask for: ``auto`` (a device where one can run it, else the CPU), ``cpu``, ``cuda``."""

STATUS_FAILED = 1
"""The device executor's status when a call could not run at all (see :func:`last_error`)."""


class NoDeviceError(RuntimeError):
    """``backend="cuda"`` was asked for where no device can run the kernels."""


@dataclass(frozen=True)
class BackendChoice:
    """What a site asked for (``requested``), what it runs on (``runs``: ``"cpu"`` or the device's
    name) and, when that is the CPU, why (``reason``)."""

    requested: str
    runs: str
    reason: str = ""

    def __str__(self) -> str:
        return self.runs if not self.reason else f"{self.runs} ({self.reason})"


def check_backend(backend: str) -> str:
    """``backend`` if it is one of ``BACKENDS``; ValueError naming the choices otherwise."""
    if backend not in BACKENDS:
        raise ValueError(f"mixjit: backend={backend!r}; choose one of {', '.join(map(repr, BACKENDS))} "
                         "('auto': CUDA where a device exists, else the CPU executor)")
    return backend


_lock = threading.RLock()
_requested: dict[int, str] = {}
_choices: dict[int, BackendChoice] = {}
_routes: dict[int, tuple[str, str, "GemmDevice", int]] = {}
"""site -> (scheme, config, device, plan code of the site's CPU executor)"""
_calls: dict[int, Counter] = {}
_errors: dict[int, BaseException] = {}
_device: "GemmDevice | None" = None


def current_device() -> "GemmDevice":
    """The device the sites use: the one :func:`use_device` set, else device 0 through CUDA."""
    global _device
    with _lock:
        if _device is None:
            from mixjit.runtime.cuda.launch import CudaBackend

            _device = CudaBackend()
        return _device


def require_device() -> None:
    """NoDeviceError with the reason when the current device cannot run kernels."""
    ok, why = current_device().status()
    if not ok:
        raise NoDeviceError(f"mixjit: backend='cuda' needs a CUDA device, but {why}; use backend='auto' "
                            "(CUDA where a device exists, else the CPU executor) or backend='cpu'")


def request(site: int, backend: str) -> None:
    """Record that ``site`` asks for ``backend``; it applies from the site's next plan."""
    with _lock:
        _requested[site] = check_backend(backend)


def set_backend(site: int, backend: str) -> BackendChoice | None:
    """Make ``site`` ask for ``backend`` and route its current plan again (no recompilation);
    returns what it now runs on (None while it has no plan)."""
    from mixjit.plan import get_plan, set_plan

    check_backend(backend)
    with _lock:
        before = _requested.get(site)
        _requested[site] = backend
    plan = get_plan(site)
    try:
        if plan is not None:
            set_plan(site, plan)  # takes the plan lock, then this module's (never the other way round)
    except BaseException:  # e.g. NoDeviceError: the site keeps what it asked for before
        with _lock:
            if before is None:
                _requested.pop(site, None)
            else:
                _requested[site] = before
        raise
    return _choices.get(site)


def _choose(requested: str, plan: "SitePlan") -> tuple[BackendChoice, "GemmDevice | None"]:
    if requested == "cpu":
        return BackendChoice(requested, "cpu", "backend='cpu' was asked for"), None
    dev = current_device()
    ok, why = dev.status()
    if not ok:
        if requested == "cuda":
            require_device()
        return BackendChoice(requested, "cpu", why), None
    if plan.executor != plan.scheme:
        return BackendChoice(requested, "cpu", f"the plan runs the {plan.executor} executor"), None
    why = dev.why_not(plan.scheme, plan.config)
    if why:
        return BackendChoice(requested, "cpu", why), None
    return BackendChoice(requested, dev.name), dev


def route(site: int, plan: "SitePlan", row: np.ndarray) -> np.ndarray:
    """The plan row ``site`` should run for ``plan`` (its CPU row ``row``): the same row, or, when
    the site runs on a device, the row with the device executor's code in word 0. Called by
    ``mixjit.plan.set_plan`` before it writes the row; records :func:`backend_of`."""
    with _lock:
        choice, dev = _choose(_requested.get(site, "auto"), plan)
        cpu_code = int(row[0])
        if dev is not None and cpu_code in (EXEC_NATIVE, EXEC_REFERENCE):
            choice = BackendChoice(choice.requested, "cpu", "the entry's built-in BLAS executors stay on the CPU")
            dev = None
        _choices[site] = choice
        if dev is None:
            return row
        load_executor(cpu_code)  # profiling calls go to it (see _device_gemm)
        _routes[site] = (plan.scheme, plan.config, dev, cpu_code)  # before the row names the device executor
        out = np.array(row, dtype=np.int64)
        out[0] = install_device_executor()
        return out


def backend_of(site: int) -> BackendChoice | None:
    """What ``site`` runs on and why (None before its first plan)."""
    return _choices.get(site)


def device_calls(site: int) -> dict[str, int]:
    """Where ``site``'s device-executor calls ran: ``{"cuda": n, "cpu: <why>": m}``."""
    return dict(_calls.get(site, {}))


def last_error(site: int) -> BaseException | None:
    """The last exception the device executor met for ``site`` (a device error it recovered from
    on the CPU, or the one that failed the call with ``STATUS_FAILED``)."""
    return _errors.get(site)


@contextmanager
def use_device(dev: "GemmDevice") -> Iterator["GemmDevice"]:
    """Make the sites use ``dev`` (a ``GemmDevice``) inside the block: sites routed from here on
    go to it, and those routed to it are routed again on exit."""
    global _device
    with _lock:
        saved, _device = _device, dev
    try:
        yield dev
    finally:
        from mixjit.plan import get_plan, set_plan

        with _lock:
            _device = saved
            stale = [s for s, r in _routes.items() if r[2] is dev]
        for site in stale:
            plan = get_plan(site)
            if plan is not None:
                set_plan(site, plan)


# -- the device executor (the ctypes callback in the entry's executor table) -------------------

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
    ``_axpby``: beta == 0 overwrites c, so NaNs in c do not survive)."""
    av, bv = c.dtype.type(alpha), c.dtype.type(beta)
    if beta == 0.0:
        c[...] = av * p
    else:
        c[...] = av * p + bv * c


def _device_gemm(site: int, dtype_code: int, m: int, n: int, k: int, alpha: float, beta: float,
                 a: int | None, as0: int, as1: int, b: int | None, bs0: int, bs1: int,
                 c: int | None, cs0: int, cs1: int) -> int:
    """The device executor: runs in the entry's place for a routed site; 0 or STATUS_FAILED.
    While the tuner profiles (``mixjit.entry.profiling()``), the site's compiled CPU executor runs
    the call instead: it records the statistics the tuner reads (the kernels record none)."""
    from mixjit.runtime.cuda.launch import cpu_gemm

    try:
        route_ = _routes.get(site)
        if route_ is None:
            raise RuntimeError(f"site {site} names the device executor but was never routed to a device")
        scheme, config, dev, cpu_code = route_
        if profiling():
            status = _cpu_executor(cpu_code, dtype_code)(site, dtype_code, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1,
                                             c, cs0, cs1)
            _calls.setdefault(site, Counter())[PROFILING] += 1
            return status
        dt = np.dtype(np.float64 if dtype_code == DTYPE_F64 else np.float32)
        if m == 0 or n == 0:
            return ENTRY_OK
        av, bv = _view(a, m, k, as0, as1, dt), _view(b, k, n, bs0, bs1, dt)
        try:
            p, where = dev.gemm(scheme, av, bv, config)
            if not isinstance(p, np.ndarray) or p.shape != (m, n) or p.dtype != dt:
                raise RuntimeError(f"device {dev.name!r} returned {getattr(p, 'shape', p)!r} "
                                   f"{getattr(p, 'dtype', '')}, not a {m}x{n} {dt} product")
        except Exception as exc:  # a device error: this call runs on the CPU, and says so
            _errors[site] = exc
            p, where = cpu_gemm(scheme, av, bv, config), f"cpu: device error: {type(exc).__name__}: {exc}"
            _warn_once(site, where)
        _axpby(_view(c, m, n, cs0, cs1, dt), p, alpha, beta)
        _calls.setdefault(site, Counter())[where] += 1
        return ENTRY_OK
    except BaseException as exc:  # an exception must not cross the C frame: the entry reports it
        _errors[site] = exc
        return STATUS_FAILED


PROFILING = "cpu: profiling (the tuner reads the CPU executor's statistics)"
"""The ``device_calls`` key of calls a routed site ran on its CPU executor while profiling."""

_cpu_executors: dict[tuple[int, int], Any] = {}


def _cpu_executor(code: int, dtype_code: int) -> Any:
    """The compiled CPU executor with plan code ``code`` for entry dtype code ``dtype_code``,
    callable from Python (ctypes releases the GIL around the call)."""
    fn = _cpu_executors.get((code, dtype_code))
    if fn is None:
        fn = _cpu_executors[code, dtype_code] = _ENTRY_PROTOTYPE(executor_address(code, dtype_code))
    return fn


_warned: set[int] = set()


def _warn_once(site: int, what: str) -> None:
    if site in _warned:
        return
    _warned.add(site)
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
_callback: Any = None
_code: int | None = None


def install_device_executor() -> int:
    """The plan code of the device executor, installing the callback in the entry's executor
    table the first time (the entry itself is unchanged: it calls whatever address a slot holds)."""
    global _callback, _code
    with _lock:
        if _code is None:
            _callback = _ENTRY_PROTOTYPE(_device_gemm)  # kept alive for the process
            address = ctypes.cast(_callback, ctypes.c_void_p).value
            _code = install_executor("device", address, {
                STATUS_FAILED: "the device executor could not run the GEMM; mixjit.backends.last_error(site) "
                               "has the exception (backend='cpu' runs the site on its CPU executor)"})
        return _code
