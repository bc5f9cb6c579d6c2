"""The MixPert executor's driver: from operands to ``C``.

:func:`mixpert_gemm` (compiled: the @mixjit sites' kernel) runs the small path,
executor_mixpert_small.small_gemm (one fused loop kernel) for small calls whose
data needs only the fast path, and the general path for the others. The general
path splits both operands (executor_mixpert_split.prepare_operand) and calls
:func:`multiply_into`, whose :func:`product` runs the paths in order: the fast
path for the outputs whose rows and columns it can take (executor_mixpert_fast,
or the wide one of runtime/mixpert/paths/wide.py), the certified path (float32 domain,
executor_mixpert_certified) or the exact path (float64 domain,
executor_mixpert_exact) for the others, then step 6, the guarantee check
(runtime/mixpert/guarantee/bound.py), and the non-finite rule (runtime/numerics/executor_common.py).
Both paths give the same bits. Semantics: docs/numerics.md, "mixpert".

The general path's driver is Python (:func:`product`, :func:`multiply_into`): it
plans in Python (the planners run by Python, :func:`interpreted`, once per config) and calls each
path's compiled kernel directly, so a kernel compiles (or loads from its disk
cache) when a call first needs it, as a top-level function that no caller relinks
(docs/results/first_use.md). ``mixpert_gemm`` reaches the general path through the
trampoline of runtime/mixpert/lazy.py, and Python callers choose small or general
path in Python (:func:`gemm_from_python`), compiling only the one they take.
"""

from __future__ import annotations

from functools import lru_cache
from types import FunctionType
from typing import Any

import numpy as np
from numba.core import types
from numba.core.dispatcher import Dispatcher

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.jit.lazy_link import unlinked, unlinked_lazy
from mixjit.runtime.mixpert.guarantee.bound import dropped_weight, fp64_doubtful, recompute
from mixjit.runtime.mixpert.guarantee.certified import certified, exact_elements, recompute32, tf32_split
from mixjit.runtime.mixpert.guarantee.exact import exact_rows, exact_sets
from mixjit.runtime.mixpert.lazy import general_gemm, general_gemm_lazy
from mixjit.runtime.mixpert.pack import fresh64
from mixjit.runtime.mixpert.pair_blocks import BLOCK_BITS, SPAN_RESERVE, k_bits, plan_block_array
from mixjit.runtime.mixpert.paths.fast import fast_path
from mixjit.runtime.mixpert.paths.small import NOT_TAKEN, small_gemm, small_max_work
from mixjit.runtime.mixpert.paths.wide import K_PANEL, WIDE_LIMIT, fast32_certified, panel_rows, plan_wide_blocks
from mixjit.runtime.mixpert.segments import width
from mixjit.runtime.mixpert.split import SplitOperand, row_form
from mixjit.runtime.mixpert.words import (
    DOMAIN_FP32,
    ERR_K_TOO_LONG,
    ERR_PARAMS,
    ERR_SHAPE,
    ERR_SPAN,
    MAX_SPAN,
    OK,
    STAT_CERTIFIED,
    STAT_EXACT_COLS,
    STAT_EXACT_ROWS,
    STAT_FALLBACK_TILES,
    STAT_NONFINITE,
    STAT_RECOMPUTED,
    STAT_SLOW_ELEMENTS,
    STAT_TILES,
    STAT_WIDEST_SPAN,
    W_DIGITS,
    W_DOMAIN,
    W_SEG0_BITS,
    W_SEGMENTS,
    W_TK,
    W_TM,
    W_TN,
    kept_pairs,
    params_ok,
)
from mixjit.runtime.numerics.executor_common import nonfinite_rule


def interpreted(fn: Any) -> FunctionType:
    """``fn`` (a kernel's dispatcher or a plain function) run by Python, and so every
    kernel it calls, however deep: the planners, evaluated once per config, then compile
    nothing (a dispatcher called from Python compiles; its ``py_func`` alone would still
    compile the kernels it calls)."""
    py = fn.py_func if isinstance(fn, Dispatcher) else fn
    if py in _interpreted:
        return _interpreted[py]
    names = dict(py.__globals__)
    copy = FunctionType(py.__code__, names, py.__name__, py.__defaults__, py.__closure__)
    _interpreted[py] = copy
    for name in py.__code__.co_names:
        value = names.get(name)
        if isinstance(value, (Dispatcher, FunctionType)) and getattr(value, "__module__", "").startswith(
                "mixjit.runtime"):
            names[name] = interpreted(value)
    return copy


_interpreted: dict = {}


@lru_cache(maxsize=1024)
def _plans(words: bytes, K: int, reserve: int) -> tuple[np.ndarray, bool, np.ndarray, int, float]:
    """The block plans of the config whose words are ``words`` for ``K`` and ``reserve``:
    ``(blocks, ok, wide, w, dropped)`` (plan_block_array, plan_wide_blocks, the aligned width
    ``w``, mixpert_bound.dropped_weight), evaluated in Python (:func:`interpreted`:
    nothing to compile) once per config, ``K`` and reserve."""
    params = np.frombuffer(words, dtype=np.int64)
    pairs = interpreted(kept_pairs)(params)
    segments, seg0_bits, digits = int(params[W_SEGMENTS]), int(params[W_SEG0_BITS]), int(params[W_DIGITS])
    blocks, ok = interpreted(plan_block_array)(pairs, segments, seg0_bits, K, digits, reserve)
    wide = interpreted(plan_wide_blocks)(pairs, segments, seg0_bits, digits)
    dropped = interpreted(dropped_weight)(pairs, segments, seg0_bits, digits)
    return blocks, bool(ok), wide, width(segments, seg0_bits, digits), dropped


def _with_raw(p: SplitOperand, source: np.ndarray | None, side_b: bool) -> SplitOperand:
    """``p`` holding its values: itself where it kept them, else with them rebuilt from
    the operand ``source`` it was split from (the float64 row form a kept split holds)."""
    if p.raw_kept:
        return p
    if source is None:
        raise ValueError("mixpert: a split operand without its values needs the operand it was split from")
    return p._replace(raw=row_form(source, side_b, True))


def product(pa: SplitOperand, pb: SplitOperand, params: np.ndarray, out: np.ndarray, stats: np.ndarray,
            sources: tuple[np.ndarray, np.ndarray] | None = None) -> int:
    """``out = RN(X)`` (a float64 array, or a float32 one in the float32 domain, where
    every result is a float32 value) for split operands; fills ``stats``; returns a
    status. ``sources``: the operands A and B, for splits that did not keep their values
    (:func:`prepare_call_operand`): the rare paths that read them (the certified path,
    step 6's recomputation, the non-finite rule) get them rebuilt, only when they run.

    Python: it plans, then calls each path's compiled kernel, which compiles (or loads
    from its disk cache) the first time a call needs it, as a top-level function that no
    caller relinks (docs/results/first_use.md); each is called only with work to do."""
    to32 = bool(params[W_DOMAIN] == DOMAIN_FP32)
    m, K = pa.q.shape
    n = pb.q.shape[0]
    if pb.q.shape[1] != K:
        return ERR_SHAPE
    nkt = pa.gexp.shape[1]
    stats[:] = 0
    stats[STAT_TILES] = nkt * (-(-m // params[W_TM]) + -(-n // params[W_TN]))
    if m == 0 or n == 0:
        return OK
    if K == 0:
        out[:] = 0.0
        return OK
    segments = int(params[W_SEGMENTS])
    widest = int(pa.span.max()) + int(pb.span.max())
    stats[STAT_WIDEST_SPAN] = widest
    if widest > MAX_SPAN:
        return ERR_SPAN
    # keep only the span the data has free (up to SPAN_RESERVE; wider rows and
    # columns take the exact / certified path): fewer, wider blocks, same bits
    blocks, ok, wide, w, dropped = _plans(params.tobytes(), K, min(widest, SPAN_RESERVE))
    if not ok:
        return ERR_K_TOO_LONG
    # value = (sum of block products * 2^shift) * 2^(ref_a - w1) * 2^(ref_b - w1)
    ea = pa.ref - (w - 1)
    eb = pb.ref - (w - 1)
    # float32 domain: where wide, inexact blocks with a certified rounding need fewer
    # dgemms than exact ones (runtime/mixpert/paths/wide.py), the fast path takes every row
    # and column without a fallback tile, whatever its span; same bits
    use_wide = to32 and wide.shape[0] < blocks.shape[0]
    if out.dtype != np.float64 and not use_wide:
        # the exact-block fast path uses out as its last dgemm's result: a float64 one
        scratch = fresh64(m, n)
        status = product(pa, pb, params, scratch, stats, sources)
        out[...] = scratch  # exact: the float32 domain's results are float32 values
        return status
    limit = WIDE_LIMIT if use_wide else 53 - k_bits(K) - int(blocks[:, BLOCK_BITS].max())
    if widest > limit:  # some rows or columns are too wide for the fast path: choose which
        rows, cols = exact_sets(pa.span, pb.span, pa.fb, pb.fb, limit)
    else:  # only those touching a fallback tile (what exact_sets returns here, without its compile)
        rows, cols = np.flatnonzero(pa.fb.any(axis=1)), np.flatnonzero(pb.fb.any(axis=1))
    doubt = np.zeros(0, dtype=np.int64)
    if rows.shape[0] < m and cols.shape[0] < n:
        if use_wide:
            doubt = fast32_certified(pa.q, pa.scale, pb.q, pb.scale, wide, ea, eb, segments, params[W_DIGITS],
                                     params[W_TK], out, panel_rows(m, n, wide.shape[0]), K_PANEL)
        else:
            fast_path(pa.q, pa.scale, pb.q, pb.scale, blocks, ea, eb, params, out, to32)
    a_src, b_src = sources if sources is not None else (None, None)
    if to32 and (rows.shape[0] or cols.shape[0] or doubt.shape[0]):
        if rows.shape[0] or cols.shape[0] or pa.fb_tiles + pb.fb_tiles:  # read by the certified path only
            pa, pb = _with_raw(pa, a_src, False), _with_raw(pb, b_src, True)
        if pa.fb_tiles + pb.fb_tiles:
            parts_a = tf32_split(pa.raw)
            parts_b = tf32_split(pb.raw)
        else:
            parts_a = (np.zeros((0, 0)), np.zeros((0, 0)))
            parts_b = parts_a
        # the columns' pass skips the rows the rows' pass computed
        in_rows = np.zeros(m, dtype=np.bool_)
        in_rows[rows] = True
        rest = np.flatnonzero(~in_rows)
        slow = 0
        if rows.shape[0]:
            slow += certified(pa, pb, parts_a, parts_b, blocks, ea, eb, params, rows, np.arange(n), out, False)
        if cols.shape[0] and rest.shape[0]:
            slow += certified(pb, pa, parts_b, parts_a, blocks, eb, ea, params, cols, rest, out, True)
        in_cols = np.zeros(n, dtype=np.bool_)
        in_cols[cols] = True
        if doubt.shape[0]:
            slow += exact_elements(pa, pb, blocks, ea, eb, params, doubt, in_rows, in_cols, out)
        stats[STAT_CERTIFIED] = rows.shape[0] * n + cols.shape[0] * rest.shape[0]
        stats[STAT_SLOW_ELEMENTS] = slow
    elif not to32:
        if rows.shape[0]:
            exact_rows(pa, pb, blocks, ea, eb, params, rows, out, False, to32)
        if cols.shape[0]:
            exact_rows(pb, pa, blocks, eb, ea, params, cols, out, True, to32)
    if to32:
        lost_a = np.flatnonzero(pa.lost)
        lost_b = np.flatnonzero(pb.lost)
        if lost_a.shape[0] or lost_b.shape[0]:
            pa, pb = _with_raw(pa, a_src, False), _with_raw(pb, b_src, True)
        if lost_a.shape[0]:
            recompute32(pa.raw, pb.raw, lost_a, out, False)
        if lost_b.shape[0]:
            recompute32(pb.raw, pa.raw, lost_b, out, True)
        stats[STAT_RECOMPUTED] = lost_a.shape[0] * n + lost_b.shape[0] * m - lost_a.shape[0] * lost_b.shape[0]
    else:
        doubtful = fp64_doubtful(pa.raw, pa.gexp, pa.ref, pb.raw, pb.gexp, pb.ref, params[W_TK], w, dropped, out)
        if doubtful.any():
            stats[STAT_RECOMPUTED] = recompute(pa.raw, pb.raw, doubtful, out, False)
    if pa.bad.any() or pb.bad.any():
        pa, pb = _with_raw(pa, a_src, False), _with_raw(pb, b_src, True)
        stats[STAT_NONFINITE] = nonfinite_rule(pa.raw, pb.raw, pa.bad, pb.bad, out)
    stats[STAT_FALLBACK_TILES] = pa.fb_tiles + pb.fb_tiles
    stats[STAT_EXACT_ROWS] = rows.shape[0]
    stats[STAT_EXACT_COLS] = cols.shape[0]
    return OK


def _result_array(c: np.ndarray, a: np.ndarray, b: np.ndarray, to32: bool) -> np.ndarray:
    """Where :func:`multiply_into` has the results written: ``c`` itself where it is a
    writable C-contiguous array apart from the operands ``a`` and ``b`` (what the
    paths read) of float64, or of float32 in the float32 domain (every result is a
    float32 value there: no scratch, no copy), else a fresh float64 scratch array on
    huge pages (as ``executor_mixpert_pack.result_array`` decides for compiled callers)."""
    if ((c.dtype == np.float64 or (to32 and c.dtype == np.float32)) and c.flags.c_contiguous
            and c.flags.writeable and not np.may_share_memory(c, a) and not np.may_share_memory(c, b)):
        return c
    return fresh64(c.shape[0], c.shape[1])


def multiply_into(pa: SplitOperand, pb: SplitOperand, params: np.ndarray, c: np.ndarray, stats: np.ndarray,
                  sources: tuple[np.ndarray, np.ndarray] | None = None) -> int:
    """``C = A @ B`` under the MixPert semantics for split operands (from
    :func:`prepare_operand`) into ``c`` (m x n, float32/float64, any strides;
    float32 only for the FP32 domain, where the result is exact in it). Fills
    ``stats``; returns 0 or an ``ERR_*`` status (``c`` is then unspecified).
    Python, as :func:`product`; its Python callers are ``general_gemm`` (runtime/mixpert/lazy.py,
    the sites' general path too) and ``run_mixpert``'s split-once path. ``sources``: the
    operands, for splits that did not keep their values (:func:`product`)."""
    if not interpreted(params_ok)(params, c.itemsize):
        return ERR_PARAMS
    m = pa.q.shape[0]
    n = pb.q.shape[0]
    if c.shape[0] != m or c.shape[1] != n:
        return ERR_SHAPE
    # c itself where it can be: no copy; apart from what the paths read (the operands
    # themselves where a split did not keep its values)
    a, b = sources if sources is not None else (pa.raw, pb.raw)
    out = _result_array(c, a, b, bool(params[W_DOMAIN] == DOMAIN_FP32))
    status = product(pa, pb, params, out, stats, sources)
    if status == OK and out is not c:
        c[...] = out  # rounds to c's dtype (exact: the float32 domain's results are float32 values)
    return status


#: the paths :func:`product` reaches, each compiled (or loaded) when a call first needs it
ON_DEMAND_PATHS = (fast_path, fast32_certified, certified, exact_elements, exact_rows, recompute32, fp64_doubtful,
                   recompute, nonfinite_rule, exact_sets, tf32_split)


#: the small path as the sites' kernel calls it: through an address cell, so its code is
#: compiled once, not again inside every executor (runtime/jit/lazy_link.py)
_small_gemm_unlinked = unlinked(small_gemm)
#: the general path's trampoline as the sites' kernel calls it: through a cell filled at the
#: first call the small path leaves (runtime/jit/lazy_link.py), so a site whose calls are all
#: small never compiles it
_general_gemm_first_need = unlinked_lazy(general_gemm_lazy, types.int64)


@cached_njit(nogil=True, inline="always")
def mixpert_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the MixPert semantics: ``a`` (m x k), ``b`` (k x n), ``c``
    (m x n), float32/float64 with any strides; ``params`` the config words
    (``MixPertConfig.words()``); ``stats`` an int64 array of ``N_STATS``. Returns 0
    or an ``ERR_*`` status (``STATUS_MESSAGES``). Compiled, GIL-free, thread-safe
    (all scratch is allocated per call). Small calls take the fused small-shape path
    (executor_mixpert_small.small_gemm: same bits, ``STAT_SMALL_PATH`` set) where it
    applies."""
    if not params_ok(params, c.itemsize):
        return ERR_PARAMS
    if a.shape[1] != b.shape[0]:
        return ERR_SHAPE
    if c.shape[0] != a.shape[0] or c.shape[1] != b.shape[1]:
        return ERR_SHAPE
    status = _small_gemm_unlinked(a, b, c, params, stats, small_max_work(params))
    if status != NOT_TAKEN:
        return status
    return _general_gemm_first_need(a, b, c, params, stats)


def gemm_from_python(a: np.ndarray, b: np.ndarray, c: np.ndarray, params: np.ndarray, stats: np.ndarray) -> int:
    """:func:`mixpert_gemm` for Python callers (``run_mixpert``): the same checks, the
    same paths and bits, but the choice between the small and the general path made
    here, so a call compiles only the path it takes (the small path for a small call
    of a config it can take, else the general one, each a top-level function) and
    nothing compiles :func:`mixpert_gemm` itself (the @mixjit sites' kernel)."""
    if not interpreted(params_ok)(params, c.itemsize):
        return ERR_PARAMS
    if a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or a.shape[1] != b.shape[0]:
        return ERR_SHAPE
    if c.shape[0] != a.shape[0] or c.shape[1] != b.shape[1]:
        return ERR_SHAPE
    work = a.shape[0] * b.shape[1] * a.shape[1]
    if 0 < work <= interpreted(small_max_work)(params) and small_may_take(params.tobytes()):
        status = small_gemm(a, b, c, params, stats, interpreted(small_max_work)(params))
        if status != NOT_TAKEN:
            return status
    return general_gemm(a, b, c, params, stats)


@lru_cache(maxsize=256)
def small_may_take(words: bytes) -> bool:
    """Can the small path take any call of the config whose words are ``words``
    (``params.tobytes()``)? No, in the float32 domain, when for every block budget it
    could meet the wide blocks are fewer than the exact ones (executor_mixpert_small:
    the general path then takes the wide blocks): ``gemm_from_python`` does not compile
    the small path for such a config. Evaluated in Python (:func:`interpreted`),
    once per config."""
    params = np.frombuffer(words, dtype=np.int64)
    if params[W_DOMAIN] != DOMAIN_FP32:
        return True
    pairs = interpreted(kept_pairs)(params)
    segments, seg0_bits, digits = int(params[W_SEGMENTS]), int(params[W_SEG0_BITS]), int(params[W_DIGITS])
    wide = interpreted(plan_wide_blocks)(pairs, segments, seg0_bits, digits).shape[0]
    # budget = 53 - k_bits(K) - reserve: K = 1 with every reserve gives every budget a call can have
    for reserve in range(54):
        blocks, ok = interpreted(plan_block_array)(pairs, segments, seg0_bits, 1, digits, reserve)
        if ok and wide >= blocks.shape[0]:
            return True
    return False
