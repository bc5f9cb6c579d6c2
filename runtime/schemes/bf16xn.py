"""bf16xn: FP32 GEMM from 3, 6 or 9 BF16 products (APE / cuBLAS-style 3-way split).

Each float32 operand is split into three BF16 parts ``x = x0 + x1 + x2`` (exact:
3×8 significant bits cover float32's 24); the config keeps the first ``products``
pairs ordered by ``p+q``: 9 = all, 6 = ``p+q <= 2``, 3 = ``p+q <= 1``, 1 = ``x0·y0``.
C is ``RN32`` of the exact sum. Semantics: docs/numerics.md, "bf16x3, bf16x6, bf16x9".
"""

from __future__ import annotations

from mixjit.runtime.schemes.base import register
from mixjit.runtime.schemes.emulation import MultiTermScheme, ProductsConfig


class Bf16xNConfig(ProductsConfig):
    """bf16xn config: ``products`` kept; its words encode the bf16 part format."""

    fmt = "bf16"


@register
class Bf16xN(MultiTermScheme):
    name = "bf16xn"
    summary = "FP32 emulation from a 3-way BF16 split keeping 9, 6, 3 or 1 products"
    fmt = "bf16"
    config_class = Bf16xNConfig
    allowed = (9, 6, 3, 1)

# The names APE / cuBLAS use for the three configs (bf16x3/6/9) are the multiterm family's
# aliases in the scheme catalogue (mixjit.runtime.schemes.catalog).
