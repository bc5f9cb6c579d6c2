"""Numba disk caches for mixjit: unreadable files are misses, runtime code is keyed
on every runtime source it compiles in.

Three defects of Numba's own ``FunctionCache`` (numba 0.68) are fixed here, once, for
every cached function of mixjit (the runtime kernels, the run-time entry and
``@mixjit(cache=True)`` user functions):

* A truncated, empty or garbage ``.nbi`` / ``.nbc`` file makes the call raise
  (``UnpicklingError``, ``EOFError``, ...). ``TolerantFunctionCache`` treats an
  unreadable index or data file as a miss: it warns once (``CacheFileWarning``),
  deletes the file and lets Numba compile and save again.
* Numba's key sees only the source file of the cached function. ``RuntimeCache``
  adds a hash of the sources of every runtime module the function's module
  imports (``mixjit.runtime.jit.source_hash``), so an edited helper (say
  ``mixpert/segments.py``) or an upgrade never runs the old compiled code of a kernel that
  compiles it in. ``cached_njit`` applies it: every ``cache=True`` kernel of the
  runtime is declared with ``@cached_njit(...)`` instead of ``@numba.njit(cache=True, ...)``.
* A function loaded from the cache runs its reload hooks (Numba's ``reload_init``: for code
  with parallel regions, starting the threading layer), but its rebuilt library forgets them,
  so a caller compiled later in the same process inherits none and saves none: reloaded in a
  new process, the caller calls into the threading layer before anything started it (a call
  through a null pointer, a segfault). ``TolerantFunctionCache.load_overload`` gives the
  rebuilt library its hooks back, so callers inherit them as from a freshly compiled callee.
* A ``CFunc`` loaded from the cache (the run-time entry's executors) drops Numba's compile
  result, and with it the only strong references to the environments of the functions
  compiled into it (Numba's registry of environments is weak): code that reads one, such as
  an ``objmode`` block boxing an array (runtime/mixpert/lazy.py), then reads freed memory.
  ``TolerantFunctionCache.load_overload`` keeps them alive as long as the cache object.

One cost of Numba's is cut here too. A jitted caller that passes a constant
(``prepare_operand(b, True, params)``) makes Numba compile the callee for the
*literal* type of that value (``Literal[bool](True)``), so a kernel called with
``False`` in one place and ``True`` in another compiles twice, and so does every
kernel below it. A ``cached_njit`` kernel compiles for the plain types
(``bool``, ``int64``) instead (``_plain_call_template``): one specialization
serves every constant, which is about a fifth of a cold MixPert compile
(docs/results/first_use.md). Only a kernel that cannot be typed without the literal
value still gets a literal specialization.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import warnings
from types import MethodType as types_method
from typing import Any, Callable

import numba
from numba.core import errors, types
from numba.core.caching import FunctionCache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher

from mixjit.runtime.jit.source_hash import runtime_sources_hash
from mixjit.runtime.jit.warning import MixjitWarning

__all__ = ["CacheFileWarning", "TolerantFunctionCache", "RuntimeCache", "cached_njit"]


class CacheFileWarning(MixjitWarning):
    """A Numba cache file of a mixjit-compiled function (a runtime kernel, the run-time
    entry, an ``@mixjit(cache=True)`` function) could not be read (it was deleted and
    the function compiled again) or written (the code runs from memory)."""


class _TolerantCacheFile(IndexDataCacheFile):
    """Numba's index/data file pair, where a file that cannot be unpickled is a miss, and each
    data file carries the SHA-256 of its contents, checked before anything unpickles it: a
    damaged but readable file (a flipped byte in the compiled code) would otherwise load and
    crash the process or run wrong code."""

    _SEAL = b"mixjit-nbc-sha256\n"
    """What a data file starts with; the 32-byte digest of the rest follows."""

    def __init__(self, cache_path: str, filename_base: str, source_stamp: Any, owner: str) -> None:
        super().__init__(cache_path=cache_path, filename_base=filename_base, source_stamp=source_stamp)
        self._owner = owner
        # an index of Numba's own format (data files without the seal) is another version: a clean miss
        self._version = f"{self._version}+mixjit-sealed-data"

    def _load_index(self) -> dict:
        try:
            overloads = super()._load_index()
            if not isinstance(overloads, dict) or not all(isinstance(v, str) for v in overloads.values()):
                raise TypeError(f"the index holds a {type(overloads).__name__}, not a dict of file names")
            return overloads
        except OSError:  # missing is handled by Numba; unreadable for the OS is not corruption
            raise
        except Exception as exc:
            self._discard(self._index_path, exc)
            return {}

    def _save_data(self, name: str, data: Any) -> None:
        """Numba's data file, sealed: ``_SEAL``, the SHA-256 of the pickled data, the data."""
        payload = self._dump(data)
        with self._open_for_write(self._data_path(name)) as f:
            f.write(self._SEAL + hashlib.sha256(payload).digest() + payload)

    def _load_data(self, name: str) -> Any:
        path = self._data_path(name)
        with open(path, "rb") as f:  # OSError: Numba's load() treats a vanished data file as a miss
            sealed = f.read()
        try:
            head, digest, payload = sealed[:len(self._SEAL)], sealed[len(self._SEAL):len(self._SEAL) + 32], \
                sealed[len(self._SEAL) + 32:]
            if head != self._SEAL:
                raise ValueError("no mixjit checksum header (written by another version, or damaged)")
            if hashlib.sha256(payload).digest() != digest:
                raise ValueError("its SHA-256 checksum does not match its contents (the file is damaged)")
            return pickle.loads(payload)
        except Exception as exc:
            self._discard(path, exc)
            return None

    def _discard(self, path: str, exc: Exception) -> None:
        """Warn that ``path`` is unreadable and delete it (a later save rewrites it)."""
        try:
            os.unlink(path)
            fate = "deleted it"
        except FileNotFoundError:
            fate = "it is gone"
        except OSError as err:
            fate = f"could not delete it ({err})"
        warnings.warn(
            f"mixjit: unreadable Numba cache file {path} of {self._owner} "
            f"({type(exc).__name__}: {exc}); {fate}, compiling again",
            CacheFileWarning, stacklevel=2)


class TolerantFunctionCache(FunctionCache):
    """Numba's ``FunctionCache`` where an unreadable (truncated, empty, garbage) cache
    file is a miss with one ``CacheFileWarning``, instead of an exception in the call."""

    def __init__(self, py_func: Callable) -> None:
        super().__init__(py_func)
        self._loaded_environments: list = []
        self._cache_file = _TolerantCacheFile(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp(),
            owner=f"{py_func.__module__}.{py_func.__qualname__}",
        )

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """Numba's cached compile result, with its library's reload hooks restored (see the
        module docstring), so callers compiled later inherit them."""
        cres = super().load_overload(sig, target_context)
        if cres is not None and cres.reload_init:
            cres.library._reload_init.update(cres.reload_init)
        if cres is not None:
            # Numba holds an environment (the constants its code reads, e.g. the dtypes an
            # ``objmode`` block boxes arrays with) only weakly; a dispatcher keeps the loaded
            # result, and with it the environments of the callees compiled into it, but a
            # ``CFunc`` drops it, leaving its code a dangling pointer: keep them here.
            self._loaded_environments.extend((cres.environment, *(cres.referenced_envs or ())))
        return cres

    def save_overload(self, sig: Any, data: Any) -> None:
        """Numba's save, with every reload hook of the compiled library in the saved result:
        a ``CFunc``'s compile result leaves out the hooks its library collected while it
        was lowered and linked (Numba copies them only where it makes a Python wrapper), and
        loaded without them, code that needs one (runtime/jit/lazy_link.py's cells) would call
        into what nothing registered. A file that cannot be written (``OSError``) is one
        ``CacheFileWarning``, not a failed call."""
        data.library._ensure_finalized()  # links the callees in, with their hooks
        data.reload_init.extend(h for h in data.library._reload_init if h not in data.reload_init)
        try:
            super().save_overload(sig, data)
        except OSError as err:  # a full disk, a read-only or a blocked path: the compiled code still runs
            warnings.warn(
                f"mixjit: could not write the Numba cache of {self._cache_file._owner} "
                f"({type(err).__name__}: {err}); it runs from memory and compiles again in a new process",
                CacheFileWarning, stacklevel=2)


class RuntimeCache(TolerantFunctionCache):
    """The cache of compiled runtime code: its index key adds a hash of the sources of
    the function's module and of every runtime module that module imports, transitively
    (``runtime_sources``), since the compiled code contains theirs too."""

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        return (*super()._index_key(sig, codegen), ("mixjit-runtime", runtime_sources_hash(self._py_func.__module__)))


def _plain_call_template(dispatcher: Dispatcher, args: tuple, kws: dict) -> tuple:
    """``Dispatcher.get_call_template`` (how jitted code types a call of ``dispatcher``)
    with literal argument types made plain, so constants share one specialization;
    the literal types are kept where the plain ones do not type (Numba's own rule)."""
    plain_args = tuple(types.unliteral(a) for a in args)
    plain_kws = {k: types.unliteral(v) for k, v in kws.items()}
    if plain_args != tuple(args) or plain_kws != kws:
        try:
            return Dispatcher.get_call_template(dispatcher, plain_args, plain_kws)
        except errors.TypingError:
            pass
    return Dispatcher.get_call_template(dispatcher, args, kws)


def cached_njit(func: Callable | None = None, **options: Any) -> Any:
    """``numba.njit(cache=True, **options)`` with ``RuntimeCache`` as the disk cache, one
    specialization for all constant arguments from jitted callers (module docstring), and
    no C-callable wrapper per specialization (``no_cfunc_wrapper``; mixjit takes no kernel's
    C address, and a kernel passed as a first-class function still runs).
    Use it (``@cached_njit(nogil=True)``) for every cached kernel that compiles runtime code."""
    if "cache" in options:
        raise TypeError("cached_njit always caches (with RuntimeCache); drop the cache= option")

    def decorate(py_func: Callable) -> Any:
        # no C-callable wrapper per specialization: nothing takes a runtime kernel's C address
        # (the executors are CFuncs of their own), and each is one more function to optimise
        # and compile in every cold compile
        dispatcher = numba.njit(**{"no_cfunc_wrapper": True, **options})(py_func)
        dispatcher._cache = RuntimeCache(py_func)  # what Dispatcher.enable_caching() does, with our class
        dispatcher.get_call_template = types_method(_plain_call_template, dispatcher)
        return dispatcher

    return decorate(func) if func is not None else decorate
