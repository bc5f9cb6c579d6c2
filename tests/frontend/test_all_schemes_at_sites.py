"""Every registered scheme runs compiled at @mixjit sites, bit for bit as mixjit.gemm.

The scheme registry is enumerated, so a scheme added without a compiled executor
(``Scheme.executor``, or for the complex wrapper its real scheme's) fails here. Each scheme runs, for every dtype it accepts and
for its most and least precise configs, three sites of one function: a plain
product, a fused ``C -= A @ B`` (alpha -1, beta 1) and ``D += A @ B``, plus a
fused update whose output overlaps one of its operands (the executor must read
the operands before it writes C).
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mixjit import entry, gemm, mixjit
from mixjit.plan import SitePlan, initial_plan, plan_words, set_plan
from mixjit.runtime.schemes.base import all_schemes

RNG = np.random.default_rng(99)


@mixjit(schemes=("native",))
def _three_sites(a, b, c, d):
    p = a @ b
    c[1:, 1:] -= a[1:, :] @ b[:, 1:]
    d[:, :] += a @ b
    return p


@mixjit(schemes=("native",))
def _overlapping(x):
    x[:, 3:] -= x[:, :3] @ x[:3, 3:]  # C and B share x[:3, 3:]
    return x


def _cases():
    for name, scheme in sorted(all_schemes().items()):
        for dtype in scheme.dtypes:
            configs = scheme.configs(dtype)
            for config in dict.fromkeys([configs[0], configs[-1]]):
                yield pytest.param(name, np.dtype(dtype), config.label, id=f"{name}-{np.dtype(dtype)}-{config.label}")


def test_every_registered_scheme_is_reachable_at_a_site():
    for name, scheme in all_schemes().items():
        assert scheme.runs_at_sites, f"scheme {name!r} declares no compiled executor"
        if scheme.executor is not None:
            assert entry.EXECUTORS[name] == scheme.executor.code
        for dtype in scheme.dtypes:
            plan = initial_plan([name], dtype)
            assert (plan.scheme, plan.executor, plan.note) == (name, name, "")
            for config in scheme.configs(dtype):
                row = plan_words(SitePlan(name, config.label, name))
                executor, words = scheme.plan_row(config)
                assert row[0] == executor.code and list(row[1:1 + len(words)]) == list(words)
                assert executor.code in set(entry.EXECUTORS.values())


def _plan_sites(fn, scheme, label, dtype):
    ids = [s.id for s in fn.sites if s.taken and np.dtype(s.dtype) == dtype]
    assert ids, "the function compiled no site for this dtype"
    for sid in ids:
        set_plan(sid, SitePlan(scheme, label, scheme))
    return ids


def _random(shape, dtype):
    """Normal values of ``dtype``; both parts nonzero for a complex one."""
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


@pytest.mark.filterwarnings("ignore:.* is faster on contiguous arrays")
@pytest.mark.parametrize("scheme,dtype,label", list(_cases()))
def test_scheme_at_sites_equals_gemm_bit_for_bit(scheme, dtype, label):
    a = _random((7, 5), dtype)
    b = _random((5, 6), dtype)
    c0 = _random((7, 6), dtype)
    d0 = _random((7, 6), dtype)
    x0 = _random((6, 9), dtype)
    _three_sites(a, b, c0.copy(), d0.copy())  # compile with native plans
    _overlapping(x0.copy())
    ids = _plan_sites(_three_sites, scheme, label, dtype) + _plan_sites(_overlapping, scheme, label, dtype)
    before = [entry.call_count(s) for s in ids]

    c, d = c0.copy(), d0.copy()
    p = _three_sites(a, b, c, d)
    np.testing.assert_array_equal(p, gemm(a, b, scheme, label))
    want_c = c0.copy()
    want_c[1:, 1:] = c0[1:, 1:] - gemm(a[1:, :], b[:, 1:], scheme, label)
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(d, d0 + gemm(a, b, scheme, label))

    x = x0.copy()
    _overlapping(x)
    want_x = x0.copy()
    want_x[:, 3:] = x0[:, 3:] - gemm(x0[:, :3].copy(), x0[:3, 3:].copy(), scheme, label)
    np.testing.assert_array_equal(x, want_x)

    assert [entry.call_count(s) - n for s, n in zip(ids, before)] == [1, 1, 1, 1]
    executor, _ = all_schemes()[scheme].plan_row(all_schemes()[scheme].parse_config(label))
    assert scheme == "native" or executor.name in entry.loaded_executors()


def test_executor_loads_from_its_disk_cache_in_a_new_process():
    site = entry.new_site()
    set_plan(site, initial_plan(["int8"], np.float32))  # compiled (or loaded) here: the cache is written
    code = textwrap.dedent(
        """
        import numpy as np
        from mixjit import entry
        from mixjit.entry import executors
        from mixjit.plan import initial_plan, set_plan

        assert entry.loaded_executors() == []
        set_plan(entry.new_site(), initial_plan(["int8"], np.float32))
        fn = executors._executor_functions[entry.EXECUTORS["int8"], entry.DTYPE_F32]
        print(*entry.loaded_executors(), "hits", fn.cache_hits)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["int8", "hits", "1"]
