"""tf32x3: FP32 GEMM from three TF32 products (the CUTLASS big/small split).

Each float32 operand is split into ``big = RN_tf32(x)`` and
``small = RN_tf32(x - big)``; C is ``RN32`` of the exact sum of
``big·big + big·small + small·big`` (``products=3``) or of ``big·big`` alone
(``products=1``, plain TF32). Semantics: docs/numerics.md, section "tf32x3".
"""

from __future__ import annotations

from mixjit.runtime.schemes.base import register
from mixjit.runtime.schemes.emulation import MultiTermScheme, ProductsConfig


class Tf32x3Config(ProductsConfig):
    """tf32x3 config: ``products`` kept; its words encode the tf32 part format."""

    fmt = "tf32"


@register
class Tf32x3(MultiTermScheme):
    name = "tf32x3"
    summary = "FP32 emulation from TF32 parts (big/small split), exact sum rounded once"
    fmt = "tf32"
    config_class = Tf32x3Config
    allowed = (3, 1)
