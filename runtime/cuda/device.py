"""The CUDA device the generated kernels run on: detection, buffers, streams, launches.

**Never run on a GPU** (no development or CI machine here has one): everything that needs a
device is exercised only by the tests marked ``gpu``, which skip with :func:`probe`'s reason.

:func:`probe` says whether device 0 can run the kernels and, if not, why; it never raises and
imports cuda-bindings only once the CUDA driver library itself loads, so a machine without a
driver pays one failed ``dlopen``. :func:`device` returns the process's :class:`CudaDevice`
(the driver API through cuda-bindings), which hands out device buffers from a
:class:`BufferPool` (reused across GEMMs instead of ``cuMemAlloc``/``cuMemFree`` per call),
creates streams on demand, and runs independent parts of one GEMM on their own streams
(:meth:`CudaDevice.concurrently`: the split scheme's INT8 and FP16 parts).
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from mixjit.runtime.cuda.desc import ARCHS, target_for

__all__ = ["NoDevice", "DeviceStatus", "probe", "device", "CudaDevice", "BufferPool", "DeviceBuffer",
           "MIN_ARCH", "DRIVER_LIBRARY", "classify"]

#: the oldest architecture the kernels run on (INT8 m16n8k32 MMA)
MIN_ARCH = 80
#: the CUDA driver library (Linux); its absence is the common "no GPU here" case
DRIVER_LIBRARY = "libcuda.so.1"


class NoDevice(RuntimeError):
    """No usable CUDA device (no driver, no GPU, an old GPU, or cuda-bindings not installed)."""


@dataclass(frozen=True)
class DeviceStatus:
    """Whether device 0 can run the kernels: ``reason`` says why not (empty when it can);
    ``name`` and ``arch`` (``sm_90``, from its compute capability) describe the device when one was
    found."""

    available: bool
    reason: str = ""
    name: str = ""
    arch: str = ""

    @property
    def target(self) -> str:
        """The cubin target the kernels are built for on this device (a key of runtime/cuda/desc.py's
        TARGETS: ``sm_80`` on cc 8.x, ``sm_90`` on 9.x, ``sm_100a`` on 10.0, ``sm_103a`` on 10.3,
        ``sm_120`` on 12.x); empty when none loads on it. Where no device was found it is the
        first target (``sm_80``), which a config's kernels are checked against all the same."""
        if not re.fullmatch(r"sm_\d\d+", self.arch):
            return ARCHS[0]
        major, minor = divmod(int(self.arch[3:]), 10)  # sm_{major}{minor}: the minor is one digit
        target = target_for(major, minor)
        return target.arch if target else ""


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NoDevice("cuda-bindings is not installed (`pip install 'mixjit[cuda]'` or "
                       "`pip install cuda-bindings`)") from exc
    return driver


def check(result: Any, what: str) -> Any:
    """Unpack a driver call's ``(CUresult, *values)``; RuntimeError naming the call on failure."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        raise RuntimeError(f"cuda: {what} failed: {err!r}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


@lru_cache(maxsize=1)
def probe() -> DeviceStatus:
    """Whether device 0 can run the kernels, and why not; cached for the process, never raises."""
    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError as exc:
        return DeviceStatus(False, f"no CUDA driver: {DRIVER_LIBRARY} cannot be loaded ({exc}); "
                                   "this machine has no NVIDIA driver or GPU")
    try:
        driver = _driver()
        check(driver.cuInit(0), "cuInit")
        if check(driver.cuDeviceGetCount(), "cuDeviceGetCount") < 1:
            return DeviceStatus(False, "the CUDA driver reports no device")
        dev = check(driver.cuDeviceGet(0), "cuDeviceGet")
        attr = driver.CUdevice_attribute
        major = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attr")
        minor = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attr")
        raw = check(driver.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = bytes(raw).split(b"\0", 1)[0].decode(errors="replace")
    except NoDevice as exc:
        return DeviceStatus(False, str(exc))
    except Exception as exc:  # driver errors: no device, a driver too old for cuda-bindings, ...
        return DeviceStatus(False, f"no usable CUDA device: {exc}")
    return classify(name, major, minor)


def classify(name: str, major: int, minor: int) -> DeviceStatus:
    """Whether a device of compute capability ``major.minor`` runs the kernels, and on which target:
    they are built as cubins (no PTX) for the targets of runtime/cuda/desc.py's TARGETS, each of
    which loads on the capabilities its ``loads_on`` says (an ``a`` target on one capability only)."""
    arch = f"sm_{major}{minor}"
    if 10 * major + minor < MIN_ARCH:
        return DeviceStatus(False, f"device 0 ({name}) is {arch}; the kernels need sm_{MIN_ARCH} or newer "
                                   "(INT8 m16n8k32 MMA)", name, arch)
    target = target_for(major, minor)
    if target is None:
        return DeviceStatus(False, f"device 0 ({name}) is {arch} (compute capability {major}.{minor}); the kernels "
                                   f"are built as {', '.join(ARCHS)} cubins, none of which loads on it: add a target "
                                   "for it to TARGETS in runtime/cuda/desc.py", name, arch)
    return DeviceStatus(True, "", name, arch)


@dataclass
class DeviceBuffer:
    """``nbytes`` of device memory at ``ptr`` (``capacity`` bytes allocated), lent by a pool."""

    ptr: int
    nbytes: int
    capacity: int


class BufferPool:
    """Device buffers reused across GEMMs: :meth:`take` lends a buffer of at least the bytes
    asked for (capacities are powers of two from 256 B, so shapes that vary a little reuse one
    allocation), :meth:`give` takes it back. At most ``keep_bytes`` stay cached; when an
    allocation fails the cache is freed and the allocation tried once more. ``allocate(nbytes)
    -> address`` and ``free(address)`` are the device's (a test passes its own). Thread-safe."""

    MIN_CAPACITY = 256

    def __init__(self, allocate: Callable[[int], int], free: Callable[[int], None],
                 keep_bytes: int = 1 << 30) -> None:
        self._allocate, self._free, self.keep_bytes = allocate, free, keep_bytes
        self._cached: dict[int, list[int]] = {}
        self._lock = threading.Lock()
        self.cached_bytes = 0
        self.allocations = 0

    @classmethod
    def capacity_for(cls, nbytes: int) -> int:
        """The capacity a request of ``nbytes`` gets: the next power of two, at least 256."""
        return max(cls.MIN_CAPACITY, 1 << max(nbytes - 1, 0).bit_length())

    def take(self, nbytes: int) -> DeviceBuffer:
        """A buffer of at least ``nbytes`` (its contents are whatever the last user left)."""
        if nbytes < 0:
            raise ValueError(f"cuda: a buffer of {nbytes} bytes")
        capacity = self.capacity_for(nbytes)
        with self._lock:
            free = self._cached.get(capacity)
            if free:
                self.cached_bytes -= capacity
                return DeviceBuffer(free.pop(), nbytes, capacity)
        try:
            ptr = self._allocate(capacity)
        except Exception:
            self.trim()
            ptr = self._allocate(capacity)
        with self._lock:
            self.allocations += 1
        return DeviceBuffer(ptr, nbytes, capacity)

    def give(self, buffer: DeviceBuffer) -> None:
        """Take ``buffer`` back: cached for the next :meth:`take`, or freed beyond ``keep_bytes``."""
        with self._lock:
            if self.cached_bytes + buffer.capacity <= self.keep_bytes:
                self._cached.setdefault(buffer.capacity, []).append(buffer.ptr)
                self.cached_bytes += buffer.capacity
                return
        self._free(buffer.ptr)

    def trim(self) -> None:
        """Free every cached buffer."""
        with self._lock:
            ptrs = [p for free in self._cached.values() for p in free]
            self._cached.clear()
            self.cached_bytes = 0
        for p in ptrs:
            self._free(p)


class CudaDevice:
    """Device 0 through the driver API (``driver``: cuda-bindings' ``driver`` module): its primary
    context, a buffer pool, streams created on demand, cubins loaded once by content. ``lock`` serialises GEMMs (a site may be called from
    several threads; each GEMM's launches and copies run under it)."""

    def __init__(self, status: DeviceStatus, driver: Any = None) -> None:
        driver = driver or _driver()  # a test passes a driver that checks the calls without a GPU
        self.driver, self.status = driver, status
        check(driver.cuInit(0), "cuInit")
        self.handle = check(driver.cuDeviceGet(0), "cuDeviceGet")
        self.context = check(driver.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self.make_current()
        self.pool = BufferPool(lambda n: int(check(driver.cuMemAlloc(n), "cuMemAlloc")),
                               lambda p: check(driver.cuMemFree(p), "cuMemFree"))
        self.lock = threading.RLock()
        self._streams: list[Any] = []
        self._functions: dict[tuple[str, tuple[str, ...]], tuple[Any, ...]] = {}

    def make_current(self) -> None:
        """Make the device's primary context current on the calling thread (each thread that
        launches needs it: a site may run on a prange worker)."""
        check(self.driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    # -- code ---------------------------------------------------------------------------------
    def functions(self, cubin: bytes, names: Sequence[str]) -> tuple[Any, ...]:
        """The kernels ``names`` of ``cubin``, loading the module once per content."""
        key = (hashlib.sha256(cubin).hexdigest(), tuple(names))
        found = self._functions.get(key)
        if found is None:
            module = check(self.driver.cuModuleLoadData(cubin), "cuModuleLoadData")
            found = self._functions[key] = tuple(
                check(self.driver.cuModuleGetFunction(module, n.encode()), f"cuModuleGetFunction {n}") for n in names)
        return found

    # -- memory -------------------------------------------------------------------------------
    def upload(self, array: np.ndarray, stream: Any = 0) -> DeviceBuffer:
        """A pooled buffer holding ``array`` (C order)."""
        array = np.ascontiguousarray(array)
        buf = self.pool.take(array.nbytes)
        if array.nbytes:
            check(self.driver.cuMemcpyHtoDAsync(buf.ptr, array.ctypes.data, array.nbytes, stream), "cuMemcpyHtoD")
            self.synchronize(stream)  # the host array may be a temporary
        return buf

    def zeros(self, nbytes: int, stream: Any = 0) -> DeviceBuffer:
        """A pooled buffer of ``nbytes`` zero bytes."""
        buf = self.pool.take(nbytes)
        if nbytes:
            check(self.driver.cuMemsetD8Async(buf.ptr, 0, nbytes, stream), "cuMemsetD8")
        return buf

    def download(self, buf: DeviceBuffer, shape: tuple[int, ...], dtype: np.dtype, stream: Any = 0) -> np.ndarray:
        """The first ``prod(shape)`` elements of ``buf`` as a new host array (waits for ``stream``)."""
        out = np.empty(shape, dtype)
        if out.nbytes:
            check(self.driver.cuMemcpyDtoHAsync(out.ctypes.data, buf.ptr, out.nbytes, stream), "cuMemcpyDtoH")
        self.synchronize(stream)
        return out

    # -- execution ----------------------------------------------------------------------------
    def launch(self, function: Any, grid: tuple[int, ...], block: tuple[int, ...], args: tuple, types: tuple,
               stream: Any = 0, shared_bytes: int = 0) -> None:
        """Launch ``function`` on ``stream``. ``types`` gives the ctypes type of each argument:
        ``ctypes.c_void_p`` for a device pointer passed as an int (cuda-bindings refuses an int
        whose type is None), ``ctypes.c_int``/``c_int64``/``c_double`` for scalars."""
        gx, gy, gz = (*grid, 1, 1)[:3]
        bx, by, bz = (*block, 1, 1)[:3]
        check(self.driver.cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared_bytes, stream, (args, types), 0),
              "cuLaunchKernel")

    def stream(self, index: int) -> Any:
        """Stream ``index`` (0 the legacy default stream, others non-blocking, created once)."""
        if index == 0:
            return 0
        while len(self._streams) < index:
            flags = self.driver.CUstream_flags.CU_STREAM_NON_BLOCKING
            self._streams.append(check(self.driver.cuStreamCreate(flags), "cuStreamCreate"))
        return self._streams[index - 1]

    def concurrently(self, parts: Sequence[Callable[[Any], None]]) -> None:
        """Run each ``part(stream)`` on its own stream (1, 2, ...) after the work already queued
        on the default stream, and make the default stream wait for all of them: the two
        sub-GEMMs of the split scheme overlap, and what follows on stream 0 sees both."""
        driver = self.driver
        flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
        ready = check(driver.cuEventCreate(flags), "cuEventCreate")
        check(driver.cuEventRecord(ready, 0), "cuEventRecord")
        done = []
        try:
            for i, part in enumerate(parts, start=1):
                s = self.stream(i)
                check(driver.cuStreamWaitEvent(s, ready, 0), "cuStreamWaitEvent")
                part(s)
                ev = check(driver.cuEventCreate(flags), "cuEventCreate")
                done.append(ev)
                check(driver.cuEventRecord(ev, s), "cuEventRecord")
                check(driver.cuStreamWaitEvent(0, ev, 0), "cuStreamWaitEvent")
        finally:
            for ev in (ready, *done):
                driver.cuEventDestroy(ev)

    def synchronize(self, stream: Any = 0) -> None:
        """Wait for ``stream`` (default: the default stream)."""
        check(self.driver.cuStreamSynchronize(stream), "cuStreamSynchronize")

    def time_ms(self, work: Callable[[], None], repeats: int = 1) -> float:
        """Device milliseconds per run of ``work`` (which queues launches on the default
        stream), between two events around ``repeats`` runs."""
        driver = self.driver
        start = check(driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate")
        end = check(driver.cuEventCreate(driver.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate")
        try:
            check(driver.cuEventRecord(start, 0), "cuEventRecord")
            for _ in range(repeats):
                work()
            check(driver.cuEventRecord(end, 0), "cuEventRecord")
            check(driver.cuEventSynchronize(end), "cuEventSynchronize")
            return float(check(driver.cuEventElapsedTime(start, end), "cuEventElapsedTime")) / repeats
        finally:
            driver.cuEventDestroy(start)
            driver.cuEventDestroy(end)


_device_lock = threading.Lock()
_device: CudaDevice | None = None


def device() -> CudaDevice:
    """The process's :class:`CudaDevice`; NoDevice with :func:`probe`'s reason where none can run
    the kernels."""
    global _device
    status = probe()
    if not status.available:
        raise NoDevice(status.reason)
    with _device_lock:
        if _device is None:
            _device = CudaDevice(status)
        return _device
