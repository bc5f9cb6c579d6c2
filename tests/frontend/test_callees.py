"""GEMMs inside @njit callees of a @mixjit function are linked too; functions
passed as arguments are reported, not followed."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from numba import njit

from mixjit import mixjit
from mixjit.decorator import MixjitWarning


@njit
def gram(x):
    return x.T @ x


@njit
def two_level(x, y):
    return gram(x) @ y  # a callee with its own callee


@njit
def no_gemm(x):
    return x * 2.0


def _caller(a, b):
    g = two_level(a, b)
    h = this_module.gram(b)  # the helper reached as a module attribute
    return g + no_gemm(h)[: g.shape[0], : g.shape[1]]


this_module = sys.modules[__name__]
caller = mixjit(schemes=["native"])(_caller)
caller_plain = njit(_caller)


@njit
def apply(fn, x):
    return fn(x)


def test_callee_gemms_are_linked_at_every_level():
    a = np.arange(12.0).reshape(4, 3) / 7
    b = np.arange(9.0).reshape(3, 3) / 5
    np.testing.assert_array_equal(caller(a, b), caller_plain(a, b))
    by_function = sorted((s.function, s.calls) for s in caller.sites if s.taken)
    # gram runs twice (from two_level and directly) with one signature: one site.
    assert by_function == [("gram", 2), ("two_level", 1)]
    # The plain dispatcher itself is untouched: it still compiles with Numba's pipeline.
    gram(a)
    assert "mixjit_gemm_entry" not in gram.inspect_llvm(gram.signatures[0])


def test_two_mixjit_functions_share_the_callee_version():
    @mixjit(schemes=["native"])
    def other(a):
        return gram(a)

    a = np.ones((3, 2))
    caller(a, np.ones((2, 2)))
    np.testing.assert_array_equal(other(a), a.T @ a)
    (site,) = [s for s in other.sites if s.taken]
    assert site.function == "gram"
    # One mixjit version of gram per option set: its sites are the caller's.
    shared = {s.id for s in caller.sites if s.function == "gram"}
    assert site.id in shared


def test_function_argument_is_reported_by_name():
    @mixjit(schemes=["native"])
    def takes_fn(fn, a):
        return apply(fn, a) + a @ a.T

    a = np.ones((2, 2))
    with pytest.warns(MixjitWarning, match="argument 'fn' of .*takes_fn is a function"):
        np.testing.assert_array_equal(takes_fn(gram, a), a.T @ a + a @ a.T)
