"""The scheme catalogue (runtime/schemes/catalog.py): a pure table that every list of schemes
reads, and one entry is all a new family needs (the toy family below)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import all_schemes, get_scheme


def _python(code: str, path: Path | None = None) -> str:
    env_path = [str(path)] if path is not None else []
    prelude = f"import sys; sys.path[:0] = {env_path!r}\n"
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


def test_the_catalogue_imports_neither_numba_nor_numpy():
    out = _python("""
        import mixjit.runtime.schemes.catalog as c
        c.default_schemes("tuning", "float64"), c.family_of("bf16x6"), c.kernel_families()
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "numpy")))
    """)
    assert out.strip() == "[]"


def test_a_lookup_loads_only_its_family():
    out = _python("""
        from mixjit.runtime.schemes import get_scheme
        get_scheme("ozaki2")
        print("mixjit.runtime.schemes.ozaki2" in sys.modules, "mixjit.runtime.mixpert.executor" in sys.modules)
    """)
    assert out.split() == ["True", "False"]


def test_every_family_registers_exactly_its_schemes_with_its_plan_code_and_dtypes():
    schemes = all_schemes()
    assert list(schemes) == [s for f in catalog.families() for s in f.schemes]
    for family in catalog.families():
        for name in family.schemes:
            s = schemes[name]
            assert type(s).__module__ in family.modules, (name, type(s).__module__)
            if family.plan_code is None:  # a wrapper: its sites run the wrapped schemes' executors
                assert s.executor is None and s.runs_at_sites, name
            else:
                assert s.executor is not None and s.executor.code == family.plan_code, name
            assert {d.name for d in s.dtypes} <= set(family.dtypes), name
    with_codes = [f for f in catalog.FAMILIES.values() if f.plan_code is not None]
    assert len(catalog.plan_codes()) == len(with_codes)  # one code per family that has an executor


def test_aliases_kernels_and_defaults_come_from_the_catalogue():
    from mixjit.plan import DEFAULT_SCHEMES
    from mixjit.runtime.cuda.launch import kernel_schemes
    from mixjit.runtime.schemes.base import resolve_scheme
    from mixjit.tuning.profiling import TUNING_DEFAULT_SCHEMES

    for alias, (scheme, label) in catalog.alias_table().items():
        s, cfg = resolve_scheme(alias)
        assert s.name == scheme and cfg == s.parse_config(label)
    assert set(kernel_schemes()) == set(catalog.kernel_families())
    for dtype in ("float32", "float64"):
        assert DEFAULT_SCHEMES[dtype] == catalog.default_schemes("plan", dtype)
        assert TUNING_DEFAULT_SCHEMES[dtype] == catalog.default_schemes("tuning", dtype)
        for name in catalog.default_schemes("tuning", dtype):
            assert np.dtype(dtype) in get_scheme(name).dtypes, (dtype, name)
    assert [f.name for f in catalog.families() if f.carries_chains] == ["dfp"]


def test_a_family_entry_is_checked_and_names_are_not_taken_twice():
    with pytest.raises(ValueError, match="kernels and cuda_desc go together"):
        catalog.Family("x", ("x",), ("m",), ("float32",), 40, kernels=("x",))
    with pytest.raises(ValueError, match="not its schemes"):
        catalog.Family("x", ("x",), ("m",), ("float32",), 40, defaults={"plan": {"float32": {"y": 0}}})
    with pytest.raises(ValueError, match="are taken"):
        catalog.register_family(catalog.Family("x", ("mixpert",), ("m",), ("float32",), 40))
    with pytest.raises(ValueError, match="plan code 4 is taken"):
        catalog.register_family(catalog.Family("x", ("x",), ("m",), ("float32",), 4))
    with pytest.raises(ValueError, match="built in"):
        catalog.unregister_family("mixpert")


TOY_SCHEME = '''
"""A toy scheme family outside mixjit: C = 2 * (A @ B), summed in float64, rounded once."""
from dataclasses import dataclass

import numba
import numpy as np

from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work, register


@numba.njit(nogil=True)
def toy_gemm(a, b, c, params, stats):
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            s = 0.0
            for p in range(a.shape[1]):
                s += np.float64(a[i, p]) * np.float64(b[p, j])
            c[i, j] = 2.0 * s
    return 0


@dataclass(frozen=True)
class ToyConfig(Config):
    def words(self):
        return ()


@register
class Toy(Scheme):
    name = "toy"
    summary = "twice the product (a test's toy family)"
    executor = CompiledExecutor("toy", catalog.plan_code("toy"), toy_gemm)

    def configs(self, dtype=np.float32):
        return [ToyConfig()]

    def parse_config(self, text):
        if text not in ("", "default"):
            raise ValueError(f"toy: no config {text!r}")
        return ToyConfig()

    def run_with_stats(self, a, b, config):
        c = np.empty((a.shape[0], b.shape[1]), a.dtype)
        toy_gemm(a, b, c, np.zeros(0, np.int64), np.zeros(0, np.int64))
        return c, RunStats()

    def products(self, config):
        return 1

    def work(self, config, m, n, k, dtype=np.float32):
        return Work(ops={"fp32": 4.0 * m * n * k}, bytes_moved=0.0)
'''


def test_a_toy_family_is_one_catalogue_entry(tmp_path):
    """One register_family(...) call and the family's own package: the toy scheme runs at a
    @mixjit site, is a tuner candidate when named, has a modeled time, and is listed by
    get_scheme's error, mixjit.gemm's error, the site report and the accuracy tool."""
    (tmp_path / "toy_family").mkdir()
    (tmp_path / "toy_family" / "__init__.py").write_text("")
    (tmp_path / "toy_family" / "scheme.py").write_text(TOY_SCHEME)
    tools = Path(__file__).resolve().parents[3] / "tools"
    out = _python(f"""
        import numpy as np
        from mixjit.runtime.schemes import catalog
        catalog.register_family(catalog.Family("toy", ("toy",), ("toy_family.scheme",), ("float32", "float64"),
                                               plan_code=max(catalog.plan_codes()) + 1))
        import mixjit
        from mixjit.report import sites_report
        from mixjit.runtime.model.costmodel import modeled_time
        from mixjit.tuning.profiling import site_candidates

        @mixjit.mixjit(schemes=("toy",), tune="never")
        def f(a, b):
            return a @ b

        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
        got = f(a, b)
        want = mixjit.gemm(a, b, scheme="toy")
        assert got.tobytes() == want.tobytes() and np.allclose(want, 2 * (a.astype(np.float64) @ b), rtol=1e-6)
        assert "toy" in sites_report(f), sites_report(f)
        cands = site_candidates(np.dtype(np.float32), ("toy",), [(64, 64, 64, 1)], "a100")
        toy = [c for c in cands if c.scheme == "toy"]
        assert toy and all(c.time > 0 for c in toy), cands
        assert modeled_time("toy", None, 64, 64, 64, np.float32, "a100").seconds > 0
        try:
            mixjit.gemm(a, b, scheme="no-such")
        except ValueError as exc:
            assert "toy" in str(exc), exc
        else:
            raise AssertionError("no error for an unknown scheme")
        sys.path.insert(0, {str(tools)!r})
        import accuracy
        assert any(r.scheme == "toy" for r in accuracy.scheme_rows("float32", only=["toy"]))
        print("ok")
    """, tmp_path)
    assert out.strip().endswith("ok")


def test_a_registered_family_is_found_and_forgotten(tmp_path, monkeypatch):
    """In-process: register_family makes the names known at once, unregister_family and
    forget_family take them back (a test's temporary family leaves nothing behind)."""
    from mixjit.runtime.schemes.base import forget_family

    (tmp_path / "toy_family2").mkdir()
    (tmp_path / "toy_family2" / "__init__.py").write_text("")
    (tmp_path / "toy_family2" / "scheme.py").write_text(TOY_SCHEME)
    monkeypatch.syspath_prepend(str(tmp_path))
    catalog.register_family(catalog.Family("toy", ("toy",), ("toy_family2.scheme",), ("float32", "float64"),
                                           plan_code=max(catalog.plan_codes()) + 1))
    try:
        assert get_scheme("toy").name == "toy" and "toy" in catalog.scheme_names()
    finally:
        forget_family("toy")
        catalog.unregister_family("toy")
    assert "toy" not in catalog.scheme_names()
    with pytest.raises(ValueError, match="unknown GEMM scheme 'toy'"):
        get_scheme("toy")


def test_a_scheme_outside_the_catalogue_is_refused():
    from mixjit.runtime.schemes.base import register

    class Stray:
        name = "stray"

    with pytest.raises(ValueError, match="in no family of the scheme catalogue"):
        register(Stray)  # type: ignore[arg-type]
