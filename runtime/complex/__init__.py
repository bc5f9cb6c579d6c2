"""Complex GEMMs as real GEMMs under one real scheme: the wrapper over real schemes.

A complex product (complex64 or complex128) is computed as real products of its parts
under any scheme of the catalogue, in one of two forms: four products (``form=4``) or
Gauss's three (``form=3``). :class:`ComplexConfig` composes the real scheme's config
with the form; :class:`ComplexScheme` is the Scheme-contract face (configs, labels,
executor, cost); :func:`complex_gemm` is the one-call form. Semantics:
docs/numerics.md, "Complex products (the wrapper over real schemes)".
"""

from __future__ import annotations

from mixjit.runtime.complex.config import FORMS, ComplexConfig, working_dtype
from mixjit.runtime.complex.scheme import COMPLEX, ComplexScheme, complex_gemm

__all__ = ["FORMS", "ComplexConfig", "working_dtype", "ComplexScheme", "COMPLEX", "complex_gemm"]
