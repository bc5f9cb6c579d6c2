"""Which backend a GEMM site runs on, as a pure policy: what a site may ask for, the device the
sites use, and the choice for one request and one plan (:func:`choose`).

No per-site state lives here: each site's request, choice and route are the plan table's
(mixjit.plan), which asks this policy whenever a site's plan or backend changes. ``"auto"`` (the
default) runs a site on the device where one exists and has a kernel for its scheme and config,
else on its CPU executor; ``"cpu"`` always on the CPU; ``"cuda"`` on the device, which is then
required. cuda-bindings is imported only when a site asks for a device and a CUDA driver is
present (``mixjit.runtime.cuda.device.probe``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mixjit.entry import EXEC_NATIVE, EXEC_REFERENCE

if TYPE_CHECKING:
    from mixjit.runtime.cuda.launch import GemmDevice

__all__ = ["BACKENDS", "BackendChoice", "NoDeviceError", "check_backend", "choose", "current_device",
           "require_device", "swap_device"]

BACKENDS = ("auto", "cpu", "cuda")
"""What a site may ask for: ``auto`` (a device where one can run it, else the CPU), ``cpu``, ``cuda``."""


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


_lock = threading.Lock()
_device: "GemmDevice | None" = None


def current_device() -> "GemmDevice":
    """The device the sites use: the one :func:`swap_device` set, else device 0 through CUDA."""
    global _device
    with _lock:
        if _device is None:
            from mixjit.runtime.cuda.launch import CudaBackend

            _device = CudaBackend()
        return _device


def swap_device(dev: "GemmDevice | None") -> "GemmDevice | None":
    """Make the sites use ``dev`` from their next routing on (None: device 0 through CUDA again, when
    next asked); returns the device used before."""
    global _device
    with _lock:
        saved, _device = _device, dev
        return saved


def require_device() -> None:
    """NoDeviceError with the reason when the current device cannot run kernels."""
    ok, why = current_device().status()
    if not ok:
        raise NoDeviceError(f"mixjit: backend='cuda' needs a CUDA device, but {why}; use backend='auto' "
                            "(CUDA where a device exists, else the CPU executor) or backend='cpu'")


def choose(requested: str, plan: Any, cpu_code: int,
           dtype: Any = np.float32) -> "tuple[BackendChoice, GemmDevice | None]":
    """Where a site of element type ``dtype`` that asks for ``requested`` runs ``plan`` (a
    ``mixjit.plan.SitePlan``) whose CPU plan row names executor ``cpu_code``: the choice, and the
    device when it runs on one. NoDeviceError for ``"cuda"`` without a device."""
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
    why = dev.why_not(plan.scheme, plan.config, np.dtype(dtype))
    if why:
        return BackendChoice(requested, "cpu", why), None
    if cpu_code in (EXEC_NATIVE, EXEC_REFERENCE):
        return BackendChoice(requested, "cpu", "the entry's built-in BLAS executors stay on the CPU"), None
    return BackendChoice(requested, dev.name), dev
