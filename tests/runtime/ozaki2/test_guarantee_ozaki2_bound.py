"""ozaki2's stated error bound (docs/numerics.md, ozaki2, "Error"): with the row shifts
s_i of A and the column shifts t_j of B,

  |C_ij − (AB)_ij| ≤ 2^-s_i·Σ_k|b_kj| + 2^-t_j·Σ_k|a_ik| + K·2^-(s_i+t_j) + (final rounding),

checked elementwise against exact rationals on wide-range, mixed-sign and cancelling
data, in fast and accurate mode, for float32 and float64 inputs. The shifts come from
the scalar reference (tests/runtime/reference_ozaki2.py), written from the text."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from reference_ozaki2 import accurate_shifts, shift

from mixjit.runtime.schemes import get_scheme

OZ = get_scheme("ozaki2")


def _operands(dtype, seed: int, spread: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m, k, n = 4, 23, 3
    a = rng.choice([-1.0, 1.0], (m, k)) * rng.uniform(1, 2, (m, k)) * 2.0 ** rng.integers(-spread, spread + 1, (m, k))
    b = rng.choice([-1.0, 1.0], (k, n)) * rng.uniform(1, 2, (k, n)) * 2.0 ** rng.integers(-spread, spread + 1, (k, n))
    a[0, k // 2:] = -a[0, : k - k // 2]  # row 0 ...
    b[k // 2:, 0] = b[: k - k // 2, 0]  # ... cancels against column 0 (up to one term)
    return a.astype(dtype), b.astype(dtype)


def _final_rounding(c: float, dtype) -> Fraction:
    """Half an ulp of the output format at c (and half the smallest subnormal)."""
    fi = np.finfo(dtype)
    tiny = Fraction(float(fi.smallest_subnormal)) / 2
    return Fraction(float(np.spacing(dtype(abs(c))))) / 2 + tiny


@pytest.mark.parametrize("dtype,moduli", [(np.float32, 3), (np.float32, 6), (np.float32, 8),
                                          (np.float64, 8), (np.float64, 14), (np.float64, 20)])
@pytest.mark.parametrize("mode", ["fast", "accurate"])
@pytest.mark.parametrize("spread", [0, 20])
def test_every_output_is_within_the_stated_bound(dtype, moduli, mode, spread):
    a, b = _operands(dtype, seed=moduli + spread, spread=spread)
    cfg = OZ.parse_config(f"moduli={moduli}" + (",mode=accurate" if mode == "accurate" else ""))
    c = OZ.run(a, b, cfg)
    rows = [[float(v) for v in r] for r in a]
    cols = [[float(v) for v in col] for col in b.T]
    if mode == "accurate":
        s, t = accurate_shifts(rows, cols, moduli)
    else:
        s, t = [shift(r, moduli) for r in rows], [shift(col, moduli) for col in cols]
    k = a.shape[1]
    two = Fraction(2)
    worst = Fraction(0)
    for i, r in enumerate(rows):
        for j, col in enumerate(cols):
            exact = sum(Fraction(x) * Fraction(y) for x, y in zip(r, col))
            bound = (two ** -s[i] * sum(abs(Fraction(y)) for y in col) + two ** -t[j] * sum(abs(Fraction(x)) for x in r)
                     + k * two ** -(s[i] + t[j]) + _final_rounding(float(c[i, j]), dtype))
            err = abs(Fraction(float(c[i, j])) - exact)
            assert err <= bound, (i, j, float(err), float(bound))
            worst = max(worst, err / bound)
    # the bound is not vacuous: with few moduli some output comes within a factor 2^10 of it
    if moduli <= 8 and dtype == np.float32:
        assert worst > Fraction(1, 2**10), float(worst)
