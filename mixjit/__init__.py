"""mixjit: run the GEMMs of Numba code as emulated / split-precision GEMMs.

Entry points: ``mixjit.gemm`` (one GEMM under a scheme), the ``mixopt`` command
(passes over ``.mix`` IR dumps), the ``@mixjit`` decorator (``from mixjit import mixjit``), and
for unmodified Numba code ``mixjit.patch_numba`` and ``python -m mixjit run script.py``.

Attributes are loaded lazily so that ``import mixjit.ir`` (and so ``mixopt``)
never pays for numpy, numba or llvmlite.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "gemm": ("mixjit.gemm_api", "gemm"),
    "mixjit": ("mixjit.decorator", "mixjit"),
    "patch_numba": ("mixjit.patching", "patch_numba"),
    "MixjitWarning": ("mixjit.runtime.jit.warning", "MixjitWarning"),
}

__all__ = ["gemm", "mixjit", "patch_numba", "MixjitWarning", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'mixjit' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's attributes, the lazy ones (``gemm``, ``mixjit``, ``patch_numba``, ``MixjitWarning``) included."""
    return sorted(set(globals()) | set(_LAZY))
