"""Run a scheme's generated CUDA kernels on a GEMM: the launcher registry and the CUDA backend.

**Never run on a GPU** (no development or CI machine here has one): the tests that launch
kernels are marked ``gpu`` and skip with the reason :func:`mixjit.runtime.cuda.device.probe`
gives; everything else is tested on the CPU (docs/cuda_launch.md).

Each scheme with kernels plugs in one :class:`KernelLauncher` (:func:`register_launcher`): it
says which configs its kernels implement (:meth:`KernelLauncher.why_not`) and queues them for
one GEMM (:meth:`KernelLauncher.prepare`, a :class:`PreparedGemm`). Every family's launcher is a
:class:`DescLauncher`, whose grids, blocks and streams come from the family's desc
(``desc.launches()``, runtime/cuda/registry.py); each family's lives in its package
(runtime/mixpert/cuda/launchers.py, runtime/multiterm/cuda/launchers.py, ozaki2's, split's,
vitbit's), imported for the catalogue's families with kernels (:func:`load_launchers`).

:class:`CudaBackend` is the :class:`GemmDevice` the ``@mixjit`` sites use (mixjit/backends.py):
``gemm(scheme, A, B, config) -> (C, where)``. It runs the kernels, or the scheme's CPU executor
when there is no device, no kernel for that config, or the kernels hand the GEMM back (an
inf/NaN input, a fallback tile, an exponent span too wide, a part out of float32's range:
docs/cuda.md), and says so in
``where``; so C always follows docs/numerics.md.
"""

from __future__ import annotations

import ctypes
import importlib
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, ClassVar, Protocol

import numpy as np

from mixjit.runtime.cuda.desc import KernelSpec, Launch, UnsupportedConfig
from mixjit.runtime.cuda.device import CudaDevice, DeviceBuffer, DeviceStatus, device, probe
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.schemes import catalog

__all__ = ["GemmDevice", "HandBack", "PreparedGemm", "KernelLauncher", "DescLauncher", "BufferSet",
           "register_launcher", "launcher_for", "kernel_schemes", "kernel_desc_for", "status_reason",
           "CudaBackend", "cuda_gemm", "cpu_gemm"]


class HandBack(Exception):
    """The kernels did not compute this GEMM (the message says why); the CPU executor runs it."""


class GemmDevice(Protocol):
    """What a ``@mixjit`` site's device backend must do (the launch interface): ``name`` shown in
    ``f.sites``; ``status()`` -> (usable, why not); ``why_not(scheme, config, dtype)`` -> "" when the
    device has kernels for ``scheme[config]`` on ``dtype`` operands (the site's element type), else
    the reason; ``gemm(scheme, A, B, config)``
    -> (A @ B bit-equal to ``scheme``'s CPU executor, ``"cuda"`` or ``"cpu: <why>"``)."""

    name: str

    def status(self) -> tuple[bool, str]: ...

    def why_not(self, scheme: str, config: str, dtype: np.dtype | type = np.float32) -> str: ...

    def gemm(self, scheme: str, a: np.ndarray, b: np.ndarray, config: str) -> tuple[np.ndarray, str]: ...


@dataclass
class PreparedGemm:
    """One GEMM's kernels, prepared on a device: operands uploaded, buffers taken.
    ``enqueue(stream)`` queues the kernels (again and again, for a benchmark);
    ``finish()`` waits and returns C, or raises HandBack; ``release()`` returns the buffers."""

    device: CudaDevice
    enqueue: Callable[[Any], None]
    finish: Callable[[], np.ndarray]
    buffers: list[DeviceBuffer] = field(default_factory=list)

    def release(self) -> None:
        for buf in self.buffers:
            self.device.pool.give(buf)
        self.buffers.clear()


class KernelLauncher(ABC):
    """The CUDA kernels of one scheme (``scheme``, its registry name)."""

    scheme: ClassVar[str]

    @abstractmethod
    def why_not(self, config: str, dtype: np.dtype, arch: str) -> str:
        """"" when the kernels implement ``config`` for ``dtype`` operands on ``arch``
        (a target of runtime/cuda/desc.py's ``TARGETS``), else why not (the site then runs the CPU
        executor)."""

    @abstractmethod
    def prepare(self, dev: CudaDevice, a: np.ndarray, b: np.ndarray, config: str) -> PreparedGemm:
        """Upload ``a`` (m x k) and ``b`` (k x n), non-empty and of one dtype, and take the buffers."""

    def inexact(self, config: str) -> str:
        """"" when the kernels of ``config`` are bit-equal to the CPU executor, else how they differ
        (a float accumulator the PTX ISA does not specify: docs/cuda.md gives the bound)."""
        return ""

    def run(self, dev: CudaDevice, a: np.ndarray, b: np.ndarray, config: str) -> np.ndarray:
        """``a @ b`` on ``dev`` (HandBack when the kernels hand the GEMM back)."""
        launch = self.prepare(dev, a, b, config)
        try:
            launch.enqueue(0)
            return launch.finish()
        finally:
            launch.release()


_LAUNCHERS: dict[str, KernelLauncher] = {}
_registry_lock = threading.Lock()


def register_launcher(launcher: KernelLauncher) -> KernelLauncher:
    """Plug ``launcher`` in for its scheme; ValueError if that scheme has one already."""
    with _registry_lock:
        if launcher.scheme in _LAUNCHERS:
            raise ValueError(f"cuda: scheme {launcher.scheme!r} has a kernel launcher already "
                             f"({type(_LAUNCHERS[launcher.scheme]).__name__})")
        _LAUNCHERS[launcher.scheme] = launcher
    return launcher


def launcher_for(scheme: str) -> KernelLauncher | None:
    """The launcher of ``scheme``, or None when the scheme has no CUDA kernels."""
    if scheme not in _LAUNCHERS:
        load_launchers()
    return _LAUNCHERS.get(scheme)


def kernel_schemes() -> tuple[str, ...]:
    """The schemes with CUDA kernels, sorted."""
    return tuple(sorted(_LAUNCHERS))


_I32, _I64, _F64, _PTR = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_void_p

#: the status bits of templates/common.cuh: why the kernels hand a GEMM back to the CPU executor
STATUS_BITS = {1: "an inf/NaN input", 2: "a fallback tile", 4: "an exponent span too wide",
               8: "a leading part rounds to inf", 16: "a part below float32's normal range"}


def status_reason(code: int) -> str:
    """What a non-zero status word means (docs/cuda.md), bit by bit."""
    said = [what for bit, what in STATUS_BITS.items() if code & bit]
    return f"kernel status {code} ({', '.join(said) or 'unknown bits'})"


@lru_cache(maxsize=64)
def kernel_binary(desc: KernelSpec) -> bytes:
    """The cubin of ``desc`` (rendered, then built or read from the disk cache: runtime/cuda/build.py)."""
    from mixjit.runtime.cuda.build import build
    from mixjit.runtime.cuda.emit import render

    return build(render(desc)).read_bytes()


@lru_cache(maxsize=256)
def kernel_desc_for(scheme: str, config: str, dtype: np.dtype, arch: str) -> KernelSpec:
    """The desc the launcher of ``scheme`` runs for ``config`` and ``dtype`` operands on ``arch``
    (runtime/cuda/registry.py: one desc, hence one cubin, per config; cached)."""
    return kernel_desc(scheme, config, "f64" if np.dtype(dtype) == np.float64 else "f32", arch=arch)


class BufferSet:
    """The device buffers one GEMM takes from the pool; :meth:`release` gives them all back
    (also when preparing fails half-way)."""

    def __init__(self, dev: CudaDevice) -> None:
        self.dev, self.items = dev, []

    def keep(self, buf: DeviceBuffer) -> DeviceBuffer:
        self.items.append(buf)
        return buf

    def upload(self, array: np.ndarray) -> DeviceBuffer:
        return self.keep(self.dev.upload(array))

    def take(self, nbytes: int) -> DeviceBuffer:
        return self.keep(self.dev.pool.take(nbytes))

    def zeros(self, nbytes: int) -> DeviceBuffer:
        return self.keep(self.dev.zeros(nbytes))

    def release(self) -> None:
        for buf in self.items:
            self.dev.pool.give(buf)
        self.items.clear()


class DescLauncher(KernelLauncher):
    """A launcher whose kernels are one desc family of runtime/cuda/registry.py: it implements a
    config exactly when the family's desc accepts it, and takes every grid, block and stream from
    the desc's ``launches()`` (the one geometry source the CPU models and docs/cuda.md use too).
    Subclasses implement :meth:`queue`, the argument lists of their entry points."""

    def __init__(self, scheme: str | None = None) -> None:
        if scheme is not None:
            self.scheme = scheme  # type: ignore[misc]  # one class serves several schemes (tf32x3, bf16xn)

    def desc(self, config: str, dtype: np.dtype, arch: str) -> KernelSpec:
        return kernel_desc_for(self.scheme, config, np.dtype(dtype), arch)

    def why_not(self, config: str, dtype: np.dtype, arch: str) -> str:
        if np.dtype(dtype) not in (np.float32, np.float64):
            return f"{np.dtype(dtype)} operands (the kernels read float32 or float64)"
        try:
            self.desc(config, dtype, arch)
        except (UnsupportedConfig, ValueError) as exc:
            return str(exc)
        return ""

    def prepare(self, dev: CudaDevice, a: np.ndarray, b: np.ndarray, config: str) -> PreparedGemm:
        desc = self.desc(config, a.dtype, dev.status.target)
        functions = dict(zip(desc.entry_points, dev.functions(kernel_binary(desc), desc.entry_points)))
        bufs = BufferSet(dev)
        try:
            enqueue, finish = self.queue(dev, desc, functions, bufs, a, b, config)
        except BaseException:
            bufs.release()
            raise
        return PreparedGemm(dev, enqueue, finish, bufs.items)

    @abstractmethod
    def queue(self, dev: CudaDevice, desc: Any, functions: dict[str, Any], bufs: BufferSet, a: np.ndarray,
              b: np.ndarray, config: str) -> tuple[Callable[[Any], None], Callable[[], np.ndarray]]:
        """Upload the operands into ``bufs`` and return (enqueue(stream), finish()) as
        :class:`PreparedGemm` has them; HandBack when the kernels cannot compute this GEMM."""

    @staticmethod
    def launch(dev: CudaDevice, function: Any, geometry: Launch, args: tuple, types: tuple, stream: Any) -> None:
        """Launch one entry point with its desc geometry. ``geometry.shared_bytes`` is the kernel's
        *static* shared memory (declared in the template), so no dynamic shared memory is asked for."""
        dev.launch(function, geometry.grid, geometry.block, args, types, stream)

    @staticmethod
    def check_status(dev: CudaDevice, status: DeviceBuffer) -> None:
        """HandBack when the kernels set a status bit (the CPU executor runs the GEMM then)."""
        code = int(dev.download(status, (1,), np.dtype(np.uint32))[0])
        if code:
            raise HandBack(status_reason(code))




def load_launchers() -> None:
    """Import the ``launchers`` module of every catalogue family with kernels (each registers
    its launcher; runtime/<family>/cuda/launchers.py). Idempotent; run at import and again
    by :func:`launcher_for` for a family registered later."""
    for family in catalog.families():
        if family.cuda_package is not None:
            importlib.import_module(f"{family.cuda_package}.launchers")


load_launchers()


def cpu_gemm(scheme: str, a: np.ndarray, b: np.ndarray, config: str) -> np.ndarray:
    """``a @ b`` by ``scheme``'s CPU executor under the config labelled ``config``."""
    from mixjit.runtime.schemes import get_scheme  # the numba executors load only when needed

    s = get_scheme(scheme)
    if min(a.shape[0], a.shape[1], b.shape[1]) == 0:
        return np.zeros((a.shape[0], b.shape[1]), a.dtype)
    return s.run(a, b, s.parse_config(config))


class CudaBackend:
    """Device 0 as a :class:`GemmDevice`: the registered launchers, else the CPU executor.
    ``dev`` replaces the process's device (a test passes one on a driver stand-in).

    Only kernels bit-equal to the CPU executor run unless ``inexact`` is set: a ``@mixjit`` site
    gives the same bits on either backend (the tuner measured its error on the CPU executor), so
    tf32x3, bf16xN and split with an FP16 part stay on the CPU there; ``cuda_gemm(...,
    inexact=True)`` runs them, within docs/cuda.md's bound."""

    name = "cuda"

    def __init__(self, dev: CudaDevice | None = None, inexact: bool = False) -> None:
        self._dev, self.inexact = dev, inexact

    def _status(self) -> DeviceStatus:
        return self._dev.status if self._dev is not None else probe()

    def status(self) -> tuple[bool, str]:
        s = self._status()
        return s.available, s.reason

    def why_not(self, scheme: str, config: str, dtype: np.dtype | type = np.float32) -> str:
        launcher = launcher_for(scheme)
        if launcher is None:
            return f"scheme {scheme!r} has no CUDA kernel (schemes with kernels: {', '.join(kernel_schemes())})"
        why = launcher.why_not(config, np.dtype(dtype), self._status().target)
        if not why and not self.inexact:
            differs = launcher.inexact(config)
            if differs:
                return f"{scheme}[{config}]'s kernels are not bit-equal to the CPU executor ({differs})"
        return why

    def gemm(self, scheme: str, a: np.ndarray, b: np.ndarray, config: str) -> tuple[np.ndarray, str]:
        ok, why = self.status()
        if ok and min(a.shape[0], a.shape[1], b.shape[1]) == 0:
            ok, why = False, "an empty GEMM (no kernel is launched for it)"
        if ok:
            why = self.why_not(scheme, config, a.dtype)
            ok = not why
        if not ok:
            return cpu_gemm(scheme, a, b, config), f"cpu: {why}"
        dev = self._dev or device()
        with dev.lock:
            dev.make_current()
            try:
                return launcher_for(scheme).run(dev, a, b, config), "cuda"  # type: ignore[union-attr]
            except HandBack as exc:
                reason = str(exc)
        return cpu_gemm(scheme, a, b, config), f"cpu: {reason}"


_BACKENDS = {False: CudaBackend(), True: CudaBackend(inexact=True)}


def cuda_gemm(a: np.ndarray, b: np.ndarray, scheme: str = "mixpert", config: str = "level=IV",
              inexact: bool = False) -> tuple[np.ndarray, str]:
    """``a @ b`` under ``scheme[config]`` on device 0: (C, ``"cuda"`` or ``"cpu: <why>"``).
    C is bit-equal to the CPU executor's (the kernels follow docs/numerics.md; the GPU tests
    check it where a device exists). ``inexact=True`` also runs the kernels with a tensor-core
    FP32 accumulator (tf32x3, bf16xN, split's FP16 part): C is then within docs/cuda.md's bound."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError(f"cuda_gemm: A ({a.shape}, {a.dtype}) and B ({b.shape}, {b.dtype}) must be m x k and "
                         "k x n matrices of one dtype")
    return _BACKENDS[bool(inexact)].gemm(scheme, a, b, config)
