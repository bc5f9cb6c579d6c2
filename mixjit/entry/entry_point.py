"""The run-time entry itself: the C-ABI ``cfunc`` every linked GEMM site calls
(``ENTRY_SYMBOL``), compiled or loaded from its disk cache once per process (``entry_cfunc``)."""

from __future__ import annotations

import threading

from numba.core import sigutils
from numba.core.ccallback import CFunc

from mixjit.entry.abi import (
    ENTRY_BAD_DTYPE,
    ENTRY_BAD_EXECUTOR,
    ENTRY_BAD_SITE,
    ENTRY_CALL_LIMIT,
    ENTRY_NO_PLAN,
    ENTRY_SIG,
    EXEC_NONE,
    MAX_SITES,
)
from mixjit.entry.executors import (
    EntryCache,
    _call_executor,
)
from mixjit.entry.tables import (
    _N_DTYPES,
    _count_call,
    _executor_address,
    _limit_load,
    _plan_word,
    _profile_load,
    _record_shape,
)
from mixjit.runtime.schemes.base import MAX_EXECUTOR_CODE


def _entry(site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
    if site < 0 or site >= MAX_SITES:
        return ENTRY_BAD_SITE
    calls = _count_call(site)
    limit = _limit_load(site)
    if limit != 0 and calls >= limit:
        return ENTRY_CALL_LIMIT
    if dtype < 0 or dtype >= _N_DTYPES:
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
            fn = CFunc(_entry, sigutils.normalize_signature(ENTRY_SIG), locals={}, options={"nopython": True})
            fn._cache = EntryCache(_entry)
            fn.compile()
            _compiled = fn
        return _compiled
