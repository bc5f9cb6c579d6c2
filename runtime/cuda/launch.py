"""Run a scheme's generated CUDA kernels on a GEMM: the launcher registry and the CUDA backend.

**Never run on a GPU** (no development or CI machine here has one): the tests that launch
kernels are marked ``gpu`` and skip with the reason :func:`mixjit.runtime.cuda.device.probe`
gives; everything else is tested on the CPU (docs/cuda_launch.md).

Each scheme with kernels plugs in one :class:`KernelLauncher` (:func:`register_launcher`): it
says which configs its kernels implement (:meth:`KernelLauncher.why_not`) and queues them for
one GEMM (:meth:`KernelLauncher.prepare`, a :class:`PreparedGemm`). MixPert's is here; a new scheme's
kernels (tf32x3, bf16xN, ozaki2, split) add a launcher the same way, with no edit elsewhere.

:class:`CudaBackend` is the :class:`GemmDevice` the ``@mixjit`` sites use (mixjit/backends.py):
``gemm(scheme, A, B, config) -> (C, where)``. It runs the kernels, or the scheme's CPU executor
when there is no device, no kernel for that config, or the kernels hand the GEMM back (an
inf/NaN input, a fallback tile, an exponent span too wide: docs/cuda.md), and says so in
``where``; so C always follows docs/numerics.md.
"""

from __future__ import annotations

import ctypes
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, ClassVar, Protocol

import numpy as np

from mixjit.runtime.cuda.desc import KernelDesc, UnsupportedConfig
from mixjit.runtime.cuda.device import CudaDevice, DeviceBuffer, DeviceStatus, device, probe

__all__ = ["GemmDevice", "HandBack", "PreparedGemm", "KernelLauncher", "register_launcher", "launcher_for",
           "kernel_schemes", "MixpertLauncher", "CudaBackend", "cuda_gemm", "cpu_gemm"]


class HandBack(Exception):
    """The kernels did not compute this GEMM (the message says why); the CPU executor runs it."""


class GemmDevice(Protocol):
    """What a ``@mixjit`` site's device backend must do (the launch interface): ``name`` shown in
    ``f.sites``; ``status()`` -> (usable, why not); ``why_not(scheme, config)`` -> "" when the
    device has kernels for ``scheme[config]``, else the reason; ``gemm(scheme, A, B, config)``
    -> (A @ B bit-equal to ``scheme``'s CPU executor, ``"cuda"`` or ``"cpu: <why>"``)."""

    name: str

    def status(self) -> tuple[bool, str]: ...

    def why_not(self, scheme: str, config: str) -> str: ...

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
        (``sm_80``/``sm_90``), else why not (the site then runs the CPU executor)."""

    @abstractmethod
    def prepare(self, dev: CudaDevice, a: np.ndarray, b: np.ndarray, config: str) -> PreparedGemm:
        """Upload ``a`` (m x k) and ``b`` (k x n), non-empty and of one dtype, and take the buffers."""

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
    return _LAUNCHERS.get(scheme)


def kernel_schemes() -> tuple[str, ...]:
    """The schemes with CUDA kernels, sorted."""
    return tuple(sorted(_LAUNCHERS))


_I32, _I64, _F64, _PTR = ctypes.c_int, ctypes.c_int64, ctypes.c_double, ctypes.c_void_p


@lru_cache(maxsize=64)
def kernel_binary(desc: KernelDesc) -> bytes:
    """The cubin of ``desc`` (rendered, then built or read from the disk cache: runtime/cuda/build.py)."""
    from mixjit.runtime.cuda.build import build
    from mixjit.runtime.cuda.emit import render

    return build(render(desc)).read_bytes()


class MixpertLauncher(KernelLauncher):
    """MixPert: pack A, pack B (INT8 segment planes, per-tile exponents), the INT8 MMA GEMM with
    the exact epilogue, in ``product`` mode; a non-zero status word hands the GEMM back."""

    scheme = "mixpert"

    @staticmethod
    @lru_cache(maxsize=256)
    def desc(config: str, dtype: np.dtype, arch: str) -> KernelDesc:
        return KernelDesc.for_config("mixpert", config, dtype="f64" if np.dtype(dtype) == np.float64 else "f32",
                                     arch=arch)

    def why_not(self, config: str, dtype: np.dtype, arch: str) -> str:
        try:
            self.desc(config, dtype, arch)
        except (UnsupportedConfig, ValueError) as exc:
            return str(exc)
        return ""

    def prepare(self, dev: CudaDevice, a: np.ndarray, b: np.ndarray, config: str) -> PreparedGemm:
        from mixjit.runtime.cuda.emit import ENTRY_POINTS

        dtype = np.dtype(a.dtype)
        desc = self.desc(config, dtype, dev.status.target)
        pack_a, pack_b, gemm = dev.functions(kernel_binary(desc), ENTRY_POINTS)
        (m, k), n = a.shape, b.shape[1]
        bm, bn = desc.block
        tm, tk, tn = desc.tile
        m_pad, n_pad, k_pad = -(-m // bm) * bm, -(-n // bn) * bn, max(-(-k // tk), 1) * tk
        bufs: list[DeviceBuffer] = []

        def keep(buf: DeviceBuffer) -> DeviceBuffer:
            bufs.append(buf)
            return buf

        try:
            da, db = keep(dev.upload(a)), keep(dev.upload(b))
            pa = keep(dev.pool.take(len(desc.a_segments) * m_pad * k_pad))  # INT8 segment planes
            pb = keep(dev.pool.take(len(desc.b_segments) * n_pad * k_pad))
            ga = keep(dev.pool.take(4 * m_pad * k_pad // tk))  # int32 tile exponents
            gb = keep(dev.pool.take(4 * n_pad * k_pad // tk))
            out = keep(dev.pool.take(m * n * dtype.itemsize))
            status = keep(dev.zeros(4))
        except BaseException:
            for buf in bufs:
                dev.pool.give(buf)
            raise
        ptr = _PTR  # a device pointer argument (an int address)

        def enqueue(stream: Any) -> None:
            dev.launch(pack_a, (k_pad // tk, m_pad // tm), (tk, tm),
                       (da.ptr, k, m, k, m_pad, k_pad, pa.ptr, ga.ptr, status.ptr),
                       (ptr, _I64, _I32, _I32, _I32, _I32, ptr, ptr, ptr), stream)
            dev.launch(pack_b, (k_pad // tk, n_pad // tn), (tk, tn),
                       (db.ptr, n, n, k, n_pad, k_pad, pb.ptr, gb.ptr, status.ptr),
                       (ptr, _I64, _I32, _I32, _I32, _I32, ptr, ptr, ptr), stream)
            dev.launch(gemm, (n_pad // bn, m_pad // bm), (desc.threads, 1),
                       (pa.ptr, pb.ptr, ga.ptr, gb.ptr, m, n, m_pad, n_pad, k_pad, out.ptr, n, 1.0, 0.0, out.ptr, n,
                        status.ptr),
                       (ptr, ptr, ptr, ptr, _I32, _I32, _I32, _I32, _I32, ptr, _I64, _F64, _F64, ptr, _I64, ptr),
                       stream)

        def finish() -> np.ndarray:
            code = int(dev.download(status, (1,), np.dtype(np.uint32))[0])
            if code:
                raise HandBack(f"kernel status {code} (docs/cuda.md: 1 inf/NaN input, 2 fallback tile, "
                               "4 exponent span)")
            return dev.download(out, (m, n), dtype)

        return PreparedGemm(dev, enqueue, finish, bufs)


register_launcher(MixpertLauncher())


def cpu_gemm(scheme: str, a: np.ndarray, b: np.ndarray, config: str) -> np.ndarray:
    """``a @ b`` by ``scheme``'s CPU executor under the config labelled ``config``."""
    from mixjit.runtime.schemes import get_scheme  # the numba executors load only when needed

    s = get_scheme(scheme)
    if min(a.shape[0], a.shape[1], b.shape[1]) == 0:
        return np.zeros((a.shape[0], b.shape[1]), a.dtype)
    return s.run(a, b, s.parse_config(config))


class CudaBackend:
    """Device 0 as a :class:`GemmDevice`: the registered launchers, else the CPU executor.
    ``dev`` replaces the process's device (a test passes one on a driver stand-in)."""

    name = "cuda"

    def __init__(self, dev: CudaDevice | None = None) -> None:
        self._dev = dev

    def _status(self) -> DeviceStatus:
        return self._dev.status if self._dev is not None else probe()

    def status(self) -> tuple[bool, str]:
        s = self._status()
        return s.available, s.reason

    def why_not(self, scheme: str, config: str, dtype: np.dtype | type = np.float32) -> str:
        launcher = launcher_for(scheme)
        if launcher is None:
            return f"scheme {scheme!r} has no CUDA kernel (schemes with kernels: {', '.join(kernel_schemes())})"
        return launcher.why_not(config, np.dtype(dtype), self._status().target)

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


_BACKEND = CudaBackend()


def cuda_gemm(a: np.ndarray, b: np.ndarray, scheme: str = "mixpert", config: str = "level=IV") -> tuple[np.ndarray, str]:
    """``a @ b`` under ``scheme[config]`` on device 0: (C, ``"cuda"`` or ``"cpu: <why>"``).
    C is bit-equal to the CPU executor's (the kernels follow docs/numerics.md; the GPU tests
    check it where a device exists)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or a.dtype != b.dtype:
        raise ValueError(f"cuda_gemm: A ({a.shape}, {a.dtype}) and B ({b.shape}, {b.dtype}) must be m x k and "
                         "k x n matrices of one dtype")
    return _BACKEND.gemm(scheme, a, b, config)
