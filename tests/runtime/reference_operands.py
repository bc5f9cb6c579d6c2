"""What the executor-against-reference tests share: the hypothesis strategy of random
small operands (with special values, inf and NaN) and the bit-for-bit comparison of an
executor's output with a float32 reference (reference_schemes.py and the tests' own
scalar references)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from hypothesis import strategies as st

__all__ = ["operands", "assert_same_bits"]


@st.composite
def operands(draw, special: Sequence[float], *, max_mn: int, max_k: int,
             ranges: Sequence[tuple[float, float]] = ((-4.0, 4.0),)) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)``, m x k and k x n with m, n in 1..``max_mn`` and k in 1..``max_k``, both float32
    or both float64. Elements: one of ``special``, a float32 uniform over one of ``ranges``, or
    any finite float32 (8 draws in 9), else inf, -inf or NaN."""
    m, n, k = draw(st.integers(1, max_mn)), draw(st.integers(1, max_mn)), draw(st.integers(1, max_k))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    finite = st.one_of(st.sampled_from(list(special)), *(st.floats(lo, hi, width=32) for lo, hi in ranges),
                       st.floats(width=32, allow_nan=False, allow_infinity=False))
    el = st.one_of(*[finite] * 8, st.sampled_from([np.inf, -np.inf, np.nan]))
    a = np.array(draw(st.lists(el, min_size=m * k, max_size=m * k)), dtype=dtype).reshape(m, k)
    b = np.array(draw(st.lists(el, min_size=k * n, max_size=k * n)), dtype=dtype).reshape(k, n)
    return a, b


def assert_same_bits(got: np.ndarray, want: np.ndarray, a: np.ndarray | None = None,
                     b: np.ndarray | None = None) -> None:
    """``got`` (the executor's output, in the input dtype) equals the float32 reference ``want``
    bit for bit *in got's dtype*: a float64 output is compared with the exactly widened
    reference, so a float64 result that is not a float32 value (a missing final rounding)
    fails instead of hiding behind a cast; -0.0 and +0.0 differ; NaN must match NaN. With the
    operands ``a``, ``b`` given, ``got`` must also have ``a``'s dtype, and a failure shows them."""
    shown = (a.tolist(), b.tolist()) if a is not None and b is not None else ()
    if a is not None:
        assert got.dtype == a.dtype, (got.dtype, a.dtype)
    assert want.dtype == np.float32, want.dtype
    wide = want.astype(got.dtype)  # float32 -> float64 is exact
    nan_g, nan_w = np.isnan(got), np.isnan(wide)
    assert (nan_g == nan_w).all(), (*shown, got, want)
    uint = np.uint64 if got.dtype == np.float64 else np.uint32
    g, w = got[~nan_g], wide[~nan_w]
    assert (g.view(uint) == w.view(uint)).all(), (*shown, got, want)
