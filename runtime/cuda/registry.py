"""Which kernel desc builds a scheme's CUDA kernels: :func:`kernel_desc` (scheme, config) -> desc.

One entry per kernel family; the ``emit-cuda`` pass, tools/cuda_kernels.py and the launcher
go through it, so a new family is added here and nowhere else. Pure Python (no numba).
"""

from __future__ import annotations

from typing import Any, Callable

from mixjit.runtime.cuda.desc import KernelSpec, UnsupportedConfig
from mixjit.runtime.mixpert.cuda.desc import KernelDesc
from mixjit.runtime.multiterm.cuda.desc import MULTITERM_SCHEMES, MultiTermDesc
from mixjit.runtime.ozaki2.cuda.desc import Ozaki2Desc
from mixjit.runtime.split.cuda.desc import SplitDesc
from mixjit.runtime.vitbit.cuda.desc import VitbitDesc

__all__ = ["kernel_desc", "FAMILIES", "ALIASES"]

#: scheme -> the factory of its desc, ``(scheme, config, dtype, **fields) -> KernelSpec``
FAMILIES: dict[str, Callable[..., KernelSpec]] = {
    "mixpert": KernelDesc.for_config,
    **{scheme: MultiTermDesc.for_config for scheme in MULTITERM_SCHEMES},
    "ozaki2": Ozaki2Desc.for_config,
    "split": SplitDesc.for_config,
    "vitbit": VitbitDesc.for_config,
}
#: scheme aliases (runtime/schemes register_alias) -> (scheme, the config they stand for)
ALIASES = {f"bf16x{p}": ("bf16xn", f"products={p}") for p in (3, 6, 9)}


def kernel_desc(scheme: str, config: str, dtype: str = "f32", **fields: Any) -> KernelSpec:
    """The kernel desc of ``scheme[config]`` for inputs of ``dtype`` (``f32``/``f64``); ``fields``
    (arch, block, warps, trans_a, trans_b, alpha_beta, ...) go to the desc. UnsupportedConfig
    names what the kernels lack; ValueError a malformed label."""
    if scheme in ALIASES:
        scheme, alias_config = ALIASES[scheme]
        config = config or alias_config
    factory = FAMILIES.get(scheme)
    if factory is None:
        raise UnsupportedConfig(f"cuda: scheme {scheme!r} has no CUDA kernel yet "
                                f"(kernels exist for {', '.join(sorted(FAMILIES))})")
    return factory(scheme, config, dtype, **fields)
