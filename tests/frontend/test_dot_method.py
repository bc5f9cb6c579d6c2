"""The array method ``a.dot(b)`` is a GEMM site with ``np.dot``'s meaning (issue 22 item 1):
2-D by 2-D, transposes folded (``a.T.dot(b)``), fused updates (``c[i] -= a.dot(b)``), 1-D and
matrix-vector forms left to Numba with np.dot's reasons; results equal ``@njit``'s bit for bit under
``native`` and the ``np.dot`` spelling's bit for bit under an emulated scheme. A GP posterior
written with ``.dot`` has its products taken and tunes."""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit

from mixjit import mixjit
from mixjit.decorator import MixjitWarning


def _methods(a, b, c):
    x = a.dot(b)                    # site: a.dot(b)
    y = a.T.dot(a)                  # site: transposed object (forms name the operands a, b)
    z = a.dot(b.T)                  # site: transposed argument
    c[:2, :] -= a[:2, :].dot(b)     # site: fused update, alpha = -1
    v = a[0].dot(a[0])              # not a GEMM: 1-D dot
    w = a.dot(b[:, 0])              # not a GEMM: matrix-vector
    return x, y, z, c, v, w


def _functions(a, b, c):
    x = np.dot(a, b)
    y = np.dot(a.T, a)
    z = np.dot(a, b.T)
    c[:2, :] -= np.dot(a[:2, :], b)
    v = np.dot(a[0], a[0])
    w = np.dot(a, b[:, 0])
    return x, y, z, c, v, w


def _inputs(dtype=np.float64):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 6)).astype(dtype)
    b = rng.standard_normal((6, 6)).astype(dtype)
    return a, b, rng.standard_normal((6, 6)).astype(dtype)


def _quiet(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MixjitWarning)
        return f(*args)


def test_dot_methods_are_sites_with_np_dot_forms_and_reasons():
    f = mixjit(schemes=["native"])(_methods)
    a, b, c = _inputs()
    _quiet(f, a, b, c.copy())
    taken = [(s.form, s.alpha, s.beta) for s in f.sites if s.taken]
    assert taken == [("a.dot(b)", 1.0, 0.0), ("a.T.dot(b)", 1.0, 0.0), ("a.dot(b.T)", 1.0, 0.0),
                     ("c -= a.dot(b)", -1.0, 1.0)]
    reasons = sorted(s.reason.split(":")[0] for s in f.sites if not s.taken)
    assert reasons == ["dot-1d", "matrix-vector"]
    text = f.ir()
    assert text.count('"mix.gemm"') == 4
    assert "trans_a = true" in text and "trans_b = true" in text


def test_dot_methods_under_native_equal_njit_bit_for_bit():
    f = mixjit(schemes=["native"])(_methods)
    for dtype in (np.float32, np.float64):
        a, b, c = _inputs(dtype)
        got = _quiet(f, a, b, c.copy())
        want = njit(_methods)(a, b, c.copy())
        for g, w in zip(got, want):
            assert np.asarray(g).tobytes() == np.asarray(w).tobytes()


def test_dot_methods_run_the_plan_np_dot_runs():
    """Under an emulated scheme, ``a.dot(b)`` gives the bits ``np.dot(a, b)`` gives at its site."""
    options = dict(schemes=["mixpert"], tune="never")
    methods, functions = mixjit(**options)(_methods), mixjit(**options)(_functions)
    a, b, c = _inputs(np.float32)
    got, want = _quiet(methods, a, b, c.copy()), _quiet(functions, a, b, c.copy())
    assert [s.plan for s in methods.sites if s.taken] == [s.plan for s in functions.sites if s.taken]
    assert {s.plan.scheme for s in methods.sites if s.taken} == {"mixpert"}
    for g, w in zip(got, want):
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()


def _gp_posterior(K, Ks, Kss, y):
    """Posterior mean and covariance of a GP, written with ``.dot`` as ported code often is."""
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    mean = Ks.dot(alpha)
    v = np.linalg.solve(L, Ks.T)
    cov = Kss - v.T.dot(v)
    return mean, cov


def _gp_inputs(n=48, m=32, seed=0):
    rng = np.random.default_rng(seed)
    x, xs = rng.uniform(-3, 3, n), rng.uniform(-3, 3, m)

    def kernel(p, q):
        return np.exp(-0.5 * (p[:, None] - q[None, :]) ** 2)

    K = kernel(x, x) + 1e-2 * np.eye(n)
    return K, kernel(xs, x), kernel(xs, xs), np.sin(x)[:, None]


def test_a_gp_posterior_written_with_dot_has_its_products_taken_and_tunes():
    f = mixjit(error_budget=1e-9)(_gp_posterior)
    args = _gp_inputs()
    mean, cov = _quiet(f, *args)
    taken = [s.form for s in f.sites if s.taken]
    assert taken[:2] == ["a.dot(b)", "a.T.dot(b)"]
    assert all(form.startswith("np.linalg.") for form in taken[2:])  # its solves are linalg sites
    assert f.plan is not None and len(f.plan.sites) == len(taken)
    ref_mean, ref_cov = njit(_gp_posterior)(*args)
    for got, ref in ((mean, ref_mean), (cov, ref_cov)):
        assert np.linalg.norm(got - ref) <= 1e-9 * np.linalg.norm(ref) + 1e-300
