"""The MixPert executor's paths compile on demand (the general path's Python driver,
runtime/mixpert/driver.py, and the sites' trampoline, runtime/mixpert/lazy.py):
a common call compiles none of the rare paths, a path compiled on first need is cached on
disk and reloaded by a later process, the trampoline is safe under ``prange``, and the
Python callers' choice of path (``gemm_from_python``) gives the compiled driver's bits."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mixjit.runtime.mixpert import executor as ex
from mixjit.runtime.mixpert.driver import gemm_from_python, small_may_take
from mixjit.runtime.mixpert.paths.small import NOT_TAKEN, small_gemm, small_max_work
from mixjit.runtime.schemes import get_scheme

MP = get_scheme("mixpert")
MP64 = get_scheme("mixpert-fp64")

#: paths no call of ordinary data (finite, moderate spans, no element aligned to 0) needs
RARE = ("certified", "exact_rows", "recompute32", "recompute", "nonfinite_rule")


def _child(code: str) -> dict:
    """Run ``code`` in a fresh Python process (the default disk cache); its last stdout line is JSON."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


COUNTS = """
    import json
    import numpy as np
    import mixjit
    from mixjit.runtime.mixpert.driver import ON_DEMAND_PATHS

    def counts():
        return {d.py_func.__name__: len(d.overloads) for d in ON_DEMAND_PATHS}

    rng = np.random.default_rng(1)
    a = rng.standard_normal((200, 200)).astype(np.float32)  # above the small path's size: the general path
    mixjit.gemm(a, a, "mixpert")  # most precise config: the wide fast path
    mixjit.gemm(a, a, "mixpert", "level=IV")  # the exact-block fast path
    b = rng.standard_normal((80, 80))
    mixjit.gemm(b, b, "mixpert-fp64")
    common = counts()
    wide = b.copy()
    wide[3, :40] *= 2.0**60  # a row whose span over k-tiles the fast path cannot take: the exact path
    wide[5, 7] = np.nan  # the non-finite rule
    mixjit.gemm(wide, b, "mixpert-fp64", "segments=7,pairs=sig6,tile=4x8x4")
    print(json.dumps({"common": common, "rare": counts()}))
"""


def test_a_common_call_compiles_no_rare_path():
    """Fails if a rare path is compiled into the common kernel again: typing a kernel that
    calls it would compile (or load) that path's dispatcher, giving it an overload."""
    out = _child(COUNTS)
    assert {name: out["common"][name] for name in RARE} == dict.fromkeys(RARE, 0)
    # the exact-block fast path once per mantissa type: int32 (level IV, float32) and int64 (mixpert-fp64)
    assert out["common"]["fast_path"] == 2 and out["common"]["fast32_certified"] == 1
    assert out["common"]["fp64_doubtful"] == 1
    assert out["rare"]["exact_rows"] == 1 and out["rare"]["nonfinite_rule"] == 1


RELOAD = """
    import hashlib, json
    import numpy as np
    import mixjit
    from mixjit.runtime.mixpert.guarantee.exact import exact_rows

    rng = np.random.default_rng(2)
    a = rng.standard_normal((90, 70))
    a[4, :35] *= 2.0**60  # a row whose span over k-tiles takes the exact path
    b = rng.standard_normal((70, 80))
    c = mixjit.gemm(a, b, "mixpert-fp64", "segments=7,pairs=sig6,tile=4x8x4")
    print(json.dumps({"hits": sum(exact_rows._cache_hits.values()), "misses": sum(exact_rows._cache_misses.values()),
                      "digest": hashlib.sha256(c.tobytes()).hexdigest()}))
"""


def test_a_path_compiled_on_demand_is_cached_and_reloaded():
    first = _child(RELOAD)
    assert first["hits"] + first["misses"] == 1  # loaded or compiled once, on first need
    again = _child(RELOAD)
    assert again == {"hits": 1, "misses": 0, "digest": first["digest"]}


PRANGE = """
    import json
    import numpy as np
    from numba import njit, prange
    import mixjit
    from mixjit.runtime.mixpert.lazy import general_gemm_lazy
    from mixjit.runtime.schemes import get_scheme

    params = np.array(get_scheme("mixpert-fp64").default_config(np.float64).words(), dtype=np.int64)

    @njit(parallel=True)
    def many(a, c, params, stats):
        s = 0
        for i in prange(a.shape[0]):
            if i >= a.shape[0] // 2:  # the calling thread's share has none: the others need the GIL
                s += general_gemm_lazy(a[i], a[i], c[i], params, stats[i])
        return s

    a = np.random.default_rng(0).standard_normal((6, 80, 80))
    c = np.zeros_like(a)
    status = many(a, c, params, np.zeros((6, 32), np.int64))
    same = all(np.array_equal(c[i], mixjit.gemm(a[i], a[i], "mixpert-fp64")) for i in range(3, 6))
    print(json.dumps({"status": int(status), "same": same}))
"""


def test_trampolines_run_in_prange_bodies():
    """Threads of a parallel region take the GIL in turn for the trampoline, never deadlock
    (the region's caller holds the GIL), and compute what ``mixjit.gemm`` computes."""
    assert _child(PRANGE) == {"status": 0, "same": True}


def _words(scheme, label: str) -> np.ndarray:
    cfg = scheme.parse_config(label) if label else scheme.default_config(np.float64)
    return np.asarray(cfg.words(), dtype=np.int64)


def _run(kernel, a, b, params):
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    stats = np.zeros(ex.N_STATS, np.int64)
    return kernel(a, b, c, params, stats), c, stats


@pytest.mark.parametrize("scheme,label,shape", [
    (MP, "", (20, 30, 10)),  # most precise float32 config: wide blocks, never the small path
    (MP, "level=IV", (20, 30, 10)),
    (MP, "level=IV", (170, 170, 170)),  # above the small path's size
    (MP, "level=I,tile=3x5x2,fallback=2", (9, 13, 7)),
    (MP64, "", (16, 48, 16)),
    (MP64, "", (70, 70, 70)),
])
def test_the_python_choice_of_path_gives_the_compiled_drivers_bits(scheme, label, shape):
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    dtype = np.float32 if scheme is MP else np.float64
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    params = _words(scheme, label) if label else np.asarray(scheme.default_config(dtype).words(), np.int64)
    s1, c1, st1 = _run(gemm_from_python, a, b, params)
    s2, c2, st2 = _run(ex.mixpert_gemm, a, b, params)
    assert s1 == s2 == ex.OK
    np.testing.assert_array_equal(c1.view(np.uint8), c2.view(np.uint8))
    np.testing.assert_array_equal(st1, st2)


def test_small_may_take_is_false_only_for_configs_the_small_path_never_takes():
    rng = np.random.default_rng(5)
    refused = taken = 0
    for cfg in MP.configs(np.float32):
        params = np.asarray(cfg.words(), np.int64)
        if small_may_take(params.tobytes()):
            taken += 1
            continue
        refused += 1
        for m, k, n in ((1, 1, 1), (4, 4, 4), (8, 40, 3), (32, 32, 32)):
            a = rng.standard_normal((m, k)).astype(np.float32)
            b = rng.standard_normal((k, n)).astype(np.float32)
            c = np.empty((m, n), np.float32)
            assert small_gemm(a, b, c, params, np.zeros(ex.N_STATS, np.int64), small_max_work(params)) == NOT_TAKEN
    assert refused and taken  # both kinds exist among the named configs
    assert small_may_take(np.asarray(MP64.default_config(np.float64).words(), np.int64).tobytes())


SITES = """
    import json
    import numpy as np
    import mixjit
    from mixjit import entry, mixjit as mixjit_decorator
    from mixjit.entry import executors

    @mixjit_decorator(schemes=("mixpert-fp64",), tune="never")
    def f64(a, b):
        return a @ b

    @mixjit_decorator(schemes=("mixpert",), tune="never")
    def f32(a, b):
        return a @ b

    rng = np.random.default_rng(4)
    a = rng.standard_normal((70, 90))  # above the small path's size: the trampoline to the general path
    b = rng.standard_normal((90, 70))
    same = [bool(np.array_equal(f64(a, b), mixjit.gemm(a, b, "mixpert-fp64")))]
    small = (a[:16, :20], b[:20, :12])  # the small path, called through its address cell (runtime/jit/lazy_link.py)
    same.append(bool(np.array_equal(f64(*small), mixjit.gemm(*small, "mixpert-fp64"))))
    a, b = (rng.standard_normal((170, 170)).astype(np.float32) for _ in range(2))
    same.append(bool(np.array_equal(f32(a, b), mixjit.gemm(a, b, "mixpert"))))
    code = entry.EXECUTORS["mixpert"]
    hits = [executors._executor_functions[code, d].cache_hits for d in (entry.DTYPE_F64, entry.DTYPE_F32)]
    print(json.dumps({"same": same, "hits": hits}))
"""


def test_site_executors_reloaded_from_the_disk_cache_run_the_general_path():
    """A site's executor (a ``CFunc``) loaded from the disk cache reaches the general path
    through a trampoline whose Numba environment must outlive the load (runtime/jit/cache.py:
    a freed one boxed arrays with garbage and returned status 0 with wrong bits), and the
    small path through an address cell its reload hook registers (runtime/jit/lazy_link.py)."""
    first = _child(SITES)
    assert first["same"] == [True, True, True]
    again = _child(SITES)
    assert again == {"same": [True, True, True], "hits": [1, 1]}
