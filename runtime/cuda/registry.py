"""Which kernel desc builds a scheme's CUDA kernels: :func:`kernel_desc` (scheme, config) -> desc.

The scheme catalogue (mixjit.runtime.schemes.catalog) names, per family, the schemes with
kernels and their desc class (``Family.kernels``, ``Family.cuda_desc``); the ``emit-cuda`` pass,
tools/cuda_kernels.py and the launcher go through :func:`kernel_desc`. A desc class is imported
on first use. Pure Python (no numba).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from mixjit.runtime.cuda.desc import KernelSpec, UnsupportedConfig
from mixjit.runtime.schemes import catalog

__all__ = ["kernel_desc", "desc_factory", "kernel_schemes"]


def kernel_schemes() -> tuple[str, ...]:
    """Every scheme with CUDA kernels, in catalogue order."""
    return tuple(catalog.kernel_families())


def desc_factory(scheme: str) -> Callable[..., KernelSpec]:
    """The factory of ``scheme``'s desc, ``(scheme, config, dtype, **fields) -> KernelSpec``
    (its desc class's ``for_config``); UnsupportedConfig when the scheme has no kernels."""
    path = catalog.kernel_families().get(scheme)
    if path is None:
        raise UnsupportedConfig(f"cuda: scheme {scheme!r} has no CUDA kernel yet "
                                f"(kernels exist for {', '.join(sorted(catalog.kernel_families()))})")
    module, _, cls = path.partition(":")
    return getattr(importlib.import_module(module), cls).for_config


def kernel_desc(scheme: str, config: str, dtype: str = "f32", **fields: Any) -> KernelSpec:
    """The kernel desc of ``scheme[config]`` for inputs of ``dtype`` (``f32``/``f64``); ``fields``
    (arch, block, warps, trans_a, trans_b, alpha_beta, ...) go to the desc. A scheme alias
    (``bf16x6``) stands for its scheme and config. UnsupportedConfig names what the kernels
    lack; ValueError a malformed label."""
    aliases = catalog.alias_table()
    if scheme in aliases:
        scheme, alias_config = aliases[scheme]
        config = config or alias_config
    return desc_factory(scheme)(scheme, config, dtype, **fields)
