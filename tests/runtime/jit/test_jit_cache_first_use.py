"""``cached_njit`` kernels compile once for all constant arguments of jitted callers, and
``CacheFileWarning`` is a ``MixjitWarning`` without the runtime importing mixjit's front end."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from cache_files import load_module
from fresh_processes import run_in_fresh_processes
from numba.core import types

from mixjit.runtime.jit.cache import CacheFileWarning
from mixjit.runtime.jit.warning import MixjitWarning

KERNELS = textwrap.dedent(
    """
    from mixjit.runtime.jit.cache import cached_njit

    @cached_njit(nogil=True)
    def step(x, up, by):
        return x + by if up else x - by

    @cached_njit(nogil=True)
    def pick(t, i):
        return t[i]

    @cached_njit(nogil=True)
    def caller(x):
        return step(x, True, 2) + step(x, False, 3) + pick((1, 2.5), 1) + pick((1, 2.5), 0)
    """
)


def test_constants_from_jitted_callers_share_one_specialization(tmp_path):
    module = load_module(tmp_path, KERNELS)
    assert module.caller(10.0) == (10.0 + 2) + (10.0 - 3) + 2.5 + 1
    # Numba alone compiles step for Literal[bool](True), Literal[int](2), and again for False, 3
    assert module.step.signatures == [(types.float64, types.boolean, types.int64)]


def test_a_kernel_that_needs_the_literal_still_gets_it(tmp_path):
    module = load_module(tmp_path, KERNELS)
    module.caller(1.0)
    # indexing a heterogeneous tuple needs the index's value: one specialization per index
    assert sorted(str(sig[1]) for sig in module.pick.signatures) == ["Literal[int](0)", "Literal[int](1)"]


def test_cache_file_warning_is_a_mixjit_warning():
    from mixjit.decorator import MixjitWarning as exported

    assert exported is MixjitWarning
    assert issubclass(CacheFileWarning, MixjitWarning)


def test_runtime_warning_base_does_not_import_the_front_end():
    code = "import sys, mixjit.runtime.jit.cache; print(sorted(m for m in sys.modules if m.startswith('mixjit')))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    loaded = eval(proc.stdout.strip().splitlines()[-1])
    assert loaded and all(m == "mixjit" or m.startswith("mixjit.runtime") for m in loaded), loaded


def _runtime_kernels() -> list:
    """Every ``cached_njit`` kernel of the loaded runtime modules."""
    from numba.core.dispatcher import Dispatcher

    from mixjit.runtime.jit.cache import RuntimeCache

    kernels = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("mixjit.runtime") and module is not None:
            for value in vars(module).values():
                if isinstance(value, Dispatcher) and isinstance(getattr(value, "_cache", None), RuntimeCache):
                    kernels[id(value)] = value
    return list(kernels.values())


@pytest.mark.parametrize("scheme, dtype", [("mixpert", np.float32), ("mixpert-fp64", np.float64)])
def test_the_mixpert_kernel_compiles_one_specialization_for_its_constants(scheme, dtype):
    import mixjit

    a = np.random.default_rng(5).standard_normal((24, 24)).astype(dtype)
    mixjit.gemm(a, a, scheme)
    kernels = _runtime_kernels()
    assert len(kernels) > 20  # the MixPert kernel's helpers were found
    literal = [f"{k.py_func.__module__}.{k.py_func.__qualname__}{sig}" for k in kernels for sig in k.signatures
               if any(isinstance(t, types.Literal) for t in sig)]
    assert literal == []


PARALLEL_CFUNC_MODULE = '''
import numpy as np
from numba import prange, types
from numba.core import sigutils
from numba.core.ccallback import CFunc
from mixjit.runtime.jit.cache import RuntimeCache, cached_njit


@cached_njit(parallel=True)
def total(n):
    s = 0.0
    for i in prange(n):
        s += i * 0.5
    return s


def entry(n):
    return total(n)


def cfunc():
    fn = CFunc(entry, sigutils.normalize_signature(types.float64(types.int64)), locals={}, options={"nopython": True})
    fn._cache = RuntimeCache(entry)
    fn.compile()
    return fn
'''

PARALLEL_CFUNC_RUN = """
    import json
    import parallel_cfunc_module as pm
    fn = pm.cfunc()  # nothing in this process started Numba's threading layer before this load
    print(json.dumps({"value": fn.ctypes(1000), "hits": fn.cache_hits}))
"""


def test_a_cached_cfunc_with_a_parallel_region_starts_the_threading_layer_itself(tmp_path):
    """A ``CFunc`` with a parallel region (what the entry's executors are) loaded from the disk
    cache in a new process, with no threading layer started: the reload hooks that
    runtime/jit/cache.py saves with it start the layer (mixjit.entry.load_executor calls
    nothing for it); without them the first call crashed the process (LLVM 'Symbol not
    found: allocate_sched' or a segfault)."""
    runs = run_in_fresh_processes(tmp_path, "parallel_cfunc_module", PARALLEL_CFUNC_MODULE, PARALLEL_CFUNC_RUN)
    assert runs == [{"value": 0.5 * 999 * 1000 / 2, "hits": 0}, {"value": 0.5 * 999 * 1000 / 2, "hits": 1}]
