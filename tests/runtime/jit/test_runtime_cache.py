"""Disk caches of compiled runtime code: keyed on every runtime source compiled in
(an edited helper never runs stale), and unreadable cache files are misses."""

from __future__ import annotations

import ast
import importlib
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
from cache_files import CORRUPTIONS, corrupt, load_module
from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher

import mixjit.runtime
from mixjit.runtime.jit.cache import CacheFileWarning, RuntimeCache, cached_njit
from mixjit.runtime.jit.source_hash import (
    CACHE_MACHINERY,
    RUNTIME_PACKAGE,
    RUNTIME_ROOT,
    import_closure,
    runtime_sources,
    runtime_sources_hash,
    sources_hash,
)
from mixjit.runtime.mixpert import pair_blocks

# -- which sources a kernel depends on ---------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))


def test_import_closure_follows_every_import_form(tmp_path):
    _tree(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg.b import X\nimport numpy\n",
        "b.py": "X = 1\ndef late():\n    from . import c\n",
        "c.py": "from .sub.d import y\n",
        "sub/__init__.py": "",
        "sub/d.py": "from ..e import *\ny = 2\n",
        "e.py": "import pkg.f\n",
        "f.py": "",
        "unused.py": "import pkg.a\n",
    })
    closure = import_closure("pkg.a", tmp_path / "a.py", "pkg", tmp_path)
    names = sorted(str(p.relative_to(tmp_path.resolve())) for p in closure)
    assert names == ["__init__.py", "a.py", "b.py", "c.py", "e.py", "f.py", "sub/__init__.py", "sub/d.py"]
    pruned = import_closure("pkg.a", tmp_path / "a.py", "pkg", tmp_path, exclude=frozenset({"pkg.c"}))
    assert sorted(p.name for p in pruned) == ["__init__.py", "a.py", "b.py"]  # c is not followed either
    # a leaf depends on itself and its package only
    assert [p.name for p in import_closure("pkg.f", tmp_path / "f.py", "pkg", tmp_path)] == ["__init__.py", "f.py"]


def test_source_hashing_is_a_leaf():
    """Imported by the entry, the frontend cache and every kernel: the standard library only."""
    tree = ast.parse((RUNTIME_ROOT / "jit/source_hash.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported and imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_executor_and_entry_depend_on_their_helpers_only():
    def names(module):
        return {str(p.relative_to(RUNTIME_ROOT)) for p in runtime_sources(module) if p.is_relative_to(RUNTIME_ROOT)}

    executor = names("mixjit.runtime.mixpert.executor")
    assert {"mixpert/executor.py", "mixpert/segments.py", "mixpert/pair_blocks.py", "numerics/exactsum.py"} <= executor
    assert not any(n.startswith("schemes") for n in executor)  # pure-Python schemes do not invalidate kernels
    # the entry calls each executor through its loaded C function's address, whose own cache
    # (mixjit.entry.executors._ExecutorCache) is keyed on the kernel's sources: the entry's key leaves the
    # families out, so an edit to one recompiles that family's executor, not the entry
    entry = names("mixjit.entry.entry_point")  # the module of the entry cfunc
    assert "schemes/catalog.py" in entry and not {n for n in executor if n.startswith("mixpert/")} & entry
    # no cache machinery (jit/cache.py, jit/source_hash.py); its package jit/ runs on import
    assert names("mixjit.runtime.mixpert.segments") == {"__init__.py", "jit/__init__.py", "mixpert/__init__.py",
                                                        "mixpert/segments.py"}


def test_sources_hash_names_files_by_their_path_under_the_root(tmp_path):
    """Two families' ``executor.py`` with the same text are two different sources, and a
    moved file hashes differently (its compiled code is rebuilt once): the key names each
    file by its path relative to the runtime root, not by its bare name."""
    _tree(tmp_path, {"mixpert/executor.py": "X = 1\n", "dfp/executor.py": "X = 1\n"})
    one, other = tmp_path / "mixpert/executor.py", tmp_path / "dfp/executor.py"
    assert sources_hash([one], tmp_path) != sources_hash([other], tmp_path)
    assert sources_hash([one], tmp_path) == sources_hash([one], tmp_path)
    copy = tmp_path / "copy"
    _tree(copy, {"mixpert/executor.py": "X = 1\n"})
    assert sources_hash([copy / "mixpert/executor.py"], copy) == sources_hash([one], tmp_path)  # where the root lies does not count


def test_key_changes_with_an_edited_helper_and_only_then(tmp_path):
    """The cheap check of the key: a copy of the runtime with one helper edited hashes
    differently for the kernels that import it, and the same for the others."""
    copy = tmp_path / "runtime"
    shutil.copytree(RUNTIME_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def key(module):
        rel = Path(*module.split(".")[2:]).with_suffix(".py")
        return sources_hash(import_closure(module, copy / rel, RUNTIME_PACKAGE, copy, exclude=CACHE_MACHINERY), copy)

    before = {m: key(m) for m in ("mixjit.runtime.mixpert.pair_blocks", "mixjit.runtime.numerics.exactsum")}
    assert before["mixjit.runtime.mixpert.pair_blocks"] == runtime_sources_hash("mixjit.runtime.mixpert.pair_blocks")
    segments = copy / "mixpert/segments.py"
    segments.write_text(segments.read_text().replace("ROUND_NEAREST = 1", "ROUND_NEAREST = 2", 1))
    assert key("mixjit.runtime.mixpert.pair_blocks") != before["mixjit.runtime.mixpert.pair_blocks"]
    assert key("mixjit.runtime.numerics.exactsum") == before["mixjit.runtime.numerics.exactsum"]


def test_runtime_cache_key_ends_with_the_sources_hash():
    cache = pair_blocks.plan_block_array._cache
    assert isinstance(cache, RuntimeCache)
    key = cache._index_key("sig", _Codegen())
    assert key[-1] == ("mixjit-runtime", runtime_sources_hash("mixjit.runtime.mixpert.pair_blocks"))


def _runtime_modules():
    for info in pkgutil.walk_packages(mixjit.runtime.__path__, RUNTIME_PACKAGE + "."):
        try:
            yield importlib.import_module(info.name)
        except ModuleNotFoundError as exc:  # an optional dependency (a CUDA binding) is absent
            if (exc.name or "").startswith("mixjit"):
                raise


def test_every_cached_runtime_kernel_uses_the_runtime_cache():
    cached = []
    for module in _runtime_modules():
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                if not isinstance(value._cache, NullCache):
                    assert type(value._cache) is RuntimeCache, f"{module.__name__}.{value.py_func.__name__}"
                    cached.append(value)
    assert len(cached) >= 30  # the executor, its helpers, exactsum, segments


def test_no_runtime_code_asks_numba_for_its_own_cache():
    """``njit(cache=True)`` would bypass RuntimeCache (stale helpers, corrupt files raising)."""
    offenders = []
    sources = [*RUNTIME_ROOT.rglob("*.py"), *Path(mixjit.__file__).parent.glob("*.py")]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and any(
                kw.arg == "cache" and isinstance(kw.value, ast.Constant) and kw.value.value is True
                for kw in node.keywords
            ):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, "use mixjit.runtime.jit.cache.cached_njit instead of cache=True: " + ", ".join(offenders)


def test_cached_njit_refuses_a_cache_option():
    with pytest.raises(TypeError, match="drop the cache= option"):
        cached_njit(cache=False)


# -- an edited helper in a copy of the package --------------------------------------

PLAN = textwrap.dedent(
    """
    import json
    from mixjit.runtime.mixpert import pair_blocks as pb

    pairs = pb.pair_matrix(((0, 0), (0, 1), (1, 0), (1, 1)), 3)
    blocks, ok = pb.plan_block_array(pairs, 3, 7, 16, pb.MAGNITUDE)
    stats = pb.plan_block_array.stats
    print(json.dumps({"file": pb.__file__, "blocks": blocks.tolist(),
                      "hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}))
    """
)


def _copy_package(dst: Path) -> Path:
    """The installed mixjit package (with ir/, passes/, runtime/) copied under ``dst``."""
    pkg = dst / "mixjit"
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(Path(mixjit.__file__).parent, pkg, ignore=ignore)
    for sub in ("ir", "passes", "runtime"):
        spec = importlib.util.find_spec(f"mixjit.{sub}")
        shutil.copytree(spec.submodule_search_locations[0], pkg / sub, ignore=ignore, dirs_exist_ok=True)
    return pkg


def _plan_in(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), NUMBA_CACHE_DIR=str(root / "numba-cache"))
    proc = subprocess.run([sys.executable, "-c", PLAN], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).is_relative_to(root)  # the copy ran, not the installed package
    return out


@pytest.mark.slow  # three subprocesses compile plan_block_array cold (~12 s CPU); in CI the key itself is
# checked by test_key_changes_with_an_edited_helper_and_only_then and test_runtime_cache_key_ends_with_the_sources_hash
def test_edited_helper_never_runs_from_a_stale_kernel_cache(tmp_path):
    """plan_block_array (mixpert/pair_blocks.py) compiles in segments.digit_bits; after an edit of
    mixpert/segments.py alone, Numba's own key (mixpert/pair_blocks.py's stamp) would load the old code."""
    pkg = _copy_package(tmp_path)
    first = _plan_in(tmp_path)
    assert first["misses"] == 1
    segments = pkg / "runtime" / "mixpert/segments.py"
    text = segments.read_text()
    old = "return 8 if digits == BALANCED else 7"
    assert old in text, "the helper this test edits has changed; pick another constant"
    segments.write_text(text.replace(old, "return 8 if digits == BALANCED else 6"))
    edited = _plan_in(tmp_path)
    assert edited["misses"] == 1 and edited["hits"] == 0
    assert edited["blocks"] != first["blocks"]  # 6-bit digits shift by 6, not 7
    again = _plan_in(tmp_path)
    assert again == {**edited, "hits": 1, "misses": 0}  # and the new code is cached in turn


# -- unreadable cache files -----------------------------------------------------------

KERNEL = textwrap.dedent(
    """
    from mixjit.runtime.jit.cache import cached_njit

    @cached_njit(nogil=True)
    def kernel(x):
        return 3 * x + 1
    """
)


@pytest.mark.parametrize("suffix", ["nbi", "nbc"])
@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_unreadable_cache_file_is_a_miss(tmp_path, how, suffix):
    module = load_module(tmp_path, KERNEL)
    assert module.kernel(2) == 7
    path = corrupt(module.kernel._cache.cache_path, suffix, how)

    again = cached_njit(nogil=True)(module.kernel.py_func)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert again(2) == 7
        assert again(3) == 10  # the same signature: no second load, no second warning
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheFileWarning)]
    assert len(messages) == 1 and str(path) in messages[0] and "kernel" in messages[0], messages
    assert sum(again.stats.cache_misses.values()) == 1

    third = cached_njit(nogil=True)(module.kernel.py_func)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheFileWarning)
        assert third(2) == 7
    assert sum(third.stats.cache_hits.values()) == 1  # the damaged file was rewritten


class _Codegen:
    def magic_tuple(self):
        return ("x86_64", "cpu", "")
