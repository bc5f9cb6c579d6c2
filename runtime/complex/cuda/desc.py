"""ComplexDesc: a complex site's kernels, composed from the real scheme's (docs/cuda.md "Complex sites").

A complex product under ``form=4,real=<scheme>(<config>)`` runs on the device as ``form`` real
GEMMs of the parts, each with the real scheme's own kernels (its desc, :attr:`ComplexDesc.real`,
built for the parts' dtype, the site's arch and transposes, in ``product`` mode), then one
epilogue kernel, ``complex_combine`` (templates/complex_combine.cu), that forms Re C and Im C
from the real products in docs/numerics.md's order ("Complex products") and writes the
interleaved complex C (``product``, or ``update``: C = alpha*P + beta*C in complex arithmetic as
the frontend does it). The parts are split on the host (numpy; form 3's operand sums there too):
every real launcher takes host operands, and Ozaki-II, split and vitbit compute their host plans
(shifts, scales, K split) from them.

This desc is the epilogue's translation unit (``templates``, ``entry_points``, ``launches``); the
real products' units are the real desc's, shared with real sites of the same config. Pure Python
(no numba, no numpy: the ``emit-cuda`` pass imports it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from mixjit.runtime.complex.label import split_complex_label
from mixjit.runtime.cuda.desc import (
    KernelSpec,
    Launch,
    TileDescription,
    UnsupportedConfig,
    cdiv,
    split_tiling,
)
from mixjit.runtime.schemes import catalog

__all__ = ["ComplexDesc", "PART_DTYPES"]

#: the parts' dtype (desc dtype) of each complex dtype
PART_DTYPES = {"complex64": "f32", "complex128": "f64"}
_PART_NAMES = {"f32": "float32", "f64": "float64"}


@dataclass(frozen=True)
class ComplexDesc(KernelSpec):
    """The complex epilogue of ``form`` real products under the real kernel ``real``, for parts of
    ``dtype`` (``f32``: complex64 sites, ``f64``: complex128 sites). ``config`` is the complex label."""

    scheme: str
    config: str
    dtype: str
    form: int
    real: KernelSpec
    tiling: TileDescription = TileDescription()

    templates: ClassVar[tuple[str, ...]] = ("common.cuh", "complex_combine.cu")
    entry_points: ClassVar[tuple[str, ...]] = ("complex_combine",)
    COMBINE_BLOCK: ClassVar[tuple[int, int]] = (32, 8)

    @staticmethod
    def for_config(scheme: str, config: str, dtype: str = "f32", **kw: Any) -> "ComplexDesc":
        """The desc of complex label ``config`` for parts of ``dtype``. The tiling fields go to the
        real kernel (its block, warps, arch, transposes), except ``alpha_beta``, which is the
        epilogue's: the real products are always plain products. An empty ``config`` is form 4 over
        the default plan scheme for the parts (runtime/schemes/catalog.py) at its default config.
        UnsupportedConfig when the real scheme or config has no kernel; ValueError for a bad label."""
        if scheme != "complex":
            raise UnsupportedConfig(f"cuda: ComplexDesc is the complex wrapper's desc, not {scheme!r}")
        if config:
            form, real_scheme, real_config = split_complex_label(config)
        else:
            form, real_config = 4, ""
            real_scheme = catalog.default_schemes("plan", _PART_NAMES.get(dtype, dtype))[0]
        tiling, rest = split_tiling(TileDescription(), kw)
        if rest:
            raise TypeError(f"cuda: ComplexDesc takes tiling fields only, not {', '.join(rest)}")
        from mixjit.runtime.cuda.registry import kernel_desc  # the registry imports the catalogue's descs

        real_fields = {f: getattr(tiling, f) for f in ("arch", "trans_a", "trans_b") if f in kw}
        real_fields.update({f: kw[f] for f in ("block", "warps", "stages") if f in kw})
        try:
            real = kernel_desc(real_scheme, real_config, dtype, alpha_beta="product", **real_fields)
        except UnsupportedConfig as exc:
            raise UnsupportedConfig(f"cuda: complex[{config}] has no CUDA kernel: its real products run "
                                    f"{real_scheme}[{real_config}], which has none ({exc})") from None
        return ComplexDesc(scheme=scheme, config=config, dtype=dtype, form=form, real=real,
                           tiling=replace(real.tiling, alpha_beta=tiling.alpha_beta))

    def problems(self) -> list[str]:
        out = [] if self.scheme == "complex" else [f"scheme {self.scheme!r} is not 'complex'"]
        if self.form not in (4, 3):
            out.append(f"form={self.form}: the forms are 4 (four real products) and 3 (Gauss's three)")
        out += self.target_problems()  # the tile is the real kernel's, checked by its own desc
        if self.real.alpha_beta != "product" or self.real.dtype != self.dtype or self.real.arch != self.arch:
            out.append(f"the real kernel {self.real.name} must be a {self.dtype} product kernel for {self.arch}")
        return out

    def launches(self, m: int, n: int, k: int) -> tuple[Launch, ...]:
        """The epilogue's launch, after the real products (the real desc's ``launches``, ``form`` times)."""
        cx, cy = self.COMBINE_BLOCK
        return (Launch("complex_combine", (cdiv(n, cx), cdiv(m, cy), 1), (cx, cy, 1)),)

    def products(self) -> tuple[tuple[str, str], ...]:
        """The real products in launch order, as (A part, B part): form 4 ``rr, ii, ri, ir``;
        form 3 ``rr, ii`` and the sums ``(Ar+Ai)(Br+Bi)`` (``s``)."""
        if self.form == 4:
            return (("r", "r"), ("i", "i"), ("r", "i"), ("i", "r"))
        return (("r", "r"), ("i", "i"), ("s", "s"))

    def main_loop_mma(self) -> tuple[str, str, int]:
        """The real kernel's GEMM (the epilogue has no main loop; its own SASS check: no FFMA)."""
        return self.real.main_loop_mma()

    def template_params(self) -> dict[str, Any]:
        return {"kForm": self.form, "kAlphaBetaUpdate": self.alpha_beta == "update",
                "kCombineRows": self.COMBINE_BLOCK[1], "kCombineCols": self.COMBINE_BLOCK[0]}
