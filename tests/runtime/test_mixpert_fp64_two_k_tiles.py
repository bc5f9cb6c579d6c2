"""A known defect, kept as a strict xfail until it is fixed: mixpert-fp64's dataclass default
config (``pairs=sig7``: 8 segments, tile 16x32x8) on a 4x58 @ 58x4 GEMM of normal data (two
k-tiles) gives one output that is neither RN64(X) of the written semantics nor the exactly
rounded product, 25 times above native dgemm's bound gamma_K |A||B| that docs/numerics.md
promises. The same operands under a single k-tile (tile=16x64x8) or a finer one
(tile=4x16x4), and under 9 segments (pairs=sig8) or 7 (pairs=sig6), pass the same check.
Found while explaining why a Cholesky profile showed pairs=sig7 less accurate than
segments=7,pairs=sig6 (docs: the guarantee recomputes every sig6 output exactly here, since
W = 48 < 53 leaves elements off their grid)."""

from __future__ import annotations

import numpy as np
import pytest

from test_mixpert_bitexact import MP64, _check


def _seed55() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(55)
    m, n, k = rng.integers(1, 5), rng.integers(1, 5), int(rng.integers(1, 80))
    assert (m, n, k) == (4, 4, 58)
    return rng.standard_normal((m, k)), rng.standard_normal((k, n))


@pytest.mark.parametrize("label", ["pairs=sig7,tile=16x64x8", "pairs=sig7,tile=4x16x4", "segments=9,pairs=sig8",
                                   "segments=7,pairs=sig6"])
def test_the_same_operands_pass_under_other_tiles_and_segments(label):
    _check(MP64, *_seed55(), label)


@pytest.mark.xfail(strict=True, reason="executor output for pairs=sig7 (tile 16x32x8, K=58) is not RN64(X): "
                                       "25x above the gamma_K bound; see the module docstring")
def test_default_sig7_config_over_two_k_tiles_meets_the_reference():
    _check(MP64, *_seed55(), "pairs=sig7")
