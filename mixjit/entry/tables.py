"""The per-site tables compiled code reads and writes, each a process-lifetime NumPy array
registered with llvmlite under a symbol (so compiled code reaches it by name and can be cached):
call counters and call limits, the plan table, the profile flag, shape logs and executor
statistics, the executor table's C addresses; the site ids; and the intrinsics that read and
update them atomically from compiled code."""

from __future__ import annotations

import threading
from typing import Sequence

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as llir
from numba import njit, types
from numba.extending import intrinsic

from mixjit.entry.abi import (
    DTYPE_CODES,
    EXECUTORS_BY_SCHEME,
    MAX_SITES,
    PLAN_WORDS,
)
from mixjit.runtime.schemes.base import MAX_EXECUTOR_CODE

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
SITE_STATS = max([ex.n_stats for ex in EXECUTORS_BY_SCHEME.values() if ex.profile_stats] or [1])
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


def plan_row(site: int) -> np.ndarray:
    """A copy of ``site``'s plan row."""
    return _PLANS[site].copy()
