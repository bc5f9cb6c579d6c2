"""Complex products at @mixjit sites: detected, run as real products of the parts under the
tuned real scheme (or cgemm/zgemm for native), tuned under the budget with the imaginary parts
judged on their own, bit for bit what mixjit.gemm gives."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mixjit import gemm, mixjit
from mixjit.tuning.outputs import relative_frobenius

RNG = np.random.default_rng(24)


def _complex(shape, dtype, im_scale=1.0):
    return (RNG.standard_normal(shape) + 1j * im_scale * RNG.standard_normal(shape)).astype(dtype)


def _exact(a, b):
    return a.astype(np.complex128) @ b.astype(np.complex128)


def _product(a, b):
    return a @ b


def _hermitian_form(w, x, c):
    c[:, :] += np.conj(w).T @ x
    return w.conj().T @ x


def test_complex_products_are_sites_and_native_runs_what_njit_runs():
    f = mixjit(schemes=("native",), tune="never")(_hermitian_form)
    w, x, c = _complex((9, 5), np.complex128), _complex((9, 4), np.complex128), _complex((5, 4), np.complex128)
    c_ref = c.copy()
    got = f(w, x, c)
    want = njit(_hermitian_form)(w, x, c_ref)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(c, c_ref)
    sites = [s for s in f.sites if s.taken]
    assert [s.dtype for s in sites] == ["complex128", "complex128"]
    assert all(s.plan.scheme == "native" for s in sites) and all(s.calls == 1 for s in sites)


def test_a_tuned_complex64_site_runs_an_emulated_config_within_budget_on_held_out_inputs():
    """Where the model says emulation pays (384 x 384 x 384 on an A100), the tuner picks a
    complex config; on new inputs it stays within the budget and equals mixjit.gemm bit for bit."""
    budget = 1e-4
    f = mixjit(error_budget=budget, target="a100", workers=1)(_product)
    f(_complex((384, 384), np.complex64), _complex((384, 384), np.complex64))
    (site,) = [s for s in f.sites if s.taken]
    assert site.plan.scheme == "complex", site.plan
    a, b = _complex((384, 384), np.complex64), _complex((384, 384), np.complex64)
    got = f(a, b)
    assert relative_frobenius(got, _exact(a, b)) <= budget
    np.testing.assert_array_equal(got, gemm(a, b, "complex", site.plan.config))


def test_imaginary_parts_are_judged_on_their_own():
    """Imaginary parts 2^-20 of the real ones: Gauss's 3-product form keeps the whole's norm and
    loses the imaginary parts. The tuned plan keeps both parts within the budget."""
    budget = 1e-4
    f = mixjit(error_budget=budget, target="a100", workers=1)(_product)
    scale = 2.0**-20
    f(_complex((384, 384), np.complex64, scale), _complex((384, 384), np.complex64, scale))
    a, b = _complex((384, 384), np.complex64, scale), _complex((384, 384), np.complex64, scale)
    got, want = f(a, b), _exact(a, b)
    assert relative_frobenius(got.imag, want.imag) <= budget
    (site,) = [s for s in f.sites if s.taken]
    assert "form=3" not in site.plan.config


@pytest.mark.parametrize("metric_case", ["whole", "imaginary"])
def test_the_default_metric_takes_the_worst_of_the_whole_and_each_part(metric_case):
    ref = _complex((6, 6), np.complex128, 1e-6)
    out = ref.copy()
    if metric_case == "imaginary":
        out.imag *= 1.01  # 1% off in the tiny imaginary parts: nothing in the whole's norm
        assert relative_frobenius(out, ref) == pytest.approx(0.01, rel=1e-6)
    else:
        out.real *= 1.01
        assert relative_frobenius(out, ref) == pytest.approx(0.01, rel=1e-6)
