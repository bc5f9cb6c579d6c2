"""The Scheme contract for native, tf32x3, bf16xn, fp16x2, int8 and split: config
labels round-trip, products and work agree, stats name their units, native is BLAS."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.schemes import get_scheme

MINE = ["native", "tf32x3", "bf16xn", "fp16x2", "int8", "split"]


@pytest.mark.parametrize("name", MINE)
def test_config_labels_round_trip(name):
    s = get_scheme(name)
    cfgs = s.configs(np.float32)
    assert cfgs and s.default_config() == cfgs[0]
    for cfg in cfgs:
        assert s.parse_config(cfg.label) == cfg
        assert s.products(cfg) >= 1


@pytest.mark.parametrize("name", ["tf32x3", "bf16xn", "fp16x2"])
def test_multiterm_products_and_work(name):
    s = get_scheme(name)
    for cfg in s.configs():
        w = s.work(cfg, 64, 32, 16)
        (cls, ops), = w.ops.items()
        assert ops == 2.0 * 64 * 32 * 16 * s.products(cfg)
        assert (w.bytes_moved > 0) == (name != "tf32x3")  # tf32x3 splits in registers
    with pytest.raises(ValueError, match="products=2 is not a config"):
        s.parse_config("products=2")
    with pytest.raises(ValueError, match="not a valid int"):
        s.parse_config("products=three")


def test_work_classes():
    assert get_scheme("tf32x3").work(get_scheme("tf32x3").default_config(), 2, 2, 2).ops.keys() == {"tf32"}
    assert get_scheme("int8").work(get_scheme("int8").default_config(), 2, 2, 2).ops == {"int8": 16.0}
    nat = get_scheme("native")
    assert nat.work(nat.default_config(), 2, 3, 4, np.float64).ops == {"fp64": 48.0}
    assert nat.work(nat.default_config(), 2, 3, 4).ops == {"fp32": 48.0}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_is_blas_in_the_input_precision(dtype):
    rng = np.random.default_rng(3)
    a, b = rng.random((5, 7)).astype(dtype), rng.random((7, 4)).astype(dtype)
    s = get_scheme("native")
    c, stats = s.run_with_stats(a, b, s.parse_config("accumulate=blas"))
    assert c.dtype == dtype and stats.fallbacks == 0
    np.testing.assert_array_equal(c, a @ b)
    with pytest.raises(ValueError, match="accumulate=blas"):
        s.parse_config("accumulate=kahan")


@pytest.mark.parametrize("name", ["tf32x3", "bf16xn", "fp16x2", "int8", "split"])
def test_nonfinite_fallbacks_are_counted_and_named(name):
    s = get_scheme(name)
    a = np.ones((3, 4), dtype=np.float32)
    b = np.ones((4, 5), dtype=np.float32)
    a[1, 2] = np.inf
    b[0, 3] = np.nan
    c, stats = s.run_with_stats(a, b, s.default_config())
    assert stats.fallbacks == 5 + 3 - 1 and stats.units == 15 and stats.fallback_unit == "element"
    assert "inf/NaN" in stats.fallback_reason
    assert np.isinf(c[1, [0, 1, 2, 4]]).all() and np.isnan(c[:, 3]).all()
    assert (c[[0, 2]][:, [0, 1, 2, 4]] == 4.0).all()


def test_part_overflow_falls_back_to_exact_float32():
    s = get_scheme("tf32x3")
    big = np.float32(np.finfo(np.float32).max)
    a = np.array([[big, 1.0], [1.0, 1.0]], dtype=np.float32)
    b = np.array([[2.0**-10], [1.0]], dtype=np.float32)
    c, stats = s.run_with_stats(a, b, s.default_config())
    assert stats.fallbacks == 1 and "tf32 range" in stats.fallback_reason
    assert c[0, 0] == np.float32(float(big) * 2.0**-10 + 1.0) and c[1, 0] == np.float32(1 + 2.0**-10)


@pytest.mark.parametrize("name", MINE + ["mixpert"])
def test_every_scheme_accepts_prepared_operands(name):
    s = get_scheme(name)
    cfg = s.default_config()
    rng = np.random.default_rng(9)
    a = rng.standard_normal((7, 40)).astype(np.float32)
    b = rng.standard_normal((40, 5)).astype(np.float32)
    want = s.run(a, b, cfg)
    got = s.run(s.prepare_a(a, cfg), s.prepare_b(b, cfg), cfg)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
