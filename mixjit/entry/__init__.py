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

The entry is cached on disk by ``EntryCache`` (mixjit/entry/executors.py), whose key
also hashes every module of this package and the runtime sources they compile in
(their runtime imports, transitively): Numba's own key sees only the file of the
function it caches. Each executor's C
function has its own cache files (``_ExecutorCache``), keyed also on its
declaration and its kernel module's runtime sources. An unreadable cache file is
a miss (a ``CacheFileWarning``, then the entry compiles again).


The package, along its seams: ``abi`` (the symbol, the C signature, the dtype, status and
executor codes, the plan-row layout), ``tables`` (the per-site tables compiled code reads and
writes, the site ids, and their intrinsics), ``blas`` (the built-in native and reference
executors' BLAS calls), ``executors`` (the executor table: compiled, loaded, installed; plan rows),
``entry_point`` (the entry ``cfunc``). Each imports only those before it.
"""

from __future__ import annotations

from mixjit.entry.abi import (  # noqa: F401
    DTYPE_C64,
    DTYPE_C128,
    DTYPE_CODES,
    DTYPE_F32,
    DTYPE_F64,
    ENTRY_BAD_DTYPE,
    ENTRY_BAD_EXECUTOR,
    ENTRY_BAD_SITE,
    ENTRY_BLAS_FAILED,
    ENTRY_CALL_LIMIT,
    ENTRY_ERRORS,
    ENTRY_NO_PLAN,
    ENTRY_OK,
    ENTRY_SIG,
    ENTRY_SYMBOL,
    ENTRY_TOO_LARGE,
    EXEC_LINALG,
    EXEC_NATIVE,
    EXEC_NONE,
    EXEC_REFERENCE,
    EXECUTORS,
    EXECUTORS_BY_SCHEME,
    MAX_SITES,
    NUMPY_DTYPES,
    PLAN_WORDS,
    REFERENCE_EXECUTOR,
    STATUS_SPAN,
    executor_status,
)
from mixjit.entry.entry_point import (  # noqa: F401
    entry_cfunc,
)
from mixjit.entry.executors import (  # noqa: F401
    executor_address,
    executor_for,
    install_executor,
    load_executor,
    loaded_executor_dtypes,
    loaded_executors,
    write_plan_row,
)
from mixjit.entry.tables import (  # noqa: F401
    COUNTERS_SYMBOL,
    EXECUTOR_TABLE_SYMBOL,
    LIMITS_SYMBOL,
    PLANS_SYMBOL,
    PROFILE_SYMBOL,
    SHAPE_ROW,
    SHAPE_SLOTS,
    SHAPES_SYMBOL,
    SITE_STATS,
    STATS_SYMBOL,
    call_count,
    new_site,
    new_sites,
    plan_row,
    profiling,
    register_site_block,
    reset_call_counts,
    reset_profile,
    set_call_limits,
    set_profiling,
    set_site_call_counts,
    shape_log,
    site_call_counts,
    site_stats,
)

__all__ = [
    "ENTRY_SYMBOL",
    "MAX_SITES",
    "DTYPE_F64",
    "DTYPE_F32",
    "DTYPE_C128",
    "DTYPE_C64",
    "DTYPE_CODES",
    "NUMPY_DTYPES",
    "ENTRY_OK",
    "ENTRY_BAD_SITE",
    "ENTRY_BAD_DTYPE",
    "ENTRY_TOO_LARGE",
    "ENTRY_BLAS_FAILED",
    "ENTRY_NO_PLAN",
    "ENTRY_BAD_EXECUTOR",
    "ENTRY_CALL_LIMIT",
    "STATUS_SPAN",
    "executor_status",
    "EXECUTORS_BY_SCHEME",
    "EXECUTORS",
    "ENTRY_ERRORS",
    "PLAN_WORDS",
    "EXEC_NONE",
    "EXEC_NATIVE",
    "EXEC_LINALG",
    "EXEC_REFERENCE",
    "REFERENCE_EXECUTOR",
    "ENTRY_SIG",
    "COUNTERS_SYMBOL",
    "LIMITS_SYMBOL",
    "PLANS_SYMBOL",
    "PROFILE_SYMBOL",
    "SHAPES_SYMBOL",
    "STATS_SYMBOL",
    "SHAPE_SLOTS",
    "SHAPE_ROW",
    "SITE_STATS",
    "new_sites",
    "new_site",
    "register_site_block",
    "call_count",
    "reset_call_counts",
    "site_call_counts",
    "set_site_call_counts",
    "set_call_limits",
    "set_profiling",
    "profiling",
    "reset_profile",
    "shape_log",
    "site_stats",
    "EXECUTOR_TABLE_SYMBOL",
    "plan_row",
    "executor_for",
    "load_executor",
    "executor_address",
    "install_executor",
    "loaded_executors",
    "loaded_executor_dtypes",
    "write_plan_row",
    "entry_cfunc",
]
