"""@mixjit takes and honours every @njit option (issue 7, item 3), explicit signatures compile
eagerly, a helper keeps its own options, result-changing options are in the cache tag, and
``parallel=True`` with ``prange`` runs in CI (item 13)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numba import njit, prange, types

from mixjit import mixjit
from mixjit.cache import MixjitCache
from mixjit.decorator import MixjitWarning
from mixjit.options import NUMBA_OPTIONS, Options

NATIVE = dict(schemes=["native"])
A = np.arange(12.0).reshape(3, 4) / 7


def _llvm(f):
    (sig,) = f.signatures
    return f.inspect_llvm(sig)


def test_fastmath_and_nogil_reach_the_generated_code():
    def body(a):
        return a @ a.T + a.sum()

    fast = mixjit(fastmath=True, nogil=True, **NATIVE)(body)
    plain = mixjit(**NATIVE)(body)
    np.testing.assert_allclose(fast(A), plain(A), rtol=1e-12)
    assert "fadd fast" in _llvm(fast) and "fadd fast" not in _llvm(plain)
    assert "PyEval_SaveThread" in _llvm(fast) and "PyEval_SaveThread" not in _llvm(plain)  # GIL released


def test_boundscheck_and_error_model_behave_as_under_njit():
    def body(a, i):
        p = a @ a.T
        return p[i, 0], 1.0 / (p[0, 0] - p[0, 0])

    checked = mixjit(boundscheck=True, error_model="numpy", **NATIVE)(body)
    with pytest.raises(IndexError):
        checked(A, 7)
    value, ratio = checked(A, 1)
    assert value == (A @ A.T)[1, 0] and np.isinf(ratio)
    default = mixjit(**NATIVE)(body)  # error_model="python": the division raises, as in @njit
    with pytest.raises(ZeroDivisionError):
        default(A, 1)


def test_locals_and_inline():
    @mixjit(locals={"s": types.float32}, **NATIVE)
    def summed(a):
        s = (a @ a.T)[0, 0]
        return s

    assert summed(A) == np.float32((A @ A.T)[0, 0])

    @mixjit(inline="always", **NATIVE)
    def inner(a):
        return a @ a.T

    @mixjit(**NATIVE)
    def outer(a):
        return inner(a) + 1.0

    np.testing.assert_array_equal(outer(A), A @ A.T + 1.0)
    # inlined at the IR level: the GEMM is the caller's own site
    assert [(s.function, s.taken) for s in outer.sites] == [("test_locals_and_inline.<locals>.outer", True)]


def test_explicit_signatures_compile_eagerly_like_njit():
    def square(a):
        return a @ a.T

    one = mixjit("float64[:, :](float64[:, :])", **NATIVE)(square)
    assert len(one.signatures) == 1 and [s.taken for s in one.sites] == [True]  # before any call
    np.testing.assert_array_equal(one(A), A @ A.T)
    with pytest.raises(TypeError, match="No matching definition"):
        one(A.astype(np.float32))  # as @njit: other types are refused
    two = mixjit(["float64[:, :](float64[:, :])", "float32[:, :](float32[:, :])"], **NATIVE)(square)
    assert sorted(s.dtype for s in two.sites) == ["float32", "float64"]


def test_unknown_and_invalid_options_are_refused_at_decoration():
    with pytest.raises(TypeError, match=r"unknown option 'fastmat'.*fastmath"):
        mixjit(fastmat=True)
    with pytest.raises(ValueError, match="error_model must be 'python' or 'numpy'"):
        mixjit(error_model="c")
    with pytest.raises(ValueError, match="invalid @njit option value"):
        mixjit(fastmath={"not-a-flag"})
    with pytest.raises(TypeError, match="pipeline_class is not supported"):
        mixjit(pipeline_class=object)
    with pytest.warns(RuntimeWarning, match="nopython is set for @mixjit and is ignored"):
        mixjit(nopython=True)
    assert {"parallel", "fastmath", "nogil", "boundscheck", "error_model", "inline"} <= NUMBA_OPTIONS


@njit(error_model="numpy")
def _numpy_model_helper(x):
    return (x @ x.T)[0, 0] / 0.0


def test_a_helper_keeps_its_own_options():
    @mixjit(**NATIVE)  # error_model="python" here; the helper's "numpy" stays the helper's
    def caller(a):
        return _numpy_model_helper(a)

    assert np.isinf(caller(A))
    assert [s.function for s in caller.sites] == ["_numpy_model_helper"]


@njit(cache=True, fastmath=True, locals={"y": types.float32})
def _cached_helper(x):
    y = (x @ x)[0, 0]
    return y


def test_a_helpers_mixjit_version_keeps_its_cache_options_and_locals():
    caller = mixjit(**NATIVE)(lambda a: _cached_helper(a))
    version = caller._callee_version(_cached_helper)
    assert isinstance(version._cache, MixjitCache)  # its disk cache, apart from plain Numba's
    assert version.targetoptions["fastmath"] is True and version.locals == {"y": types.float32}
    assert caller._callee_version(_cached_helper) is version  # one version per helper and options


def test_mixjit_of_an_njit_function_keeps_its_options():
    f = mixjit(**NATIVE)(_numpy_model_helper)
    assert f.targetoptions["error_model"] == "numpy" and np.isinf(f(A))


def test_result_changing_options_are_in_the_cache_tag():
    opts = Options(schemes=("native",))
    base = opts.tag({"parallel": False})
    assert opts.tag({"parallel": False, "fastmath": True}) != base
    assert opts.tag({"parallel": False, "error_model": "numpy"}) != base
    assert opts.tag({"parallel": False}, {"s": types.float32}) != base
    # fastmath flag sets print in hash order, which differs per process: the tag must not
    assert opts.tag({"fastmath": {"nnan", "ninf", "contract"}}) == opts.tag({"fastmath": {"contract", "ninf", "nnan"}})


def test_a_helper_site_reports_the_helpers_signature():
    @njit
    def gram(x):
        return x.T @ x

    @mixjit(**NATIVE)
    def caller(a, k):
        return gram(a[:, :k].astype(np.float32))

    caller(A, 2)
    (site,) = caller.sites
    assert site.function.endswith("gram") and site.signature == "(array(float32, 2d, C))"


# -- parallel=True in CI (issue 7, item 13): small, one prange loop with a GEMM site ----------

def _blocks(x, w):
    out = np.empty((x.shape[0], x.shape[1], w.shape[1]))
    for i in prange(x.shape[0]):
        out[i] = x[i] @ w
    return out


def test_parallel_prange_site_matches_njit_parallel():
    x = np.random.default_rng(3).standard_normal((6, 3, 4))
    w = np.random.default_rng(4).standard_normal((4, 2))
    f = mixjit(parallel=True, **NATIVE)(_blocks)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixjitWarning)
        got = f(x, w)
    np.testing.assert_array_equal(got, njit(parallel=True)(_blocks)(x, w))
    assert "__numba_parfor_gufunc" in _llvm(f)
    (site,) = f.sites
    assert site.taken and site.calls == 6
