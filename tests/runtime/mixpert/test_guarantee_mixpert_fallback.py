"""mixpert's fallback tiles (docs/numerics.md, mixpert step 4): a tile product in which
either tile falls back contributes the exact tf32x3 sum of its k-tile; an element whose
RN_tf32 overflows is kept whole (big = x, small = 0), so a finite input near FLT_MAX
gives a finite, exact contribution. Step 6's boundary: an element that keeps one bit is
not recomputed, one aligned to 0 is. And inside a fallback tile, inputs below 2^-113
keep their bits below TF32's subnormal grid 2^-136 (the split has no lower exponent
limit, as tf32x3's): step 1 says subnormal inputs are never flushed. Before the fix
(RN_tf32 on the float32 pattern) the smallest subnormals became 0, uncounted."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from test_mixpert_bitexact import _check

from mixjit.runtime.schemes import get_scheme

MP = get_scheme("mixpert")
F32MAX = np.finfo(np.float32).max
LABELS = ["segments=4,pairs=sig6,align=row", "level=IV", "level=full,align=row", "level=IV,digits=balanced", "level=I,tile=1x2x1"]


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("x", [F32MAX, -F32MAX, np.float32((2 - 2.0**-11) * 2.0**127)])
def test_fallback_tile_keeps_an_overflowing_tf32_part_whole(label, x):
    # the tile [x, 1] falls back (1.0 is 127 binades below x: 1 of 2 elements shifted);
    # RN_tf32(x) = inf, so x is kept whole: C = RN32(x * 2^-10 + 1), finite
    a = np.array([[x, 1.0]], np.float32)
    b = np.array([[2.0**-10], [1.0]], np.float32)
    c, stats = MP.run_with_stats(a, b, MP.parse_config(label))
    assert stats.fallbacks >= 1, "the tile must fall back for this test to reach step 4"
    want = np.float32(float(Fraction(float(x)) * Fraction(2) ** -10 + 1))
    assert c[0, 0] == want, (c, want)
    _check(MP, a, b, label)


@pytest.mark.parametrize("label", ["segments=4,pairs=sig6,align=row", "level=IV"])
@pytest.mark.parametrize("x", [2.0**-149, (1 + 2.0**-23) * 2.0**-114])  # a subnormal; a normal with a bit at 2^-137
def test_subnormal_input_in_a_fallback_tile_is_kept(label, x):
    # [1, x] falls back (x is over 100 binades below 1); times [0, 2^100] the exact
    # result x * 2^100 is a normal float32
    a = np.array([[1.0, x]], np.float32)
    b = np.array([[0.0], [2.0**100]], np.float32)
    c, stats = MP.run_with_stats(a, b, MP.parse_config(label))
    assert stats.fallbacks >= 1
    assert c[0, 0] == np.float32(x * 2.0**100), c


@pytest.mark.parametrize("label,x,recomputed", [
    ("level=IV", 2.0**-20, False),  # d = 20 at W = 21: q = 1, one bit kept
    ("level=IV", 1.5 * 2.0**-21, False),  # d = 21: 0.75 rounds to 1
    ("level=IV", 2.0**-21, True),  # d = 21: exactly 0.5, ties to even: q = 0
    ("level=IV,rounding=trunc", 1.5 * 2.0**-21, True),  # truncated: q = 0
    ("segments=4,pairs=sig6,align=row", 2.0**-27, False),  # the default config, W = 28, one group per row: d = 27, q = 1
    ("segments=4,pairs=sig6,align=row", 2.0**-28, True),  # d = 28: a tie, q = 0
])
@pytest.mark.parametrize("n", [8, 4200])  # 16 x 32 x 4200 is past the small path's 128^3
def test_step6_recomputes_exactly_the_rows_with_an_element_aligned_to_zero(label, x, recomputed, n):
    # docs/numerics.md, mixpert step 6: a row holding an element whose aligned q is 0
    # (in a tile that does not fall back: 1 of 512 shifted) is recomputed exactly and
    # counted; an element that keeps one bit is not
    a = np.ones((16, 32), np.float32)
    a[0, 1] = x
    b = np.zeros((32, n), np.float32)
    b[1, 0] = 1.0
    c, stats = MP.run_with_stats(a, b, MP.parse_config(label))
    assert stats.fallbacks == 0
    assert stats.extra["recomputed_elements"] == (n if recomputed else 0)
    if recomputed:
        assert c[0, 0] == np.float32(x)
    if n == 8:  # the scalar reference is slow; the small call checks the same bits
        _check(MP, a, b, label)
