"""Level IV's corner path (runtime/mixpert/paths/corner.py): one wide dgemm minus the corner
digits' sgemms must give the bits of the two planned exact dgemms, whatever the
certificates decide, and level IV must take it on ordinary data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixjit.runtime.mixpert import words as W
from mixjit.runtime.mixpert.guarantee.certified import recompute32
from mixjit.runtime.mixpert.pair_blocks import SPAN_RESERVE, plan_block_array
from mixjit.runtime.mixpert.paths.corner import corner_applies
from mixjit.runtime.mixpert.paths.fast import PATH_BLOCKS, PATH_CORNER, blocks_path, corner_path, fast_path_threads
from mixjit.runtime.mixpert.segments import width
from mixjit.runtime.mixpert.split import prepare_operand
from mixjit.runtime.numerics.exactsum import exact_dot_round, exact_dot_scratch
from mixjit.runtime.schemes import get_scheme

MP = get_scheme("mixpert")
LEVEL4_LABELS = ("level=IV", "level=IV,align=row", "level=IV,digits=balanced", "level=IV,seg0_bits=6",
                 "level=IV,rounding=trunc", "level=IV,tile=4x64x4", "level=IV,fallback=off")


def _setup(a: np.ndarray, b: np.ndarray, label: str):
    """Split operands, config words, the planned blocks and the epilogue's exponents."""
    p = np.asarray(MP.parse_config(label).words(), dtype=np.int64)
    pa, pb = prepare_operand(a, False, p), prepare_operand(b, True, p)
    reserve = min(int(pa.span.max() + pb.span.max()), SPAN_RESERVE)
    blocks, ok = plan_block_array(W.kept_pairs(p), p[W.W_SEGMENTS], p[W.W_SEG0_BITS], a.shape[1], p[W.W_DIGITS],
                                  reserve)
    assert ok
    w1 = width(p[W.W_SEGMENTS], p[W.W_SEG0_BITS], p[W.W_DIGITS]) - 1
    return p, pa, pb, blocks, pa.ref - w1, pb.ref - w1


def _both(a: np.ndarray, b: np.ndarray, label: str, patch_limit: int):
    """(corner path taken?, its output, the two exact dgemms' output, the outputs the
    fast path owns: none unless the plan has the two blocks the corner path needs)."""
    p, pa, pb, blocks, ea, eb = _setup(a, b, label)
    m, n = a.shape[0], b.shape[1]
    got = np.full((m, n), np.nan)
    want = np.full((m, n), np.nan)
    took = corner_path(pa.q, pa.scale, pb.q, pb.scale, blocks, ea, eb, p, got, False, False, False, patch_limit)
    blocks_path(pa.q, pa.scale, pb.q, pb.scale, blocks, ea, eb, p, want, True, False, False, False)
    # rows / columns beyond the blocks' span bound belong to the exact path: compare the rest
    limit = 53 - int(np.ceil(np.log2(a.shape[1]))) - int(blocks[:, 5].max())
    mask = (pa.span[:, None] + pb.span[None, :]) <= limit
    mask &= ~pa.fb.any(axis=1)[:, None] & ~pb.fb.any(axis=1)[None, :]
    return took, got, want, mask & (blocks.shape[0] == 2)


@st.composite
def _operands(draw):
    m = draw(st.integers(1, 12))
    n = draw(st.integers(1, 12))
    k = draw(st.sampled_from([1000, 1024, 1025, 1100, 2047, 2048, 2049, 2300]))
    spread = draw(st.integers(0, 12))  # binades of exponent spread per element
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def side(shape):
        mant = rng.uniform(-1.0, 1.0, shape)
        return (mant * 2.0 ** -rng.integers(0, spread + 1, shape)).astype(np.float32)

    return side((m, k)), side((k, n))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_operands(), label=st.sampled_from(LEVEL4_LABELS), limit=st.sampled_from(["none", "some", "all"]))
def test_corner_path_matches_two_exact_dgemms(ops, label, limit):
    a, b = ops
    m, n = a.shape[0], b.shape[1]
    patch_limit = {"none": 0, "some": m * n // 4, "all": m * n}[limit]
    took, got, want, mask = _both(a, b, label, patch_limit)
    if limit == "all" and mask.any():  # outputs may all be recomputed: with two planned blocks the path runs
        assert took
    if took:
        assert np.array_equal(got[mask].view(np.int64), want[mask].view(np.int64))
    else:
        assert np.isnan(got).all()  # untouched


def test_certificate_failures_are_recomputed_from_the_blocks():
    """Rows and columns with spans make the wide dgemm's certificate fail (uniform data
    at K = 2048 leaves 1.5 bits): those outputs must come from the planned blocks."""
    rng = np.random.default_rng(3)
    k = 2048
    a = rng.uniform(-1, 1, (32, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, 24)).astype(np.float32)
    a[:16, :32] *= np.float32(2.0**-3)  # A's first row group (16 rows): first k-tile 3 binades down, span 3
    b[:32, :8] *= np.float32(2.0**-3)  # B's first column group (8 columns)
    from mixjit.runtime.mixpert.paths import corner as C

    p, pa, pb, blocks, ea, eb = _setup(a, b, "level=IV")
    assert pa.span[:16].min() == 3 and pb.span[:8].min() == 3 and pa.span[16:].max() == 0
    sa, sb = C._grid_spans(pa.scale), C._grid_spans(pb.scale)
    _, _, nx, _ = C._pack_side(pa.q, pa.scale, sa, 2, 3, 0, p[W.W_TK], False)
    _, _, ny, _ = C._pack_side(pb.q, pb.scale, sb, 2, 3, 0, p[W.W_TK], False)
    count, _ = C._failing(nx, ny, 2.0**53)
    assert 0 < count.sum() < 32 * 24  # some outputs certified, some not
    took, got, want, mask = _both(a, b, "level=IV", 32 * 24)
    assert took and mask.all()
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_inexact_gemms_are_caught_by_the_certificates():
    """Same-sign operands near the top of their binade with a span of 1: the wide
    dgemm's partial sums pass 2^53 half-units and the corner digits' sums pass 2^24,
    so neither GEMM is exact (checked here against exact integers); the certificates
    must send every such output to the blocks, whose bits the path must give."""
    rng = np.random.default_rng(13)
    k = 2048
    a = rng.uniform(0.97, 1.0, (16, k)).astype(np.float32)
    b = rng.uniform(0.97, 1.0, (k, 8)).astype(np.float32)
    a[:, -32:] *= np.float32(0.5)  # last k-tile one binade down: grid 2^-1
    from mixjit.runtime.mixpert.paths import corner as C

    p, pa, pb, blocks, ea, eb = _setup(a, b, "level=IV")
    sa, sb = C._grid_spans(pa.scale), C._grid_spans(pb.scale)
    x, ca, _, _ = C._pack_side(pa.q, pa.scale, sa, 1, 3, 0, p[W.W_TK], False)
    y, cb, _, _ = C._pack_side(pb.q, pb.scale, sb, 1, 3, 0, p[W.W_TK], False)
    wide = [[sum(int(u) * int(v) for u, v in zip(2 * x[i], y[j])) for j in range(8)] for i in range(16)]
    corner = [[sum(int(u) * int(v) for u, v in zip(2 * ca[0, i], cb[0, j])) for j in range(8)] for i in range(16)]
    assert any(int(2 * w) != e for w, e in zip((x @ y.T).ravel(), np.ravel(wide)))  # BLAS is not exact here
    ok, d1, d2 = C.corner_products(pa.q, pa.scale, pb.q, pb.scale, blocks, 3, 0, p[W.W_TK], 16 * 8, False, False)
    assert ok
    for i in range(16):  # the contract: X = d1 - d2 exactly
        for j in range(8):
            assert int(2 * d1[i, j]) - int(2 * d2[i, j]) == wide[i][j] - corner[i][j]
    took, got, want, mask = _both(a, b, "level=IV", 16 * 8)
    assert took and mask.all()
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_level4_takes_the_corner_path_on_centred_data():
    """Level IV's fast path (what mixpert_gemm calls) runs one dgemm and the corner's
    sgemms on uniform and normal data, K across the 1024 chunk boundary."""
    rng = np.random.default_rng(5)
    for k in (1100, 2100):
        for a, b in ((rng.uniform(-1, 1, (160, k)), rng.uniform(-1, 1, (k, 140))),
                     (rng.standard_normal((160, k)), rng.standard_normal((k, 140)))):
            a, b = a.astype(np.float32), b.astype(np.float32)
            p, pa, pb, blocks, ea, eb = _setup(a, b, "level=IV")
            got = np.empty((160, 140))
            want = np.empty((160, 140))
            path = fast_path_threads(pa.q, pa.scale, pb.q, pb.scale, blocks, ea, eb, p, got, True, False, False,
                                     False)
            assert path == PATH_CORNER
            blocks_path(pa.q, pa.scale, pb.q, pb.scale, blocks, ea, eb, p, want, True, False, False, False)
            assert np.array_equal(got.view(np.int64), want.view(np.int64))


@pytest.mark.parametrize("label,applies", [("level=IV", True), ("level=IV,digits=balanced", True),
                                           ("level=full", False), ("level=III", False), ("level=I", False),
                                           ("segments=4,pairs=sig6", False)])
def test_corner_applies_to_level4_shapes_only(label, applies):
    p = np.asarray(MP.parse_config(label).words(), dtype=np.int64)
    assert corner_applies(W.kept_pairs(p), p[W.W_SEGMENTS], p[W.W_SEG0_BITS], p[W.W_DIGITS]) == applies


def test_spans_on_every_row_run_the_blocks():
    """Where most certificates fail (a span of 2 on every row and column: the wide
    dgemm's 1.5 spare bits are not enough), the blocks run, with their bits."""
    rng = np.random.default_rng(7)
    k = 2048
    a = rng.uniform(-1, 1, (64, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, 64)).astype(np.float32)
    a[:, :32] *= np.float32(2.0**-2)
    b[:32, :] *= np.float32(2.0**-2)
    p, pa, pb, blocks, ea, eb = _setup(a, b, "level=IV")
    out = np.empty((64, 64))
    path = fast_path_threads(pa.q, pa.scale, pb.q, pb.scale, blocks, ea, eb, p, out, True, False, False, False)
    assert path == PATH_BLOCKS
    took, got, want, mask = _both(a, b, "level=IV", 64 * 64)  # allowed to recompute all: same bits
    assert took and mask.all()
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert np.array_equal(out.view(np.int64), want.view(np.int64))


def test_recompute32_direct_sums_match_the_gemm_variant_and_the_exact_product():
    """Step 6 sums up to 8 rows output by output, more by two GEMMs: same bits, RN32 of
    the exact product, non-finite elements of the other side as 0."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((12, 300)).astype(np.float32).astype(np.float64)
    y = rng.standard_normal((7, 300)).astype(np.float32).astype(np.float64)
    y[2, 5] = np.inf
    y[4, 9] = np.nan
    x[:, 0] = 2.0**40  # a large term that cancels: Ziv's test fails, the exact dot decides
    y[:, 0] = 2.0**-40
    x[:, 1] = -(2.0**40)
    y[:, 1] = 2.0**-40
    rows = np.arange(12)
    gemm = np.full((12, 7), np.nan)
    recompute32(x, y, rows, gemm, False)  # 12 rows: the GEMMs
    direct = np.full((12, 7), np.nan)
    recompute32(x, y, rows[:6], direct, False)  # 6 + 6 rows: direct sums
    recompute32(x, y, rows[6:], direct, False)
    assert np.array_equal(direct.view(np.int64), gemm.view(np.int64))
    acc = exact_dot_scratch()
    yf = np.where(np.isfinite(y), y, 0.0)
    want = np.array([[exact_dot_round(x[i], yf[j], acc, True) for j in range(7)] for i in range(12)])
    assert np.array_equal(direct.view(np.int64), want.view(np.int64))


def test_huge_page_advice_keeps_values_and_takes_any_array():
    """fresh64 / huge_pages only advise the kernel: arrays keep their shape, dtype
    and contents, whatever their size and alignment (too small: nothing asked)."""
    from mixjit.runtime.mixpert.pack import fresh64, huge_pages

    big = fresh64(1024, 1030)
    assert big.shape == (1024, 1030) and big.dtype == np.float64 and big.flags.c_contiguous
    big[:] = np.arange(big.size, dtype=np.float64).reshape(big.shape)
    huge_pages(big)  # again, on touched pages
    assert np.array_equal(big.ravel(), np.arange(big.size, dtype=np.float64))
    for a in (np.ones(3, np.float32), np.full((7, 5), 2.5), np.zeros((3, 700, 700), np.float32)):
        before = a.copy()
        huge_pages(a)
        assert np.array_equal(a, before)
