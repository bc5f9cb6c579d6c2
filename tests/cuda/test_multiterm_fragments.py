"""The CPU model of the tf32x3 / bf16xN kernels (runtime/multiterm/cuda/fragments.py): with an
exact accumulator it is bit-equal to the CPU executor on any data (packing, planes, fragment
layouts, pair selection); with a per-MMA FP32 accumulator it is bit-equal where every partial
sum is exact in FP32, and within the FP32 accumulation bound elsewhere."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mixjit
from mixjit.runtime.cuda.emit import template_text
from mixjit.runtime.cuda.fragments import c_element
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.multiterm.cuda import fragments as fm
from mixjit.runtime.multiterm.cuda.desc import PAIR_ORDER, MultiTermDesc, parse_products
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.emulation import PAIR_ORDER as SCHEME_PAIR_ORDER

CONFIGS = [("tf32x3", "products=3"), ("tf32x3", "products=1"), ("bf16xn", "products=9"),
           ("bf16xn", "products=6"), ("bf16xn", "products=3"), ("bf16xn", "products=1")]


def _desc(scheme: str, config: str, a: np.ndarray, **kw) -> MultiTermDesc:
    return kernel_desc(scheme, config, dtype="f64" if a.dtype == np.float64 else "f32", **kw)


def _check(a, b, scheme, config, accumulate="exact", **kw) -> None:
    got, status = fm.run_gemm(a, b, _desc(scheme, config, a, **kw), accumulate)
    assert status == 0, f"inputs left the main path (status {status}): not a main-path test"
    want = mixjit.gemm(a, b, scheme=scheme, config=config)
    bits = np.uint64 if a.dtype == np.float64 else np.uint32
    diff = got.view(bits) != want.view(bits)
    assert not diff.any(), f"{scheme}[{config}] {accumulate}: {diff.sum()} differ, first at {np.argwhere(diff)[0]}"


# -- the desc agrees with the schemes ----------------------------------------------------------
def test_pair_order_is_the_schemes():
    assert PAIR_ORDER == SCHEME_PAIR_ORDER


@pytest.mark.parametrize("scheme,label", [("tf32x3", ""), ("tf32x3", "products=1"), ("bf16xn", ""),
                                          ("bf16xn", "products=6")])
def test_products_parser_agrees_with_the_scheme(scheme, label):
    assert parse_products(scheme, label) == get_scheme(scheme).parse_config(label or
                                                                            get_scheme(scheme).configs()[0].label).products


@pytest.mark.parametrize("scheme,label", [("tf32x3", "products=6"), ("bf16xn", "products=2"), ("tf32x3", "level=IV"),
                                          ("bf16xn", "products=x")])
def test_bad_labels_raise(scheme, label):
    with pytest.raises(ValueError):
        parse_products(scheme, label)


def test_aliases_and_issue_order():
    d = kernel_desc("bf16x6", "")
    assert (d.scheme, d.products, d.parts) == ("bf16xn", 6, 3)
    assert kernel_desc("tf32x3", "products=3").issue_order == ((1, 0), (0, 1), (0, 0))


# -- the PTX tables and the template's loads ---------------------------------------------------
def test_model_loads_are_the_templates_loads():
    text = template_text("multiterm_gemm.cu")
    a = re.findall(r"fa\[mi\]\[(\d)\] = s\.a\[stage\]\[pa_\]\[r( \+ 8)?\]\[w0 \+ t( \+ 4)?\]", text)
    b = re.findall(r"fb\[ni\]\[(\d)\] = s\.b\[stage\]\[pb_\]\[cidx\]\[w0 \+ t( \+ 4)?\]", text)
    assert [int(j) for j, _, _ in a] == [0, 1, 2, 3] and [int(j) for j, _ in b] == [0, 1]
    assert tuple((8 if r else 0, 4 if c else 0) for _, r, c in a) == fm.A_LOADS
    assert tuple(4 if c else 0 for _, c in b) == fm.B_LOADS


@pytest.mark.parametrize("fmt,na,nb,shape_a,shape_b", [("tf32", 4, 2, (16, 8), (8, 8)),
                                                       ("bf16", 8, 4, (16, 16), (16, 8))])
def test_fragment_tables_cover_each_element_once(fmt, na, nb, shape_a, shape_b):
    for table, n, shape in ((fm.a_element, na, shape_a), (fm.b_element, nb, shape_b)):
        seen = np.zeros(shape, int)
        for lane in range(32):
            for i in range(n):
                seen[table(fmt, lane, i)] += 1
        assert (seen == 1).all()


@pytest.mark.parametrize("fmt", ["tf32", "bf16"])
def test_mma_model_is_a_matrix_product(fmt):
    rng = np.random.default_rng(1)
    mk = 8 if fmt == "tf32" else 16
    A = rng.integers(-64, 64, (16, mk)).astype(np.float32)
    B = rng.integers(-64, 64, (mk, 8)).astype(np.float32)
    per_reg = 1 if fmt == "tf32" else 2
    a = np.zeros((32, 4 * per_reg), np.float32)
    b = np.zeros((32, 2 * per_reg), np.float32)
    for lane in range(32):
        for i in range(4 * per_reg):
            a[lane, i] = A[fm.a_element(fmt, lane, i)]
        for i in range(2 * per_reg):
            b[lane, i] = B[fm.b_element(fmt, lane, i)]
    if fmt == "bf16":  # two bf16 (the high halves of the float32 patterns) per register
        a, b = (np.ascontiguousarray((x.view(np.uint32) >> 16).astype(np.uint16)).view(np.uint32) for x in (a, b))
    else:
        a, b = a.view(np.uint32), b.view(np.uint32)
    d = fm.mma(fmt, a, b, np.zeros((32, 4), object))
    D = A.astype(np.int64) @ B.astype(np.int64)
    for lane in range(32):
        for i in range(4):
            assert d[lane, i] == int(D[c_element(lane, i)]) << fm.EXACT_SCALE


def test_a_wrong_fragment_layout_is_caught(monkeypatch):
    monkeypatch.setattr(fm, "A_LOADS", ((8, 0), (0, 0), (8, 4), (0, 4)))
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, (16, 16)).astype(np.float32), rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    got, _ = fm.run_gemm(a, b, kernel_desc("tf32x3", "products=3"))
    assert got.tobytes() != mixjit.gemm(a, b, scheme="tf32x3", config="products=3").tobytes()


# -- exact accumulator: bit-equal to the executor on any data -----------------------------------
SHAPES = [(16, 16, 8), (37, 45, 20), (1, 1, 1)]
REPRESENTATIVE = (("tf32x3", "products=3"), ("bf16xn", "products=9"))


#: CI: each family's representative (tf32x3 products=3, bf16xn products=9) on every shape, every
#: config on the ragged 37x45x20; the rest of the sweep with -m slow
@pytest.mark.parametrize("scheme,config,shape", [
    pytest.param(sc, c, s, marks=() if (sc, c) in REPRESENTATIVE or s == SHAPES[1] else pytest.mark.slow)
    for sc, c in CONFIGS for s in SHAPES])
def test_exact_accumulator_bit_equal(scheme, config, shape):
    m, k, n = shape
    rng = np.random.default_rng(m * 100 + k + n)
    _check(rng.uniform(-1, 1, (m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32),
           scheme, config)


@pytest.mark.parametrize("scheme,config", [("tf32x3", "products=3"), ("bf16xn", "products=9")])
def test_exact_accumulator_adversarial(scheme, config):
    rng = np.random.default_rng(3)
    m, k, n = 20, 40, 12
    # wide exponent range along K and across rows, mantissas that carry when rounded to a part
    scale = 2.0 ** rng.integers(-60, 61, (m, 1)) * 2.0 ** rng.integers(-20, 21, (1, k))
    _check((rng.uniform(-1, 1, (m, k)) * scale).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32),
           scheme, config)
    top = np.float32(1 - 2.0 ** -24) * np.sign(rng.uniform(-1, 1, (m, k))).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    _check(top, np.concatenate([b, -b], axis=1), scheme, config)  # exact cancellation: +0
    _check(np.full((16, 16), 2.0 ** 100, np.float32), np.full((16, 8), 2.0 ** 30, np.float32), scheme, config)  # inf
    tiny_a = (rng.uniform(-1, 1, (m, k)) * 2.0 ** -68).astype(np.float32)
    tiny_b = (rng.uniform(-1, 1, (k, n)) * 2.0 ** -68).astype(np.float32)
    want = mixjit.gemm(tiny_a, tiny_b, scheme=scheme, config=config)
    assert ((want != 0) & (np.abs(want) < np.finfo(np.float32).tiny)).any(), "no subnormal results to test"
    _check(tiny_a, tiny_b, scheme, config)


def test_float64_inputs_other_blocks_and_update_mode():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((33, 50)), rng.standard_normal((50, 17))
    _check(a, b, "tf32x3", "products=3")
    _check(a.astype(np.float32), b.astype(np.float32), "bf16xn", "products=6", block=(32, 32), warps=(1, 2))
    c0 = rng.standard_normal((33, 17))
    got, status = fm.run_gemm(a, b, _desc("tf32x3", "products=3", a, alpha_beta="update"), "exact", -1.0, 0.5, c0)
    p = mixjit.gemm(a, b, scheme="tf32x3", config="products=3")
    assert status == 0 and got.tobytes() == (-1.0 * p + 0.5 * c0).tobytes()


# -- FP32 accumulator: what the model can and cannot prove --------------------------------------
def _exact_in_fp32(fmt: str, side: str, rng, m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Operands whose kept products and every partial sum are exact in FP32 (so any accumulation
    order gives the exact sum), with nonzero lower parts: ``side`` says which operand has them."""
    sign = lambda shape: rng.choice([-1.0, 1.0], shape)  # noqa: E731
    if fmt == "tf32":  # x = ±2^e (1 + t 2^-14): big 2^e, small t 2^(e-14); sums are multiples of 2^-14 below 2^10
        def many(shape):
            return sign(shape) * 2.0 ** rng.integers(0, 2, shape) * (1 + rng.integers(0, 8, shape) * 2.0 ** -14)
        return many((m, k)).astype(np.float32), many((k, n)).astype(np.float32)
    # bf16: parts 1, 2^-9, 2^-18 on one side, ±1 on the other: sums are multiples of 2^-18 below 2^6
    three = lambda shape: sign(shape) * (1 + rng.integers(0, 2, shape) * 2.0 ** -9  # noqa: E731
                                         + rng.integers(0, 2, shape) * 2.0 ** -18)
    two = lambda shape: sign(shape) * (1 + rng.integers(0, 2, shape) * 2.0 ** -9)  # noqa: E731
    if side == "a":
        return three((m, k)).astype(np.float32), sign((k, n)).astype(np.float32)
    if side == "b":
        return sign((m, k)).astype(np.float32), three((k, n)).astype(np.float32)
    return two((m, k)).astype(np.float32), two((k, n)).astype(np.float32)


@pytest.mark.parametrize("scheme,config,side", [
    ("tf32x3", "products=3", "both"), pytest.param("tf32x3", "products=1", "both", marks=pytest.mark.slow),
    ("bf16xn", "products=9", "a"), ("bf16xn", "products=9", "b"), ("bf16xn", "products=9", "both"),
    pytest.param("bf16xn", "products=6", "a", marks=pytest.mark.slow),
    pytest.param("bf16xn", "products=3", "both", marks=pytest.mark.slow)])
def test_fp32_accumulator_bit_equal_where_fp32_sums_are_exact(scheme, config, side):
    rng = np.random.default_rng(len(config) + len(side))
    fmt = "tf32" if scheme == "tf32x3" else "bf16"
    a, b = _exact_in_fp32(fmt, side, rng, 24, 48, 12)
    _check(a, b, scheme, config, accumulate="fp32")


@pytest.mark.parametrize("scheme,config", [("tf32x3", "products=3"), ("bf16xn", "products=9")])
def test_fp32_accumulator_within_the_documented_bound(scheme, config):
    """docs/cuda.md: |C_gpu - C_exec| <= 1 ulp(C_exec) + r * 2^-23 * sum_k sum_pairs |a_p b_q|, r the
    accumulator roundings per element (MMAs along K times kept pairs); checked on the model."""
    rng = np.random.default_rng(9)
    a, b = rng.uniform(-1, 1, (20, 64)).astype(np.float32), rng.standard_normal((64, 12)).astype(np.float32)
    desc = kernel_desc(scheme, config)
    got, status = fm.run_gemm(a, b, desc, "fp32")
    want = mixjit.gemm(a, b, scheme=scheme, config=config)
    assert status == 0
    rounds = -(-64 // desc.fmt.mma[2]) * len(desc.pairs)
    bound = np.spacing(np.abs(want)) + rounds * 2.0 ** -23 * (np.abs(a).astype(np.float64) @ np.abs(b))
    err = np.abs(got.astype(np.float64) - want)
    assert (err <= bound).all() and (got != want).any(), "the FP32 accumulator should differ somewhere here"


# -- inputs the kernels hand back ---------------------------------------------------------------
@pytest.mark.parametrize("scheme,config", [("tf32x3", "products=3"), ("bf16xn", "products=9")])
def test_status_bits(scheme, config):
    desc = kernel_desc(scheme, config)
    ones = np.ones((16, 16), np.float32)
    bad = ones.copy()
    bad[2, 3] = np.nan
    assert fm.run_gemm(bad, ones[:, :8], desc)[1] == fm.STATUS_NONFINITE
    big = ones.copy()
    big[0, 0] = np.float32(np.finfo(np.float32).max)
    assert fm.run_gemm(big, ones[:, :8], desc)[1] & fm.STATUS_PART_OVERFLOW
    tiny = ones.copy()
    tiny[1, 1] = np.float32(2.0 ** -130)
    assert fm.run_gemm(ones, tiny[:, :8], desc)[1] & fm.STATUS_TINY_PART
    assert fm.run_gemm(ones, ones[:, :8], desc)[1] == 0
