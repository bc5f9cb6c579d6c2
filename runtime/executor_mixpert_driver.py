"""The MixPert executor's driver: one compiled call from operands to ``C``.

:func:`mixpert_gemm` splits both operands (executor_mixpert_split) and calls
:func:`multiply_into`, whose :func:`product` runs the paths in order: the fast
path for the outputs whose rows and columns it can take (executor_mixpert_fast),
the certified path (float32 domain, executor_mixpert_certified) or the exact path
(float64 domain, executor_mixpert_exact) for the others, then step 6, the
guarantee check (runtime/mixpert_bound.py), and the non-finite rule
(runtime/executor_common.py). Small calls whose data needs only the fast path go
to executor_mixpert_small.small_gemm first: one fused loop kernel, the same bits.
Semantics: docs/numerics.md, "mixpert".

Every path after the planning is reached through a trampoline of
runtime/lazy_mixpert.py, so it compiles when a call first needs it, not with the
driver (docs/first_use.md); ``mixpert_gemm`` (the @mixjit sites' kernel) reaches the
general path the same way, and Python callers choose small or general path in
Python (:func:`gemm_from_python`), compiling only the one they take.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from mixjit.runtime.executor_mixpert_certified import tf32_split
from mixjit.runtime.executor_mixpert_pack import is_array, result_array
from mixjit.runtime.executor_mixpert_exact import exact_sets
from mixjit.runtime.executor_mixpert_small import NOT_TAKEN, small_gemm, small_max_work
from mixjit.runtime.executor_mixpert_words import (
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
from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.lazy_mixpert import (
    certified_lazy,
    exact_elements_lazy,
    exact_rows_lazy,
    fast32_certified_lazy,
    fast_path_lazy,
    fp64_doubtful_lazy,
    general_gemm,
    general_gemm_lazy,
    nonfinite_rule_lazy,
    recompute32_lazy,
    recompute_lazy,
)
from mixjit.runtime.mixpert_bound import dropped_weight, lost_rows
from mixjit.runtime.mixpert_wide import WIDE_LIMIT, plan_wide_blocks
from mixjit.runtime.pair_blocks import BLOCK_BITS, SPAN_RESERVE, k_bits, plan_block_array
from mixjit.runtime.segments import width


@cached_njit(nogil=True, inline="always")
def product(pa, pb, params, out, stats) -> int:
    """``out = RN(X)`` (float64 array holding the float32/float64 result) for split
    operands; fills ``stats``; returns a status."""
    to32 = params[W_DOMAIN] == DOMAIN_FP32
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
    segments = params[W_SEGMENTS]
    widest = pa.span.max() + pb.span.max()
    stats[STAT_WIDEST_SPAN] = widest
    if widest > MAX_SPAN:
        return ERR_SPAN
    # keep only the span the data has free (up to SPAN_RESERVE; wider rows and
    # columns take the exact / certified path): fewer, wider blocks, same bits
    reserve = min(widest, SPAN_RESERVE)
    blocks, ok = plan_block_array(kept_pairs(params), segments, params[W_SEG0_BITS], K, params[W_DIGITS], reserve)
    if not ok:
        return ERR_K_TOO_LONG
    # value = (sum of block products * 2^shift) * 2^(ref_a - w1) * 2^(ref_b - w1)
    w1 = width(segments, params[W_SEG0_BITS], params[W_DIGITS]) - 1
    ea = pa.ref - w1
    eb = pb.ref - w1
    # float32 domain: where wide, inexact blocks with a certified rounding need fewer
    # dgemms than exact ones (runtime/mixpert_wide.py), the fast path takes every row
    # and column without a fallback tile, whatever its span; same bits
    wide = plan_wide_blocks(kept_pairs(params), segments, params[W_SEG0_BITS], params[W_DIGITS])
    use_wide = to32 and wide.shape[0] < blocks.shape[0]
    limit = WIDE_LIMIT if use_wide else 53 - k_bits(K) - blocks[:, BLOCK_BITS].max()
    rows, cols = exact_sets(pa.span, pb.span, pa.fb, pb.fb, limit)
    doubt = np.zeros(0, dtype=np.int64)
    if rows.shape[0] < m and cols.shape[0] < n:
        if use_wide:
            doubt = fast32_certified_lazy(pa.q, pa.scale, pb.q, pb.scale, wide, ea, eb, segments, params[W_DIGITS],
                                     params[W_TK], out)
        else:
            fast_path_lazy(pa.q, pa.scale, pb.q, pb.scale, blocks, ea, eb, params, out, to32)
    if to32 and (rows.shape[0] or cols.shape[0] or doubt.shape[0]):
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
        # each path is called only with work to do (it compiles on its first call)
        slow = 0
        if rows.shape[0]:
            slow += certified_lazy(pa, pb, parts_a, parts_b, blocks, ea, eb, params, rows, np.arange(n), out, False)
        if cols.shape[0] and rest.shape[0]:
            slow += certified_lazy(pb, pa, parts_b, parts_a, blocks, eb, ea, params, cols, rest, out, True)
        in_cols = np.zeros(n, dtype=np.bool_)
        in_cols[cols] = True
        if doubt.shape[0]:
            slow += exact_elements_lazy(pa, pb, blocks, ea, eb, params, doubt, in_rows, in_cols, out)
        stats[STAT_CERTIFIED] = rows.shape[0] * n + cols.shape[0] * rest.shape[0]
        stats[STAT_SLOW_ELEMENTS] = slow
    elif not to32:
        if rows.shape[0]:
            exact_rows_lazy(pa, pb, blocks, ea, eb, params, rows, out, False, to32)
        if cols.shape[0]:
            exact_rows_lazy(pb, pa, blocks, eb, ea, params, cols, out, True, to32)
    w = width(segments, params[W_SEG0_BITS], params[W_DIGITS])
    if to32:
        lost_a = np.flatnonzero(lost_rows(pa.raw, pa.q, pa.fb, params[W_TK]))
        lost_b = np.flatnonzero(lost_rows(pb.raw, pb.q, pb.fb, params[W_TK]))
        if lost_a.shape[0]:
            recompute32_lazy(pa.raw, pb.raw, lost_a, out, False)
        if lost_b.shape[0]:
            recompute32_lazy(pb.raw, pa.raw, lost_b, out, True)
        stats[STAT_RECOMPUTED] = lost_a.shape[0] * n + lost_b.shape[0] * m - lost_a.shape[0] * lost_b.shape[0]
    else:
        dropped = dropped_weight(kept_pairs(params), segments, params[W_SEG0_BITS], params[W_DIGITS])
        doubtful = fp64_doubtful_lazy(pa.raw, pa.gexp, pa.ref, pb.raw, pb.gexp, pb.ref, params[W_TK], w, dropped, out)
        if doubtful.any():
            stats[STAT_RECOMPUTED] = recompute_lazy(pa.raw, pb.raw, doubtful, out, False)
    if pa.bad.any() or pb.bad.any():
        stats[STAT_NONFINITE] = nonfinite_rule_lazy(pa.raw, pb.raw, pa.bad, pb.bad, out)
    stats[STAT_FALLBACK_TILES] = pa.fb_tiles + pb.fb_tiles
    stats[STAT_EXACT_ROWS] = rows.shape[0]
    stats[STAT_EXACT_COLS] = cols.shape[0]
    return OK


@cached_njit(nogil=True)
def multiply_into(pa, pb, params, c, stats) -> int:
    """``C = A @ B`` under the MixPert semantics for split operands (from
    :func:`prepare_operand`) into ``c`` (m x n, float32/float64, any strides;
    float32 only for the FP32 domain, where the result is exact in it). Fills
    ``stats``; returns 0 or an ``ERR_*`` status (``c`` is then unspecified)."""
    if not params_ok(params, c.itemsize):
        return ERR_PARAMS
    m = pa.q.shape[0]
    n = pb.q.shape[0]
    if c.shape[0] != m or c.shape[1] != n:
        return ERR_SHAPE
    out = result_array(c, pa.raw, pb.raw)  # c itself where it can be: no copy
    status = product(pa, pb, params, out, stats)
    if status == OK and not is_array(out, c):
        for i in range(m):
            for j in range(n):
                c[i, j] = out[i, j]
    return status


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
    status = small_gemm(a, b, c, params, stats, small_max_work(params))
    if status != NOT_TAKEN:
        return status
    return general_gemm_lazy(a, b, c, params, stats)


def gemm_from_python(a: np.ndarray, b: np.ndarray, c: np.ndarray, params: np.ndarray, stats: np.ndarray) -> int:
    """:func:`mixpert_gemm` for Python callers (``run_mixpert``): the same checks, the
    same paths and bits, but the choice between the small and the general path made
    here, so a call compiles only the path it takes (the small path for a small call
    of a config it can take, else the general one, each a top-level function) and
    nothing compiles :func:`mixpert_gemm` itself (the @mixjit sites' kernel)."""
    if not params_ok.py_func(params, c.itemsize):
        return ERR_PARAMS
    if a.ndim != 2 or b.ndim != 2 or c.ndim != 2 or a.shape[1] != b.shape[0]:
        return ERR_SHAPE
    if c.shape[0] != a.shape[0] or c.shape[1] != b.shape[1]:
        return ERR_SHAPE
    work = a.shape[0] * b.shape[1] * a.shape[1]
    if 0 < work <= small_max_work.py_func(params) and small_may_take(params.tobytes()):
        status = small_gemm(a, b, c, params, stats, small_max_work.py_func(params))
        if status != NOT_TAKEN:
            return status
    return general_gemm(a, b, c, params, stats)


@lru_cache(maxsize=256)
def small_may_take(words: bytes) -> bool:
    """Can the small path take any call of the config whose words are ``words``
    (``params.tobytes()``)? No, in the float32 domain, when for every block budget it
    could meet the wide blocks are fewer than the exact ones (executor_mixpert_small:
    the general path then takes the wide blocks): ``gemm_from_python`` does not compile
    the small path for such a config. Evaluated in Python (the planners' ``py_func``),
    once per config."""
    params = np.frombuffer(words, dtype=np.int64)
    if params[W_DOMAIN] != DOMAIN_FP32:
        return True
    pairs = kept_pairs.py_func(params)
    segments, seg0_bits, digits = int(params[W_SEGMENTS]), int(params[W_SEG0_BITS]), int(params[W_DIGITS])
    wide = plan_wide_blocks.py_func(pairs, segments, seg0_bits, digits).shape[0]
    # budget = 53 - k_bits(K) - reserve: K = 1 with every reserve gives every budget a call can have
    for reserve in range(54):
        blocks, ok = plan_block_array.py_func(pairs, segments, seg0_bits, 1, digits, reserve)
        if ok and wide >= blocks.shape[0]:
            return True
    return False
