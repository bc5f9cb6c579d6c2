"""The float32-domain wide fast path (runtime/mixpert/paths/wide.py) and the most precise
float32 config it serves: the block plan covers the kept pairs once, outputs its
error bound leaves in doubt are summed exactly (same bits as the reference), and
the config is at least as accurate as float32 BLAS."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_mixpert import mixpert as reference

from mixjit.runtime.mixpert.pair_blocks import pair_matrix, range_bits
from mixjit.runtime.mixpert.paths.wide import EXACT_SIDE_BITS, plan_wide_blocks
from mixjit.runtime.mixpert.segments import BALANCED, MAGNITUDE
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.mixpert import FP32_PRECISE, LEVELS, significance_pairs

MP = get_scheme("mixpert")


def _covered(blocks, segments: int) -> np.ndarray:
    count = np.zeros((segments, segments), dtype=int)
    for i0, i1, j0, j1, _, _ in blocks:
        count[i0 : i1 + 1, j0 : j1 + 1] += 1
    return count


@settings(max_examples=200, deadline=None)
@given(segments=st.integers(1, 9), seg0=st.integers(1, 7), digits=st.sampled_from([MAGNITUDE, BALANCED]),
       data=st.data())
def test_plan_covers_every_kept_pair_once_with_exact_sides(segments, seg0, digits, data):
    if digits == BALANCED and segments > 7:
        segments = 7
    pairs = data.draw(st.lists(st.booleans(), min_size=segments * segments, max_size=segments * segments))
    pm = np.array(pairs, dtype=bool).reshape(segments, segments)
    blocks = plan_wide_blocks(pm, segments, seg0, digits)
    assert (_covered(blocks, segments) == pm.astype(int)).all()
    b = 8 if digits == BALANCED else 7
    for i0, i1, j0, j1, shift, bits in blocks:
        ra, rb = range_bits(i0, i1, seg0, digits), range_bits(j0, j1, seg0, digits)
        assert ra <= EXACT_SIDE_BITS or i0 == i1
        assert rb <= EXACT_SIDE_BITS or j0 == j1
        assert bits == ra + rb and shift == b * (segments - 1 - i1) + b * (segments - 1 - j1)


@pytest.mark.parametrize("segments,pairs,count", [
    (4, significance_pairs(4, 6), 1),  # the most precise config: one float64 GEMM
    (3, LEVELS["full"], 1),
    (3, LEVELS["IV"], 2),
    (8, significance_pairs(8, 14), 4),  # W = 56: each side cut into 49 + 7 bits
])
def test_wide_block_counts(segments, pairs, count):
    assert len(plan_wide_blocks(pair_matrix(pairs, segments), segments, 7, MAGNITUDE)) == count


@pytest.mark.parametrize("label", [FP32_PRECISE.label, "segments=4,pairs=sig6,digits=balanced", "segments=8,pairs=sig14"])
def test_outputs_in_doubt_are_summed_exactly(label):
    """B = [Q; -Q + E 2^-24]: A·B = P·E·2^-24 cancels 24 bits, far below the float64
    GEMM's error on the unreduced sum, so the bound leaves most outputs in doubt and
    they must be summed exactly (dropping the bound gives wrong bits here)."""
    rng = np.random.default_rng(5)
    p = rng.integers(-64, 64, (6, 40)).astype(np.float32) / 64
    q = rng.integers(1, 256, (40, 7)).astype(np.float32) / 256
    e = rng.integers(-7, 8, (40, 7)).astype(np.float32)
    a = np.hstack([p, p])
    b = np.vstack([q, -q + e * np.float32(2.0**-24)]).astype(np.float32)
    assert (b[40:] == -q + e * np.float32(2.0**-24)).all()  # exact in float32
    cfg = MP.parse_config(label)
    got, stats = MP.run_with_stats(a, b, cfg)
    want = reference(a, b, cfg)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert stats.extra["slow_path_elements"] > 0 and stats.extra["exact_path_rows"] == 0
    exact = (p.astype(np.float64) @ e.astype(np.float64)) * 2.0**-24
    np.testing.assert_array_equal(got, exact.astype(np.float32))  # W >= 28 keeps every bit here


def _rel(c: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("dist", ["uniform", "normal"])
@pytest.mark.parametrize("n", [64, 256])
def test_most_precise_config_is_at_least_as_accurate_as_float32_blas(dist, n):
    """Issue 10, item 1: the plan before tuning is no less accurate than numpy's
    sgemm (the 3-segment level=full config gives 6x sgemm's error on normal data at
    n = 64); it sits within 10 % of the correctly rounded product."""
    rng = np.random.default_rng([n, 1 if dist == "normal" else 0])
    draw = rng.standard_normal if dist == "normal" else (lambda s: rng.uniform(-1, 1, s))
    a, b = draw((n, n)).astype(np.float32), draw((n, n)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    cfg = MP.configs(np.float32)[0]
    mine = _rel(MP.run(a, b, cfg), ref)
    assert mine <= _rel(a @ b, ref), (cfg.label, mine)
    assert mine <= 1.1 * _rel(ref.astype(np.float32), ref), (cfg.label, mine)
