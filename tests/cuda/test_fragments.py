"""The CPU model of the generated MixPert kernels (runtime/mixpert/cuda/fragments.py, on runtime/cuda/fragments.py) against the CPU
executor, bit for bit, and the PTX fragment tables it is built on."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mixjit
from mixjit.runtime.cuda import fragments
from mixjit.runtime.cuda.emit import template_text
from mixjit.runtime.cuda.fragments import a_element, b_element, c_element, mma_m16n8k32, round_to_f32
from mixjit.runtime.mixpert.cuda import fragments as mixpert_fragments
from mixjit.runtime.mixpert.cuda.desc import KernelDesc
from mixjit.runtime.mixpert.cuda.fragments import STATUS_FALLBACK, STATUS_NONFINITE, STATUS_SPAN, run_gemm

CONFIGS = ["level=IV", "level=I", "level=III", "level=full", "level=full,align=row", "level=II,rounding=trunc",
           "segments=4,pairs=sig3", "level=IV,digits=balanced", "level=IV,digits=balanced,align=row"]


def _check(a: np.ndarray, b: np.ndarray, config: str, **desc_kw) -> None:
    desc = KernelDesc.for_config("mixpert", config, dtype="f64" if a.dtype == np.float64 else "f32", **desc_kw)
    got, status = run_gemm(a, b, desc)
    assert status == 0, f"inputs left the main path (status {status}): not a main-path test"
    want = mixjit.gemm(a, b, scheme="mixpert", config=config)
    bits = np.uint64 if a.dtype == np.float64 else np.uint32
    diff = got.view(bits) != want.view(bits)
    assert not diff.any(), f"{config}: {diff.sum()} elements differ, first at {np.argwhere(diff)[0]}"


def test_model_loads_are_the_templates_loads():
    """The fragment loads the model runs are read out of imma.cuh (which mixpert_gemm.cu calls),
    so the model cannot drift from the kernel."""
    imma = template_text("imma.cuh")  # load_fragments_s8, which the kernel calls on planes pa and pb
    assert "load_fragments_s8(fa, fb, s.a[stage][pa], s.b[stage][pb]," in template_text("mixpert_gemm.cu")
    a = re.findall(r"fa\[mi\]\[(\d)\] = .*?&a\[r( \+ 8)?\]\[(16 \+ )?4 \* t\]", imma)
    b = re.findall(r"fb\[ni\]\[(\d)\] = .*?&b\[col\]\[(16 \+ )?4 \* t\]", imma)
    assert [int(j) for j, _, _ in a] == [0, 1, 2, 3] and [int(j) for j, _ in b] == [0, 1]
    assert tuple((8 if r else 0, 16 if c else 0) for _, r, c in a) == fragments.A_LOADS
    assert tuple(16 if c else 0 for _, c in b) == fragments.B_LOADS


def test_a_wrong_fragment_layout_is_caught(monkeypatch):
    """The bit-equality check has teeth: with rows g and g+8 of the A fragment swapped (a wrong
    load layout) the model no longer matches the executor."""
    monkeypatch.setattr(mixpert_fragments, "A_LOADS", ((8, 0), (0, 0), (8, 16), (0, 16)))
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, (16, 32)).astype(np.float32), rng.uniform(-1, 1, (32, 8)).astype(np.float32)
    got, _ = run_gemm(a, b, KernelDesc.for_config("mixpert", "level=I"))
    assert got.tobytes() != mixjit.gemm(a, b, scheme="mixpert", config="level=I").tobytes()


@pytest.mark.parametrize("lane_table,n,shape", [(a_element, 16, (16, 32)), (b_element, 8, (32, 8)),
                                                (c_element, 4, (16, 8))])
def test_fragment_tables_cover_each_element_once(lane_table, n, shape):
    seen = np.zeros(shape, int)
    for lane in range(32):
        for i in range(n):
            seen[lane_table(lane, i)] += 1
    assert (seen == 1).all()


def test_mma_model_is_a_matrix_product():
    rng = np.random.default_rng(0)
    A = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    B = rng.integers(-128, 128, (32, 8)).astype(np.int8)
    a = np.zeros((32, 16), np.int8)
    b = np.zeros((32, 8), np.int8)
    for lane in range(32):
        for i in range(16):
            a[lane, i] = A[a_element(lane, i)]
        for i in range(8):
            b[lane, i] = B[b_element(lane, i)]
    d = mma_m16n8k32(a.view(np.uint32), b.view(np.uint32))
    D = A.astype(np.int64) @ B.astype(np.int64)
    for lane in range(32):
        for i in range(4):
            assert d[lane, i] == D[c_element(lane, i)]


SHAPES = [(16, 32, 8), (37, 70, 45), (65, 33, 9), (1, 1, 1)]


#: CI: the representative config (level=IV) on every shape, every config on the ragged 37x70x45;
#: the rest of the sweep with -m slow
@pytest.mark.parametrize("config,shape", [
    pytest.param(c, s, marks=() if c == CONFIGS[0] or s == SHAPES[1] else pytest.mark.slow)
    for c in CONFIGS for s in SHAPES])
def test_random_shapes_bit_equal(config, shape):
    m, k, n = shape
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    _check(rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32), config)


def test_float64_inputs_and_other_block_shapes():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((50, 96)), rng.standard_normal((96, 40))
    _check(a, b, "level=IV")
    _check(a.astype(np.float32), b.astype(np.float32), "level=IV,tile=16x64x8", block=(32, 64), warps=(2, 2))


@pytest.mark.parametrize("config", ["level=IV", pytest.param("level=full,align=row", marks=pytest.mark.slow),
                                    pytest.param("level=IV,digits=balanced", marks=pytest.mark.slow),
                                    "level=full,digits=balanced,align=row"])
def test_adversarial_bit_equal(config):
    rng = np.random.default_rng(3)
    m, k, n = 48, 160, 24
    # wide exponent span along K (each k-tile scaled by 2^U(-16, 16)): the exact accumulator shifts
    ks = np.repeat(2.0 ** rng.integers(-16, 17, k // 32), 32)
    a = (rng.uniform(-1, 1, (m, k)) * ks).astype(np.float32)
    b = (rng.uniform(-1, 1, (k, n)) * ks[:, None]).astype(np.float32)
    _check(a, b, config)
    # per alignment-tile scales across rows/columns, far apart
    a2 = (rng.uniform(-1, 1, (m, k)) * np.repeat(2.0 ** rng.integers(-60, 61, m // 16), 16)[:, None]).astype(np.float32)
    b2 = (rng.uniform(-1, 1, (k, n)) * np.repeat(2.0 ** rng.integers(-60, 61, n // 8), 8)[None, :]).astype(np.float32)
    _check(a2, b2, config)
    # mantissas that carry when rounded to W bits, and exact cancellation (C = 0 -> +0)
    top = np.float32(1 - 2.0 ** -24) * np.sign(rng.uniform(-1, 1, (m, k))).astype(np.float32)
    _check(top, np.concatenate([b, -b], axis=1), config)
    # results that overflow to inf and that underflow to subnormals / zero
    _check(np.full((16, 32), 2.0 ** 100, np.float32), np.full((32, 8), 2.0 ** 30, np.float32), config)
    _check((rng.uniform(-1, 1, (m, k)) * 2.0 ** -70).astype(np.float32),
           (rng.uniform(-1, 1, (k, n)) * 2.0 ** -75).astype(np.float32), config)
    # subnormal inputs throughout an operand
    _check((rng.uniform(-1, 1, (m, k)) * 2.0 ** -130).astype(np.float32), b * np.float32(2.0 ** 20), config)


def test_nonfinite_and_fallback_inputs_leave_the_main_path():
    desc = KernelDesc.for_config("mixpert", "level=IV")
    a = np.ones((16, 32), np.float32)
    a[3, 4] = np.inf
    assert run_gemm(a, np.ones((32, 8), np.float32), desc)[1] & STATUS_NONFINITE
    wide = (2.0 ** np.arange(-40, 40, 2.5)[:32]).astype(np.float32) * np.ones((16, 1), np.float32)
    assert run_gemm(wide, np.ones((32, 8), np.float32), desc)[1] & STATUS_FALLBACK
    # a span along K beyond the two-word accumulator (2^-60 and 2^60 k-tiles in both operands)
    ks = np.repeat(np.array([2.0 ** -60, 2.0 ** 60], np.float32), 32)
    assert run_gemm(np.ones((16, 64), np.float32) * ks, np.ones((64, 8), np.float32) * ks[:, None], desc)[1] & STATUS_SPAN


@pytest.mark.parametrize("acc,scale,want", [
    (0, 0, 0.0), (3, -1, 1.5), ((1 << 24) + 1, 0, 16777216.0), ((1 << 24) + 3, 0, 16777220.0),
    (1, -149, 2.0 ** -149), (1, -150, 0.0), (3, -151, 2.0 ** -149), (-1, -150, 0.0), (1, 128, np.inf),
    ((1 << 24) - 1, 104, np.float32(3.4028235e38)), ((1 << 25) - 1, 103, np.inf)])
def test_round_to_f32(acc, scale, want):
    got = round_to_f32(acc, scale)
    assert got.dtype == np.float32 and got.tobytes() == np.float32(want).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("alpha,beta", [(-1.0, 1.0), (0.5, 0.0), (3.0, -0.25)])
def test_update_epilogue_is_the_frontends_axpby(dtype, alpha, beta):
    """C = alpha*P + beta*C element by element in C's dtype, P the executor's product (the
    arithmetic of mixjit/entry.py for a MixPert site with alpha/beta)."""
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((33, 64)).astype(dtype), rng.standard_normal((64, 17)).astype(dtype)
    c0 = rng.standard_normal((33, 17)).astype(dtype)
    desc = KernelDesc.for_config("mixpert", "level=IV", dtype="f64" if dtype == np.float64 else "f32",
                                 alpha_beta="update")
    got, status = run_gemm(a, b, desc, alpha, beta, c0)
    assert status == 0
    p = mixjit.gemm(a, b, scheme="mixpert", config="level=IV")
    t = np.dtype(dtype).type
    want = t(alpha) * p if beta == 0.0 else t(alpha) * p + t(beta) * c0
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("config", ["level=IV,digits=balanced", "level=full,digits=balanced,align=row"])
def test_balanced_bump_at_the_largest_exponent(config):
    """Near FLT_MAX the +128 edge bumps a group to E = emax + 1, where a shift that would round
    up to 2^128 truncates instead (docs/numerics.md step 3)."""
    rng = np.random.default_rng(5)
    top = np.float32(np.finfo(np.float32).max)
    a = (top * rng.uniform(0.995, 1.0, (16, 32))).astype(np.float32)
    a[:, ::3] *= np.float32(-0.5)
    a[0, 1], a[5, 7] = top, -top  # M = 2^W - 1 (truncated split): the bumped shift rounds up to 2^(W-1)
    b = (rng.uniform(-1, 1, (32, 8)) * 2.0 ** -130).astype(np.float32)
    _check(a, b, config)
    _check(b.T.copy(), a.T.copy(), config)
