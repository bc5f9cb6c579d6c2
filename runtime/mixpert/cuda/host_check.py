"""mixpert-fp64's step 6 on the host, after the kernels: the guarantee check and its recomputations.

The kernels write ``P = RN64(X)`` (mixpert_fp64_gemm.cu); the CPU executor's last step decides, from
a rigorous bound on ``|X - AB|``, which outputs it cannot vouch for and recomputes them as the
exactly rounded product (docs/numerics.md, "mixpert-fp64", Guarantee). :func:`guarantee_on_host`
runs that very step (runtime/mixpert/guarantee/bound.py: ``fp64_doubtful``, ``recompute``) on the
device's P, so the result has the executor's bits: the same decision on the same P. It splits A
and B once more on the CPU for the bound's group sums (O(mK + nK)); the check itself is an
O(mn) pass, plus a dot product per output only where cancellation leaves |P| too small to certify.
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.mixpert.driver import interpreted
from mixjit.runtime.mixpert.guarantee.bound import dropped_weight, fp64_doubtful, recompute
from mixjit.runtime.mixpert.segments import width
from mixjit.runtime.mixpert.split import prepare_operand
from mixjit.runtime.mixpert.words import DOMAIN_FP64, W_DIGITS, W_DOMAIN, W_SEG0_BITS, W_SEGMENTS, W_TK, kept_pairs

__all__ = ["guarantee_on_host"]


def guarantee_on_host(a: np.ndarray, b: np.ndarray, p: np.ndarray, words: np.ndarray) -> int:
    """Step 6 of mixpert-fp64 on the kernels' ``p`` (m×n float64, ``RN64(X)`` of finite float64
    ``a`` and ``b``; updated in place) under the config words ``words``: every output whose bound
    the executor cannot prove becomes ``RN64(sum_k a_ik b_kj)``. Returns how many were recomputed."""
    if int(words[W_DOMAIN]) != DOMAIN_FP64 or p.dtype != np.float64:
        raise ValueError("guarantee_on_host: the float64 domain's check (a mixpert-fp64 config, float64 P)")
    pa, pb = prepare_operand(a, False, words), prepare_operand(b, True, words)
    segments, seg0_bits, digits = int(words[W_SEGMENTS]), int(words[W_SEG0_BITS]), int(words[W_DIGITS])
    dropped = interpreted(dropped_weight)(interpreted(kept_pairs)(words), segments, seg0_bits, digits)
    w = width(segments, seg0_bits, digits)
    doubtful = fp64_doubtful(pa.raw, pa.gexp, pa.ref, pb.raw, pb.gexp, pb.ref, words[W_TK], w, dropped, p)
    return int(recompute(pa.raw, pb.raw, doubtful, p, False)) if doubtful.any() else 0
