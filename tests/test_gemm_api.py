"""mixjit.gemm: argument validation, views, out=, zero sizes, config forms."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit import gemm
from mixjit.runtime.schemes import get_scheme

SCHEMES = ["native", "tf32x3", "bf16xn", "fp16x2", "int8", "split"]


@pytest.fixture
def ab():
    rng = np.random.default_rng(11)
    return rng.standard_normal((6, 9)).astype(np.float32), rng.standard_normal((9, 5)).astype(np.float32)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_views_give_the_same_bits_as_contiguous_copies(scheme):
    rng = np.random.default_rng(12)
    big_a = rng.standard_normal((18, 20)).astype(np.float32)
    big_b = rng.standard_normal((20, 30)).astype(np.float32)
    a_view = big_a[::3, 1::2]  # 6x10, non-contiguous
    b_view = big_b[::2, ::6].T.T  # 10x5, strided
    at = np.ascontiguousarray(a_view.T).T  # Fortran-ordered 6x10
    want = gemm(np.ascontiguousarray(a_view), np.ascontiguousarray(b_view), scheme=scheme)
    for a, b in ((a_view, b_view), (at, b_view), (a_view, np.asfortranarray(b_view))):
        got = gemm(a, b, scheme=scheme)
        assert (got.view(np.uint32) == want.view(np.uint32)).all()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_out_is_filled_and_returned(scheme, dtype, ab):
    a, b = (x.astype(dtype) for x in ab)
    out = np.full((6, 5), -1.0, dtype=dtype)
    res = gemm(a, b, scheme=scheme, out=out)
    assert res is out
    np.testing.assert_array_equal(out, gemm(a, b, scheme=scheme))
    # a non-contiguous out view
    buf = np.zeros((12, 5), dtype=dtype)
    gemm(a, b, scheme=scheme, out=buf[::2])
    np.testing.assert_array_equal(buf[::2], out)
    assert (buf[1::2] == 0).all()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("m,k,n", [(0, 4, 3), (3, 0, 4), (3, 4, 0), (0, 0, 0)])
def test_zero_size(scheme, m, k, n):
    for dtype in (np.float32, np.float64):
        c = gemm(np.ones((m, k), dtype), np.ones((k, n), dtype), scheme=scheme)
        assert c.shape == (m, n) and c.dtype == dtype and not c.any()


def test_config_as_text_object_or_default(ab):
    a, b = ab
    s = get_scheme("bf16xn")
    by_text = gemm(a, b, scheme="bf16xn", config="products=3")
    by_obj = gemm(a, b, scheme="bf16xn", config=s.parse_config("products=3"))
    np.testing.assert_array_equal(by_text, by_obj)
    np.testing.assert_array_equal(gemm(a, b, scheme="bf16xn"), gemm(a, b, scheme="bf16xn", config="products=9"))
    assert not np.array_equal(by_text, gemm(a, b, scheme="bf16xn", config="products=1"))
    with pytest.raises(ValueError, match="products=4 is not a config"):
        gemm(a, b, scheme="bf16xn", config="products=4")


def test_validation_errors(ab):
    a, b = ab
    with pytest.raises(ValueError, match="2-D"):
        gemm(a[0], b, scheme="native")
    with pytest.raises(ValueError, match="2-D"):
        gemm(a, b[None], scheme="native")
    with pytest.raises(TypeError, match="dtype int64"):
        gemm(a.astype(np.int64), b.astype(np.int64), scheme="tf32x3")
    with pytest.raises(TypeError, match="A is float32 but B is float64"):
        gemm(a, b.astype(np.float64), scheme="tf32x3")
    with pytest.raises(ValueError, match="inner dimensions differ"):
        gemm(a, b[:-1], scheme="int8")
    with pytest.raises(ValueError, match="unknown GEMM scheme 'tf32x9'.*tf32x3"):
        gemm(a, b, scheme="tf32x9")
    with pytest.raises(ValueError, match="out must be a 6x5 float32"):
        gemm(a, b, scheme="int8", out=np.zeros((5, 6), np.float32))
    with pytest.raises(ValueError, match="out must be a 6x5 float32"):
        gemm(a, b, scheme="int8", out=np.zeros((6, 5), np.float64))
    ro = np.zeros((6, 5), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gemm(a, b, scheme="int8", out=ro)


def test_float64_inputs_get_float32_domain_results(ab):
    a, b = (x.astype(np.float64) for x in ab)
    c = gemm(a, b, scheme="tf32x3")
    assert c.dtype == np.float64
    np.testing.assert_array_equal(c, c.astype(np.float32))  # rounded once to float32


# --------------------------------------------------------------- scheme aliases


@pytest.mark.parametrize("products", [3, 6, 9])
def test_bf16_alias_names_one_config_of_bf16xn(products: int) -> None:
    rng = np.random.default_rng(products)
    a = rng.uniform(-1, 1, (9, 70)).astype(np.float32)
    b = rng.uniform(-1, 1, (70, 5)).astype(np.float32)
    via_alias = gemm(a, b, scheme=f"bf16x{products}")
    via_config = gemm(a, b, scheme="bf16xn", config=f"products={products}")
    assert np.array_equal(via_alias, via_config)


def test_bf16_aliases_differ_from_each_other() -> None:
    # The aliases must select different configs, not all fall through to one default.
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (16, 64)).astype(np.float32)
    b = rng.uniform(-1, 1, (64, 16)).astype(np.float32)
    assert not np.array_equal(gemm(a, b, scheme="bf16x3"), gemm(a, b, scheme="bf16x6"))


def test_alias_with_explicit_config_is_refused() -> None:
    a = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match="already fixes config 'products=6'.*scheme='bf16xn'"):
        gemm(a, a, scheme="bf16x6", config="products=3")


def test_get_scheme_on_alias_points_to_resolve_scheme() -> None:
    with pytest.raises(ValueError, match="resolve_scheme"):
        get_scheme("bf16x9")


def test_unknown_scheme_lists_aliases() -> None:
    with pytest.raises(ValueError, match="bf16x6"):
        gemm(np.ones((2, 2)), np.ones((2, 2)), scheme="nope")


# ------------------------------------------------------- defaults and odd inputs


def test_default_scheme_follows_the_dtype() -> None:
    # float64 inputs default to the FP64 emulation, not the FP32-domain mixpert.
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((12, 40)), rng.standard_normal((40, 7))
    assert np.array_equal(gemm(a, b), gemm(a, b, scheme="mixpert-fp64"))
    ref = a @ b
    assert np.linalg.norm(gemm(a, b) - ref) / np.linalg.norm(ref) < 1e-14
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    assert np.array_equal(gemm(a32, b32), gemm(a32, b32, scheme="mixpert"))


def test_dtype_error_suggests_only_accepted_dtypes() -> None:
    a = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match=r"Convert with A\.astype\(np\.float64\)$"):
        gemm(a, a, scheme="mixpert-fp64")


def test_byte_swapped_inputs_are_accepted() -> None:
    rng = np.random.default_rng(6)
    a = rng.uniform(-1, 1, (5, 9)).astype(np.float32)
    b = rng.uniform(-1, 1, (9, 4)).astype(np.float32)
    assert np.array_equal(gemm(a.astype(">f4"), b.astype(">f4")), gemm(a, b))


def test_out_must_be_an_ndarray() -> None:
    a = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match="out must be a numpy ndarray, got list"):
        gemm(a, a, out=[[0.0, 0.0], [0.0, 0.0]])
