"""On-disk caching of ``@mixjit(cache=True)`` functions, apart from plain Numba's.

Numba's cache key is the function's bytecode, closure and target machine; it
ignores ``pipeline_class``. A plain ``@njit(cache=True)`` of the same function
would therefore load mixjit's code (GEMMs calling the mixjit entry) or the other
way round. ``MixjitCache`` keeps them apart twice over:

* its files are named ``mixjit-<module>.<qualname>-...`` (Numba's are
  ``<module>.<qualname>-...``), so neither reads the other's index;
* its index key adds ``("mixjit", tag)``, where the tag hashes the mixjit
  version, the options that decide the plans (schemes, error budget,
  target) and the sources of the entry ABI (``ABI_SOURCES``: the wrappers
  that cached code calls, the entry's C prototype), so code compiled under
  other plans, by another mixjit version or against another entry prototype
  is not reused (old code calling a new entry with the old arguments would
  corrupt memory).

An unreadable cache file (truncated, empty, garbage, or a data file whose SHA-256 checksum
does not match: one flipped byte) is a miss: ``MixjitCache`` is a ``TolerantFunctionCache``
(``mixjit.runtime.jit.cache``), which warns once (``CacheFileWarning``), deletes the file and
lets the function compile again; a file it cannot write is a warning too.

Cached code names the GEMM entry and its site blocks by symbol only. What
registers them in a new process is the ``SiteBlock`` (``mixjit.plan``) that the
frontend appends to Numba's ``reload_init``: Numba pickles it with the code and
calls it before the code is loaded. ``rebuild`` also links the entry first, for
cached functions without sites.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

from numba.core.caching import CompileResultCacheImpl

import mixjit
from mixjit.runtime.jit.cache import CacheFileWarning, TolerantFunctionCache
from mixjit.runtime.jit.source_hash import sources_hash

__all__ = ["ABI_SOURCES", "cache_tag", "MixjitCache", "CacheFileWarning"]


ABI_SOURCES: tuple[Path, ...] = (Path(__file__).with_name("linking.py"),
                                 Path(__file__).parent / "entry" / "abi.py",
                                 Path(__file__).parent / "entry" / "tables.py")
"""The modules that define how compiled user code calls the run-time entry: ``linking.py``
(the ``gemm_alloc`` / ``gemm_update`` wrappers and the call it emits), ``entry/abi.py`` (the
entry's symbol, C prototype and codes) and ``entry/tables.py`` (the tables it reads)."""


def cache_tag(options: dict[str, Any]) -> str:
    """The tag of a mixjit cache entry: a hash of the mixjit version, the entry ABI
    (``sources_hash(ABI_SOURCES)``) and the plan-deciding ``options`` (JSON-serialisable values)."""
    text = json.dumps({"mixjit": mixjit.__version__, "entry_abi": sources_hash(ABI_SOURCES), **options},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class _MixjitCacheImpl(CompileResultCacheImpl):
    def get_filename_base(self, fullname: str, abiflags: str) -> str:
        return "mixjit-" + super().get_filename_base(fullname, abiflags)

    def rebuild(self, target_context: Any, payload: Any) -> Any:
        from mixjit.linking import ensure_entry_linked

        ensure_entry_linked()
        return super().rebuild(target_context, payload)


class MixjitCache(TolerantFunctionCache):
    """Numba's per-function cache with mixjit's file names and tagged index key;
    unreadable cache files are misses."""

    _impl_class = _MixjitCacheImpl

    def __init__(self, py_func: Callable, tag: str) -> None:
        self._tag = tag
        super().__init__(py_func)

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        return super()._index_key(sig, codegen) + (("mixjit", self._tag),)
