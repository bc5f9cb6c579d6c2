"""Which runtime sources a module's compiled code depends on, and their hash.

Numba's disk cache checks only the source file of the cached function itself.
A runtime kernel compiles in the kernels and constants of every runtime module
it imports (``executor_mixpert`` compiles in ``segments``, ``pair_blocks`` and
``exactsum``), so its cache key must also hash those files, or an edited helper
keeps running from a stale cache (``mixjit.runtime.jit.cache`` uses this).

The dependency set is the *import closure* of a module within one package:
every module of the package that the module imports (at module level or inside
a function, absolutely or relatively), transitively. Compiled code can only
reach globals of modules its module imports, so the closure is a superset of
what Numba compiles in (less ``CACHE_MACHINERY``, imported by every cached kernel
but compiled into none). A leaf module: the standard library only (imported by
the entry, the frontend's cache and the runtime kernels alike, without cycles).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
from pathlib import Path
from typing import Iterable, Sequence

__all__ = ["sources_hash", "import_closure", "runtime_sources", "runtime_sources_hash"]

RUNTIME_PACKAGE = __name__.rsplit(".", 2)[0]
"""The runtime package's import name (``mixjit.runtime``; this module is ``mixjit.runtime.jit.source_hash``)."""

RUNTIME_ROOT = Path(__file__).resolve().parent.parent
"""The runtime package's source directory."""


def sources_hash(paths: Sequence[Path], root: Path | None = None) -> str:
    """A hash of the names and contents of ``paths``, in the given order. A file is named
    by its path relative to ``root`` (``mixpert/executor.py``), so that two files of the
    same name in two packages (``mixpert/executor.py``, ``dfp/executor.py``) never stand
    for each other and a moved file changes the hash; a file outside ``root`` (the module
    of a kernel defined elsewhere, such as ``mixjit/entry/executors.py``), or any file without
    ``root``, by its bare name."""
    h = hashlib.sha256()
    base = None if root is None else root.resolve()
    for path in paths:
        full = path.resolve()
        name = full.relative_to(base).as_posix() if base is not None and full.is_relative_to(base) else path.name
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _module_file(name: str, package: str, root: Path) -> Path | None:
    """The source file of module ``name`` if it lies in ``package`` (rooted at ``root``)."""
    if name == package:
        parts: list[str] = []
    elif name.startswith(package + "."):
        parts = name[len(package) + 1:].split(".")
    else:
        return None
    base = root.joinpath(*parts)
    candidates = [base / "__init__.py"] + ([base.with_name(base.name + ".py")] if parts else [])
    return next((c for c in candidates if c.is_file()), None)


def _with_parents(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``, ``a.b.c``: importing a module runs its packages too."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _imported_names(path: Path, module: str) -> Iterable[str]:
    """Every module name ``path`` (the source of ``module``) may import: the targets of
    ``import`` statements and, for ``from X import a``, both ``X`` and ``X.a`` (``a``
    may be a submodule), each with its parent packages. Relative imports are resolved."""
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _with_parents(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = here.split(".")[:len(here.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield from _with_parents(base)
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def import_closure(module: str, path: Path, package: str, root: Path,
                   exclude: frozenset[str] = frozenset()) -> tuple[Path, ...]:
    """``path`` (the source of ``module``) and the sources of every module of ``package``
    (rooted at ``root``) that it or its packages import, transitively, with their
    packages, but the modules named in ``exclude`` (not followed either); ordered by
    module name, without duplicates."""
    seen: dict[Path, str] = {path.resolve(): module}
    todo = [(path, module)]

    def visit(name: str) -> None:
        if name in exclude:
            return
        found = _module_file(name, package, root)
        if found is not None and found.resolve() not in seen:
            seen[found.resolve()] = name
            todo.append((found, name))

    for parent in _with_parents(module)[:-1]:  # importing a module runs its packages
        visit(parent)
    while todo:
        current, name = todo.pop()
        for imported in _imported_names(current, name):
            visit(imported)
    return tuple(sorted(seen, key=seen.__getitem__))


CACHE_MACHINERY: frozenset[str] = frozenset({f"{RUNTIME_PACKAGE}.jit.source_hash", f"{RUNTIME_PACKAGE}.jit.cache"})
"""Runtime modules every cached kernel imports that compile nothing in (this module and
the cache classes): left out of ``runtime_sources``, so editing them keeps the caches."""


@functools.cache
def runtime_sources(module: str) -> tuple[Path, ...]:
    """The source of ``module`` and of every runtime module it imports,
    transitively, but ``CACHE_MACHINERY``: what compiled code defined in ``module`` may
    compile in."""
    source = getattr(importlib.import_module(module), "__file__", None)
    if source is None:
        raise ValueError(f"mixjit: module {module!r} has no source file, so its compiled code cannot be "
                         "cached with a key over its sources; define the function in a .py file")
    return import_closure(module, Path(source), RUNTIME_PACKAGE, RUNTIME_ROOT, exclude=CACHE_MACHINERY)


@functools.cache
def runtime_sources_hash(module: str) -> str:
    """``sources_hash(runtime_sources(module), RUNTIME_ROOT)``, computed once per process."""
    return sources_hash(runtime_sources(module), RUNTIME_ROOT)
