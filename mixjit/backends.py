"""Which backend a ``@mixjit`` GEMM site runs on: its CPU executor, or a GEMM device (CUDA).

Each site asks for a backend: ``"auto"`` (the default: the device where one exists and has a
kernel for the site's scheme and config, else the CPU executor), ``"cpu"``, or ``"cuda"`` (a
device is required: without one, asking raises, naming the reason). The choice is made when a
plan is written and again whenever the site's plan or backend changes; the compiled function is
never recompiled.

This module is the user's door to it: the choice itself is a pure policy
(mixjit.backend_policy), every per-site record (request, choice, route, device calls, errors)
is the plan table's (mixjit.plan), and the ctypes callback through which compiled code reaches
the device is mixjit.device_executor. ``backend_of(site)`` says what a site runs on and why
(``f.sites[i].backend``); ``device_calls(site)`` counts where its calls ran (``"cuda"``, or
``"cpu: <why>"`` when the device handed a GEMM back); ``use_device(d)`` swaps the device the
sites use (tests pass a fake one that implements ``GemmDevice`` with the CPU executor).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from mixjit import plan
from mixjit.backend_policy import (
    BACKENDS,
    BackendChoice,
    NoDeviceError,
    check_backend,
    current_device,
    require_device,
    swap_device,
)
from mixjit.device_executor import PROFILING, STATUS_FAILED

if TYPE_CHECKING:
    from mixjit.runtime.cuda.launch import GemmDevice

__all__ = ["BACKENDS", "BackendChoice", "NoDeviceError", "check_backend", "current_device", "require_device",
           "request", "set_backend", "backend_of", "device_calls", "last_error", "use_device",
           "install_device_executor", "PROFILING", "STATUS_FAILED"]

request = plan.request
set_backend = plan.set_backend
backend_of = plan.backend_of
device_calls = plan.device_calls
last_error = plan.last_error
install_device_executor = plan.device_executor_code


@contextmanager
def use_device(dev: "GemmDevice") -> Iterator["GemmDevice"]:
    """Make the sites use ``dev`` (a ``GemmDevice``) inside the block: sites routed from here on
    go to it, and those routed to it are routed again on exit."""
    saved = swap_device(dev)
    try:
        yield dev
    finally:
        swap_device(saved)
        plan.reroute(dev)
