"""vitbit: the word-level emulation of VitBit's packed arithmetic (uint32 multiplies,
field extraction, FP32 blocks, tensor-core columns) equals the exact integer GEMM,
and the compiled executor's output is that GEMM dequantized, bit for bit
(docs/numerics.md, "vitbit"). An accumulation depth past ``max_acc`` does corrupt
the fields, so the bound the config enforces is the real one."""

from __future__ import annotations

import numpy as np
import pytest

import mixjit
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.vitbit import (
    VitbitConfig,
    emulate_integer_product,
    pack_words,
    packed_products,
    vitbit_quantize,
)
from mixjit.runtime.vitbit import executor as ex

RNG = np.random.default_rng(13)


def _operands(kind: str, m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    if kind == "random":
        return RNG.standard_normal((m, k)).astype(np.float32), RNG.standard_normal((k, n)).astype(np.float32)
    # extreme: every quantized value is +-q_max, signs random (largest products, both signs)
    return (RNG.choice([-1.0, 1.0], (m, k)).astype(np.float32),
            RNG.choice([-1.0, 1.0], (k, n)).astype(np.float32))


def _dequantize(s: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    return ((s.astype(np.float64) * sa[:, None]) * sb[None, :]).astype(np.float32)


@pytest.mark.parametrize("bits", range(2, 9))
@pytest.mark.parametrize("kind", ["random", "extreme"])
@pytest.mark.parametrize("ratios", [(4, -1), (0, -1), (1, 0), (0, 100)])
def test_executor_equals_the_emulated_packed_arithmetic(bits, kind, ratios):
    a, b = _operands(kind, 6, 37, 23)
    cfg = VitbitConfig(bits, m=ratios[0], n=ratios[1])
    qa, sa = vitbit_quantize(a, bits)
    qb, sb = vitbit_quantize(b, bits, transpose=True)
    emulated = emulate_integer_product(qa, qb.T, cfg)
    assert np.array_equal(emulated, qa @ qb.T)
    got, stats = get_scheme("vitbit").run_with_stats(a, b, cfg)
    assert (got.view(np.uint32) == _dequantize(emulated, sa, sb).view(np.uint32)).all()
    assert sum(stats.extra.values()) == 23


@pytest.mark.parametrize("bits", range(2, 9))
def test_one_more_packed_product_per_word_overflows_a_field(bits):
    a, b = _operands("extreme", 3, 4 * ex.max_acc(bits) + 4, 8)
    a[:] = 1.0
    b[:] = 1.0  # every product is +q_max^2: the first to overflow
    qa, _ = vitbit_quantize(a, bits)
    qb, _ = vitbit_quantize(b, bits, transpose=True)
    npk = ex.pack_count(bits)
    words = pack_words(qb.T[:, :npk], bits)
    exact = qa @ qb.T[:, :npk]
    assert np.array_equal(packed_products(qa, words, bits, ex.max_acc(bits)), exact)
    assert not np.array_equal(packed_products(qa, words, bits, ex.max_acc(bits) + 1), exact)


def test_packing_layout_follows_algorithm_1():
    # first value in the highest field; fields of 16, 10 and 8 bits; signed values in two's complement
    assert pack_words(np.array([[3, 5]]), 8).tolist() == [[(3 << 16) | 5]]
    assert pack_words(np.array([[1, 2, 3]]), 5).tolist() == [[(1 << 20) | (2 << 10) | 3]]
    assert pack_words(np.array([[1, 2, 3, 4]]), 4).tolist() == [[0x01020304]]
    assert pack_words(np.array([[1, -1]]), 7).tolist() == [[(1 << 16) - 1]]
    assert [ex.pack_count(b) for b in range(2, 9)] == [4, 4, 4, 3, 2, 2, 2]
    with pytest.raises(ValueError, match="multiple of the pack count"):
        pack_words(np.zeros((2, 3), np.int64), 8)


def test_column_split_is_algorithm_1():
    assert ex.column_split(100, 4, 2, 8) == (12, 8, 80)  # N3 = 80; 20 * 2/3 = 13 -> 12 (whole words); 8
    assert ex.column_split(100, 0, 3, 4) == (72, 28, 0)  # 100 * 3/4 = 75 -> 72
    assert ex.column_split(7, 4, 2, 5) == (0, 2, 5)


def test_config_defaults_limits_and_reachability():
    s = get_scheme("vitbit")
    assert [c.label for c in s.configs()] == ["bits=8", "bits=6"]
    cfg = s.parse_config("bits=5,m=2")
    assert (cfg.n, cfg.acc) == (3, ex.max_acc(5)) and cfg.label == "bits=5,m=2"
    with pytest.raises(ValueError, match="overflow a field"):
        s.parse_config(f"bits=8,acc={ex.max_acc(8) + 1}")
    with pytest.raises(ValueError, match="bits=9"):
        VitbitConfig(9)
    a = RNG.standard_normal((5, 9)).astype(np.float32)
    b = RNG.standard_normal((9, 4)).astype(np.float32)
    assert np.array_equal(mixjit.gemm(a, b, "vitbit", "bits=8"), mixjit.gemm(a, b, "int8", "scale=row-col"))
    c = np.empty((1, 1), np.float32)
    stats = np.zeros(ex.N_STATS, np.int64)
    long_k = ex.max_k(8) + 1
    assert ex.vitbit_gemm(np.ones((1, long_k), np.float32), np.ones((long_k, 1), np.float32), c,
                          np.array(VitbitConfig(8).words(), np.int64), stats) == ex.ERR_K


def test_vitbit_cost_splits_the_columns():
    s = get_scheme("vitbit")
    w = s.work(VitbitConfig(8), 64, 100, 256)
    # 100 columns at m = 4: 80 tensor-core, 20 CUDA-core; at n = 2: 12 packed (6 words), 8 converted
    assert w.ops == {"int8": 2.0 * 64 * 80 * 256, "int32": 2.0 * 64 * 256 * 12 / 2, "fp32": 2.0 * 64 * 256 * 8}
    assert w.concurrent  # one fused kernel, the three warp roles at once
    assert s.products(VitbitConfig(4)) == 1
