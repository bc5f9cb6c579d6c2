"""The C-ABI run-time entry point that every linked GEMM site calls.

Compiled code calls ``mixjit_gemm_entry`` (see ``ENTRY_SYMBOL``) with the site
id, a dtype code, the sizes m, n, k, the scalars alpha and beta and, for A
(m x k), B (k x n) and C (m x n), a data pointer and two byte strides; it
writes ``C = alpha * A @ B + beta * C`` (C is only written when beta == 0) and
returns 0, or an ``ENTRY_*`` error code. The C prototype::

    int32_t mixjit_gemm_entry(int64_t site, int64_t dtype,
                              int64_t m, int64_t n, int64_t k,
                              double alpha, double beta,
                              void *a, int64_t a_s0, int64_t a_s1,
                              void *b, int64_t b_s0, int64_t b_s1,
                              void *c, int64_t c_s0, int64_t c_s1);

The entry is a Numba ``@cfunc``: it runs without the GIL and costs a plain
function call, so sites inside hot loops and ``prange`` bodies stay cheap and
thread-safe. Each call first adds one to its site's counter with an atomic
read-modify-write, so ``call_count`` is exact under threads; a call that finds the counter at
its site's call limit (``LIMITS_SYMBOL``, ``set_call_limits``: set only in the tuner's evaluation
runs) fails with ``ENTRY_CALL_LIMIT`` instead, so a run looping on a site stops. It then reads the
site's row of the *plan table* (``PLANS_SYMBOL``, ``PLAN_WORDS`` int64 per site,
written by ``mixjit.plan``): word 0 names the compiled executor, the other words
are that executor's config parameters. Executors are compiled code too; a site
with no plan (word 0 == ``EXEC_NONE``) fails with ``ENTRY_NO_PLAN``.

Executors (each writes ``C = alpha * P + beta * C``, P the scheme's product) are
reached through a table of C addresses (``EXECUTOR_TABLE_SYMBOL``, one slot per plan
code and dtype), each filled by ``load_executor`` when a plan row first names the
executor, for the site's dtype only; the entry itself holds none, so its first
compile is small:

* ``EXEC_NATIVE`` (built in: no scheme declares it): BLAS through Numba's ``numba_xxgemm`` helper, the same call
  ``np.dot`` makes (operands with unit stride in one dimension are passed in
  place, others are copied); gemv or dot when A has one row or B one column, as
  ``np.dot`` chooses (``_native_vector``). With beta != 0, or when C overlaps A or B, or C
  is not BLAS-addressable, the product goes to a temporary first and
  ``C = alpha * T + beta * C`` follows element by element: exactly the
  arithmetic of Numba's ``C -= A @ B`` (so results equal plain Numba bit for
  bit), and never a product that reads memory it is writing.
* The compiled executors the schemes declare (``Scheme.executor``, a
  ``CompiledExecutor``: plan code, kernel, config words, statistics, refusal
  messages; ``EXECUTORS`` maps every scheme name to its code): one per family of
  the scheme catalogue (mixjit.runtime.schemes.catalog, whose ``plan_code`` each
  declares), read when this module is imported. The entry calls them through a table of C
  addresses (``EXECUTOR_TABLE_SYMBOL``, one slot per plan code and dtype), filled by
  ``load_executor`` when a plan row first names the executor (``write_plan_row``),
  for the site's dtype only (``mixjit.plan`` knows it; both when it is not known):
  compiled then, or loaded from its own disk cache, so a function whose sites all
  run ``native`` compiles no emulation code, and a float64 site compiles no float32
  kernel. Each executor's C function (one per dtype) computes P
  into a fresh temporary with the scheme's kernel, the very code ``scheme.run``
  runs (so P equals ``mixjit.gemm(A, B, scheme, config)`` bit for bit, and C may
  overlap A or B), then ``C = alpha * P + beta * C`` element by element in C's
  dtype, the same arithmetic as the native path's temporary (for ``C -= A @ B``:
  ``C - P``). A kernel's refusal (status s) comes back as
  ``executor_status(code, s)``: each executor has its own block of 64 codes, so
  ``ENTRY_ERRORS`` names the executor and its message. ``install_executor`` puts a
  foreign C function with the entry's signature in a free slot (``mixjit.backends``'
  device executor, a ctypes callback that runs a site's GEMM on a GPU).

* ``EXEC_REFERENCE`` (the tuner's reference plan, not a scheme): P is the
  float64 BLAS product of the operands upcast to float64, and
  ``C = alpha * P + beta * C`` is evaluated in float64 and rounded once to C's
  dtype. For float32 operands every product is exact in float64 and the sum
  carries at most about ``k * 2**-53`` relative error, far below float32's
  rounding, so the site is exact up to its final rounding. (For float64 sites
  the reference plan uses ``mixpert-fp64``'s most precise config instead:
  ``mixjit.plan.reference_plan``.)

Profiling (``set_profiling``): while the profile flag (``PROFILE_SYMBOL``) is
set, each call also logs its (m, n, k) in its site's row of the shape log
(``SHAPES_SYMBOL``: ``SHAPE_SLOTS`` slots of [key, count], lock-free, then an
overflow count) and a MixPert call adds its executor statistics to its site's
row of ``STATS_SYMBOL`` (sums; the widest exponent span as a maximum); only
executors that declare ``profile_stats`` record statistics. With the
flag clear, a call costs one extra atomic load.

The entry is cached on disk by ``RuntimeCache`` (``mixjit.runtime.jit.cache``),
whose key also hashes the runtime sources it compiles in (this file's runtime
imports, transitively): Numba's own key sees only this file. Each executor's C
function has its own cache files (``_ExecutorCache``), keyed also on its
declaration and its kernel module's runtime sources. An unreadable cache file is
a miss (a ``CacheFileWarning``, then the entry compiles again).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Iterable, Sequence

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as llir
from numba import njit, types
from numba.core import cgutils, sigutils
from numba.core.ccallback import CFunc
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from mixjit.runtime.jit.cache import RuntimeCache
from mixjit.runtime.jit.scratch_arrays import any_layout, stack_array
from mixjit.runtime.jit.source_hash import runtime_sources_hash
from mixjit.runtime.schemes.base import MAX_EXECUTOR_CODE, CompiledExecutor, compiled_executors

ENTRY_SYMBOL = "mixjit_gemm_entry"
"""Name under which the entry is registered with llvmlite (``binding.add_symbol``)."""

MAX_SITES = 1 << 16
"""Number of site ids (and counters) the process can hand out."""

DTYPE_F64 = 0
DTYPE_F32 = 1
DTYPE_CODES: dict[np.dtype, int] = {np.dtype(np.float64): DTYPE_F64, np.dtype(np.float32): DTYPE_F32}
"""The ``dtype`` argument of the entry for each supported element type."""
_NUMPY_DTYPES = {code: dt.type for dt, code in DTYPE_CODES.items()}

ENTRY_OK = 0
ENTRY_BAD_SITE = 1
ENTRY_BAD_DTYPE = 2
ENTRY_TOO_LARGE = 3
ENTRY_BLAS_FAILED = 4
ENTRY_NO_PLAN = 5
ENTRY_BAD_EXECUTOR = 6
ENTRY_CALL_LIMIT = 7
_STATUS_SPAN = MAX_EXECUTOR_CODE + 1


def executor_status(code: int, status: int) -> int:
    """The entry's return code for status ``status`` (1..63) of the compiled executor
    with plan code ``code``: each executor's refusals have their own base."""
    return _STATUS_SPAN * code + status


_EXECUTORS_BY_SCHEME: dict[str, CompiledExecutor] = compiled_executors()

EXECUTORS: dict[str, int] = {name: ex.code for name, ex in _EXECUTORS_BY_SCHEME.items()}
"""Every scheme a site can run, by name: the plan code of its compiled executor (word 0
of a plan row). Schemes declare their executor (``Scheme.executor``) with their catalogue family's
plan code; this is the view of every family in the catalogue when this module is imported."""

ENTRY_ERRORS: dict[int, str] = {
    ENTRY_BAD_SITE: f"site id outside [0, {MAX_SITES}); allocate ids with mixjit.entry.new_site()",
    ENTRY_BAD_DTYPE: "dtype code is not one of mixjit.entry.DTYPE_CODES (float64, float32)",
    ENTRY_TOO_LARGE: "a dimension or leading dimension exceeds the BLAS int range (2**31-1); split the GEMM",
    ENTRY_BLAS_FAILED: "BLAS is unavailable (Numba found no scipy.linalg.cython_blas); install scipy",
    ENTRY_NO_PLAN: "the site has no plan; give it one with mixjit.plan.set_plan() before it runs",
    ENTRY_BAD_EXECUTOR: "the site's plan names an executor the entry does not have (see mixjit.entry.EXECUTORS)",
    ENTRY_CALL_LIMIT: "the site passed its call limit (mixjit.entry.set_call_limits): a tuning evaluation "
                      "stopped a run making far more calls than its reference run",
    **{executor_status(ex.code, status): f"{ex.name} executor: {msg}"
       for ex in {e.code: e for e in _EXECUTORS_BY_SCHEME.values()}.values()
       for status, msg in ex.status_messages.items()},
}
"""Message for each non-zero return code of the entry."""

COUNTERS_SYMBOL = "mixjit_site_counters"
"""Symbol of the per-site counter array (MAX_SITES int64), registered with llvmlite."""

# Per-site call counters, alive for the whole process. The entry reaches them
# through COUNTERS_SYMBOL rather than a baked-in address, so its object code
# can be cached to disk and reloaded by another process.
_COUNTS = np.zeros(MAX_SITES, dtype=np.int64)
_COUNTS_ADDR = _COUNTS.ctypes.data
llvm.add_symbol(COUNTERS_SYMBOL, _COUNTS_ADDR)

LIMITS_SYMBOL = "mixjit_site_call_limits"
"""Symbol of the per-site call limits (MAX_SITES int64, 0: none), registered with llvmlite."""

# Per-site call limits: a call that finds its site's counter at the limit fails with
# ENTRY_CALL_LIMIT, so a tuning evaluation that loops (a convergence loop a cheap candidate
# broke) stops even where it cannot be killed (mixjit.tuning.workers). 0 (no limit) elsewhere.
_LIMITS = np.zeros(MAX_SITES, dtype=np.int64)
llvm.add_symbol(LIMITS_SYMBOL, _LIMITS.ctypes.data)

PLANS_SYMBOL = "mixjit_site_plans"
"""Symbol of the plan table (MAX_SITES x PLAN_WORDS int64), registered with llvmlite."""

PLAN_WORDS = 16
"""int64 words per site in the plan table: the executor code, then its parameters."""

EXEC_NONE = 0
EXEC_NATIVE = 1
EXEC_REFERENCE = 3
REFERENCE_EXECUTOR = "reference"
"""The reference executor (word 0 = ``EXEC_REFERENCE``): not a scheme, so not in EXECUTORS."""

# The plan table, read by the entry through PLANS_SYMBOL (cacheable, like the
# counters); written only by mixjit.plan. np.zeros maps untouched pages lazily.
_PLANS = np.zeros((MAX_SITES, PLAN_WORDS), dtype=np.int64)
llvm.add_symbol(PLANS_SYMBOL, _PLANS.ctypes.data)

PROFILE_SYMBOL = "mixjit_profile_flag"
SHAPES_SYMBOL = "mixjit_site_shapes"
STATS_SYMBOL = "mixjit_site_stats"
SHAPE_SLOTS = 64
"""Distinct (m, n, k) a site's shape log holds; calls of further shapes are counted as overflow."""
SHAPE_ROW = 2 * SHAPE_SLOTS + 1
_SHAPE_BITS = 20
_SHAPE_LIMIT = 1 << _SHAPE_BITS
SITE_STATS = max([ex.n_stats for ex in _EXECUTORS_BY_SCHEME.values() if ex.profile_stats] or [1])
"""Words per site in the statistics table: the counters of the executors that declare
``profile_stats`` (MixPert's ``STAT_*``)."""

_PROFILE = np.zeros(1, dtype=np.int64)
_SHAPES = np.zeros((MAX_SITES, SHAPE_ROW), dtype=np.int64)  # zero pages are mapped lazily
_STATS = np.zeros((MAX_SITES, SITE_STATS), dtype=np.int64)
llvm.add_symbol(PROFILE_SYMBOL, _PROFILE.ctypes.data)
llvm.add_symbol(SHAPES_SYMBOL, _SHAPES.ctypes.data)
llvm.add_symbol(STATS_SYMBOL, _STATS.ctypes.data)

_site_lock = threading.Lock()
_next_site = 0
_blocks: dict[str, tuple[np.ndarray, int]] = {}


def new_sites(count: int) -> int:
    """Hand out ``count`` consecutive fresh site ids (thread-safe); returns the first."""
    global _next_site
    with _site_lock:
        if count < 0 or _next_site + count > MAX_SITES:
            raise RuntimeError(
                f"mixjit: cannot hand out {count} more GEMM site ids ({_next_site} of {MAX_SITES} "
                "are in use in this process); raise mixjit.entry.MAX_SITES"
            )
        first = _next_site
        _next_site += count
        return first


def new_site() -> int:
    """Hand out a fresh site id (thread-safe); each GEMM site gets its own."""
    return new_sites(1)


def register_site_block(symbol: str, count: int) -> tuple[int, bool]:
    """The first site id of the block of ``count`` sites published under
    ``symbol``, and whether this call created the block.

    Compiled code finds its sites as ``load(symbol) + local index``, so its object
    code holds no site id and can be cached. The first call for a symbol
    allocates the ids and registers an int64 cell holding the first one with
    llvmlite; later calls (the same code compiled or loaded again in this
    process) return the same block."""
    with _block_lock:
        if symbol in _blocks:
            cell, known = _blocks[symbol]
            if known != count:
                raise RuntimeError(
                    f"mixjit: site block {symbol!r} has {known} sites, code asks for {count}; "
                    "two different compilations produced one block name (a mixjit bug)"
                )
            return int(cell[0]), False
        cell = np.array([new_sites(count)], dtype=np.int64)
        _blocks[symbol] = (cell, count)
        llvm.add_symbol(symbol, cell.ctypes.data)
        return int(cell[0]), True


_block_lock = threading.Lock()


def call_count(site: int) -> int:
    """How many times the entry has run for ``site`` since the last reset."""
    if not 0 <= site < MAX_SITES:
        raise ValueError(f"mixjit: site id {site} is outside [0, {MAX_SITES})")
    return int(_COUNTS[site])


def reset_call_counts() -> None:
    """Set every site's counter back to zero (call it while no GEMM is running)."""
    _COUNTS[:] = 0


def site_call_counts(sites: "Sequence[int]") -> np.ndarray:
    """A copy of the counters of ``sites`` (in order)."""
    return _COUNTS[list(sites)].copy()


def set_site_call_counts(sites: "Sequence[int]", counts: "Sequence[int] | np.ndarray") -> None:
    """Set the counters of ``sites`` (the tuner restores them after its own runs)."""
    _COUNTS[list(sites)] = counts


def set_call_limits(limits: "dict[int, int]") -> None:
    """From now on a call of site ``s`` that finds its counter at ``limits[s]`` or above fails
    with ``ENTRY_CALL_LIMIT`` (the compiled function raises); a limit of 0 removes it. The
    tuner sets limits only in its own evaluation runs (mixjit.tuning.workers)."""
    for site, limit in limits.items():
        if not 0 <= site < MAX_SITES or limit < 0:
            raise ValueError(f"mixjit: call limit {limit} for site {site}: needs a site id in [0, {MAX_SITES}) "
                             "and a limit >= 0")
        _LIMITS[site] = limit


def set_profiling(on: bool) -> None:
    """Switch the shape log and the executor statistics on or off for every site."""
    _PROFILE[0] = 1 if on else 0


def profiling() -> bool:
    """Whether the shape log and the executor statistics are on (``set_profiling``)."""
    return bool(_PROFILE[0])


def reset_profile(sites: "range | list[int]") -> None:
    """Clear the shape log and statistics of ``sites``."""
    for s in sites:
        _SHAPES[s] = 0
        _STATS[s] = 0


def shape_log(site: int) -> tuple[list[tuple[int, int, int, int]], int]:
    """The (m, n, k, calls) the shape log holds for ``site`` (first seen first), and the
    number of calls whose shape did not fit (more than ``SHAPE_SLOTS`` shapes, or a
    dimension of 2**20 or more)."""
    row = _SHAPES[site]
    out = []
    for slot in range(SHAPE_SLOTS):
        key, count = int(row[2 * slot]), int(row[2 * slot + 1])
        if key == 0:
            break
        key -= 1
        mask = _SHAPE_LIMIT - 1
        out.append((key >> (2 * _SHAPE_BITS + 1), (key >> (_SHAPE_BITS + 1)) & mask, key & mask, count))
    return out, int(row[-1])


def site_stats(site: int) -> np.ndarray:
    """A copy of ``site``'s executor statistics (``executor_mixpert.STAT_*`` order)."""
    return _STATS[site].copy()


def _table_global(module, symbol: str, size: int):
    i64 = llir.IntType(64)
    table = module.globals.get(symbol)
    if table is None:
        table = llir.GlobalVariable(module, llir.ArrayType(i64, size), symbol)
        table.linkage = "external"
    return table


def _table_ops(symbol: str, size: int):
    """Atomic (monotonic) load / add / max / compare-and-swap on word ``i`` of the int64
    table registered under ``symbol``: intrinsics for compiled code."""

    def slot(builder, index):
        return builder.gep(_table_global(builder.module, symbol, size), [llir.IntType(32)(0), index], inbounds=True)

    @intrinsic
    def load(typingctx, index):
        def codegen(context, builder, sig, args):
            return builder.load_atomic(slot(builder, args[0]), "monotonic", 8)
        return types.int64(types.intp), codegen

    @intrinsic
    def add(typingctx, index, value):
        def codegen(context, builder, sig, args):
            return builder.atomic_rmw("add", slot(builder, args[0]), args[1], "monotonic")
        return types.int64(types.intp, types.int64), codegen

    @intrinsic
    def amax(typingctx, index, value):
        def codegen(context, builder, sig, args):
            return builder.atomic_rmw("max", slot(builder, args[0]), args[1], "monotonic")
        return types.int64(types.intp, types.int64), codegen

    @intrinsic
    def cas(typingctx, index, expected, new):
        def codegen(context, builder, sig, args):
            pair = builder.cmpxchg(slot(builder, args[0]), args[1], args[2], "monotonic", "monotonic")
            return builder.extract_value(pair, 0)
        return types.int64(types.intp, types.int64, types.int64), codegen

    return load, add, amax, cas


_profile_load, _, _, _ = _table_ops(PROFILE_SYMBOL, 1)
_limit_load, _, _, _ = _table_ops(LIMITS_SYMBOL, MAX_SITES)
_shape_load, _shape_add, _, _shape_cas = _table_ops(SHAPES_SYMBOL, MAX_SITES * SHAPE_ROW)
_, _stat_add, _stat_max, _ = _table_ops(STATS_SYMBOL, MAX_SITES * SITE_STATS)


@njit
def _record_shape(site, m, n, k):
    """Count one call of shape (m, n, k) in ``site``'s shape log (lock-free: a slot is
    claimed by compare-and-swap of its key, so concurrent calls never lose a count)."""
    base = site * SHAPE_ROW
    if m >= _SHAPE_LIMIT or n >= _SHAPE_LIMIT or k >= _SHAPE_LIMIT:
        _shape_add(base + SHAPE_ROW - 1, 1)
        return
    key = ((m << (2 * _SHAPE_BITS + 1)) | (n << (_SHAPE_BITS + 1)) | k) + 1
    for s in range(SHAPE_SLOTS):
        word = base + 2 * s
        old = _shape_load(word)
        if old == 0:
            old = _shape_cas(word, 0, key)
            if old == 0:
                old = key
        if old == key:
            _shape_add(word + 1, 1)
            return
    _shape_add(base + SHAPE_ROW - 1, 1)


@njit
def _record_stats(site, stats, max_stat):
    """Add an executor call's statistics to ``site``'s row (word ``max_stat`` as a maximum)."""
    base = site * SITE_STATS
    for w in range(min(SITE_STATS, stats.shape[0])):
        if w == max_stat:
            _stat_max(base + w, stats[w])
        else:
            _stat_add(base + w, stats[w])


@intrinsic
def _count_call(typingctx, site):
    """Add one to the counter of ``site`` with an atomic read-modify-write."""
    sig = types.int64(types.intp)

    def codegen(context, builder, sig, args):
        i64 = llir.IntType(64)
        module = builder.module
        counters = module.globals.get(COUNTERS_SYMBOL)
        if counters is None:
            counters = llir.GlobalVariable(module, llir.ArrayType(i64, MAX_SITES), COUNTERS_SYMBOL)
            counters.linkage = "external"
        slot = builder.gep(counters, [llir.IntType(32)(0), args[0]], inbounds=True)
        return builder.atomic_rmw("add", slot, i64(1), "monotonic")

    return sig, codegen


@intrinsic
def _address(typingctx, ptr):
    """The integer address of a ``void*``."""
    sig = types.intp(ptr)

    def codegen(context, builder, sig, args):
        return builder.ptrtoint(args[0], context.get_value_type(types.intp))

    return sig, codegen


@intrinsic
def _plan_word(typingctx, site, word):
    """Word ``word`` of the plan-table row of ``site`` (an atomic monotonic load:
    a tuner may rewrite a plan while other threads run the site)."""
    sig = types.int64(types.intp, types.intp)

    def codegen(context, builder, sig, args):
        i64 = llir.IntType(64)
        module = builder.module
        table = module.globals.get(PLANS_SYMBOL)
        if table is None:
            table = llir.GlobalVariable(module, llir.ArrayType(i64, MAX_SITES * PLAN_WORDS), PLANS_SYMBOL)
            table.linkage = "external"
        index = builder.add(builder.mul(args[0], i64(PLAN_WORDS)), args[1])
        slot = builder.gep(table, [llir.IntType(32)(0), index], inbounds=True)
        return builder.load_atomic(slot, "monotonic", 8)

    return sig, codegen


@intrinsic
def _view(typingctx, ptr, rows, cols, s0, s1, dtype):
    """A rows x cols array of ``dtype`` over foreign memory at ``ptr`` with byte
    strides (s0, s1): no owner, no copy."""
    arrty = types.Array(dtype.dtype, 2, "A")
    sig = arrty(ptr, rows, cols, s0, s1, dtype)

    def codegen(context, builder, sig, args):
        data, nrows, ncols, st0, st1, _ = args
        elty = context.get_data_type(arrty.dtype)
        ary = make_array(arrty)(context, builder)
        populate_array(
            ary,
            data=builder.bitcast(data, elty.as_pointer()),
            shape=cgutils.pack_array(builder, [nrows, ncols]),
            strides=cgutils.pack_array(builder, [st0, st1]),
            itemsize=context.get_constant(types.intp, context.get_abi_sizeof(elty)),
            meminfo=None,
        )
        return ary._getvalue()

    return sig, codegen


def _blas_kind(dtype):
    """Numba's BLAS helpers' kind character for a float dtype."""
    return llir.IntType(8)(ord("d" if dtype == types.float64 else "s"))


@intrinsic
def _xxgemm(typingctx, a, b, c, trans_a, ld_a, trans_b, ld_b, ld_c, alpha):
    """BLAS ``c = alpha * a @ b`` on row-major-addressed 2-D arrays through Numba's
    ``numba_xxgemm`` helper (column-major BLAS computing ``c^T = b^T a^T``).
    ``trans_x`` is 0 when x is stored row by row (pass x^T as is), 1 when stored
    column by column; ``ld_x`` the matching leading dimension in elements.
    Returns BLAS's status (0 = done)."""
    sig = types.int32(a, b, c, trans_a, ld_a, trans_b, ld_b, ld_c, alpha)

    def codegen(context, builder, sig, args):
        dtype = sig.args[0].dtype
        av, bv, cv = (make_array(t)(context, builder, v) for t, v in zip(sig.args[:3], args[:3]))
        ta, lda, tb, ldb, ldc, alpha = args[3:]
        m, k = cgutils.unpack_tuple(builder, av.shape)
        n = cgutils.unpack_tuple(builder, bv.shape)[1]
        i8, voidp = llir.IntType(8), llir.IntType(8).as_pointer()
        intp = context.get_value_type(types.intp)
        fnty = llir.FunctionType(
            llir.IntType(32),
            [i8, i8, i8, intp, intp, intp, voidp, voidp, intp, voidp, intp, voidp, voidp, intp],
        )
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")

        def trans_char(flag):
            is_t = builder.icmp_signed("!=", flag, flag.type(0))
            return builder.select(is_t, i8(ord("t")), i8(ord("n")))

        def slot(value):
            return builder.bitcast(cgutils.alloca_once_value(builder, value), voidp)

        alpha_v = context.cast(builder, alpha, sig.args[-1], dtype)
        zero = context.get_constant_generic(builder, dtype, 0.0)

        return builder.call(fn, [
            _blas_kind(dtype), trans_char(tb), trans_char(ta), n, m, k,
            slot(alpha_v), builder.bitcast(bv.data, voidp), ldb,
            builder.bitcast(av.data, voidp), lda,
            slot(zero), builder.bitcast(cv.data, voidp), ldc,
        ])

    return sig, codegen


@intrinsic
def _xxdot(typingctx, k, x, y, out):
    """``out[0, 0] = x . y`` over k unit-stride elements by BLAS dot through Numba's
    ``numba_xxdot`` helper: what ``np.dot`` runs in Numba for a (1, k) @ (k, 1)
    product. Returns the helper's status (0 = done)."""
    sig = types.int32(k, x, y, out)

    def codegen(context, builder, sig, args):
        dtype = sig.args[1].dtype
        xv, yv, ov = (make_array(t)(context, builder, v) for t, v in zip(sig.args[1:], args[1:]))
        intp = context.get_value_type(types.intp)
        i8 = llir.IntType(8)
        voidp = i8.as_pointer()
        fnty = llir.FunctionType(llir.IntType(32), [i8, i8, intp, voidp, voidp, voidp])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxdot")
        n = context.cast(builder, args[0], sig.args[0], types.intp)
        pointers = [builder.bitcast(v.data, voidp) for v in (xv, yv, ov)]
        return builder.call(fn, [_blas_kind(dtype), i8(0), n, *pointers])

    return sig, codegen


@intrinsic
def _xxgemv(typingctx, trans, rows, cols, a, lda, x, y):
    """``y = op(a) @ x`` (alpha 1, beta 0) by BLAS gemv through Numba's
    ``numba_xxgemv`` helper, in its column-major terms: ``a`` is rows x cols
    stored column by column with leading dimension ``lda``, op transposes it when
    ``trans`` != 0; x and y have unit stride. Returns the helper's status."""
    sig = types.int32(trans, rows, cols, a, lda, x, y)

    def codegen(context, builder, sig, args):
        dtype = sig.args[3].dtype
        av, xv, yv = (make_array(sig.args[i])(context, builder, args[i]) for i in (3, 5, 6))
        intp = context.get_value_type(types.intp)
        i8 = llir.IntType(8)
        voidp = i8.as_pointer()
        fnty = llir.FunctionType(
            llir.IntType(32), [i8, i8, intp, intp, voidp, voidp, intp, voidp, voidp, voidp])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemv")
        is_t = builder.icmp_signed("!=", args[0], args[0].type(0))
        trans_c = builder.select(is_t, i8(ord("t")), i8(ord("n")))

        def slot(value):
            v = context.get_constant_generic(builder, dtype, value)
            return builder.bitcast(cgutils.alloca_once_value(builder, v), voidp)

        r, c, ld = (context.cast(builder, args[i], sig.args[i], types.intp) for i in (1, 2, 4))
        return builder.call(fn, [
            _blas_kind(dtype), trans_c, r, c, slot(1.0), builder.bitcast(av.data, voidp), ld,
            builder.bitcast(xv.data, voidp), slot(0.0), builder.bitcast(yv.data, voidp),
        ])

    return sig, codegen


_INT_MAX = 2**31 - 1


@njit
def _blas_layout(rows, cols, s0, s1, isz):
    """How BLAS can read a rows x cols operand with byte strides (s0, s1):
    (0, ld) if stored row by row, (1, ld) if column by column, (-1, 0) if neither
    (negative or non-unit strides: the caller copies it)."""
    if (cols <= 1 or s1 == isz) and (rows <= 1 or (s0 > 0 and s0 % isz == 0)):
        ld = s0 // isz if rows > 1 else max(1, cols)
        if ld >= max(1, cols):
            return 0, ld
    if (rows <= 1 or s0 == isz) and (cols <= 1 or (s1 > 0 and s1 % isz == 0)):
        ld = s1 // isz if cols > 1 else max(1, rows)
        if ld >= max(1, rows):
            return 1, ld
    return -1, 0


# Element loops instead of slice assignment and np.ascontiguousarray: Numba's
# slice-setitem machinery alone costs seconds of compile time.
@njit
def _copy_into(dst, src):
    for i in range(dst.shape[0]):
        for j in range(dst.shape[1]):
            dst[i, j] = src[i, j]


@njit
def _copy_c(x):
    """A C-ordered copy of a 2-D array."""
    out = np.empty(x.shape, x.dtype)
    _copy_into(out, x)
    return out


@njit
def _extent(p, rows, cols, s0, s1, isz):
    """[lo, hi) byte range spanned by a rows x cols operand at address p."""
    lo = p + min(0, (rows - 1) * s0) + min(0, (cols - 1) * s1)
    hi = p + max(0, (rows - 1) * s0) + max(0, (cols - 1) * s1) + isz
    return lo, hi


@njit
def _may_overlap(pc, m, n, cs0, cs1, px, rows, cols, xs0, xs1, isz):
    """False only when the C operand (m x n) and X (rows x cols) share no byte.

    Exact for disjoint address ranges and for two row-major (or two
    column-major) views with one leading stride, such as two column blocks of
    one matrix (``A[i:, :i]`` and ``A[i:, i:]``); conservative otherwise."""
    clo, chi = _extent(pc, m, n, cs0, cs1, isz)
    xlo, xhi = _extent(px, rows, cols, xs0, xs1, isz)
    if chi <= xlo or xhi <= clo:
        return False
    if cs1 == isz and xs1 == isz and cs0 == xs0 and cs0 > 0:
        width_c, width_x, ld = n * isz, cols * isz, cs0
    elif cs0 == isz and xs0 == isz and cs1 == xs1 and cs1 > 0:
        width_c, width_x, ld = m * isz, rows * isz, cs1
    else:
        return True
    d = (px - pc) % ld  # where X's lines start inside C's line period
    return not (width_c <= d and d + width_x <= ld)


@njit
def _native(dt, isz, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
    """C = alpha * A @ B + beta * C over foreign memory by BLAS; an ENTRY_* code."""
    if max(m, n, k) > _INT_MAX:
        return ENTRY_TOO_LARGE
    cv = _view(c, m, n, cs0, cs1, dt)
    if m == 0 or n == 0:
        return ENTRY_OK
    if k == 0:
        _scale(cv, beta)
        return ENTRY_OK
    av = _view(a, m, k, as0, as1, dt)
    bv = _view(b, k, n, bs0, bs1, dt)
    ta, lda = _blas_layout(m, k, as0, as1, isz)
    if ta < 0:
        av = _copy_c(av)
        ta, lda = 0, k
    tb, ldb = _blas_layout(k, n, bs0, bs1, isz)
    if tb < 0:
        bv = _copy_c(bv)
        tb, ldb = 0, n
    tc, ldc = _blas_layout(m, n, cs0, cs1, isz)
    if max(lda, ldb, ldc) > _INT_MAX:
        return ENTRY_TOO_LARGE
    if m == 1 or n == 1:
        status = _native_vector(m, n, k, av, ta, lda, as1 == isz, bv, tb, ldb, bs0 == isz, cv, alpha, beta)
        return ENTRY_OK if status == 0 else ENTRY_BLAS_FAILED
    pc = _address(c)
    direct = (
        tc == 0
        and beta == 0.0
        and not _may_overlap(pc, m, n, cs0, cs1, _address(a), m, k, as0, as1, isz)
        and not _may_overlap(pc, m, n, cs0, cs1, _address(b), k, n, bs0, bs1, isz)
    )
    if direct:
        status = _xxgemm(av, bv, cv, ta, lda, tb, ldb, ldc, alpha)
    else:
        tmp = np.empty((m, n), dt)
        status = _xxgemm(av, bv, tmp, ta, lda, tb, ldb, n, 1.0)
        if status == 0:
            _axpby(cv, tmp, alpha, beta)
    return ENTRY_OK if status == 0 else ENTRY_BLAS_FAILED


@njit
def _native_vector(m, n, k, a, ta, lda, a_row_unit, b, tb, ldb, b_col_unit, c, alpha, beta):
    """A product with one row (m == 1) or one column (n == 1) as Numba's ``np.dot``
    computes it (numba/np/linalg.py, ``dot_3_mm``): BLAS dot for (1, k) @ (k, 1),
    gemv otherwise (a BLAS gemm of the same operands may round differently), into a
    temporary; then ``C = alpha * T + beta * C``. A row-by-row operand is read as
    Numba reads a C-ordered one, column by column as an F-ordered one; a vector
    operand without unit stride is copied first, as Numba does."""
    tmp = np.empty((m, n), c.dtype)
    if n == 1:
        y = b if (b_col_unit or k == 1) else _copy_c(b)
        if m == 1:
            x = a if (a_row_unit or k == 1) else _copy_c(a)
            status = _xxdot(k, x, y, tmp)
        elif ta == 0:
            status = _xxgemv(1, k, m, a, lda, y, tmp)
        else:
            status = _xxgemv(0, m, k, a, lda, y, tmp)
    else:
        x = a if (a_row_unit or k == 1) else _copy_c(a)
        if tb == 0:
            status = _xxgemv(0, n, k, b, ldb, x, tmp)
        else:
            status = _xxgemv(1, k, n, b, ldb, x, tmp)
    if status == 0:
        _axpby(c, tmp, alpha, beta)
    return status


@njit
def _axpby(c, t, alpha, beta):
    """c = alpha * t + beta * c element by element, in c's dtype. beta == 0
    overwrites c (NaNs in c do not survive, as in BLAS). With alpha = -1 and
    beta = 1 this is exactly Numba's ``c -= t`` ((-t) + c == c - t in IEEE)."""
    av = c.dtype.type(alpha)
    bv = c.dtype.type(beta)
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            if beta == 0.0:
                c[i, j] = av * t[i, j]
            else:
                c[i, j] = av * t[i, j] + bv * c[i, j]


@njit
def _scale(c, beta):
    """c = beta * c, or zeros when beta == 0 (an empty product, k == 0)."""
    bv = c.dtype.type(beta)
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            c[i, j] = bv * c[i, j] if beta != 0.0 else c.dtype.type(0.0)


@njit
def _upcast(x):
    """A C-ordered float64 copy of a 2-D array."""
    out = np.empty(x.shape, np.float64)
    _copy_into(out, x)
    return out


@njit
def _reference(dt, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
    """C = alpha * P + beta * C with P the float64 BLAS product of the upcast operands,
    the whole right-hand side in float64, rounded once to C's dtype."""
    if max(m, n, k) > _INT_MAX:
        return ENTRY_TOO_LARGE
    cv = _view(c, m, n, cs0, cs1, dt)
    if m == 0 or n == 0:
        return ENTRY_OK
    tmp = np.zeros((m, n), np.float64)
    if k > 0:
        a64 = _upcast(_view(a, m, k, as0, as1, dt))
        b64 = _upcast(_view(b, k, n, bs0, bs1, dt))
        if _xxgemm(a64, b64, tmp, 0, k, 0, n, n, 1.0) != 0:
            return ENTRY_BLAS_FAILED
    for i in range(m):
        for j in range(n):
            if beta == 0.0:
                cv[i, j] = dt(alpha * tmp[i, j])
            else:
                cv[i, j] = dt(alpha * tmp[i, j] + beta * np.float64(cv[i, j]))
    return ENTRY_OK


_ENTRY_SIG = types.int32(
    types.int64, types.int64,
    types.int64, types.int64, types.int64,
    types.float64, types.float64,
    types.voidptr, types.int64, types.int64,
    types.voidptr, types.int64, types.int64,
    types.voidptr, types.int64, types.int64,
)


def _entry(site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
    if site < 0 or site >= MAX_SITES:
        return ENTRY_BAD_SITE
    calls = _count_call(site)
    limit = _limit_load(site)
    if limit != 0 and calls >= limit:
        return ENTRY_CALL_LIMIT
    if dtype != DTYPE_F64 and dtype != DTYPE_F32:
        return ENTRY_BAD_DTYPE
    executor = _plan_word(site, 0)
    if executor == EXEC_NONE:
        return ENTRY_NO_PLAN
    if _profile_load(0) != 0:
        _record_shape(site, m, n, k)
    address = _executor_address(executor * _N_DTYPES + dtype) if 0 < executor <= MAX_EXECUTOR_CODE else 0
    if address == 0:
        return ENTRY_BAD_EXECUTOR
    return _call_executor(address, site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)


EXECUTOR_TABLE_SYMBOL = "mixjit_executor_table"
"""Symbol of the table of compiled executors' C addresses, one int64 per plan code and
entry dtype code (slot ``code * 2 + dtype``; 0: not loaded yet), registered with llvmlite:
the entry calls executors through it."""

_N_DTYPES = len(DTYPE_CODES)
_EXEC_TABLE = np.zeros((MAX_EXECUTOR_CODE + 1) * _N_DTYPES, dtype=np.int64)
llvm.add_symbol(EXECUTOR_TABLE_SYMBOL, _EXEC_TABLE.ctypes.data)
_executor_address, _, _, _ = _table_ops(EXECUTOR_TABLE_SYMBOL, _EXEC_TABLE.shape[0])


def _slot(code: int, dtype_code: int) -> int:
    """The executor table's slot of plan code ``code`` for entry dtype code ``dtype_code``."""
    return code * _N_DTYPES + dtype_code


@intrinsic
def _call_executor(typingctx, address, site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
    """Call the executor C function at ``address`` with the entry's own arguments."""
    args = (site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)
    sig = types.int32(address, *args)

    def codegen(context, builder, sig, llargs):
        fnty = llir.FunctionType(llir.IntType(32), [context.get_value_type(t) for t in sig.args[1:]])
        fn = builder.inttoptr(llargs[0], fnty.as_pointer())
        return builder.call(fn, llargs[1:])

    return sig, codegen


def _executor_function(executor: CompiledExecutor, dtype_code: int):
    """The C-ABI function (the entry's signature) that runs ``executor`` for a site of
    one dtype (entry code ``dtype_code``; another dtype gives ``ENTRY_BAD_DTYPE``):
    config words from the plan row, ``P`` straight into C where ``C = P`` (alpha 1,
    beta 0, C overlapping neither operand), else into a fresh temporary followed by
    ``C = alpha * P + beta * C`` element by element in C's dtype (the arithmetic of the
    native path's temporary: for ``C -= A @ B``, ``C - P``); the executor's refusal as
    ``executor_status(code, status)`` (C is then unspecified), statistics while profiling."""
    kernel, code, n_words = executor.kernel, executor.code, executor.n_words
    n_stats, max_stat, profiled = max(1, executor.n_stats), executor.max_stat, executor.profile_stats

    # The kernel is called, never passed as a value (a first-class function would be a
    # process address in the code, which then could not be cached).
    # No heap allocation for the config words and statistics (stack arrays), and none
    # for P where C = P can be written in place (alpha 1, beta 0, C overlapping neither
    # operand: then alpha * P + beta * C is P, bit for bit); the kernel sees C and the
    # temporary with one type ("A" layout), so it compiles once.
    def body(dt, site, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
        if m == 0 or n == 0:
            return ENTRY_OK
        params = stack_array(n_words, np.int64)
        for w in range(n_words):
            params[w] = _plan_word(site, 1 + w)
        stats = stack_array(n_stats, np.int64)
        for w in range(n_stats):
            stats[w] = 0
        av = _view(a, m, k, as0, as1, dt)
        bv = _view(b, k, n, bs0, bs1, dt)
        cv = _view(c, m, n, cs0, cs1, dt)
        pc, isz = _address(c), cv.itemsize
        if (alpha == 1.0 and beta == 0.0
                and not _may_overlap(pc, m, n, cs0, cs1, _address(a), m, k, as0, as1, isz)
                and not _may_overlap(pc, m, n, cs0, cs1, _address(b), k, n, bs0, bs1, isz)):
            status = kernel(av, bv, cv, params, stats)
        else:
            tmp = np.empty((m, n), dt)
            status = kernel(av, bv, any_layout(tmp), params, stats)
            if status == 0:
                _axpby(cv, tmp, alpha, beta)
        if status != 0:
            return _STATUS_SPAN * code + status
        if profiled and _profile_load(0) != 0:
            _record_stats(site, stats, max_stat)
        return ENTRY_OK

    # One name per executor and dtype: its own cache files, and distinct symbols when several load.
    dt = _NUMPY_DTYPES[dtype_code]
    name = f"_executor_{executor.name}_{np.dtype(dt).name}"
    body.__name__ = body.__qualname__ = f"{name}_body"
    body = njit(inline="always")(body)

    def run(site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
        if dtype != dtype_code:
            return ENTRY_BAD_DTYPE
        return body(dt, site, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)

    run.__name__ = run.__qualname__ = name
    return run


def _builtin_function(code: int, dtype_code: int):
    """The C-ABI function (the entry's signature) of the built-in executor ``code``
    (``EXEC_NATIVE``: BLAS, ``_native``; ``EXEC_REFERENCE``: ``_reference``) for sites of
    one dtype (entry code ``dtype_code``; another dtype gives ``ENTRY_BAD_DTYPE``)."""
    dt = _NUMPY_DTYPES[dtype_code]
    isz = np.dtype(dt).itemsize
    if code == EXEC_NATIVE:
        def run(site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
            if dtype != dtype_code:
                return ENTRY_BAD_DTYPE
            return _native(dt, isz, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)
    else:
        def run(site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
            if dtype != dtype_code:
                return ENTRY_BAD_DTYPE
            return _reference(dt, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)

    run.__name__ = run.__qualname__ = f"_builtin_{_BUILTIN_NAMES[code]}_{np.dtype(dt).name}"
    return run


_BUILTIN_NAMES = {EXEC_NATIVE: "native", EXEC_REFERENCE: REFERENCE_EXECUTOR}


class _BuiltinCache(RuntimeCache):
    """The disk cache of one built-in executor's C function: keyed, beyond ``RuntimeCache``
    (this module's runtime sources), on its code's bytes and the executor and dtype it
    serves (the closure's cells)."""

    def _index_key(self, sig, codegen) -> tuple:
        cells = tuple(repr(cell.cell_contents) for cell in self._py_func.__closure__ or ())
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (*super()._index_key(sig, codegen), code, cells)


class _ExecutorCache(RuntimeCache):
    """The disk cache of one executor's C function: keyed, beyond ``RuntimeCache``, on
    the executor's declaration and its kernel module's runtime sources (the closure's
    cells, which Numba would pickle, hold the kernel dispatcher)."""

    def __init__(self, py_func, executor: CompiledExecutor) -> None:
        super().__init__(py_func)
        self._executor = executor

    def _index_key(self, sig, codegen) -> tuple:
        ex = self._executor
        module = ex.kernel.py_func.__module__
        declared = (ex.name, ex.code, ex.n_words, ex.n_stats, ex.profile_stats, ex.max_stat, module,
                    ex.kernel.py_func.__qualname__)
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (sig, codegen.magic_tuple(), code, declared,
                ("mixjit-runtime", runtime_sources_hash(self._py_func.__module__)),
                ("kernel-sources", runtime_sources_hash(module)))


_executor_functions: dict[tuple[int, int], CFunc] = {}
"""The loaded executors' C functions, by (plan code, entry dtype code)."""
_executor_lock = threading.Lock()
_builtin_functions: dict[tuple[int, int], CFunc] = {}
"""The loaded built-in executors' C functions (native, reference), by (plan code, entry dtype code)."""


def executor_for(scheme: str) -> CompiledExecutor:
    """The compiled executor of ``scheme`` (ValueError naming the runnable schemes if it has none)."""
    try:
        return _EXECUTORS_BY_SCHEME[scheme]
    except KeyError:
        raise ValueError(
            f"mixjit: scheme {scheme!r} has no compiled executor; schemes a site can run: {sorted(EXECUTORS)}"
        ) from None


def _dtype_codes(dtypes: "Iterable[np.dtype | type | str] | None") -> list[int]:
    """Entry dtype codes of ``dtypes`` (all of them for None); ValueError for another dtype."""
    if dtypes is None:
        return sorted(DTYPE_CODES.values())
    codes = []
    for dt in dtypes:
        code = DTYPE_CODES.get(np.dtype(dt))
        if code is None:
            raise ValueError(f"mixjit: executors run float32 or float64 GEMMs, not {np.dtype(dt)}")
        codes.append(code)
    return sorted(set(codes))


def load_executor(code: int, dtypes: "Iterable[np.dtype | type | str] | None" = None) -> None:
    """Make the executor with plan code ``code`` callable by the entry for sites of ``dtypes``
    (float32 and/or float64; None: both): compile its C function for each, or load it from the
    disk cache, the first time a plan needs it (so a function whose sites run ``native`` never
    compiles emulation code, and one whose sites are float64 never compiles a float32 kernel)."""
    wanted = _dtype_codes(dtypes)
    if 0 < code <= MAX_EXECUTOR_CODE and all(_EXEC_TABLE[_slot(code, d)] != 0 for d in wanted):
        return
    if code in _BUILTIN_NAMES:
        with _executor_lock:
            for dtype_code in wanted:
                if _EXEC_TABLE[_slot(code, dtype_code)] == 0:
                    py_func = _builtin_function(code, dtype_code)
                    fn = CFunc(py_func, sigutils.normalize_signature(_ENTRY_SIG), locals={}, options={"nopython": True})
                    fn._cache = _BuiltinCache(py_func)
                    fn.compile()
                    _builtin_functions[code, dtype_code] = fn
                    _EXEC_TABLE[_slot(code, dtype_code)] = fn.address
        return
    with _executor_lock:
        executor = next((ex for ex in _EXECUTORS_BY_SCHEME.values() if ex.code == code), None)
        if executor is None or executor.kernel is None:
            raise ValueError(f"mixjit: no compiled executor has plan code {code}; see mixjit.entry.EXECUTORS")
        for dtype_code in wanted:
            if _EXEC_TABLE[_slot(code, dtype_code)] != 0:
                continue
            # an executor with parallel regions loaded from the disk cache starts Numba's threading
            # layer by the reload hooks runtime/jit/cache.py saves with it (tests/runtime/
            # test_jit_cache_first_use.py)
            py_func = _executor_function(executor, dtype_code)
            fn = CFunc(py_func, sigutils.normalize_signature(_ENTRY_SIG), locals={}, options={"nopython": True})
            fn._cache = _ExecutorCache(py_func, executor)
            fn.compile()
            _executor_functions[code, dtype_code] = fn
            _EXEC_TABLE[_slot(code, dtype_code)] = fn.address


def executor_address(code: int, dtype_code: int) -> int:
    """The C address of the loaded executor with plan code ``code`` for entry dtype code
    ``dtype_code`` (``DTYPE_CODES``; ``load_executor`` first); ValueError for a slot not filled."""
    valid = 0 < code <= MAX_EXECUTOR_CODE and dtype_code in _NUMPY_DTYPES
    address = int(_EXEC_TABLE[_slot(code, dtype_code)]) if valid else 0
    if not address:
        raise ValueError(f"mixjit: no executor is loaded under plan code {code} for dtype code {dtype_code} "
                         "(see mixjit.entry.EXECUTORS and DTYPE_CODES; mixjit.entry.load_executor loads one)")
    return address


_installed: dict[int, str] = {}


def install_executor(name: str, address: int, status_messages: dict[int, str]) -> int:
    """Put a C function with the entry's signature (e.g. a ctypes callback: mixjit.backends'
    device executor) in the executor table under the highest plan code no scheme declares, and
    its refusals (status 1..63) in ``ENTRY_ERRORS``; returns that code. Idempotent per name."""
    with _executor_lock:
        for code, known in _installed.items():
            if known == name:
                return code
        taken = set(EXECUTORS.values()) | set(_installed) | {EXEC_NONE, EXEC_NATIVE, EXEC_REFERENCE}
        free = [c for c in range(MAX_EXECUTOR_CODE, 0, -1)
                if c not in taken and not any(_EXEC_TABLE[_slot(c, d)] for d in _NUMPY_DTYPES)]
        if not free or not address:
            raise ValueError(f"mixjit: cannot install executor {name!r}: "
                             + ("no free plan code" if not free else "its address is 0"))
        code = free[0]
        ENTRY_ERRORS.update({executor_status(code, s): f"{name} executor: {msg}" for s, msg in status_messages.items()})
        _installed[code] = name
        for dtype_code in _NUMPY_DTYPES:  # the foreign function takes the dtype as its argument
            _EXEC_TABLE[_slot(code, dtype_code)] = address
        return code


def loaded_executors() -> list[str]:
    """The names of the compiled executors loaded in this process, for any dtype (the built-in
    native and reference executors are part of the entry and not listed)."""
    return sorted(loaded_executor_dtypes())


def loaded_executor_dtypes() -> dict[str, list[str]]:
    """The dtypes each loaded compiled executor was loaded for, by executor name
    (``{"mixpert": ["float64"]}``): what a process compiled or loaded from the disk cache."""
    names = {ex.code: ex.name for ex in _EXECUTORS_BY_SCHEME.values()}
    out: dict[str, list[str]] = {}
    for code, dtype_code in sorted(_executor_functions):
        out.setdefault(names[code], []).append(np.dtype(_NUMPY_DTYPES[dtype_code]).name)
    return out


def write_plan_row(site: int, row: "np.ndarray | tuple[int, ...]",
                   dtypes: "Iterable[np.dtype | type | str] | None" = None) -> None:
    """Write ``site``'s plan row (word 0 the executor code, then its config words), loading
    the executor first, for the dtypes the site runs (``dtypes``; None: both float32 and
    float64). The code is written last, so a concurrent call of the site never sees it
    before its words (callers serialize writers of one site)."""
    if not 0 <= site < MAX_SITES:
        raise ValueError(f"mixjit: site id {site} is outside [0, {MAX_SITES})")
    words = np.zeros(PLAN_WORDS, dtype=np.int64)
    if len(row) > PLAN_WORDS:
        raise ValueError(f"mixjit: a plan row has {len(row)} words, the table has {PLAN_WORDS}")
    words[: len(row)] = row
    if words[0] != EXEC_NONE:
        load_executor(int(words[0]), dtypes)
    _PLANS[site, 1:] = words[1:]
    _PLANS[site, 0] = words[0]


def plan_row(site: int) -> np.ndarray:
    """A copy of ``site``'s plan row."""
    return _PLANS[site].copy()


_compiled = None
_compile_lock = threading.Lock()


def entry_cfunc():
    """The compiled entry (a Numba ``CFunc``; ``.address`` is its C address).

    Built on first use, once per process: loaded from the on-disk cache when an
    earlier process compiled it with the same runtime sources, compiled otherwise.
    It holds no executor: every one, the built-in native BLAS and reference executors
    too, is compiled (or loaded) when a plan first needs it (``load_executor``)."""
    global _compiled
    with _compile_lock:
        if _compiled is None:
            fn = CFunc(_entry, sigutils.normalize_signature(_ENTRY_SIG), locals={}, options={"nopython": True})
            fn._cache = RuntimeCache(_entry)
            fn.compile()
            _compiled = fn
        return _compiled
