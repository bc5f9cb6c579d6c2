"""The pass registry: pass name -> pass class.

A pass module registers its class with the ``@register_pass`` decorator. Every
public module of the ``mixjit.passes`` package is imported on the first lookup, so a
new pass only needs its module in ``passes/`` and a golden test
``tests/filecheck/<pass-name>.mix`` (a test enforces both).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Iterable

from mixjit.passes.pass_base import ModulePass, is_kebab_case

__all__ = ["register_pass", "get_pass", "all_passes", "unknown_pass_message"]

_REGISTRY: dict[str, type[ModulePass]] = {}
_loaded = False


def register_pass(cls: type[ModulePass]) -> type[ModulePass]:
    """Class decorator: add a pass class to the registry, checking its declaration."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not is_kebab_case(name):
        raise TypeError(f"pass class {cls.__name__} needs a kebab-case `name`, got {name!r}")
    if not cls.summary():
        raise TypeError(f"pass class {cls.__name__} needs a docstring (its one-line summary)")
    cls.options()  # raises TypeError for an option of an unsupported type
    existing = _REGISTRY.get(name)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise TypeError(f"pass name '{name}' is taken by {existing.__qualname__}")
    _REGISTRY[name] = cls
    return cls


def _load_pass_modules() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import mixjit.passes as package

    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")


def all_passes() -> dict[str, type[ModulePass]]:
    """All registered passes, sorted by name."""
    _load_pass_modules()
    return dict(sorted(_REGISTRY.items()))


def get_pass(name: str) -> type[ModulePass] | None:
    """The pass class registered under ``name``, or None."""
    _load_pass_modules()
    return _REGISTRY.get(name)


def unknown_pass_message(name: str, names: Iterable[str]) -> str:
    """``unknown pass 'canonicalise'; did you mean 'canonicalize'?`` given the known names."""
    names = list(names)
    message = f"unknown pass '{name}'"
    close = difflib.get_close_matches(name, names, n=3)
    if close:
        message += "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    return message + " (see `mixopt --list-passes`)"
