"""The split INT8+FP16 kernels' CPU model (runtime/split/cuda/fragments.py) against the CPU
executor: bit-equal with an exact FP16 accumulator on any data, and with a per-MMA FP32
accumulator where that is exact (always for fp16=0); the desc's launches and sizing."""

from __future__ import annotations

import numpy as np
import pytest

import mixjit
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.split.cuda.desc import MAX_K, SplitDesc, parse_split_label
from mixjit.runtime.split.cuda.fragments import STATUS_NONFINITE, host_plan, run_split

SCHEME = get_scheme("split")


def _run(a, b, config, accumulate="exact", **kw):
    words = np.array(SCHEME.parse_config(config).words(), np.int64)
    desc = kernel_desc("split", config, dtype="f64" if a.dtype == np.float64 else "f32", **kw)
    return run_split(a, b, desc, words, accumulate)


def _check(a, b, config, accumulate="exact", **kw):
    got, status = _run(a, b, config, accumulate, **kw)
    assert status == 0, "inputs left the main path: not a main-path test"
    want = mixjit.gemm(a, b, scheme="split", config=config)
    bits = np.uint64 if a.dtype == np.float64 else np.uint32
    diff = got.view(bits) != want.view(bits)
    assert not diff.any(), f"{config} {accumulate}: {diff.sum()} differ, first at {np.argwhere(diff)[0]}"


@pytest.mark.parametrize("label", ["", "fp16=0.25", "fp16=auto,width=16,rank=index,target=h100", "fp16=1,rank=p50"])
def test_labels_the_scheme_accepts(label):
    fields = parse_split_label(label)
    cfg = SCHEME.parse_config(label)
    assert (fields["target"], int(fields["width"]), fields["rank"]) == (cfg.target, cfg.width, cfg.rank)


@pytest.mark.parametrize("label", ["fp16=2", "width=0", "rank=q9", "target=gtx480", "colour=red"])
def test_labels_both_refuse(label):
    with pytest.raises(ValueError):
        SCHEME.parse_config(label)
    with pytest.raises(ValueError):
        parse_split_label(label)


SPLIT_CONFIGS = ["fp16=auto", "fp16=0", "fp16=0.25,width=16", "fp16=1", "fp16=0.5,rank=index"]
SHAPES = [(37, 100, 20), (1, 1, 1), (16, 64, 8)]


#: CI: the representative (fp16=auto) and the empty parts (fp16=0, fp16=1) on every shape, every
#: config on the ragged 37x100x20; the rest of the sweep with -m slow
@pytest.mark.parametrize("config,shape", [
    pytest.param(c, s, marks=() if c in SPLIT_CONFIGS[:2] or c == "fp16=1" or s == SHAPES[0] else pytest.mark.slow)
    for c in SPLIT_CONFIGS for s in SHAPES])
def test_exact_accumulator_bit_equal(config, shape):
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.uniform(-1, 1, (k, n)).astype(np.float32)
    a[:, k // 2] *= 1000  # an outlier slice for the ranking to send to FP16
    _check(a, b, config)


def test_exact_accumulator_adversarial_and_float64():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((20, 96)) * 2.0 ** rng.integers(-40, 41, (20, 1))
    b = rng.standard_normal((96, 12)) * 2.0 ** rng.integers(-40, 41, (1, 12))
    a[4] = 0.0
    _check(a, b, "fp16=0.5,width=8")
    top = np.full((16, 64), np.finfo(np.float32).max, np.float32)  # the top-binade rule of a lone FP16 hi
    top[:, ::2] *= np.float32(-0.999)
    _check(top, rng.uniform(-1, 1, (64, 8)).astype(np.float32) * np.float32(2.0 ** -60), "fp16=1")


@pytest.mark.parametrize("shape", [(37, 100, 20), (64, 96, 33)])
def test_fp32_accumulator_bit_equal_without_an_fp16_part(shape):
    m, k, n = shape
    rng = np.random.default_rng(k)
    _check(rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32), "fp16=0",
           "fp32")


def test_fp32_accumulator_bit_equal_where_fp16_sums_are_exact():
    """Small integers: scaled by 2^sigma, the FP16 products are multiples of 2^22 below 2^28 and
    every FP32 partial sum over K <= 64 is exact."""
    rng = np.random.default_rng(8)
    a = rng.integers(-8, 9, (24, 64)).astype(np.float32)
    b = rng.integers(-8, 9, (64, 16)).astype(np.float32)
    a[:, 0], b[0, :] = 8.0, -8.0  # every row / column reaches 8: sigma = 11
    _check(a, b, "fp16=auto", "fp32")
    _check(a, b, "fp16=1", "fp32")


def test_fp32_accumulator_within_the_documented_bound():
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((20, 64)).astype(np.float32), rng.standard_normal((64, 12)).astype(np.float32)
    got, _ = _run(a, b, "fp16=1", "fp32")
    want = mixjit.gemm(a, b, scheme="split", config="fp16=1")
    rounds = 64 // 16
    bound = np.spacing(np.abs(want)) + rounds * 2.0 ** -23 * (np.abs(a).astype(np.float64) @ np.abs(b))
    assert (np.abs(got.astype(np.float64) - want) <= bound).all() and (got != want).any()


def test_nonfinite_inputs_are_handed_back():
    a = np.ones((16, 32), np.float32)
    a[0, 3] = np.nan
    assert _run(a, np.ones((32, 8), np.float32), "fp16=0.5")[1] == STATUS_NONFINITE


def test_launches_two_streams_and_the_partition_sizes():
    desc = kernel_desc("split", "fp16=auto")
    launches = desc.launches(512, 640, 768)
    assert [l.entry for l in launches] == list(desc.entry_points)
    assert {l.entry: l.stream for l in launches}["int8_gemm"] == 0
    assert {l.entry: l.stream for l in launches}["multiterm_gemm"] == 1
    assert [l.entry for l in desc.launches(512, 640, 768, k_fp16=0)][-2:] == ["int8_gemm", "split_combine"]
    with pytest.raises(ValueError, match="INT32"):
        desc.launches(64, 64, MAX_K + 1, k_fp16=0)
    # the patent's example ([0066]-[0067]): 512x640 on 40 SMs -> 64x128 tiles
    assert SplitDesc.sized("target=patent-0066", 512, 640, 768).block == (64, 128)


def test_host_plan_is_the_executors_k_split():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 96)).astype(np.float32), rng.standard_normal((96, 8)).astype(np.float32)
    words = np.array(SCHEME.parse_config("fp16=auto").words(), np.int64)
    plan = host_plan(a, b, words)
    _, stats = SCHEME.run_with_stats(a, b, SCHEME.parse_config("fp16=auto"))
    assert (plan.cols_f.size, plan.cols_i.size) == (stats.extra["k_fp16"], stats.extra["k_int8"])


def test_update_mode_is_the_frontends_axpby():
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((20, 48)), rng.standard_normal((48, 9))
    c0 = rng.standard_normal((20, 9))
    words = np.array(SCHEME.parse_config("fp16=0.25").words(), np.int64)
    desc = kernel_desc("split", "fp16=0.25", dtype="f64", alpha_beta="update")
    got, status = run_split(a, b, desc, words, "exact", -1.0, 0.5, c0)
    p = mixjit.gemm(a, b, scheme="split", config="fp16=0.25")
    assert status == 0 and got.tobytes() == (-1.0 * p + 0.5 * c0).tobytes()
