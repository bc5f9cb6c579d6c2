"""The ozaki2 scheme: config labels and words, products and work, stats, the
mixjit.gemm entry, residues in INT8, and accuracy growing with the moduli."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mixjit
from mixjit.runtime.model.costmodel import modeled_time
from mixjit.runtime.ozaki2 import executor as ex
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.ozaki2 import Ozaki2Config, config_from_words

OZ = get_scheme("ozaki2")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_configs_round_trip_most_precise_first(dtype):
    cfgs = OZ.configs(dtype)
    assert OZ.default_config(dtype) == cfgs[0]
    moduli = [c.moduli for c in cfgs]
    assert moduli == sorted(moduli, reverse=True) and len(set(moduli)) == len(moduli)
    for cfg in cfgs:
        assert OZ.parse_config(cfg.label) == cfg and cfg.label == f"moduli={cfg.moduli}"
        assert config_from_words(cfg.words()) == cfg
        assert OZ.products(cfg) == cfg.moduli
    assert 8 in moduli if dtype == np.float32 else {14, 15} <= set(moduli)


def test_mode_and_kblock_labels_and_parse_errors():
    cfg = OZ.parse_config("moduli=8,kblock=64")
    assert cfg == Ozaki2Config(8, 64) and cfg.label == "moduli=8,kblock=64"
    assert config_from_words(cfg.words()) == cfg
    acc = OZ.parse_config("kblock=64,mode=accurate,moduli=8")
    assert acc == Ozaki2Config(8, 64, "accurate") and acc.label == "moduli=8,mode=accurate,kblock=64"
    assert config_from_words(acc.words()) == acc and OZ.parse_config(acc.label) == acc
    assert OZ.products(acc) == 9 and OZ.parse_config("moduli=8,mode=fast") == Ozaki2Config(8)
    for bad, msg in [
        ("moduli=21", "1..20"),
        ("moduli=0", "1..20"),
        ("moduli=eight", "not an integer"),
        ("kblock=4", "lacks moduli"),
        ("moduli=8,moduli=9", "twice"),
        ("moduli=8,level=IV", "bad config part"),
        ("moduli=8,mode=exact", "'fast' or 'accurate'"),
        ("moduli=8,kblock=0", "kblock"),
        (f"moduli=8,kblock={2**40}", "kblock"),
    ]:
        with pytest.raises(ValueError, match=msg):
            OZ.parse_config(bad)
    with pytest.raises(TypeError, match="Ozaki2Config"):
        OZ.products(get_scheme("int8").default_config())


def test_work_counts_one_int8_gemm_per_modulus():
    m, n, k = 64, 48, 40
    w8 = OZ.work(OZ.parse_config("moduli=8"), m, n, k)
    w14 = OZ.work(OZ.parse_config("moduli=14"), m, n, k, np.float64)
    assert w8.ops == {"int8": 2.0 * m * n * k * 8}
    assert w14.ops == {"int8": 2.0 * m * n * k * 14}
    # scaling: 2 reads of each operand + N residue bytes; epilogue: N INT32 products written and read
    assert w8.bytes_moved == (2 * 4 + 8) * (m * k + k * n) + 2 * (m + n) + 2 * 4 * 8 * m * n
    assert w14.bytes_moved > w8.bytes_moved
    acc = OZ.work(OZ.parse_config("moduli=8,mode=accurate"), m, n, k)
    assert acc.ops == {"int8": 2.0 * m * n * k * 9}
    assert acc.bytes_moved == w8.bytes_moved + (4 + 1) * (m * k + k * n) + 12 * m * n
    t = modeled_time("ozaki2", "moduli=8", 4096, 4096, 4096, np.float32, "h100")
    assert math.isfinite(t.seconds) and t.seconds > 0 and "modeled" in str(t)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_api_runs_it(dtype):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((9, 33)).astype(dtype)
    b = rng.standard_normal((33, 7)).astype(dtype)
    c = mixjit.gemm(a, b, scheme="ozaki2", config="moduli=8")
    assert c.dtype == dtype and c.shape == (9, 7)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert np.linalg.norm(c - exact) / np.linalg.norm(exact) < 1e-7
    # transposed, strided views give the same bits as contiguous copies
    at = np.asfortranarray(a)
    np.testing.assert_array_equal(mixjit.gemm(at, b[:, ::1], scheme="ozaki2", config="moduli=8"), c)


def test_nonfinite_fallbacks_are_counted_and_named():
    a = np.ones((3, 4), dtype=np.float32)
    b = np.ones((4, 5), dtype=np.float32)
    a[1, 2] = np.inf
    b[0, 3] = np.nan
    c, stats = OZ.run_with_stats(a, b, OZ.parse_config("moduli=8"))
    assert stats.fallbacks == 5 + 3 - 1 and stats.units == 15 and stats.fallback_unit == "element"
    assert "inf/NaN" in stats.fallback_reason
    assert np.isinf(c[1, [0, 1, 2, 4]]).all() and np.isnan(c[:, 3]).all()
    assert (c[[0, 2]][:, [0, 1, 2, 4]] == 4.0).all()
    _, clean = OZ.run_with_stats(np.ones((2, 2)), np.ones((2, 2)), OZ.parse_config("moduli=8"))
    assert clean.fallbacks == 0 and clean.fallback_reason == ""


def test_residues_are_symmetric_int8():
    vals = [float(v) for v in range(-700, 700)] + [2.0**60 + 2.0**8, -(2.0**77), 3.0 * 2.0**70]
    for l, p in enumerate(ex.MODULI):
        p = int(p)
        for v in vals:
            r = ex._residue(v, l)
            assert -128 <= r <= 127 and -(p // 2) <= r <= p - 1 - p // 2
            assert (int(v) - r) % p == 0


@pytest.mark.parametrize("dtype, native_tol", [(np.float32, 2.0**-24), (np.float64, 2.0**-53)])
def test_error_shrinks_with_moduli_and_reaches_the_native_level(dtype, native_tol):
    # about 4 bits per modulus (ANCHORS.md); 8 moduli beat float32 BLAS, 15 float64
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 96))
    b = rng.standard_normal((96, 30))
    a, b = a.astype(dtype), b.astype(dtype)
    exact = np.array([[math.fsum(x) for x in row] for row in (a.astype(np.float64)[:, :, None]
                                                              * b.astype(np.float64)[None, :, :]).transpose(0, 2, 1)])
    native = np.linalg.norm(a @ b - exact) / np.linalg.norm(exact)
    # below saturation each modulus gains at least 2 bits; then the output rounding rules
    family, top = ((4, 5, 6, 7), 8) if dtype == np.float32 else ((10, 11, 12, 13), 15)
    errs = [np.linalg.norm(OZ.run(a, b, Ozaki2Config(n)) - exact) / np.linalg.norm(exact) for n in (*family, top)]
    assert all(e2 < e1 / 4 for e1, e2 in zip(errs[:-1], errs[1:-1])), errs
    assert errs[-1] <= native and errs[-1] < 8 * native_tol, (errs, native)


def test_compiled_callers_can_call_the_executor():
    # what the @mixjit run-time entry will do: call ozaki2_gemm from compiled code on
    # strided views, with the config words read from an int64 table
    import numba

    @numba.njit(nogil=True)
    def site(a, b, c, table):
        params = np.empty(ex.N_WORDS, np.int64)
        for w in range(ex.N_WORDS):
            params[w] = table[w]
        stats = np.empty(ex.N_STATS, np.int64)
        return ex.ozaki2_gemm(a[::2, :], b[:, 1:], c, params, stats)

    rng = np.random.default_rng(8)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((10, 17)).astype(dtype)
        b = rng.standard_normal((17, 6)).astype(dtype)
        c = np.empty((5, 5), dtype=dtype)
        cfg = OZ.parse_config("moduli=9,kblock=5")
        assert site(a, b, c, np.array(cfg.words(), dtype=np.int64)) == 0
        np.testing.assert_array_equal(c, OZ.run(np.ascontiguousarray(a[::2]), np.ascontiguousarray(b[:, 1:]), cfg))


def test_accurate_mode_runs_one_bound_gemm_and_is_not_less_accurate():
    # GEMMul8's accurate mode bounds each (i, j) pair: on rows whose large entries meet
    # small ones of the column it keeps more bits than the fast mode's norm bound
    rng = np.random.default_rng(6)
    a = rng.standard_normal((30, 64)) * np.exp2(rng.integers(-20, 20, (1, 64)))
    b = rng.standard_normal((64, 20)) * np.exp2(-rng.integers(-20, 20, (64, 1)))
    exact = np.array([[math.fsum(a[i] * b[:, j]) for j in range(20)] for i in range(30)])
    fast, st_fast = OZ.run_with_stats(a, b, OZ.parse_config("moduli=12"))
    acc, st_acc = OZ.run_with_stats(a, b, OZ.parse_config("moduli=12,mode=accurate"))
    assert st_fast.extra["bound_gemms"] == 0 and st_acc.extra["bound_gemms"] == 1
    err = [np.linalg.norm(c - exact) / np.linalg.norm(exact) for c in (fast, acc)]
    assert err[1] < err[0] / 4, err


@pytest.mark.parametrize("mode", ["fast", "accurate"])
@pytest.mark.parametrize("a_shape, b_shape", [((3, 0), (0, 2)), ((0, 4), (4, 2)), ((3, 4), (4, 0))])
def test_empty_shapes(mode, a_shape, b_shape):
    c = OZ.run(np.ones(a_shape), np.ones(b_shape), Ozaki2Config(8, mode=mode))
    assert c.shape == (a_shape[0], b_shape[1]) and not c.any() and not np.signbit(c).any()
