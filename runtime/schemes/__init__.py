"""GEMM schemes: the contract (``base``), the scheme catalogue (``catalog``) and one module
per built-in family's schemes.

Which schemes exist is the catalogue's (mixjit.runtime.schemes.catalog); a scheme's module,
and with it its Numba executor, is imported on the first lookup of one of its family's names
(``get_scheme``), not when this package is imported. The names below load ``base`` on first
use, so importing ``mixjit.runtime.schemes.catalog`` imports neither numpy nor numba.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Config", "RunStats", "Scheme", "Work", "all_schemes", "get_scheme", "register", "resolve_scheme",
           "scheme_aliases"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("mixjit.runtime.schemes.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
