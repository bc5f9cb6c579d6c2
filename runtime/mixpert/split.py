"""Splitting one MixPert operand: row form, INT8 segments, group exponents, fallback tiles.

An operand is held in *row form* (A as m x K, B as Bᵀ, n x K), so both sides run
one code path. :func:`prepare_operand` rounds it to the domain's format, splits
every element into aligned signed mantissas (runtime/segments.pack_groups_into), flags
the fallback tiles and gives each row its reference exponent and the exact
power-of-two scale of each of its k-tile groups: a :class:`SplitOperand`, which
every later step of the executor reads by field name.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import objmode, prange, types
from numba.extending import overload

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.guarantee.bound import lost_rows
from mixjit.runtime.mixpert.pack import fresh_array, threads_pay
from mixjit.runtime.mixpert.segments import ZERO_EXP, max_aligned, pack_groups_into, width
from mixjit.runtime.mixpert.words import (
    ALIGN_ROW,
    DOMAIN_FP32,
    W_ALIGN,
    W_DIGITS,
    W_DOMAIN,
    W_FALLBACK,
    W_ROUNDING,
    W_SEG0_BITS,
    W_SEGMENTS,
    W_TK,
    W_TM,
    W_TN,
)


class SplitOperand(NamedTuple):
    """One operand split and aligned under a config, in row form (rows x K; B as Bᵀ).
    A Numba named tuple: compiled code builds it and reads it by field name."""

    raw: np.ndarray  # float64 values (float32 values in the FP32 domain), rows x K; 0 x K where not kept
    bad: np.ndarray  # bool per row: it holds an inf or NaN (those elements count as 0)
    q: np.ndarray  # rows x K: aligned signed mantissas, int32 where the width allows (mantissa_type)
    gexp: np.ndarray  # int64, rows x k-tiles: group exponent (segments.ZERO_EXP: all zero)
    fb: np.ndarray  # bool, rows x k-tiles: the row's tile falls back
    ref: np.ndarray  # int64 per row: reference exponent (max over kept groups)
    span: np.ndarray  # int64 per row: exponent span of its kept groups
    scale: np.ndarray  # float64, rows x k-tiles: 2^(gexp - ref), 0 for zero/fallback groups
    fb_tiles: int  # number of fallback tiles
    lost: np.ndarray  # bool per row, FP32 domain: a finite nonzero element outside a fallback tile aligned to 0

    @property
    def raw_kept(self) -> bool:
        """Does it hold its values (``raw``)? A call's FP32-domain operand does not
        (:func:`prepare_call_operand`): the driver rebuilds them from the operand where a
        rare path needs them (runtime/mixpert/driver.py)."""
        return self.raw.shape[0] == self.q.shape[0]


#: rows x columns of the tiles :func:`row_form` copies a transposed operand by (a
#: column walk of B's storage would touch one cache line per element)
_TILE = 32

#: side of the small squares a transposed copy walks, each source row's run read
#: once (8 x 8 float64: 2.1 ms against 3.4 ms for 32-element runs at 1024 x 1024)
_SUBTILE = 8

#: measured serial cost (ns) of :func:`row_form` per element, transposed or not
#: (tools/bench_executor.py --steps: 15-25 ms at 2048 x 2048)
ROW_FORM_NS = 5


@cached_njit(nogil=True)
def _row_form_rows(out, r0: int, r1: int, x, transpose: bool, to32: bool) -> None:
    """Rows ``r0..r1`` of :func:`row_form`'s result (a transposed operand by tiles)."""
    kk = out.shape[1]
    if not transpose:
        for i in range(r0, r1):
            for k in range(kk):
                out[i, k] = np.float64(np.float32(x[i, k])) if to32 else np.float64(x[i, k])
        return
    for i0 in range(r0, r1, _SUBTILE):
        i1 = min(i0 + _SUBTILE, r1)
        for k0 in range(0, kk, _SUBTILE):
            for k in range(k0, min(k0 + _SUBTILE, kk)):
                for i in range(i0, i1):
                    out[i, k] = np.float64(np.float32(x[k, i])) if to32 else np.float64(x[k, i])


@cached_njit(nogil=True, parallel=True)
def _row_form_threads(out, x, transpose: bool, to32: bool) -> None:
    """:func:`row_form_into`, tiles of rows spread over threads (the same values)."""
    r = out.shape[0]
    for c in prange((r + _TILE - 1) // _TILE):
        _row_form_rows(out, c * _TILE, min(c * _TILE + _TILE, r), x, transpose, to32)


@cached_njit
def _row_form_threads_lazy(out, x, transpose: bool, to32: bool) -> None:
    """:func:`_row_form_threads` through a trampoline (as runtime/mixpert/lazy.py's): its
    parallel code compiles when a call first needs threads, not with every caller."""
    with objmode():
        _row_form_threads(out, x, transpose, to32)


@cached_njit(nogil=True)
def row_form_into(out, x, transpose: bool, to32: bool) -> None:
    """Fill ``out`` (float64, or float32 when ``to32``: the values are float32 values then)
    with ``x`` (or ``x.T``), rounded to float32 first when ``to32`` (overflow gives inf;
    float32 values widen exactly); on threads when ``threads_pay`` says so for its size."""
    if threads_pay(x.shape[0] * x.shape[1] * ROW_FORM_NS):
        _row_form_threads_lazy(out, x, transpose, to32)
        return
    r = out.shape[0]
    for r0 in range(0, r, _TILE):
        _row_form_rows(out, r0, min(r0 + _TILE, r), x, transpose, to32)


@cached_njit(nogil=True)
def _row_form_copy(x, transpose: bool, to32: bool, dtype):
    """A new C-ordered ``dtype`` row form of ``x`` (:func:`row_form_into`), on huge pages:
    fewer first-touch page faults."""
    r = x.shape[1] if transpose else x.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    out = fresh_array(r, kk, dtype)
    row_form_into(out, x, transpose, to32)
    return out


@cached_njit(nogil=True)
def row_form(x, transpose: bool, to32: bool):
    """Contiguous float64 copy of ``x`` (or ``x.T``), rounded to float32 first when
    the domain is FP32 (:func:`row_form_into`)."""
    return _row_form_copy(x, transpose, to32, np.float64)


def row_form32(x, transpose: bool):
    """A call's FP32-domain row form: ``x`` itself where it is a C-contiguous float32
    array read untransposed (its values are float32 values: nothing to round), else a
    float32 copy (:func:`row_form_into`), half the size of :func:`row_form`'s. Compiled
    code only (an overload)."""
    raise NotImplementedError("row_form32 is called from compiled code only")


@overload(row_form32, jit_options={"nogil": True})
def _row_form32(x, transpose):
    if isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C" and x.dtype == types.float32:
        def own(x, transpose):
            if not transpose:
                return x
            return _row_form_copy(x, transpose, True, np.float32)

        return own
    return lambda x, transpose: _row_form_copy(x, transpose, True, np.float32)


@cached_njit(nogil=True)
def _fallback_flags(nonzero, shifted, tile_rows: int, threshold: int):
    """Per row and k-tile: does the row's tile fall back (more than 1/8 of its nonzero
    elements shifted by more than ``threshold`` bits)? Also the number of such tiles."""
    r, nkt = nonzero.shape
    fb = np.zeros((r, nkt), dtype=np.bool_)
    count = 0
    if threshold < 0:
        return fb, count
    for t0 in range(0, r, tile_rows):
        t1 = min(t0 + tile_rows, r)
        for kt in range(nkt):
            sh = 0
            nz = 0
            for i in range(t0, t1):
                sh += shifted[i, kt]
                nz += nonzero[i, kt]
            if 8 * sh > nz:
                count += 1
                for i in range(t0, t1):
                    fb[i, kt] = True
    return fb, count


@cached_njit(nogil=True)
def _scales(gexp, fb):
    """Per row: reference exponent (max over valid groups), span, and the exact
    power-of-two factor ``2^(E - ref)`` of each group (0 for zero/fallback groups)."""
    r, nkt = gexp.shape
    ref = np.zeros(r, dtype=np.int64)
    span = np.zeros(r, dtype=np.int64)
    scale = np.zeros((r, nkt))
    for i in range(r):
        hi = ZERO_EXP
        lo = -ZERO_EXP
        for t in range(nkt):
            e = gexp[i, t]
            if e != ZERO_EXP and not fb[i, t]:
                hi = max(hi, e)
                lo = min(lo, e)
        if hi == ZERO_EXP:
            continue
        ref[i] = hi
        span[i] = hi - lo
        for t in range(nkt):
            e = gexp[i, t]
            if e != ZERO_EXP and not fb[i, t]:
                scale[i, t] = math.ldexp(1.0, e - hi)
    return ref, span, scale


#: widest aligned mantissa an int32 ``q`` holds (``|M| < 2^w``)
INT32_WIDTH = 31


def mantissa_type(params: np.ndarray) -> type:
    """The integer type of a split's aligned mantissas ``q`` under the config words
    ``params``: int32 where the config's width allows (every float32-domain config of
    at most 31 bits: half the memory and the bandwidth of int64), else int64. Python
    callers pass it to :func:`prepare_operand` / :func:`prepare_call_operand`."""
    w = width(int(params[W_SEGMENTS]), int(params[W_SEG0_BITS]), int(params[W_DIGITS]))
    return np.int32 if w <= INT32_WIDTH else np.int64


@cached_njit(nogil=True)
def split_rows(raw, side_b: bool, params, qtype, kept):
    """Split and align a row-form operand ``raw`` (A, or Bᵀ when ``side_b``): the
    :class:`SplitOperand` the multiply takes, with mantissas of type ``qtype``
    (:func:`mantissa_type`) and ``kept`` as its values (``raw`` itself, or 0 x K
    where the caller drops them)."""
    segments = params[W_SEGMENTS]
    digits = params[W_DIGITS]
    tile_rows = params[W_TN] if side_b else params[W_TM]
    group_rows = 1 if params[W_ALIGN] == ALIGN_ROW else tile_rows
    threshold = params[W_FALLBACK]
    far = threshold if threshold >= 0 else 1 << 20
    w = width(segments, params[W_SEG0_BITS], digits)
    to32 = params[W_DOMAIN] == DOMAIN_FP32
    emax = 127 if to32 else 1023  # raw holds float32 values in FP32
    q = fresh_array(raw.shape[0], raw.shape[1], qtype)  # on huge pages: fewer first-touch page faults
    q, gexp, nonzero, shifted, bad = pack_groups_into(
        q, raw, group_rows, params[W_TK], w, params[W_ROUNDING], far, max_aligned(segments, digits), emax
    )
    fb, fb_tiles = _fallback_flags(nonzero, shifted, tile_rows, threshold)
    ref, span, scale = _scales(gexp, fb)
    lost = lost_rows(raw, q, fb, params[W_TK]) if to32 else np.zeros(raw.shape[0], dtype=np.bool_)
    return SplitOperand(kept, bad, q, gexp, fb, ref, span, scale, fb_tiles, lost)


def row_form_or_self(x, transpose: bool):
    """A float64-domain row form (:func:`row_form`), except that a writable
    C-contiguous float64 ``x`` read untransposed is its own row form (the executor only
    reads it): no copy, no fresh array. Compiled code only (an overload)."""
    raise NotImplementedError("row_form_or_self is called from compiled code only")


@overload(row_form_or_self, jit_options={"nogil": True})
def _row_form_or_self(x, transpose):
    if isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C" and x.dtype == types.float64 and x.mutable:
        def own(x, transpose):
            if not transpose:
                return x
            return row_form(x, transpose, False)

        return own
    return lambda x, transpose: row_form(x, transpose, False)


@cached_njit(nogil=True)
def split_operand(x, side_b: bool, params, qtype):
    """:func:`prepare_operand` with the mantissas' type ``qtype`` given (compiled)."""
    raw = row_form(x, side_b, params[W_DOMAIN] == DOMAIN_FP32)
    return split_rows(raw, side_b, params, qtype, raw)


@cached_njit(nogil=True)
def split_call_operand(x, side_b: bool, params, qtype):
    """:func:`prepare_call_operand` with the mantissas' type ``qtype`` given (compiled)."""
    if params[W_DOMAIN] == DOMAIN_FP32:
        raw32 = row_form32(x, side_b)
        return split_rows(raw32, side_b, params, qtype, np.empty((0, raw32.shape[1])))
    raw = row_form_or_self(x, side_b)
    return split_rows(raw, side_b, params, qtype, raw)


def prepare_operand(x: np.ndarray, side_b: bool, params: np.ndarray) -> SplitOperand:
    """Split operand ``x`` (A, or B when ``side_b``; any strides, float32/float64)
    under the config words ``params``; the result feeds :func:`multiply_into` and
    holds its own copy of the values (it may outlive changes to ``x``)."""
    return split_operand(x, side_b, params, mantissa_type(params))


def prepare_call_operand(x: np.ndarray, side_b: bool, params: np.ndarray) -> SplitOperand:
    """:func:`prepare_operand` for one call that uses the result and drops it, with
    as little memory as the domain allows: in the float32 domain the values are split
    from a float32 row form (:func:`row_form32`: ``x`` itself for a C-contiguous
    float32 A) and not kept (the driver rebuilds them from ``x`` where a rare path
    needs them: pass ``x`` to ``multiply_into`` as a source); in the float64 domain a
    writable C-contiguous float64 A is read in place (:func:`row_form_or_self`).
    Either way ``x`` must not change during the call."""
    return split_call_operand(x, side_b, params, mantissa_type(params))
