"""Packing for the MixPert executor's dgemms: integer-valued float64 block operands.

A block of kept segment pairs (runtime/mixpert/pair_blocks.py) multiplies, on each side, the
sum of a range of segments of every element, times its group's power-of-two scale.
:func:`block_operand` builds that side as a float64 matrix; every value is an
integer times a power of two, so it is exact, and so is the dgemm over it
(pair_blocks bounds every partial sum below 2^53).

Large operands can be packed by several threads (:func:`pack_block`): each row is
written by one thread with the same arithmetic as the serial loop, so the bits do
not depend on the thread count. Whether a step runs on threads is decided by
:func:`threads_pay` from its work (elements times a measured cost per element) and
the number of threads, once per call by the step's caller (executor_mixpert_fast).
"""

from __future__ import annotations

import importlib
import sys

import numba
import numpy as np
from llvmlite import ir
from numba import objmode, prange, types
from numba.core import cgutils
from numba.core.typed_passes import _reload_parfors
from numba.extending import intrinsic, overload
from numba.np.ufunc.parallel import _launch_threads

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.jit.scratch_arrays import carve
from mixjit.runtime.mixpert.segments import MAGNITUDE, digit_range

#: what one parallel region may cost (ns) on a machine whose cores are busy. A region
#: costs more than its launch: its barrier waits for the slowest worker, and where
#: the cores are shared (other processes, or OpenBLAS's own threads spinning after
#: a dgemm) a worker waits for a scheduler time slice, milliseconds; after the
#: region Numba's workers spin and take CPU from the serial step that follows.
#: Measured on 2 shared cores (docs/results/executor_speed.md, "Threads"): level IV at
#: n = 256 took 56 ms with threaded steps against 5.4 ms serial.
REGION_COST_NS = 40_000_000

#: measured serial cost per element (ns) of the threadable steps at 2048 x 2048
#: (tools/bench_executor.py --steps: ~20 ms per block operand, the epilogues ~15 ms
#: for two blocks and ~55 ms for mixpert-fp64's six): one block operand, and the
#: fast path's epilogue per output and block
PACK_NS = 5
EPILOGUE_NS_PER_BLOCK = 2


def _threads_nest_safely() -> bool:
    """Does Numba's threading layer in this process allow a parallel region inside
    another one, or started from several threads at once (TBB, OpenMP)? A GEMM site
    may sit in a ``prange`` body or run from several Python threads. The workqueue
    layer, Numba's fallback when neither TBB nor OpenMP loads, aborts the process on
    either, so the executor then stays serial."""
    layer = numba.config.THREADING_LAYER
    if layer in ("tbb", "omp"):
        order = [layer]
    elif layer == "safe":
        order = ["tbb"]
    elif layer in ("default", "threadsafe"):
        order = list(numba.config.THREADING_LAYER_PRIORITY)
    else:  # workqueue, or forksafe (which may pick it)
        return False
    for name in order:
        if name == "workqueue":
            if layer == "default":
                return False  # always loads, so it is the one chosen
            continue
        try:
            importlib.import_module(f"numba.np.ufunc.{name}pool")
            return True
        except ImportError:
            continue
    return False


THREADS = _threads_nest_safely()
"""Whether the executor may run steps on threads in this process (compiled in; see
:func:`_threads_nest_safely`)."""


@intrinsic
def _thread_count(typingctx):
    """``numba.get_num_threads()`` in code that is cached to disk. Numba's own overload
    calls the threading layer through a ctypes pointer, which makes every caller
    uncachable; this calls its ``get_num_threads`` by symbol, as Numba's parallel
    loops do, and like them (``_reload_parfors``) starts the threading layer when a
    cached caller is loaded, before the symbol is needed."""
    _launch_threads()

    def codegen(context, builder, signature, args):
        context.active_code_library._reload_init.add(_reload_parfors)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(cgutils.intp_t, []), "get_num_threads")
        return builder.call(fn, [])

    return types.intp(), codegen


#: ask the kernel for transparent huge pages on the executor's large scratch arrays
#: (Linux's ``madvise(MADV_HUGEPAGE)``; elsewhere nothing is asked)
HUGE_PAGES = sys.platform.startswith("linux")
_MADV_HUGEPAGE = 14
_PAGE = 4096


@intrinsic
def _madvise_huge(typingctx, addr, length):
    """``madvise(addr, length, MADV_HUGEPAGE)`` by symbol (cacheable, like
    :func:`_thread_count`); a no-op returning 0 where :data:`HUGE_PAGES` is False."""

    def codegen(context, builder, signature, args):
        if not HUGE_PAGES:
            return ir.Constant(ir.IntType(32), 0)
        fnty = ir.FunctionType(ir.IntType(32), [cgutils.voidptr_t, cgutils.intp_t, ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        ptr = builder.inttoptr(args[0], cgutils.voidptr_t)
        return builder.call(fn, [ptr, args[1], ir.Constant(ir.IntType(32), _MADV_HUGEPAGE)])

    return types.int32(types.intp, types.intp), codegen


@cached_njit(nogil=True)
def huge_pages(a) -> None:
    """Advise the whole pages of a fresh contiguous array ``a`` as transparent huge
    pages, before its first touch: Numba's allocator, unlike numpy's, does not, and
    the first touch of a fresh 32 MiB array costs far less in 2 MiB pages than in
    4 KiB ones (docs/results/executor_speed.md, steps table). Only memory advice: no value changes, and
    a refusal (no THP, an old kernel) is ignored."""
    addr = a.ctypes.data
    lo = (addr + _PAGE - 1) // _PAGE * _PAGE
    hi = (addr + a.size * a.itemsize) // _PAGE * _PAGE
    if hi - lo >= 512 * _PAGE:  # at least one huge page's worth
        _madvise_huge(lo, hi - lo)


#: bytes of a transparent huge page (x86-64 and arm64 with 4 KiB base pages)
_HUGE = 512 * _PAGE


@cached_njit(nogil=True)
def fresh_array(rows: int, cols: int, dtype):
    """A new C-ordered ``rows x cols`` scratch array of ``dtype`` on huge pages: where it
    holds a huge page's worth or more, its data starts on a 2 MiB boundary (the
    allocation is 2 MiB longer; the untouched slack costs no memory) and is advised
    as huge pages (:func:`huge_pages`), so every page of it can be a huge one: an
    array at any other address keeps 4 KiB pages at both ends, up to 2 x 511 more
    first-touch page faults."""
    item = np.empty(0, dtype).itemsize
    n = rows * cols
    if n * item < _HUGE:
        return np.empty((rows, cols), dtype)
    pad = _HUGE // item
    buf = np.empty(n + pad, dtype)
    off = (-buf.ctypes.data) % _HUGE // item  # the data of np.empty is aligned to its items
    _madvise_huge(buf.ctypes.data + off * item, n * item // _PAGE * _PAGE)
    return carve(buf, off, rows, cols)


@cached_njit(nogil=True)
def fresh64(rows: int, cols: int):
    """A new float64 ``rows x cols`` scratch array on huge pages (:func:`fresh_array`)."""
    return fresh_array(rows, cols, np.float64)


@cached_njit(nogil=True)
def _apart(c, x) -> bool:
    """Do the memory ranges of arrays ``c`` and ``x`` not overlap?"""
    c0 = c.ctypes.data
    x0 = x.ctypes.data
    return c0 + c.size * c.itemsize <= x0 or x0 + x.size * x.itemsize <= c0


def result_array(c, a, b):
    """Where the executor writes ``C``'s float64 values: ``c`` itself where it is a
    writable C-contiguous float64 array whose memory is apart from the operands
    ``a`` and ``b`` (no scratch array, no copy), else a fresh scratch array on huge
    pages. Compiled code only (an overload); the caller copies into ``c`` where the
    result is not ``c`` (:func:`is_array`)."""
    raise NotImplementedError("result_array is called from compiled code only")


@overload(result_array, jit_options={"nogil": True})
def _result_array(c, a, b):
    if isinstance(c, types.Array) and c.ndim == 2 and c.layout == "C" and c.dtype == types.float64 and c.mutable:
        def own(c, a, b):
            if _apart(c, a) and _apart(c, b):
                return c
            return fresh64(c.shape[0], c.shape[1])

        return own
    return lambda c, a, b: fresh64(c.shape[0], c.shape[1])


@cached_njit(nogil=True)
def is_array(x, c) -> bool:
    """Is ``x`` the array ``c`` (same memory, same shape)?"""
    return x.ctypes.data == c.ctypes.data and x.shape[0] == c.shape[0] and x.shape[1] == c.shape[1]


@cached_njit(nogil=True)
def threads_pay(work_ns: int) -> bool:
    """Run a step of ``work_ns`` nanoseconds of serial work on Numba's threads? Only
    where nesting is safe (:data:`THREADS`), more than one thread is set
    (``numba.get_num_threads()``, so ``numba.set_num_threads(1)`` makes the executor
    serial), and the time ``t`` threads would save on idle cores,
    ``work_ns (1 - 1/t)``, is at least :data:`REGION_COST_NS`."""
    if not THREADS:
        return False
    t = _thread_count()
    return t > 1 and work_ns * (t - 1) >= REGION_COST_NS * t


#: ``1.5 * 2^52`` as int64 bits: an integer ``|r| < 2^51`` added to them, read as a
#: float64, minus ``1.5 * 2^52`` is ``float(r)`` exactly, in an integer and a float
#: add that vectorise (AVX2 has no int64 -> float64 conversion)
_MAGIC = np.int64(0x4338000000000000)
_MAGIC_F = 1.5 * 2.0**52
#: fields of at most this many bits convert by :data:`_MAGIC`
_MAGIC_BITS = 51


@cached_njit(nogil=True, inline="always")
def _magnitude_field(i0: int, i1: int, segments: int):
    """``(shift, mask)`` that take segments ``i0..i1`` out of a sign-magnitude
    ``|q|``: ``(|q| >> shift) & mask`` (segments.digit_range's arithmetic)."""
    mask = np.int64(-1) if i0 == 0 else (np.int64(1) << (7 * (i1 - i0 + 1))) - 1
    return 7 * (segments - 1 - i1), mask


@cached_njit(nogil=True)
def _pack_row(out, u: int, q, scale, i: int, k0: int, k1: int, i0: int, i1: int, d0: int, d1: int,
              segments: int, digits: int, tk: int) -> None:
    """Row ``u`` of a product side: segments ``i0..i1`` of ``q[i, k0:k1]``, minus
    segments ``d0..d1`` where ``d0 >= 0``, times their scales. Sign-magnitude digits
    (fields of up to :data:`_MAGIC_BITS` bits) take a branch-free loop that
    vectorises; the values are segments.digit_range's either way."""
    if digits == MAGNITUDE and 7 * (i1 - i0 + 1) <= _MAGIC_BITS and (d0 < 0 or 7 * (d1 - d0 + 1) <= _MAGIC_BITS):
        shift, mask = _magnitude_field(i0, i1, segments)
        if d0 < 0:  # a loop of its own: one field per element vectorises better
            for t in range(k0 // tk, (k1 + tk - 1) // tk):
                sc = scale[i, t]
                for k in range(max(k0, t * tk), min(k1, t * tk + tk)):
                    v = q[i, np.uint64(k)]
                    a = -v if v < 0 else v
                    r = (a >> shift) & mask
                    r = -r if v < 0 else r
                    out[u, np.uint64(k - k0)] = (np.int64(r + _MAGIC).view(np.float64) - _MAGIC_F) * sc
            return
        dshift, dmask = _magnitude_field(d0, d1, segments)
        for t in range(k0 // tk, (k1 + tk - 1) // tk):
            sc = scale[i, t]
            for k in range(max(k0, t * tk), min(k1, t * tk + tk)):
                # k >= k0 >= 0: unsigned indices spare the negative-index checks
                v = q[i, np.uint64(k)]
                a = -v if v < 0 else v
                r = ((a >> shift) & mask) - ((a >> dshift) & dmask)
                r = -r if v < 0 else r
                out[u, np.uint64(k - k0)] = (np.int64(r + _MAGIC).view(np.float64) - _MAGIC_F) * sc
        return
    for t in range(k0 // tk, (k1 + tk - 1) // tk):
        sc = scale[i, t]
        for k in range(max(k0, t * tk), min(k1, t * tk + tk)):
            v = q[i, np.uint64(k)]
            r = digit_range(v, i0, i1, segments, digits)
            if d0 >= 0:
                r -= digit_range(v, d0, d1, segments, digits)
            out[u, np.uint64(k - k0)] = r * sc


@cached_njit(nogil=True)
def _block_row(out, u: int, q, scale, i: int, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int,
               tk: int) -> None:
    """Row ``u`` of a block operand: segments ``i0..i1`` of ``q[i, k0:k1]`` times their scales."""
    _pack_row(out, u, q, scale, i, k0, k1, i0, i1, -1, -1, segments, digits, tk)


@cached_njit(nogil=True)
def block_operand_into(out, q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int,
                       tk: int) -> None:
    """Fill ``out`` (rows x (k1 - k0)) with segments ``i0..i1`` of ``q[rows, k0:k1]``,
    each k-tile times its scale (integer-valued times a power of two: exact)."""
    for u in range(rows.shape[0]):
        _block_row(out, u, q, scale, rows[u], k0, k1, i0, i1, segments, digits, tk)


@cached_njit(nogil=True, parallel=True)
def _block_operand_threads(out, q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int,
                           tk: int) -> None:
    """:func:`block_operand_into`, rows spread over threads (the same values)."""
    for u in prange(rows.shape[0]):
        _block_row(out, u, q, scale, rows[u], k0, k1, i0, i1, segments, digits, tk)


@cached_njit
def _block_operand_threads_lazy(out, q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int,
                                tk: int) -> None:
    """:func:`_block_operand_threads` through a trampoline (as runtime/mixpert/lazy.py's):
    its parallel code compiles when a call first needs threads, not with every caller."""
    with objmode():
        _block_operand_threads(out, q, scale, rows, k0, k1, i0, i1, segments, digits, tk)


@cached_njit(nogil=True)
def block_operand(q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int, tk: int):
    """:func:`block_operand_into` into a new float64 matrix."""
    out = np.empty((rows.shape[0], k1 - k0))
    block_operand_into(out, q, scale, rows, k0, k1, i0, i1, segments, digits, tk)
    return out


@cached_njit(nogil=True)
def pack_into(out, q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int, tk: int,
              threads: bool) -> None:
    """:func:`block_operand_into`, on threads when ``threads`` (the caller's decision,
    :func:`threads_pay`). Filling a buffer the caller reuses also spares the page
    faults of a fresh array (about 10 ms per 32 MB here; docs/results/executor_speed.md)."""
    if threads:
        _block_operand_threads_lazy(out, q, scale, rows, k0, k1, i0, i1, segments, digits, tk)
    else:
        block_operand_into(out, q, scale, rows, k0, k1, i0, i1, segments, digits, tk)


@cached_njit(nogil=True, parallel=True)
def _difference_operand_threads(out, q, scale, rows, k0: int, k1: int, i0: int, i1: int, d0: int, d1: int,
                                segments: int, digits: int, tk: int) -> None:
    """:func:`pack_product_into`'s difference operand, rows spread over threads."""
    for u in prange(rows.shape[0]):
        _pack_row(out, u, q, scale, rows[u], k0, k1, i0, i1, d0, d1, segments, digits, tk)


@cached_njit(nogil=True)
def pack_product_into(out, q, scale, rows, k0: int, k1: int, i0: int, i1: int, d0: int, d1: int, segments: int,
                      digits: int, tk: int, threads: bool) -> None:
    """One side of a product (pair_blocks.karatsuba_products): segments ``i0..i1`` of
    ``q[rows, k0:k1]`` times their scales (:func:`pack_into`), minus segments
    ``d0..d1`` where ``d0 >= 0``. Integer-valued times a power of two: exact."""
    if d0 < 0:
        pack_into(out, q, scale, rows, k0, k1, i0, i1, segments, digits, tk, threads)
    elif threads:
        _difference_operand_threads(out, q, scale, rows, k0, k1, i0, i1, d0, d1, segments, digits, tk)
    else:
        for u in range(rows.shape[0]):
            _pack_row(out, u, q, scale, rows[u], k0, k1, i0, i1, d0, d1, segments, digits, tk)


@cached_njit(nogil=True)
def pack_block(q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int, tk: int,
               threads: bool):
    """:func:`pack_into` a new float64 matrix (on huge pages)."""
    out = fresh64(rows.shape[0], k1 - k0)
    pack_into(out, q, scale, rows, k0, k1, i0, i1, segments, digits, tk, threads)
    return out
