"""The host side of a complex site's kernels: the parts of A and B for the real products.

Every real launcher takes host operands (Ozaki-II, split and vitbit compute their host plans
from them), so the parts are split here, in numpy, as the CPU executor splits them
(runtime/complex/scheme.py): C-contiguous real and imaginary parts in the parts' dtype, and in
form 3 the operand sums Ar + Ai, Br + Bi, one IEEE addition per element (the same bits in any
implementation). NumPy only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["part_operands"]


def part_operands(a: np.ndarray, b: np.ndarray, products: tuple[tuple[str, str], ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (A operand, B operand) of each real product in ``products`` (``ComplexDesc.products()``:
    ``r`` the real part, ``i`` the imaginary part, ``s`` their sum) for complex ``a`` and ``b``."""
    w = a.real.dtype
    parts_a = {"r": np.ascontiguousarray(a.real, dtype=w), "i": np.ascontiguousarray(a.imag, dtype=w)}
    parts_b = {"r": np.ascontiguousarray(b.real, dtype=w), "i": np.ascontiguousarray(b.imag, dtype=w)}
    if any(x == "s" for x, _ in products):
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow to inf is the IEEE sum (form 3)
            parts_a["s"], parts_b["s"] = parts_a["r"] + parts_a["i"], parts_b["r"] + parts_b["i"]
    return [(parts_a[x], parts_b[y]) for x, y in products]
