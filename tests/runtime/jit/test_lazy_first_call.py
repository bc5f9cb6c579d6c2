"""Kernels compiled at their callers' first call of them (runtime/jit/lazy_link.py's
``unlinked_lazy``): not compiled with the caller, compiled by the first call that reaches
them, the dispatcher's results and exceptions, a wrong declared result type refused with
a message, safe from ``prange`` bodies, and cached callers that load in a fresh process
without compiling the kernel."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from fresh_processes import run_in_fresh_processes
from numba import njit, prange, types

from mixjit.runtime.jit.lazy_link import fill_lazy_cells, unlinked_lazy


@njit(nogil=True)
def _weighted(x, k):
    if k < 0:
        raise ValueError("k must be >= 0")
    return x.sum() * 2.0 + k


_weighted_lazy = unlinked_lazy(_weighted, types.float64)


@njit(nogil=True)
def _maybe(x, k, take):
    if take:
        return _weighted_lazy(x, k) + 1.0
    return -1.0


def test_the_kernel_compiles_at_the_first_call_that_reaches_it():
    x = np.arange(12.0).reshape(3, 4)
    assert _maybe(x, 3, False) == -1.0
    assert len(_weighted.overloads) == 0  # the caller compiled, the kernel not
    assert _maybe(x, 3, True) == x.sum() * 2.0 + 4.0
    assert len(_weighted.overloads) == 1
    assert _maybe(x[:2], 1, True) == x[:2].sum() * 2.0 + 2.0  # the filled cell, the same argument types


def test_the_kernels_exceptions_reach_the_caller():
    with pytest.raises(ValueError, match="k must be >= 0"):
        _maybe(np.ones((2, 2)), -1, True)


@njit(nogil=True)
def _count(x):
    return x.size


_count_declared_wrong = unlinked_lazy(_count, types.float64)


@njit
def _calls_declared_wrong(x):
    return _count_declared_wrong(x)


def test_a_wrong_declared_result_type_is_an_error_not_a_misread_result(capfd):
    with pytest.raises(RuntimeError, match="could not be compiled at its first call"):
        _calls_declared_wrong(np.ones(3))
    assert "returns int64, but unlinked_lazy declared float64" in capfd.readouterr().err


def test_unlinked_lazy_needs_a_numba_type():
    with pytest.raises(TypeError, match="needs the Numba type the kernel returns"):
        unlinked_lazy(_count, "int64")


@njit(nogil=True)
def _row_norm2(row):
    return (row * row).sum()


_row_norm2_lazy = unlinked_lazy(_row_norm2, types.float64)


@njit(parallel=True)  # its caller holds the GIL; the workers' first calls fill the cell
def _norms(x):
    out = np.empty(x.shape[0])
    for i in prange(x.shape[0]):
        out[i] = _row_norm2_lazy(x[i])
    return out


def test_first_calls_from_prange_workers():
    x = np.random.default_rng(0).standard_normal((64, 16))
    norms = _norms(x)
    assert len(_row_norm2.overloads) == 1  # compiled once, by one of the workers
    np.testing.assert_array_equal(norms, [_row_norm2(r) for r in x])


@njit(nogil=True)
def _cubed(x):
    return x * x * x


_cubed_lazy = unlinked_lazy(_cubed, types.float64)


@njit
def _maybe_cubed(x, take):
    return _cubed_lazy(x) if take else x


def test_fill_lazy_cells_compiles_what_compiled_callers_may_call():
    """What ``python -m mixjit.warm`` runs: the kernel compiles for the caller's argument
    types before any call reaches it."""
    assert _maybe_cubed(2.0, False) == 2.0
    assert len(_cubed.overloads) == 0
    assert fill_lazy_cells([_cubed]) == 1
    assert list(_cubed.overloads) == [(types.float64,)]
    assert fill_lazy_cells([_cubed]) == 0
    assert _maybe_cubed(2.0, True) == 8.0


@njit(nogil=True)
def _squared(x):
    return x * x


_squared_lazy = unlinked_lazy(_squared, types.float64)


@njit
def _maybe_squared(x, take):
    return _squared_lazy(x) if take else x


def test_fill_lazy_cells_of_a_package_leaves_other_modules_cells_alone():
    """``python -m mixjit.warm`` fills mixjit's cells only (``package="mixjit"``): a test's or
    a user's cell in the same process is theirs (filling this file's wrongly declared cell
    from tests/test_warm.py failed the suite when both files shared a worker)."""
    assert _maybe_squared(3.0, False) == 3.0  # registers this module's cell
    assert fill_lazy_cells([_squared], package="mixjit") == 0
    assert len(_squared.overloads) == 0
    assert fill_lazy_cells([_squared], package=_squared.py_func.__module__) == 1
    assert list(_squared.overloads) == [(types.float64,)]


MODULE = '''
from numba import types
from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.jit.lazy_link import fill_lazy_cells, unlinked_lazy


@cached_njit(nogil=True)
def kernel(x, k):
    return x.sum() * 2.0 + k


kernel_lazy = unlinked_lazy(kernel, types.float64)


@cached_njit(nogil=True)
def caller(x, take):
    return kernel_lazy(x, 1) if take else -1.0
'''

RUN = """
    import json
    import numpy as np
    import lazy_module as lm
    x = np.arange(12.0).reshape(3, 4)
    skipped = lm.caller(x, False)
    compiled_before = len(lm.kernel.overloads)
    print(json.dumps({"skipped": skipped, "compiled_before": compiled_before, "value": lm.caller(x, True),
                      "caller_hits": sum(lm.caller._cache_hits.values()),
                      "kernel_hits": sum(lm.kernel._cache_hits.values())}))
"""


def test_a_cached_caller_loads_without_compiling_the_kernel(tmp_path):
    """The second process loads the caller from the disk cache (its hook registers the empty
    cell), compiles nothing for a call that does not reach the kernel, and loads the kernel
    from the cache at the first call that does."""
    runs = run_in_fresh_processes(tmp_path, "lazy_module", MODULE, RUN)
    value = np.arange(12.0).sum() * 2.0 + 1.0
    assert runs == [{"skipped": -1.0, "compiled_before": 0, "value": value, "caller_hits": 0, "kernel_hits": 0},
                    {"skipped": -1.0, "compiled_before": 0, "value": value, "caller_hits": 1, "kernel_hits": 1}]


SMALL = """
    import json
    import numpy as np
    from mixjit.runtime.mixpert import executor as ex
    from mixjit.runtime.mixpert.paths.small import small_gemm, small_loops_gemm, small_max_work
    from mixjit.runtime.schemes import get_scheme

    mp = get_scheme("mixpert")
    a = np.random.default_rng(3).standard_normal((24, 24)).astype(np.float32)

    def run(label):
        params = np.asarray(mp.parse_config(label).words(), dtype=np.int64)
        c = np.empty_like(a)
        stats = np.zeros(ex.N_STATS, np.int64)
        status = small_gemm(a, a, c, params, stats, small_max_work(params))
        g = np.empty_like(a)
        gstats = np.zeros(ex.N_STATS, np.int64)
        assert ex.multiply_into(ex.prepare_operand(a, False, params), ex.prepare_operand(a, True, params), params,
                                g, gstats) == ex.OK
        same = bool((c.view(np.uint32) == g.view(np.uint32)).all()
                    and (stats[: ex.STAT_SMALL_PATH] == gstats[: ex.STAT_SMALL_PATH]).all())
        return [int(status), same, len(small_loops_gemm.overloads)]

    print(json.dumps({"direct": run("level=IV"), "loops": run("level=IV,digits=balanced")}))
"""


def test_a_call_the_direct_path_takes_does_not_compile_or_load_the_loops():
    """small_gemm reaches its loops through a lazy cell: a level IV call (the direct path)
    leaves them uncompiled, a balanced-digits call (which only the loops take) compiles
    them and gets the general path's bits and statistics. A fresh process over the warm
    default cache."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SMALL)], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"direct": [0, True, 0], "loops": [0, True, 1]}


WARM = """
    import io, json
    from mixjit.runtime.jit import lazy_link
    from mixjit.runtime.mixpert.paths.small import small_loops_gemm
    from mixjit.runtime.mixpert.lazy import general_gemm_lazy
    from mixjit.warm import warm

    warm(io.StringIO())
    empty = [h.qualname for h in lazy_link._lazy_hooks.values() if not lazy_link._cell(h.symbol)[0]]
    print(json.dumps({"empty": empty, "loops": len(small_loops_gemm.overloads),
                      "trampoline": len(general_gemm_lazy.overloads)}))
"""


def test_warm_leaves_no_lazy_cell_empty():
    """``python -m mixjit.warm`` (``make setup``) compiles the kernels reached through lazy
    cells for every caller it loaded, so no later first call compiles one."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(WARM)], capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["empty"] == [] and out["loops"] >= 2 and out["trampoline"] >= 2
