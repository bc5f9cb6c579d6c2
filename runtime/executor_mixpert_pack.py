"""Packing for the MixPert executor's dgemms: integer-valued float64 block operands.

A block of kept segment pairs (runtime/pair_blocks.py) multiplies, on each side, the
sum of a range of segments of every element, times its group's power-of-two scale.
:func:`block_operand` builds that side as a float64 matrix; every value is an
integer times a power of two, so it is exact, and so is the dgemm over it
(pair_blocks bounds every partial sum below 2^53).

Large operands are packed by several threads (:func:`pack_block`): each row is
written by one thread with the same arithmetic as the serial loop, so the bits do
not depend on the thread count. Small ones stay serial, where a parallel launch
would cost more than it saves (and a site inside a ``prange`` body never nests one).
:func:`use_threads` is the one test every threaded step of the executor asks.
"""

from __future__ import annotations

import importlib

import numba
import numpy as np
from numba import prange

from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.segments import digit_range

#: elements (rows x columns) from which an operand or an epilogue runs on threads
PARALLEL_MIN = 1 << 16


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


@cached_njit(nogil=True)
def use_threads(elements: int) -> bool:
    """Run a step over ``elements`` elements on threads?"""
    return THREADS and elements >= PARALLEL_MIN


@cached_njit(nogil=True)
def _block_row(out, u: int, q, scale, i: int, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int,
               tk: int) -> None:
    """Row ``u`` of a block operand: segments ``i0..i1`` of ``q[i, k0:k1]`` times their scales."""
    for t in range(k0 // tk, (k1 + tk - 1) // tk):
        sc = scale[i, t]
        for k in range(max(k0, t * tk), min(k1, t * tk + tk)):
            out[u, k - k0] = digit_range(q[i, k], i0, i1, segments, digits) * sc


@cached_njit(nogil=True)
def block_operand(q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int, tk: int):
    """Float64 matrix of segments ``i0..i1`` of ``q[rows, k0:k1]``, each k-tile times
    its scale (integer-valued times a power of two: exact)."""
    out = np.empty((rows.shape[0], k1 - k0))
    for u in range(rows.shape[0]):
        _block_row(out, u, q, scale, rows[u], k0, k1, i0, i1, segments, digits, tk)
    return out


@cached_njit(nogil=True, parallel=True)
def _block_operand_threads(q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int, tk: int):
    """:func:`block_operand`, rows spread over threads (the same values)."""
    out = np.empty((rows.shape[0], k1 - k0))
    for u in prange(rows.shape[0]):
        _block_row(out, u, q, scale, rows[u], k0, k1, i0, i1, segments, digits, tk)
    return out


@cached_njit(nogil=True)
def pack_block(q, scale, rows, k0: int, k1: int, i0: int, i1: int, segments: int, digits: int, tk: int):
    """:func:`block_operand`, on threads when :func:`use_threads` says so."""
    if use_threads(rows.shape[0] * (k1 - k0)):
        return _block_operand_threads(q, scale, rows, k0, k1, i0, i1, segments, digits, tk)
    return block_operand(q, scale, rows, k0, k1, i0, i1, segments, digits, tk)
