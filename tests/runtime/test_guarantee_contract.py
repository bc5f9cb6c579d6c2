"""Stated refusals and no-fallback rules that had no test at their boundary
(docs/numerics.md): dfp refuses K·(2^r − 1)² ≥ 2^53 and takes the largest K below it;
fp16x2 has no part-overflow fallback (its range scaling keeps FLT_MAX-scale inputs
finite and exact); mixpert-fp64 accepts only float64 inputs."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime import executor_dfp as dfp_ex
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.dfp import DfpConfig


def test_dfp_takes_the_longest_exact_k_and_refuses_one_more():
    # bits=16: q_max = 32767, the largest K with K * 32767^2 < 2^53 is about 8.4 M
    bits = 16
    k = dfp_ex.max_k(bits)
    assert k * (2 ** (bits - 1) - 1) ** 2 < 2**53 <= (k + 1) * (2 ** (bits - 1) - 1) ** 2
    words = np.array(DfpConfig(bits, "tensor").words(), np.int64)
    stats = np.zeros(dfp_ex.N_STATS, np.int64)
    c = np.empty((1, 1), np.float32)
    a = np.ones((1, k + 1), np.float32)
    b = np.ones((k + 1, 1), np.float32)
    assert dfp_ex.dfp_gemm(a, b, c, words, stats) == dfp_ex.ERR_K
    assert dfp_ex.dfp_gemm(a[:, :k], b[:k], c, words, stats) == dfp_ex.OK
    assert c[0, 0] == np.float32(k)  # K products of 1 * 1 (mantissas 2^14 each): the sum is exact
    with pytest.raises(ValueError, match="K is too long"):
        get_scheme("dfp").run(a, b, DfpConfig(bits, "tensor"))


@pytest.mark.parametrize("config", ["products=3", "products=1"])
def test_fp16x2_has_no_part_overflow_fallback(config):
    s = get_scheme("fp16x2")
    big = np.finfo(np.float32).max
    a = np.array([[big, 1.0], [-big, 2.0**-20]], np.float32)
    b = np.array([[2.0**-10], [1.0]], np.float32)
    c, stats = s.run_with_stats(a, b, s.parse_config(config))
    assert stats.fallbacks == 0
    assert np.isfinite(c).all()
    if config == "products=3":  # hi + lo holds FLT_MAX exactly: RN32(FLT_MAX * 2^-10 + 1)
        assert c[0, 0] == np.float32(float(big) * 2.0**-10) and c[1, 0] == -c[0, 0]


def test_mixpert_fp64_accepts_only_float64():
    s = get_scheme("mixpert-fp64")
    a = np.ones((2, 3), np.float32)
    with pytest.raises((TypeError, ValueError), match="float64"):
        s.run(a, a.T.copy(), s.default_config())
