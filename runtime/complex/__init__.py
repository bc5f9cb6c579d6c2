"""Complex GEMMs as real GEMMs under one real scheme: the wrapper over real schemes.

A complex product (complex64 or complex128) is computed as real products of its parts
under any scheme of the catalogue, in one of two forms: four products (``form=4``) or
Gauss's three (``form=3``). :class:`ComplexConfig` composes the real scheme's config
with the form; :class:`ComplexScheme` is the Scheme-contract face (configs, labels,
executor, cost); :func:`complex_gemm` is the one-call form. Semantics:
docs/numerics.md, "Complex products (the wrapper over real schemes)". The CUDA kernels of
complex sites: runtime/complex/cuda/ (docs/cuda.md, "Complex sites").

The names load on first use (PEP 562), so that the CUDA desc (runtime/complex/cuda/desc.py),
which the ``emit-cuda`` pass imports, does not load the scheme's Numba executor.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["FORMS", "ComplexConfig", "working_dtype", "ComplexScheme", "COMPLEX", "complex_gemm"]

_HOME = {"FORMS": "config", "ComplexConfig": "config", "working_dtype": "config",
         "ComplexScheme": "scheme", "COMPLEX": "scheme", "complex_gemm": "scheme"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
