"""Part overflow of tf32x3 and bf16xN (docs/numerics.md, tf32x3 step 3): the fallback
starts exactly where RN_f(x) = ±inf, at |x| = (2 − 2^-11)·2^127 for TF32 and
(2 − 2^-8)·2^127 for BF16; the outputs of x's row (column) are then the correctly
rounded float32 dot products and are counted as element fallbacks; the largest float32
below the threshold is split as usual (no fallback); and the non-finite rule takes
precedence over the part-overflow rule."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mixjit.runtime.schemes import get_scheme

#: (scheme, config, significant bits of the part format)
CASES = [("tf32x3", "products=3", 11), ("tf32x3", "products=1", 11),
         ("bf16xn", "products=9", 8), ("bf16xn", "products=3", 8), ("bf16xn", "products=1", 8)]


def _rn32(x: Fraction) -> float:
    """RN32 of an exact value well inside float32's normal range."""
    return float(np.float32(float(x)))  # x has < 53 significant bits here: float(x) is exact


@pytest.mark.parametrize("scheme,config,bits", CASES)
@pytest.mark.parametrize("side", ["A", "B"])
def test_part_overflow_starts_at_the_threshold(scheme, config, bits, side):
    s = get_scheme(scheme)
    cfg = s.parse_config(config)
    t = (2.0 - 2.0 ** -bits) * 2.0**127  # RN_f(t) = 2^128: the smallest overflowing magnitude
    below = float(np.nextafter(np.float32(t), np.float32(0)))
    a = np.array([[t, 1.0], [-t, 1.0], [below, 1.0], [1.0, 1.0]], np.float32)
    b = np.array([[2.0**-10], [1.0]], np.float32)
    if side == "B":  # the same rows as columns of B
        a, b = np.ascontiguousarray(b.T), np.ascontiguousarray(a.T)
    c, stats = s.run_with_stats(a, b, cfg)
    flat = c.ravel()
    # rows/columns 0 and 1 fall back: exact t * 2^-10 + 1, rounded once
    assert flat[0] == _rn32(Fraction(t) * Fraction(2) ** -10 + 1)
    assert flat[1] == _rn32(-Fraction(t) * Fraction(2) ** -10 + 1)
    assert stats.fallbacks == 2 and stats.fallback_unit == "element", (stats.fallbacks, stats.fallback_reason)
    assert "range" in stats.fallback_reason
    assert np.isfinite(flat[2]) and flat[3] == np.float32(1 + 2.0**-10)


@pytest.mark.parametrize("scheme,config,bits", CASES)
def test_nonfinite_rule_takes_precedence_over_part_overflow(scheme, config, bits):
    s = get_scheme(scheme)
    t = np.float32((2.0 - 2.0 ** -bits) * 2.0**127)
    a = np.array([[t, np.inf], [t, -np.inf], [t, np.nan]], np.float32)
    b = np.ones((2, 1), np.float32)
    c = s.run(a, b, s.parse_config(config))
    # part overflow alone would drop the inf (non-finite inputs count as 0) and give t
    assert c[0, 0] == np.inf and c[1, 0] == -np.inf and np.isnan(c[2, 0])
