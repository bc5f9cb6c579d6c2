"""The MixPert executor split into modules: the caches still see every one of them,
and a split operand is the named tuple the compiled code reads by field."""

from __future__ import annotations

import numpy as np

from mixjit.runtime.jit.source_hash import RUNTIME_ROOT, runtime_sources
from mixjit.runtime.mixpert import executor as ex
from mixjit.runtime.schemes import get_scheme


def test_the_kernel_cache_key_covers_every_executor_module():
    """The @mixjit entry keys an executor's cache on its kernel's module's sources
    (mixjit.entry.executors._ExecutorCache): every module of the MixPert executor (mixpert/: executor, split, pack, driver, words, paths/,
    guarantee/) must be among them, or an
    edit to one of them would keep running stale compiled code."""
    executor_steps = ("executor", "split", "pack", "driver", "words", "paths/*", "guarantee/*")
    modules = {str(p.relative_to(RUNTIME_ROOT)) for step in executor_steps
               for p in (RUNTIME_ROOT / "mixpert").glob(f"{step}.py")}
    assert len(modules) > 10
    kernel_module = get_scheme("mixpert").executor.kernel.py_func.__module__
    covered = {str(p.relative_to(RUNTIME_ROOT)) for p in runtime_sources(kernel_module)}
    assert modules - {"mixpert/executor.py"} <= covered, modules - covered
    assert modules <= {str(p.relative_to(RUNTIME_ROOT)) for p in runtime_sources(ex.__name__)}


def test_split_operand_fields_and_two_step_product_match_one_call():
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((9, 40)) * np.exp2(rng.integers(-20, 20, (9, 40)))).astype(np.float32)
    b = rng.standard_normal((40, 5)).astype(np.float32)
    scheme = get_scheme("mixpert")
    cfg = scheme.default_config(np.float32)
    params = np.asarray(cfg.words(), dtype=np.int64)
    pa = ex.prepare(a, "A", params)
    pb = ex.prepare(b, "B", params)
    assert isinstance(pa.arrays, ex.SplitOperand)
    assert pa.arrays.q.shape == (9, 40) and pb.arrays.q.shape == (5, 40)  # B in row form
    assert pa.arrays.raw.dtype == np.float64 and pa.arrays.bad.shape == (9,)
    assert pa.arrays.gexp.shape == pa.arrays.scale.shape == pa.arrays.fb.shape
    c2 = np.empty((9, 5), np.float32)
    s2 = np.zeros(ex.N_STATS, np.int64)
    assert ex.multiply_into(pa.arrays, pb.arrays, params, c2, s2) == ex.OK
    c1 = np.empty((9, 5), np.float32)
    s1 = np.zeros(ex.N_STATS, np.int64)
    assert ex.mixpert_gemm(a, b, c1, params, s1) == ex.OK
    np.testing.assert_array_equal(c1.view(np.uint32), c2.view(np.uint32))
    np.testing.assert_array_equal(s1, s2)
    assert s1[ex.STAT_FALLBACK_TILES] == pa.arrays.fb_tiles + pb.arrays.fb_tiles > 0  # wide-range A falls back
