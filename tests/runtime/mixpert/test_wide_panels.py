"""The float32 wide fast path by panels (runtime/mixpert/paths/wide.py): rows of A and
columns of K taken in parts give the bits of the whole, and BLAS's accumulating dgemm
(runtime/jit/blas.py) adds a product in place."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.jit.blas import gemm_accumulate
from mixjit.runtime.mixpert.driver import _plans
from mixjit.runtime.mixpert.paths.wide import fast32_certified
from mixjit.runtime.mixpert.split import prepare_call_operand
from mixjit.runtime.mixpert.words import W_DIGITS, W_SEGMENTS, W_TK
from mixjit.runtime.schemes import get_scheme

RNG = np.random.default_rng(11)


def test_gemm_accumulate_adds_the_product_in_place():
    x, y = RNG.standard_normal((37, 19)), RNG.standard_normal((23, 19))
    acc = RNG.standard_normal((37, 23))
    want = acc + x @ y.T
    gemm_accumulate(x, y, acc)
    np.testing.assert_allclose(acc, want, rtol=1e-13, atol=1e-13)
    with pytest.raises(ValueError, match="shapes disagree"):
        gemm_accumulate(x, y[:, :5].copy(), acc)


@pytest.mark.parametrize("label", [None, "segments=3,pairs=sig4"])
def test_panels_give_the_bits_of_the_whole(label):
    """Certified outputs equal for panels of 7 rows x 40 columns of K and for one panel;
    every output either certifies or is returned as doubtful (summed exactly later)."""
    scheme = get_scheme("mixpert")
    cfg = scheme.parse_config(label) if label else scheme.default_config(np.float32)
    params = np.asarray(cfg.words(), dtype=np.int64)
    m, k, n = 45, 300, 33
    a = (RNG.standard_normal((m, k)) * np.exp2(RNG.integers(-6, 6, (m, 1)))).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    pa, pb = prepare_call_operand(a, False, params), prepare_call_operand(b, True, params)
    _, _, wide, w, _ = _plans(params.tobytes(), k, 0)
    ea, eb = pa.ref - (w - 1), pb.ref - (w - 1)
    args = (pa.q, pa.scale, pb.q, pb.scale, wide, ea, eb, int(params[W_SEGMENTS]), int(params[W_DIGITS]),
            int(params[W_TK]))
    whole = np.full((m, n), np.nan)
    doubt_whole = fast32_certified(*args, whole, m, k)
    parts = np.full((m, n), np.nan)
    doubt_parts = fast32_certified(*args, parts, 7, 40)
    sure = np.ones(m * n, dtype=bool)
    sure[doubt_whole] = False
    sure[doubt_parts] = False
    assert sure.sum() > 0.9 * m * n
    np.testing.assert_array_equal(parts.ravel()[sure], whole.ravel()[sure])
    for out, doubt in ((whole, doubt_whole), (parts, doubt_parts)):
        certified = np.ones(m * n, dtype=bool)
        certified[doubt] = False
        assert not np.isnan(out.ravel()[certified]).any()  # every output certified or handed back
