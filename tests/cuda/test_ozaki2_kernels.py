"""The Ozaki-II residue kernels' CPU model (runtime/ozaki2/cuda/fragments.py): its residues are the
CPU executor's, and after the host's CRT its output is the executor's, bit for bit."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mixjit
from mixjit.runtime.cuda.desc import UnsupportedConfig
from mixjit.runtime.cuda.emit import template_text
from mixjit.runtime.cuda.fragments import A_LOADS, B_LOADS
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.ozaki2 import executor as ex
from mixjit.runtime.ozaki2.cuda import fragments as fi
from mixjit.runtime.ozaki2.cuda.desc import MAX_K, MODULI, parse_ozaki2_label
from mixjit.runtime.schemes import get_scheme


def _desc(config: str, a: np.ndarray, **kw):
    return kernel_desc("ozaki2", config, dtype="f64" if a.dtype == np.float64 else "f32", **kw)


def _executor_residues(a, b, moduli):
    sa, sb = fi.host_shifts(a, b, moduli)
    stats = np.zeros(ex.N_STATS, np.int64)
    return ex._residue_products(ex._scaled(a, False, sa), ex._scaled(b, True, sb), moduli, ex.MAX_KBLOCK, stats)


def _check(a, b, config, **kw):
    desc = _desc(config, a, **kw)
    c, res, status = fi.run_ozaki2(a, b, desc)
    assert status == 0, "inputs left the main path: not a main-path test"
    assert (res == _executor_residues(a, b, desc.moduli)).all()
    want = mixjit.gemm(a, b, scheme="ozaki2", config=config)
    assert c.dtype == want.dtype and c.tobytes() == want.tobytes(), f"{config}: {(c != want).sum()} differ"


def test_moduli_table_and_labels_agree_with_the_executor():
    assert MODULI == tuple(int(p) for p in ex.MODULI)
    scheme = get_scheme("ozaki2")
    for label in ["moduli=8", "moduli=14,mode=accurate", "moduli=3,kblock=4096", ""]:
        cfg = scheme.parse_config(label) if label else scheme.parse_config("moduli=14")
        assert parse_ozaki2_label(label) == (cfg.moduli, cfg.mode)
    for bad in ["moduli=21", "mode=slow", "level=IV"]:
        with pytest.raises(ValueError):
            parse_ozaki2_label(bad)


def test_model_loads_are_the_templates_loads():
    imma = template_text("imma.cuh")  # warp_mma_s8 -> load_fragments_s8, which the kernel calls
    assert "warp_mma_s8(acc, s.a[stage], s.b[stage]," in template_text("int8_gemm.cu")
    a = re.findall(r"fa\[mi\]\[(\d)\] = .*?&a\[r( \+ 8)?\]\[(16 \+ )?4 \* t\]", imma)
    b = re.findall(r"fb\[ni\]\[(\d)\] = .*?&b\[col\]\[(16 \+ )?4 \* t\]", imma)
    assert [int(j) for j, _, _ in a] == [0, 1, 2, 3] and [int(j) for j, _ in b] == [0, 1]
    assert tuple((8 if r else 0, 16 if c else 0) for _, r, c in a) == A_LOADS
    assert tuple(16 if c else 0 for _, c in b) == B_LOADS


def test_a_wrong_fragment_layout_is_caught(monkeypatch):
    monkeypatch.setattr(fi, "A_LOADS", ((0, 16), (8, 16), (0, 0), (8, 0)))
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((16, 64)).astype(np.float32), rng.standard_normal((64, 8)).astype(np.float32)
    desc = _desc("moduli=6", a)
    _, res, _ = fi.run_ozaki2(a, b, desc)
    assert (res != _executor_residues(a, b, 6)).any()


#: CI: the representative (moduli=8) on every shape, the other modulus counts on 37x70x20; 1x1x1 of
#: those with -m slow
CASES = [pytest.param(c, d, s, marks=() if c == "moduli=8" or s != (1, 1, 1) else pytest.mark.slow)
         for c, d in [("moduli=8", np.float32), ("moduli=5", np.float32), ("moduli=14", np.float64),
                      ("moduli=20", np.float64)] for s in [(37, 70, 20), (1, 1, 1)]]
CASES += [("moduli=8", np.float32, (130, 33, 65))]  # several CTAs in M and N (one modulus count suffices)


@pytest.mark.parametrize("config,dtype,shape", CASES)
def test_random_shapes_bit_equal(config, dtype, shape):
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    _check(rng.standard_normal((m, k)).astype(dtype), rng.uniform(-1, 1, (k, n)).astype(dtype), config)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adversarial_bit_equal(dtype):
    rng = np.random.default_rng(4)
    m, k, n = 24, 96, 16
    # rows and columns 2^±60 apart, a wide range along K, zero rows, subnormals, cancellation
    a = rng.standard_normal((m, k)) * 2.0 ** rng.integers(-60, 61, (m, 1)) * 2.0 ** rng.integers(-30, 31, (1, k))
    b = rng.standard_normal((k, n)) * 2.0 ** rng.integers(-60, 61, (1, n))
    a[3] = 0.0
    a[5, :7] = np.finfo(dtype).tiny / 8
    _check(a.astype(dtype), b.astype(dtype), "moduli=10" if dtype == np.float32 else "moduli=16")
    c = rng.standard_normal((k, 4)).astype(dtype)
    _check(a.astype(dtype), np.concatenate([c, -c], axis=1), "moduli=8")
    _check(np.full((16, 32), np.finfo(dtype).max / 4, dtype), np.full((32, 8), 8.0, dtype), "moduli=9")  # -> inf


def test_inputs_the_kernels_hand_back_and_configs_they_refuse():
    a = np.ones((16, 32), np.float32)
    a[1, 2] = np.inf
    assert fi.run_ozaki2(a, np.ones((32, 8), np.float32), _desc("moduli=8", a))[2] == fi.STATUS_NONFINITE
    with pytest.raises(UnsupportedConfig, match="accurate"):
        kernel_desc("ozaki2", "moduli=8,mode=accurate")
    with pytest.raises(UnsupportedConfig, match="product mode"):
        kernel_desc("ozaki2", "moduli=8", alpha_beta="update")
    with pytest.raises(ValueError, match="K="):
        kernel_desc("ozaki2", "moduli=8").launches(64, 64, MAX_K + 1)
