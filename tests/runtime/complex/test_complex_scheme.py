"""The complex wrapper's Scheme face: configs and labels, errors that name the fix, the
cost description, the statistics, and the documented error behaviour of form 3."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.complex import COMPLEX, ComplexConfig, complex_gemm
from mixjit.runtime.schemes.base import get_scheme


@pytest.mark.parametrize("cdt,real", [(np.complex64, "mixpert"), (np.complex128, "mixpert-fp64"),
                                      (np.complex64, "ozaki2"), (np.complex128, "tf32x3"), (np.complex64, "bf16x6")])
def test_configs_compose_the_real_configs_and_labels_round_trip(cdt, real):
    configs = COMPLEX.configs(cdt, real=real)
    scheme = get_scheme(configs[0].real)
    w = np.float32 if cdt == np.complex64 else np.float64
    reals = [scheme.parse_config("products=6")] if real == "bf16x6" else list(scheme.configs(w))
    composed = [(f, rc) for rc in reals for f in (4, 3)]
    assert sorted(map(str, ((c.form, c.real_config) for c in configs))) == sorted(map(str, composed))
    products = [COMPLEX.products(c) for c in configs]  # the tuner's order: never more products later
    assert products == sorted(products, reverse=True) and configs[0] == COMPLEX.configs(cdt, real)[0]
    assert (configs[0].form, configs[0].real_config) == composed[0]
    for c in configs:
        assert COMPLEX.parse_config(c.label) == c
        assert c.label.startswith(f"form={c.form},real={scheme.name}(")


def test_default_config_is_form4_over_the_default_plan_scheme():
    c64, c128 = COMPLEX.default_config(np.complex64), COMPLEX.default_config(np.complex128)
    assert (c64.form, c64.real, c64.real_config) == (4, "mixpert", get_scheme("mixpert").default_config(np.float32))
    assert (c128.form, c128.real) == (4, "mixpert-fp64")
    assert c128.real_config == get_scheme("mixpert-fp64").default_config(np.float64)


@pytest.mark.parametrize("text,fragment", [
    ("form=5,real=tf32x3(products=3)", "choose 4"),
    ("form=x,real=tf32x3(products=3)", "is not 4 or 3"),
    ("form=4,tf32x3(products=3)", "form=<4|3>,real=<scheme>"),
    ("form=4,real=tf32x3(products=2)", "products=2 is not a config"),
    ("form=4,real=nosuch(x=1)", "unknown GEMM scheme 'nosuch'"),
])
def test_bad_labels_name_the_problem(text, fragment):
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(").replace("|", r"\|")):
        COMPLEX.parse_config(text)


def test_operand_errors_name_the_fix():
    a = np.ones((2, 3), np.complex64)
    with pytest.raises(TypeError, match="one dtype.*astype"):
        complex_gemm(a, np.ones((3, 2), np.complex128), "tf32x3")
    with pytest.raises(TypeError, match="complex64 or complex128.*astype"):
        complex_gemm(np.ones((2, 3)), np.ones((3, 2)), "tf32x3")
    with pytest.raises(ValueError, match="inner dimensions"):
        complex_gemm(a, np.ones((2, 2), np.complex64), "tf32x3")
    with pytest.raises(TypeError, match="'mixpert-fp64' takes float64 parts, not float32"):
        complex_gemm(a, np.ones((3, 2), np.complex64), "mixpert-fp64")
    with pytest.raises(TypeError, match="expected a ComplexConfig"):
        COMPLEX.run(a, np.ones((3, 2), np.complex64), get_scheme("tf32x3").default_config())


@pytest.mark.parametrize("real,cdt", [("mixpert", np.complex64), ("ozaki2", np.complex128),
                                      ("tf32x3", np.complex64), ("vitbit", np.complex64)])
def test_work_is_the_real_products_plus_the_wrappers_passes(real, cdt):
    m, n, k = 96, 80, 200
    w = np.dtype(np.float32 if cdt == np.complex64 else np.float64)
    scheme = get_scheme(real)
    rc = scheme.configs(w)[0]
    one = scheme.work(rc, m, n, k, w)
    s = w.itemsize
    for form in (4, 3):
        cfg = ComplexConfig(form, real, rc)
        got = COMPLEX.work(cfg, m, n, k, cdt)
        assert got.ops == {cls: form * v for cls, v in one.ops.items()}
        extra = 4 * s * (m * k + k * n) + 2 * form * s * m * n + (3 * s * (m * k + k * n) if form == 3 else 0)
        assert got.bytes_moved == form * one.bytes_moved + extra
        assert got.concurrent == one.concurrent
        assert COMPLEX.products(cfg) == form * scheme.products(rc)


def test_stats_add_the_real_products():
    a = np.full((3, 4), np.inf + 1j, np.complex64)  # every element of A non-finite in its real part
    b = np.ones((4, 2), np.complex64)
    with np.errstate(all="ignore"):
        _, stats = COMPLEX.run_with_stats(a, b, ComplexConfig(4, "tf32x3", get_scheme("tf32x3").default_config()))
    per = [s.fallbacks for s in stats.extra["real"]]
    assert per == [6, 0, 6, 0]  # the products with Ar: every element takes the non-finite rule
    assert stats.fallbacks == 12 and stats.units == 4 * 6 and "inf/NaN" in stats.fallback_reason


def test_form3_loses_the_small_imaginary_part_when_parts_are_far_apart():
    """docs/numerics.md: with |Ai| >> |Ar| and |Bi| >> |Br| (2^20), form 3's Im C error is about
    2^20 times form 4's; Re C is the same."""
    rng = np.random.default_rng(7)
    n = 64
    a = rng.uniform(-1, 1, (n, n)) + 1j * np.ldexp(rng.uniform(-1, 1, (n, n)), 20)
    b = rng.uniform(-1, 1, (n, n)) + 1j * np.ldexp(rng.uniform(-1, 1, (n, n)), 20)
    a64, b64 = a.astype(np.complex64), b.astype(np.complex64)
    exact = a64.astype(np.complex128) @ b64.astype(np.complex128)

    def im_error(c):
        return np.linalg.norm(c.imag - exact.imag) / np.linalg.norm(exact.imag)

    e4 = im_error(complex_gemm(a64, b64, "bf16xn", form=4))
    e3 = im_error(complex_gemm(a64, b64, "bf16xn", form=3))
    assert e4 < 1e-7
    assert 2.0**17 < e3 / e4 < 2.0**23


@pytest.mark.parametrize("cdt", [np.complex64, np.complex128])
def test_complex_gemm_defaults_to_the_default_config(cdt):
    rng = np.random.default_rng(11)
    a = (rng.standard_normal((5, 7)) + 1j * rng.standard_normal((5, 7))).astype(cdt)
    b = (rng.standard_normal((7, 3)) + 1j * rng.standard_normal((7, 3))).astype(cdt)
    for form in (4, 3):
        cfg = COMPLEX.default_config(cdt)
        want = COMPLEX.run(a, b, ComplexConfig(form, cfg.real, cfg.real_config))
        got = complex_gemm(a, b, form=form)
        assert got.dtype == np.dtype(cdt) and np.array_equal(got, want)


def test_a_config_names_a_scheme_and_one_of_its_configs():
    with pytest.raises(ValueError, match="names one config of scheme 'bf16xn'"):
        ComplexConfig(4, "bf16x6", get_scheme("bf16xn").parse_config("products=6"))
    with pytest.raises(TypeError, match="must be a config of the real scheme 'mixpert'"):
        ComplexConfig(4, "mixpert", get_scheme("tf32x3").default_config())
    with pytest.raises(ValueError, match="products=2 is not a config"):
        ComplexConfig(4, "tf32x3", type(get_scheme("tf32x3").default_config())(2))
