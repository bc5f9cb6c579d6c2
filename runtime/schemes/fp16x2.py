"""fp16x2: FP32 GEMM from FP16 hi + scaled residual parts (Markidis et al. 2018).

Each row of A and column of B is scaled by a power of two into FP16's range, split
into ``hi = RN16(x)`` and ``lo = RN16((x - hi)·2^11)``, and C is ``RN32`` of the
exact sum of ``hi·hi + 2^-11·(hi·lo + lo·hi)`` with the scales undone
(``products=3``), or of ``hi·hi`` alone (``products=1``, a range-scaled FP16 GEMM).
The ``lo·lo`` product (2^-22 relative) is dropped. Semantics: docs/numerics.md, "fp16x2".
"""

from __future__ import annotations

from mixjit.runtime.schemes.base import register
from mixjit.runtime.schemes.emulation import MultiTermScheme, ProductsConfig


class Fp16x2Config(ProductsConfig):
    """fp16x2 config: ``products`` kept; its words encode the fp16 part format."""

    fmt = "fp16"


@register
class Fp16x2(MultiTermScheme):
    name = "fp16x2"
    summary = "FP32 emulation from range-scaled FP16 hi + scaled residual (3 products)"
    fmt = "fp16"
    config_class = Fp16x2Config
    allowed = (3, 1)
