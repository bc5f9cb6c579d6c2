"""The run-time entry's ABI: its symbol, the site-id range, the dtype and status codes, the
plan-row layout and executor codes, and the compiled executors every scheme family declares
(``EXECUTORS``, from the scheme catalogue). Constants only: every other module of the entry
reads them (mixjit/entry/__init__.py describes the whole)."""

from __future__ import annotations

import numpy as np
from numba import types

from mixjit.runtime.schemes.base import MAX_EXECUTOR_CODE, CompiledExecutor, compiled_executors

ENTRY_SYMBOL = "mixjit_gemm_entry"
"""Name under which the entry is registered with llvmlite (``binding.add_symbol``)."""

MAX_SITES = 1 << 16
"""Number of site ids (and counters) the process can hand out."""

DTYPE_F64 = 0
DTYPE_F32 = 1
DTYPE_C128 = 2
DTYPE_C64 = 3
DTYPE_CODES: dict[np.dtype, int] = {np.dtype(np.float64): DTYPE_F64, np.dtype(np.float32): DTYPE_F32,
                                    np.dtype(np.complex128): DTYPE_C128, np.dtype(np.complex64): DTYPE_C64}
"""The ``dtype`` argument of the entry for each supported element type."""
NUMPY_DTYPES = {code: dt.type for dt, code in DTYPE_CODES.items()}

ENTRY_OK = 0
ENTRY_BAD_SITE = 1
ENTRY_BAD_DTYPE = 2
ENTRY_TOO_LARGE = 3
ENTRY_BLAS_FAILED = 4
ENTRY_NO_PLAN = 5
ENTRY_BAD_EXECUTOR = 6
ENTRY_CALL_LIMIT = 7
STATUS_SPAN = MAX_EXECUTOR_CODE + 1


def executor_status(code: int, status: int) -> int:
    """The entry's return code for status ``status`` (1..63) of the compiled executor
    with plan code ``code``: each executor's refusals have their own base."""
    return STATUS_SPAN * code + status


EXECUTORS_BY_SCHEME: dict[str, CompiledExecutor] = compiled_executors()

EXECUTORS: dict[str, int] = {name: ex.code for name, ex in EXECUTORS_BY_SCHEME.items()}
"""Every scheme a site can run, by name: the plan code of its compiled executor (word 0
of a plan row). Schemes declare their executor (``Scheme.executor``) with their catalogue family's
plan code; this is the view of every family in the catalogue when this module is imported."""

ENTRY_ERRORS: dict[int, str] = {
    ENTRY_BAD_SITE: f"site id outside [0, {MAX_SITES}); allocate ids with mixjit.entry.new_site()",
    ENTRY_BAD_DTYPE: "dtype code is not one of mixjit.entry.DTYPE_CODES (float64, float32, complex128, complex64) "
                     "or the executor does not run it",
    ENTRY_TOO_LARGE: "a dimension or leading dimension exceeds the BLAS int range (2**31-1); split the GEMM",
    ENTRY_BLAS_FAILED: "BLAS is unavailable (Numba found no scipy.linalg.cython_blas); install scipy",
    ENTRY_NO_PLAN: "the site has no plan; give it one with mixjit.plan.set_plan() before it runs",
    ENTRY_BAD_EXECUTOR: "the site's plan names an executor the entry does not have (see mixjit.entry.EXECUTORS)",
    ENTRY_CALL_LIMIT: "the site passed its call limit (mixjit.entry.set_call_limits): a tuning evaluation "
                      "stopped a run making far more calls than its reference run",
    **{executor_status(ex.code, status): f"{ex.name} executor: {msg}"
       for ex in {e.code: e for e in EXECUTORS_BY_SCHEME.values()}.values()
       for status, msg in ex.status_messages.items()},
}
"""Message for each non-zero return code of the entry."""

PLAN_WORDS = 16
"""int64 words per site in the plan table: the executor code, then its parameters."""

EXEC_NONE = 0
EXEC_NATIVE = 1
EXEC_REFERENCE = 3
EXEC_LINALG = MAX_EXECUTOR_CODE + 1
"""Word 0 of a ``mix.linalg`` site running a blocked candidate (mixjit.linalg_link): not an
executor of the entry (a linalg site never calls the entry), so outside the executor codes."""
REFERENCE_EXECUTOR = "reference"
"""The reference executor (word 0 = ``EXEC_REFERENCE``): not a scheme, so not in EXECUTORS."""

ENTRY_SIG = types.int32(
    types.int64, types.int64,
    types.int64, types.int64, types.int64,
    types.float64, types.float64,
    types.voidptr, types.int64, types.int64,
    types.voidptr, types.int64, types.int64,
    types.voidptr, types.int64, types.int64,
)
"""The entry's C signature (and every executor's): ``int32(site, dtype, m, n, k, alpha, beta, a,
a_s0, a_s1, b, b_s0, b_s1, c, c_s0, c_s1)``."""
