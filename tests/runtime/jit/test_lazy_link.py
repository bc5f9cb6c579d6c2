"""Kernels called through an address cell instead of linked into their callers
(runtime/jit/lazy_link.py): the same results and exceptions as the dispatcher, no copy of
the callee's code in the caller, and cached callers that load in a fresh process."""

from __future__ import annotations

import numpy as np
import pytest
from fresh_processes import run_in_fresh_processes
from numba import njit

from mixjit.runtime.jit.lazy_link import CellHook, unlinked


@njit(nogil=True)  # not cached: inspect_llvm below needs code compiled in this process
def _scaled_sum(x, k):
    if k < 0:
        raise ValueError("k must be >= 0")
    return x.sum() * 2.0 + k


_scaled_sum_unlinked = unlinked(_scaled_sum)


@njit
def _through_cell(x, k):
    return _scaled_sum_unlinked(x, k) + 1.0


def test_an_unlinked_call_gives_the_dispatchers_result_and_exceptions():
    x = np.arange(12.0).reshape(3, 4)
    assert _through_cell(x, 3) == _scaled_sum(x, 3) + 1.0 == x.sum() * 2.0 + 4.0
    with pytest.raises(ValueError, match="k must be >= 0"):
        _through_cell(x, -1)


def test_the_callers_code_holds_no_copy_of_the_callee():
    """Fails if the callee is linked in again: its function would be defined in the caller's module."""
    _through_cell(np.ones((2, 2)), 1)
    sig = _through_cell.signatures[0]
    name = _scaled_sum.overloads[sig].fndesc.llvm_func_name

    def definitions(llvm_ir: str) -> list[str]:
        return [line for line in llvm_ir.splitlines() if line.startswith("define") and f"@{name}(" in line]

    assert definitions(_scaled_sum.inspect_llvm(sig))  # the callee's own module defines it
    caller_ir = _through_cell.inspect_llvm(sig)
    assert definitions(caller_ir) == []
    assert CellHook(__name__, "_scaled_sum", sig).symbol in caller_ir


MODULE = '''
import numpy as np
from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.jit.lazy_link import unlinked


@cached_njit(nogil=True)
def inner(x):
    return x.sum()


inner_unlinked = unlinked(inner)


@cached_njit(nogil=True)
def kernel(x, k):  # an unlinked kernel calling another: loading it runs the inner one's hook
    return inner_unlinked(x) * 2.0 + k


kernel_unlinked = unlinked(kernel)


@cached_njit(nogil=True)
def caller(x):
    return kernel_unlinked(x, 1) + kernel_unlinked(x[:1], 2)
'''

RUN = """
    import json
    import numpy as np
    import unlinked_module as um
    x = np.arange(12.0).reshape(3, 4)
    print(json.dumps({"value": um.caller(x), "hits": sum(um.caller._cache_hits.values())}))
"""


def test_a_cached_caller_loads_and_runs_in_a_fresh_process(tmp_path):
    """The second process loads the caller from the disk cache: its cell hooks must register
    the callee's cells before the caller's code is finalized (else LLVM aborts the process)."""
    runs = run_in_fresh_processes(tmp_path, "unlinked_module", MODULE, RUN)
    expected = np.arange(12.0).sum() * 2.0 + 1.0 + np.arange(4.0).sum() * 2.0 + 2.0
    assert runs == [{"value": expected, "hits": 0}, {"value": expected, "hits": 1}]


CFUNC_MODULE = '''
from numba import types
from numba.core import sigutils
from numba.core.ccallback import CFunc
from mixjit.runtime.jit.cache import RuntimeCache, cached_njit
from mixjit.runtime.jit.lazy_link import unlinked


@cached_njit(nogil=True)
def kernel(n):
    return n * 3 + 1


kernel_unlinked = unlinked(kernel)


def entry(n):
    return kernel_unlinked(n)


def cfunc():
    fn = CFunc(entry, sigutils.normalize_signature(types.int64(types.int64)), locals={}, options={"nopython": True})
    fn._cache = RuntimeCache(entry)
    fn.compile()
    return fn
'''

CFUNC_RUN = """
    import json
    import unlinked_cfunc_module as um
    fn = um.cfunc()
    print(json.dumps({"value": fn.ctypes(5), "hits": fn.cache_hits}))
"""


def test_a_cached_cfunc_keeps_the_reload_hooks_of_its_cells(tmp_path):
    """A ``CFunc`` (the sites' executors) loaded from the disk cache: Numba left its library's
    reload hooks out of the saved result (runtime/jit/cache.py saves them), and without them
    the cell its code calls through is never registered (the process crashed)."""
    runs = run_in_fresh_processes(tmp_path, "unlinked_cfunc_module", CFUNC_MODULE, CFUNC_RUN)
    assert runs == [{"value": 16, "hits": 0}, {"value": 16, "hits": 1}]
