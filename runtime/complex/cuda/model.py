"""A CPU model of a complex site's device path: the host split, the real kernels' own CPU models
for the parts' products, and ``complex_combine`` (templates/complex_combine.cu) in numpy.

Where a real kernel's CPU model is bit-exact to its executor (MixPert, Ozaki-II, vitbit:
docs/cuda.md), the composition is bit-exact to the complex wrapper's executor
(runtime/complex/scheme.py); tests/cuda/test_complex_kernels.py checks it over both forms and
special values. The combine is modelled operation by operation in the parts' dtype (each numpy
ufunc rounds once, none contracts into an FMA): the order of the template. NumPy only (the real
models load on first use).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from mixjit.runtime.complex.cuda.desc import ComplexDesc
from mixjit.runtime.complex.cuda.host import part_operands
from mixjit.runtime.cuda.desc import KernelSpec

__all__ = ["combine", "run_complex", "real_model", "REAL_MODELS"]


def _mixpert(a: np.ndarray, b: np.ndarray, desc: KernelSpec) -> tuple[np.ndarray, int]:
    from mixjit.runtime.mixpert.cuda.fragments import run_gemm

    return run_gemm(a, b, desc)


def _ozaki2(a: np.ndarray, b: np.ndarray, desc: KernelSpec) -> tuple[np.ndarray, int]:
    from mixjit.runtime.ozaki2.cuda.fragments import run_ozaki2

    c, _, status = run_ozaki2(a, b, desc)
    return c, status


def _vitbit(a: np.ndarray, b: np.ndarray, desc: KernelSpec) -> tuple[np.ndarray, int]:
    from mixjit.runtime.vitbit.cuda.fragments import run_vitbit

    c, _, status = run_vitbit(a, b, desc)
    return c, status


REAL_MODELS: dict[str, Callable[[np.ndarray, np.ndarray, KernelSpec], tuple[np.ndarray, int]]] = {
    "mixpert": _mixpert, "ozaki2": _ozaki2, "vitbit": _vitbit}
"""The real schemes whose kernels' CPU model is bit-exact to their executor: scheme -> (A, B, desc) -> (C, status)."""


def real_model(scheme: str) -> Callable[[np.ndarray, np.ndarray, KernelSpec], tuple[np.ndarray, int]]:
    """The bit-exact CPU model of ``scheme``'s kernels; ValueError naming the ones that exist."""
    if scheme not in REAL_MODELS:
        raise ValueError(f"complex model: no bit-exact CPU model of {scheme!r}'s kernels (models exist for "
                         f"{', '.join(sorted(REAL_MODELS))}; tf32x3, bf16xN and split's FP16 part accumulate in "
                         "an FP32 register the PTX ISA does not specify)")
    return REAL_MODELS[scheme]


def _scale(a, re: np.ndarray, im: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a + 0i)(re + i·im) = (a·re − 0·im) + i(a·im + 0·re), each operation rounded once."""
    zero = re.dtype.type(0.0)
    return a * re - zero * im, a * im + zero * re


def combine(products: list[np.ndarray], desc: ComplexDesc, alpha: float = 1.0, beta: float = 0.0,
            c: np.ndarray | None = None) -> np.ndarray:
    """``complex_combine`` on the real products (in ``desc.products()`` order): the complex C.
    ``alpha``, ``beta`` and ``c`` are read in ``alpha_beta="update"`` mode only."""
    t = products[0].dtype.type
    with np.errstate(all="ignore"):
        if desc.form == 4:
            re, im = products[0] - products[1], products[2] + products[3]
        else:
            t1, t2, t3 = products
            re, im = t1 - t2, (t3 - t1) - t2
        if desc.alpha_beta == "update":
            re, im = _scale(t(alpha), re, im)
            if beta != 0.0:
                if c is None:
                    raise ValueError("complex model: update mode with beta != 0 needs c")
                yr, yi = _scale(t(beta), c.real.astype(re.dtype), c.imag.astype(re.dtype))
                re, im = re + yr, im + yi
    out = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


def run_complex(a: np.ndarray, b: np.ndarray, desc: ComplexDesc, alpha: float = 1.0, beta: float = 0.0,
                c: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """The device path of ``desc`` on complex ``a`` (m×k) and ``b`` (k×n): (C, status). The
    status is the real products' OR-ed; non-zero means the launcher hands the GEMM back."""
    model = real_model(desc.real.scheme)
    products, status = [], 0
    for x, y in part_operands(a, b, desc.products()):
        p, s = model(x, y, desc.real)
        products.append(p)
        status |= s
    return combine(products, desc, alpha, beta, c), status
