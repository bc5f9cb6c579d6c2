"""The compiled executors of tf32x3, bf16xn, fp16x2, int8 and split (runtime/
executor_{multiterm,int8,split}.py): called from compiled code with config words,
any operand layout, refusals as status codes, subnormal inputs kept exactly.
Bit-exactness against the written semantics: test_schemes_bitexact.py."""

from __future__ import annotations

import math
import threading
from fractions import Fraction

import numba
import numpy as np
import pytest
import reference_schemes as ref

from mixjit.runtime.int8 import executor as ei8
from mixjit.runtime.multiterm import executor as emt
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.emulation import ProductsConfig
from mixjit.runtime.schemes.split import SplitConfig
from mixjit.runtime.split import executor as esp

#: (scheme, label, compiled executor module, its gemm)
CASES = [
    ("tf32x3", "products=3", emt, emt.multiterm_gemm),
    ("bf16xn", "products=6", emt, emt.multiterm_gemm),
    ("fp16x2", "products=3", emt, emt.multiterm_gemm),
    ("int8", "scale=row-col", ei8, ei8.int8_gemm),
    ("split", "fp16=0.5,width=4,rank=p99,target=a100", esp, esp.split_gemm),
]


def _operands(seed: int, m: int = 7, k: int = 19, n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((m, k)) * 2.0 ** rng.integers(-20, 20, (m, k))).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b


@numba.njit
def _call_multiterm(a, b, c, words, stats):
    return emt.multiterm_gemm(a, b, c, words, stats)


@numba.njit
def _call_int8(a, b, c, words, stats):
    return ei8.int8_gemm(a, b, c, words, stats)


@numba.njit
def _call_split(a, b, c, words, stats):
    return esp.split_gemm(a, b, c, words, stats)


COMPILED_CALLERS = {emt: _call_multiterm, ei8: _call_int8, esp: _call_split}


@pytest.mark.parametrize("scheme,label,mod,gemm", CASES)
def test_compiled_caller_with_config_words_matches_scheme_run(scheme, label, mod, gemm):
    s = get_scheme(scheme)
    cfg = s.parse_config(label)
    a, b = _operands(1)
    want = s.run(a, b, cfg)
    c = np.full((a.shape[0], b.shape[1]), np.nan, dtype=np.float32)
    stats = np.zeros(mod.N_STATS, dtype=np.int64)
    words = np.array(cfg.words(), dtype=np.int64)
    assert len(words) == mod.N_WORDS
    assert COMPILED_CALLERS[mod](a, b, c, words, stats) == mod.OK
    assert np.array_equal(c.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("scheme,label,mod,gemm", CASES)
def test_any_layout_and_float64_output_give_the_same_bits(scheme, label, mod, gemm):
    s = get_scheme(scheme)
    cfg = s.parse_config(label)
    a, b = _operands(2)
    want = s.run(a, b, cfg)
    words = np.array(cfg.words(), dtype=np.int64)
    stats = np.zeros(mod.N_STATS, dtype=np.int64)
    a_t = np.asfortranarray(a)  # column-major
    b_s = np.repeat(b, 2, axis=1)[:, ::2]  # strided view
    c64 = np.empty((a.shape[0], b.shape[1]), dtype=np.float64)
    assert gemm(a_t, b_s, c64, words, stats) == mod.OK
    assert np.array_equal(c64, want.astype(np.float64))
    c_t = np.empty((b.shape[1], a.shape[0]), dtype=np.float32).T  # a transposed output
    assert gemm(a, b, c_t, words, stats) == mod.OK
    assert np.array_equal(c_t, want)


@pytest.mark.parametrize("scheme,label,mod,gemm", CASES)
def test_refusals_are_status_codes_with_messages(scheme, label, mod, gemm):
    cfg = get_scheme(scheme).parse_config(label)
    a, b = _operands(3)
    words = np.array(cfg.words(), dtype=np.int64)
    stats = np.zeros(mod.N_STATS, dtype=np.int64)
    c = np.full((a.shape[0], b.shape[1]), 7.0, dtype=np.float32)
    assert gemm(a, b[:-1], c, words, stats) == mod.ERR_SHAPE
    assert gemm(a, b, c[:, :-1], words, stats) == mod.ERR_SHAPE
    bad = words.copy()
    bad[0] = 99
    assert gemm(a, b, c, bad, stats) == mod.ERR_PARAMS
    assert gemm(a, b, c, words[:0], stats) == mod.ERR_PARAMS
    assert (c == 7.0).all()  # a refused call leaves C alone
    assert {mod.ERR_SHAPE, mod.ERR_PARAMS} <= set(mod.STATUS_MESSAGES)
    assert "words" in mod.STATUS_MESSAGES[mod.ERR_PARAMS]


def test_bad_word_values_are_refused():
    c = np.empty((1, 1), dtype=np.float32)
    one = np.ones((1, 1), dtype=np.float32)
    st = np.zeros(8, dtype=np.int64)
    assert emt.multiterm_gemm(one, one, c, np.array([0, 10]), st) == emt.ERR_PARAMS
    assert emt.multiterm_gemm(one, one, c, np.array([0, 0]), st) == emt.ERR_PARAMS
    w = np.array(SplitConfig(fp16=0.25).words(), dtype=np.int64)
    for word, value in [(esp.W_WIDTH, 0), (esp.W_RANK_Q, int(np.float64(0.0).view(np.int64))),
                        (esp.W_FP16_NUM, 5), (esp.W_RANK, 2)]:
        bad = w.copy()
        bad[word] = value
        assert esp.split_gemm(one, one, c, bad, st) == esp.ERR_PARAMS, word


def test_products_config_without_a_format_has_no_words():
    with pytest.raises(TypeError, match="part format"):
        ProductsConfig(3).words()
    assert get_scheme("bf16xn").parse_config("products=6").words() == (emt.FMT_BF16, 6)
    assert get_scheme("fp16x2").default_config().words() == (emt.FMT_FP16, 3)


@pytest.mark.parametrize("fp16", [0.0, 0.25, 0.3, 1.0 / 3.0, 0.5, 0.7, 1.0, 2.0**-60, 1e-300])
@pytest.mark.parametrize("nsl", [0, 1, 2, 3, 7, 64, 1000, 2**20 + 1, 2**31 - 1])
def test_fp16_slice_count_is_the_exact_rational_rounding(fp16, nsl):
    words = np.array(SplitConfig(fp16=fp16).words(), dtype=np.int64)
    want = math.floor(Fraction(fp16) * nsl + Fraction(1, 2))
    assert esp._fp16_slice_count(words, max(nsl, 1), nsl) == want


@pytest.mark.parametrize("scheme,label", [("tf32x3", "products=3"), ("bf16xn", "products=9"),
                                          ("bf16xn", "products=6"), ("fp16x2", "products=3")])
def test_subnormal_inputs_are_split_exactly(scheme, label):
    # the example: tf32x3 lost 3% here (RN_tf32 on float32 subnormal patterns)
    s = get_scheme(scheme)
    a = np.array([[1e-40, 2.0**-149]], dtype=np.float32)
    one = np.ones((2, 1), dtype=np.float32)
    exact = Fraction(float(a[0, 0])) + Fraction(2) ** -149
    assert s.run(a, one, s.parse_config(label))[0, 0] == np.float32(float(ref.rn(exact, "fp32")))
    # each subnormal alone: the parts keep 22 (tf32x3) / 24 (bf16x6/9, fp16x2 here) bits
    x = np.array([[v] for v in (1e-40, -3.3e-41, 2.0**-149 * 12345, 1.17e-38, 2.0**-120 * 1.2345)],
                 dtype=np.float32)
    got = s.run(x, np.ones((1, 1), dtype=np.float32), s.parse_config(label))[:, 0]
    rel = np.abs(got.astype(np.float64) - x[:, 0]) / np.abs(x[:, 0].astype(np.float64))
    assert (rel <= 2.0**-21).all(), rel


def test_executors_release_the_gil_and_are_thread_safe():
    s = get_scheme("tf32x3")
    cfg = s.default_config()
    a, b = _operands(4, 64, 300, 48)
    want = s.run(a, b, cfg)
    words = np.array(cfg.words(), dtype=np.int64)
    outs = [np.empty_like(want) for _ in range(4)]

    def work(c):
        emt.multiterm_gemm(a, b, c, words, np.zeros(emt.N_STATS, dtype=np.int64))

    threads = [threading.Thread(target=work, args=(c,)) for c in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in outs:
        assert np.array_equal(c, want)


@pytest.mark.parametrize("scheme,label", [("tf32x3", "products=3"), ("bf16xn", "products=9"), ("fp16x2", "products=3")])
def test_ties_and_near_ties_take_the_exact_path_and_round_right(scheme, label):
    # 1 + 2^-24 is a float32 tie (to even: 1); + 2^-60 or - 2^-60 breaks it. Neither
    # the GEMM's bound nor the double-double one can decide these: the exact sums do.
    s = get_scheme(scheme)
    a = np.array([[1.0, 2.0**-24, 0.0], [1.0, 2.0**-24, 2.0**-30], [1.0, 2.0**-24, -(2.0**-30)]])
    b = np.array([[1.0], [1.0], [2.0**-30]])
    c, stats = s.run_with_stats(a, b, s.parse_config(label))
    assert c[:, 0].tolist() == [1.0, 1.0 + 2.0**-23, 1.0]
    assert stats.extra["slow_path_elements"] == 3
    assert np.array_equal(c.astype(np.float32), ref.multiterm(a, b, {"tf32x3": "tf32", "bf16xn": "bf16",
                                                                      "fp16x2": "fp16"}[scheme], int(label[-1])))


def test_bf16_three_way_split_is_exact_for_every_float32_pattern():
    # docs/numerics.md (bf16x3, bf16x6, bf16x9): x0 + x1 + x2 = x for every float32,
    # subnormals included, so bf16x9 of x times 1 gives x back bit for bit; tf32x3's
    # two parts keep 22 bits: |x - big - small| <= 2^-22 |x|
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    bits[:4000] &= np.uint32(0x807FFFFF)  # subnormals and zeros
    x = bits.view(np.float32)
    x = x[np.isfinite(x)][:, None]
    one = np.ones((1, 1), dtype=np.float32)
    s = get_scheme("bf16xn")
    assert np.array_equal(s.run(x, one, s.parse_config("products=9")), x + np.float32(0.0))
    t = get_scheme("tf32x3")
    got = t.run(x, one, t.default_config()).astype(np.float64)
    assert (np.abs(got - x) <= 2.0**-21 * np.abs(x.astype(np.float64))).all()


@pytest.mark.parametrize("scheme,label,mod,gemm", CASES)
def test_c_may_overlap_a_or_b(scheme, label, mod, gemm):
    s = get_scheme(scheme)
    cfg = s.parse_config(label)
    a, b = _operands(6, 9, 9, 9)
    want = s.run(a, b, cfg)
    words = np.array(cfg.words(), dtype=np.int64)
    stats = np.zeros(mod.N_STATS, dtype=np.int64)
    a2, b2 = a.copy(), b.copy()
    assert gemm(a2, b, a2, words, stats) == mod.OK  # C is A
    assert gemm(a, b2, b2, words, stats) == mod.OK  # C is B
    assert np.array_equal(a2, want) and np.array_equal(b2, want)


def test_compiled_roundings_agree_with_the_format_definitions():
    from mixjit.runtime.numerics.formats import round_to_bf16, round_to_fp16, round_to_tf32

    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x[np.isfinite(x)]
    normal = x[np.abs(x) >= np.finfo(np.float32).tiny]
    for rounder, drop in ((round_to_tf32, 42), (round_to_bf16, 45)):
        want = rounder(normal).astype(np.float64)
        got = np.array([emt._rn_bits(float(v), drop) for v in normal])
        keep = np.isfinite(want)  # where the format overflows, the split reports part overflow
        assert np.array_equal(got[keep], want[keep])
        assert (np.abs(got[~keep]) >= 2.0**128).all()
    # fp16, including its subnormals, on values of the scaled range |y| < 2^15
    y = np.concatenate([np.ldexp(rng.uniform(-1, 1, 3000), rng.integers(-30, 16, 3000)), [2.0**-25, 3 * 2.0**-26]])
    y32 = y.astype(np.float32)
    got = np.array([emt._rn16(float(v)) for v in y32])
    assert np.array_equal(got, round_to_fp16(y32).astype(np.float64))


@pytest.mark.parametrize("scheme,label", [("tf32x3", "products=3"), ("bf16xn", "products=6"), ("fp16x2", "products=3"),
                                          ("int8", "scale=row-col"),
                                          ("split", "fp16=0.5,width=64,rank=p99,target=a100")])
def test_k_over_several_chunks_matches_the_reference(scheme, label):
    # K = 2300 spans three 1024-wide float64 GEMM chunks (two for int8's exact sgemm
    # blocks), with cancelling rows so that the bounds leave outputs in doubt
    rng = np.random.default_rng(8)
    k = 2300
    a = (rng.standard_normal((2, k)) * 2.0 ** rng.integers(-8, 8, (2, k))).astype(np.float32)
    b = rng.standard_normal((k, 2)).astype(np.float32)
    a[1, k // 2:] = -a[1, : k - k // 2]  # row 1 cancels against itself ...
    b[k // 2:, 1] = b[: k - k // 2, 1]  # ... in column 1
    b[k - 1, 1] += np.float32(2.0**-20)
    s = get_scheme(scheme)
    cfg = s.parse_config(label)
    got = s.run(a, b, cfg)
    if scheme == "int8":
        want = ref.int8(a, b)
    elif scheme == "split":
        want = ref.split(a, b, cfg.fp16, cfg.width, cfg.rank, cfg.target)
    else:
        want = ref.multiterm(a, b, {"tf32x3": "tf32", "bf16xn": "bf16", "fp16x2": "fp16"}[scheme], cfg.products)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (got, want)


@pytest.mark.parametrize("target", ["a100", "h100", "patent-0066"])
@pytest.mark.parametrize("k", [1, 16, 31, 32, 47, 48, 96, 100, 768, 1000, 4097])
@pytest.mark.parametrize("width", [1, 3, 32])
def test_auto_slice_count_matches_the_calculator(target, k, width):
    from mixjit.runtime.model.hardware import get_hardware
    from mixjit.runtime.model.partition import partition_sizes

    words = np.array(SplitConfig(fp16="auto", width=width, target=target).words(), dtype=np.int64)
    nsl = -(-k // width)
    want = math.floor(partition_sizes(8, 8, k, get_hardware(target)).fp16_fraction * nsl + Fraction(1, 2))
    assert esp._fp16_slice_count(words, k, nsl) == want
