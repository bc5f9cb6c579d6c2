"""A fixed defect and the tests that pin its mechanism: mixpert-fp64's dataclass default
config (``pairs=sig7``: 8 segments, tile 16x32x8) on a 4x58 @ 58x4 GEMM of normal data (two
k-tiles, seed 55) gave one output that was neither RN64(X) of the written semantics nor the
exactly rounded product, 25 times above native dgemm's bound gamma_K |A||B| that
docs/numerics.md promises.

Mechanism: with more than two exact blocks the fast path's epilogue
(runtime/executor_mixpert_fast.epilogue_many) rounds a TwoSum chain, and where Ziv's test
leaves an output in doubt (here an exact tie: X keeps only the bits of the kept pairs, a
few below its ulp) it sums the block results exactly in integer limbs. It read each block
result as an integer (``np.int64(v)``), but row alignment scales a k-tile whose group
exponent E is below the row's reference by ``2^(E - E_ref) < 1``, so over several k-tiles a
block result is a multiple of ``2^-(span_A + span_B)``: the truncation dropped its fraction.
Step 6 (the guarantee check) could not catch it: its bound covers ``|X - AB|`` and trusts
the output to be ``RN64(X)``. The same operands passed under one k-tile (span 0), other
segment counts (no tie in the doubt path), and ``segments=7,pairs=sig6`` (step 6 recomputes
every output there). The float32 domain shares the epilogue (``segments=4,pairs=sig3``)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_mixpert_bitexact import MP, MP64, _check

from mixjit.runtime.mixpert.pair_blocks import BLOCK_BITS, BLOCK_SHIFT, k_bits, plan_block_array
from mixjit.runtime.mixpert.paths.fast import epilogue_many
from mixjit.runtime.mixpert.words import kept_pairs


def _seed55() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(55)
    m, n, k = rng.integers(1, 5), rng.integers(1, 5), int(rng.integers(1, 80))
    assert (m, n, k) == (4, 4, 58)
    return rng.standard_normal((m, k)), rng.standard_normal((k, n))


@pytest.mark.parametrize("label", ["pairs=sig7", "pairs=sig7,tile=16x64x8", "pairs=sig7,tile=4x16x4",
                                   "segments=9,pairs=sig8", "segments=7,pairs=sig6"])
def test_seed55_operands_meet_the_reference_under_every_tile_and_segment_count(label):
    _check(MP64, *_seed55(), label)


def test_epilogue_sums_fractional_block_results_exactly_at_a_tie():
    # the default config's blocks at K = 58; block 0 holds an odd 53-bit integer at
    # the top, two blocks of the lowest shift add half-integers whose sum is exactly
    # half an ulp of it: X is a tie (Ziv's test fails) that rounds to even, upwards.
    # Truncating the halves (2^19 + 0.5 -> 2^19, 2^19 - 0.5 -> 2^19 - 1) leaves X
    # below the tie, which rounds down.
    cfg = MP64.parse_config("pairs=sig7")
    words = np.array(cfg.words(), dtype=np.int64)
    k = 58
    blocks, ok = plan_block_array(kept_pairs(words), cfg.segments, cfg.seg0_bits, k, words[2], 1)
    assert ok
    low = blocks[:, BLOCK_SHIFT].min()
    top = int(np.argmax(blocks[:, BLOCK_SHIFT]))
    lows = np.flatnonzero(blocks[:, BLOCK_SHIFT] == low)[:2]
    assert len(lows) == 2 and blocks[top, BLOCK_SHIFT] - low == 21
    ds = np.zeros((blocks.shape[0], 1, 1))
    ds[top] = 2.0**52 + 1.0  # units of 2^(low + 21), its ulp
    ds[lows[0]] = 2.0**19 + 0.5
    ds[lows[1]] = 2.0**19 - 0.5  # the two add 2^20 = 2^(low + 21 - 1) units: half an ulp
    frac = 53 - k_bits(k) - int(blocks[:, BLOCK_BITS].max())
    ea = np.array([-100 - low], dtype=np.int64)
    eb = np.array([0], dtype=np.int64)
    out = np.empty((1, 1))
    epilogue_many(ds, blocks, ea, eb, out, False, frac)
    assert out[0, 0] == (2.0**52 + 2.0) * 2.0 ** (21 - 100)  # the tie rounded to even (up)
    exact = sum(Fraction(float(ds[b, 0, 0])) * Fraction(2) ** int(blocks[b, BLOCK_SHIFT] + ea[0])
                for b in range(blocks.shape[0]))
    assert out[0, 0] == float(exact)


def test_fp32_domain_shares_the_epilogue_and_meets_the_reference():
    # found by a random search on the unfixed code: a k-tile of 2 under row alignment,
    # the second k-tile's group 1-5 binades below the first (fractional block results)
    # and an output whose float32 rounding Ziv's test leaves in doubt
    a = np.array([[0.028556562960147858, 0.21607539057731628, 1.5488460063934326],
                  [1.3798463344573975, -0.110884889960289, -0.161494180560112]], dtype=np.float32)
    b = np.array([[-0.03131945803761482, -0.03267531096935272], [0.2616908550262451, 0.5225163102149963],
                  [-0.03247591853141785, -0.13076414167881012]], dtype=np.float32)
    _check(MP, a, b, "segments=4,pairs=sig3,align=row,tile=4x2x4")


# configs whose fast path has more than two exact blocks (epilogue_many), with small
# k-tiles so that K = 33..100 spans several of them
_MANY_BLOCKS = ["pairs=sig7", "pairs=sig7,tile=4x16x4", "segments=9,pairs=sig8,tile=8x16x8",
                "segments=8,pairs=sig14,align=tile,tile=8x16x8"]


def _round_to_bits(x: np.ndarray, bits: int) -> np.ndarray:
    """``x`` with its significands rounded to ``bits`` bits."""
    mant, exp = np.frexp(x)
    return np.ldexp(np.round(np.ldexp(mant, bits)), exp - bits)


@st.composite
def _tiled_case(draw):
    """Normal data whose rows of A / columns of B are scaled by 2^0..2^3 per 16-long
    stretch of K (group spans of 1-3 binades over several k-tiles), significands of
    20-24 bits: the exact sums then need a few bits more than float64 holds, so
    outputs fall on ties (Ziv's test fails) often, about half the cases under the
    unfixed code for the tile 4x16x4 and sig8 configs."""
    m, n = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    k = draw(st.integers(33, 100))
    bits = draw(st.sampled_from([20, 22, 24, 53]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pieces = -(-k // 16)
    a = rng.standard_normal((m, k)) * np.repeat(2.0 ** rng.integers(0, 4, (m, pieces)), 16, axis=1)[:, :k]
    b = rng.standard_normal((k, n)) * np.repeat(2.0 ** rng.integers(0, 4, (pieces, n)), 16, axis=0)[:k]
    return _round_to_bits(a, bits), _round_to_bits(b, bits)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_tiled_case(), label=st.sampled_from(_MANY_BLOCKS))
def test_many_block_configs_over_several_k_tiles_match_reference(case, label):
    _check(MP64, *case, label)
