"""The host half of the Ozaki-II launch after the residue GEMM: the exact CRT and the single rounding
(docs/numerics.md "ozaki2" steps 4-5) of every output element, compiled, by the CPU executor's own
``reconstruct`` and ``round_out`` (so the launch path and the executor cannot drift apart)."""

from __future__ import annotations

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.ozaki2 import executor as ex

__all__ = ["reconstruct"]


@cached_njit(nogil=True)
def _reconstruct_all(res, sa, sb, to32, out):
    n_moduli, m, n = res.shape
    digits = np.zeros(ex.MAX_MODULI, dtype=np.int64)
    limbs = np.zeros(ex.LIMBS, dtype=np.int64)
    parts = np.zeros(ex.MAX_PARTIALS)
    for i in range(m):
        for j in range(n):
            sign = ex.reconstruct(res, i, j, n_moduli, digits, limbs)
            out[i, j] = ex.round_out(limbs, sign, -(sa[i] + sb[j]), to32, parts)


def reconstruct(res: np.ndarray, sa: np.ndarray, sb: np.ndarray, to32: bool) -> np.ndarray:
    """C (float64 array holding float32 values when ``to32``) from the residues ``res``
    (moduli × m × n, in [0, p_l)) and the row/column shifts ``sa``, ``sb``."""
    out = np.empty(res.shape[1:])
    _reconstruct_all(np.ascontiguousarray(res), np.asarray(sa, np.int64), np.asarray(sb, np.int64), to32, out)
    return out
