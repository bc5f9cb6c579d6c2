"""@mixjit(cache=True) and @njit(cache=True) of one function never load each
other's code; cached mixjit code relinks its sites in a new process; an unreadable
cache file is a miss."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from numba.core.caching import FunctionCache, UserProvidedCacheLocator

from mixjit import cache, entry, mixjit
from mixjit.cache import CacheFileWarning, MixjitCache, cache_tag
from mixjit.entry import entry_cfunc, entry_point
from mixjit.entry.executors import ENTRY_SOURCES, EntryCache, entry_sources_hash
from mixjit.runtime.jit.cache import RuntimeCache
from mixjit.runtime.jit.source_hash import sources_hash

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from cache_files import CORRUPTIONS, corrupt, load_module  # noqa: E402

MODULE = textwrap.dedent(
    """
    import numpy as np
    from numba import njit
    from mixjit import mixjit

    def f(a, b):
        return a @ b

    plain = njit(cache=True)(f)
    mixed = mixjit(cache=True, schemes=["native"])(f)
    """
)

RUN = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from mixjit.plan import SiteBlock
    import cached_mod as m

    a = np.arange(6.0).reshape(2, 3)
    report = {"cache_path": m.mixed._cache.cache_path}
    for name in sys.argv[1].split(","):
        disp = getattr(m, name)
        assert np.array_equal(disp(a, a.T), a @ a.T)
        (cres,) = disp.overloads.values()
        report[name] = {
            "hits": sum(disp.stats.cache_hits.values()),
            "misses": sum(disp.stats.cache_misses.values()),
            "blocks": len({fn for fn in cres.reload_init or () if isinstance(fn, SiteBlock)}),
            "calls": [s.calls for s in getattr(disp, "sites", [])],
        }
    print(json.dumps(report))
    """
)


def _run(tmp_path, order):
    # NUMBA_CACHE_DIR is inherited, not replaced: the subprocesses load the run-time entry
    # from the cache this process warmed (compiling it is a minute of CPU), while
    # cached_mod's own files land in a place of their own (its __pycache__ in tmp_path,
    # or a directory named after tmp_path under an inherited NUMBA_CACHE_DIR).
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", RUN, order], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_plain_and_mixjit_caches_do_not_collide(tmp_path):
    entry_cfunc()  # warm the entry's disk cache for the subprocesses
    (tmp_path / "cached_mod.py").write_text(MODULE)
    # Process 1: plain Numba compiles and saves first; mixjit must not load that.
    first = _run(tmp_path, "plain,mixed")
    assert first["plain"] == {"hits": 0, "misses": 1, "blocks": 0, "calls": []}
    assert first["mixed"] == {"hits": 0, "misses": 1, "blocks": 1, "calls": [1]}
    # Process 2, the other order: each loads its own code. Mixjit's relinks its
    # site (the counter moves), plain Numba's has no mixjit site at all.
    second = _run(tmp_path, "mixed,plain")
    assert second["mixed"] == {"hits": 1, "misses": 0, "blocks": 1, "calls": [1]}
    assert second["plain"] == {"hits": 1, "misses": 0, "blocks": 0, "calls": []}
    cache_dir = Path(second.pop("cache_path"))
    assert cache_dir == Path(first.pop("cache_path")) and tmp_path.name in str(cache_dir)
    names = sorted(p.name for p in cache_dir.glob("*cached_mod.f-*.nbi"))
    assert len(names) == 2 and sum(n.startswith("mixjit-") for n in names) == 1


def test_index_key_is_tagged_with_version_and_options():
    def g(a):
        return a

    tag = cache_tag({"schemes": ("native",)})
    assert tag != cache_tag({"schemes": ("mixpert",)})
    key = MixjitCache(g, tag)._index_key("sig", _Codegen())
    plain = FunctionCache(g)._index_key("sig", _Codegen())
    assert key[:-1] == plain and key[-1] == ("mixjit", tag)


def test_tag_changes_with_the_entry_abi(tmp_path, monkeypatch):
    """Cached user code calls the entry with the prototype it was compiled against: a changed
    prototype (or wrapper) must not load old code."""
    copies = []
    for src in cache.ABI_SOURCES:
        copy = tmp_path / src.name
        copy.write_bytes(src.read_bytes())
        copies.append(copy)
    options = {"schemes": ("native",)}
    before = cache_tag(options)
    monkeypatch.setattr(cache, "ABI_SOURCES", tuple(copies))
    assert cache_tag(options) == before  # the same sources, the same tag
    entry_src = tmp_path / "abi.py"
    text = entry_src.read_text()
    assert "ENTRY_SIG = " in text
    entry_src.write_text(text.replace("types.int64, types.int64,", "types.int64, types.int32,", 1))
    assert cache_tag(options) != before


GEMM = textwrap.dedent(
    """
    def f(a, b):
        return a @ b
    """
)


@pytest.mark.parametrize("suffix", ["nbi", "nbc"])
@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_unreadable_cache_file_is_a_miss(tmp_path, how, suffix):
    """A truncated, garbage or empty index or data file: one warning, the call runs
    (compiled again, sites linked), and the file is rewritten for the next load."""
    module = load_module(tmp_path, GEMM)
    a = np.arange(6.0).reshape(2, 3)

    def compiled():
        return mixjit(cache=True, schemes=["native"])(module.f)

    first = compiled()
    assert np.array_equal(first(a, a.T), a @ a.T)
    path = corrupt(first._cache.cache_path, suffix, how)
    assert path.name.startswith("mixjit-")

    again = compiled()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert np.array_equal(again(a, a.T), a @ a.T)
        assert np.array_equal(again(2 * a, a.T), 2 * a @ a.T)  # same signature: no second load or warning
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheFileWarning)]
    assert len(messages) == 1 and str(path) in messages[0], messages
    assert sum(again.stats.cache_misses.values()) == 1 and [s.calls for s in again.sites] == [2]

    third = compiled()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheFileWarning)
        assert np.array_equal(third(a, a.T), a @ a.T)
    assert sum(third.stats.cache_hits.values()) == 1


def test_the_entry_uses_the_runtime_cache():
    """The entry's disk cache is the runtime kernels' (tests/runtime/jit/test_runtime_cache.py),
    keyed on the executor sources it compiles in and on every module of the entry package,
    unreadable files are misses."""
    cache_of = entry_cfunc()._cache
    assert type(cache_of) is EntryCache and isinstance(cache_of, RuntimeCache)


def test_the_entry_cache_key_covers_every_module_of_the_entry_package():
    """The entry's compiled code compiles in its sibling modules' intrinsics (tables, BLAS calls,
    executor table), which lie outside the runtime package ``RuntimeCache`` follows: the key
    hashes every one of them, so editing any recompiles."""
    package = Path(entry.__file__).parent
    assert ENTRY_SOURCES == tuple(sorted(package.glob("*.py")))
    assert {p.name for p in ENTRY_SOURCES} >= {"abi.py", "tables.py", "blas.py", "executors.py", "entry_point.py"}
    assert entry_sources_hash() == sources_hash(ENTRY_SOURCES)
    key = entry_cfunc()._cache._index_key("sig", _Codegen())
    assert key[-1] == ("mixjit-entry", entry_sources_hash())


def test_entry_imports_no_other_frontend_module():
    """The entry hashes sources with the leaf runtime/jit/source_hash.py, not mixjit.cache: no
    cycle cache -> linking -> entry -> cache."""
    code = ("import sys, mixjit.entry; print(sorted(m for m in sys.modules "
            "if m.startswith('mixjit.') and not m.startswith('mixjit.runtime')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = eval(proc.stdout.strip())
    assert loaded and all(m == "mixjit.entry" or m.startswith("mixjit.entry.") for m in loaded), loaded


ENTRY_RUN = textwrap.dedent(
    """
    import json, warnings
    import numpy as np
    from mixjit import mixjit
    from mixjit.entry import entry_cfunc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        entry = entry_cfunc()
    f = mixjit(schemes=["native"])(lambda a, b: a @ b)
    a = np.arange(6.0).reshape(2, 3)
    print(json.dumps({"hits": entry._cache_hits, "right": bool(np.array_equal(f(a, a.T), a @ a.T)),
                      "warnings": [str(w.message) for w in caught if "cache file" in str(w.message)]}))
    """
)


@pytest.mark.slow  # compiles the entry once (a minute or more of CPU)
@pytest.mark.parametrize("suffix", ["nbi"])
@pytest.mark.parametrize("how", ["truncated"])
def test_unreadable_entry_cache_is_a_miss(tmp_path, how, suffix):
    """The warm entry's cache files, copied where a subprocess with NUMBA_CACHE_DIR looks,
    then damaged: the subprocess warns once, compiles the entry, runs; the next one loads it."""
    source = Path(entry_cfunc()._cache.cache_path)
    target = tmp_path / "cache" / UserProvidedCacheLocator.get_suitable_cache_subpath(entry_point.__file__)
    target.mkdir(parents=True)
    for path in source.glob("entry_point._entry-*"):
        shutil.copy2(path, target)
    damaged = corrupt(target, suffix, how)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))

    def run():
        proc = subprocess.run([sys.executable, "-c", ENTRY_RUN], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=1200)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    first = run()
    assert first["hits"] == 0 and first["right"]
    assert len(first["warnings"]) == 1 and damaged.name in first["warnings"][0]
    assert run() == {"hits": 1, "right": True, "warnings": []}


class _Codegen:
    def magic_tuple(self):
        return ("x86_64", "cpu", "")
