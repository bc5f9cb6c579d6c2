"""A failure inside mixjit's own stages never fails the user's call (issue 7, item 2): the
function compiles as plain Numba would, one MixjitWarning names the function and the internal
error, and ``f.sites`` says that no site was taken and why. A failure is injected into each
stage in turn; errors in the user's code still propagate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numba import errors, types
from numba.extending import intrinsic

from mixjit import dispatcher, entry, importer, linking, mixjit, numba_pipeline
from mixjit.decorator import MixjitWarning
from mixjit.importer import FrontendError
from mixjit.passes import detect_gemm
from mixjit.sites import FALLBACK_REASON

A = np.arange(12.0).reshape(3, 4) / 7


class Injected(Exception):
    """The failure a test injects into a mixjit stage."""


def _fail(*args, **kws):
    raise Injected("injected failure")


def _broken_site_of(symbol):
    """A site_of intrinsic that types but fails in Numba's lowering, after the typed hook."""

    @intrinsic
    def _site(typingctx, local):
        def codegen(context, builder, sig, args):
            raise Injected("injected failure")

        return types.intp(types.intp), codegen

    return _site


def _link_then_fail(state, call, symbol, local, _real=linking.link_gemm_call):
    """Link the first site for real, then fail: the Numba IR is left half rewritten."""
    if local == 0:
        return _real(state, call, symbol, local)
    raise Injected("injected failure")


STAGES = {
    "canonicalize-matmul": (numba_pipeline, "canonicalize_matmul", _fail),
    "callees": (dispatcher, "_referenced_dispatcher", _fail),
    "import": (importer, "import_typed_ir", _fail),
    "detect-gemm": (detect_gemm, "detect_gemms", _fail),
    "resolve": (linking, "_resolve", _fail),
    "plan": (dispatcher, "initial_plan", _fail),
    "link": (linking, "link_gemm_call", _link_then_fail),
    "lowering": (linking, "site_of", _broken_site_of),
}


def _fresh():
    """A new function object each time (a new dispatcher compiles it anew)."""

    def body(a):
        b = a @ a.T                      # three sites
        c = np.dot(a.T, b)
        return b, c, c @ a

    return body


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_failing_stage_compiles_plain_numba_and_says_why(stage, monkeypatch):
    module, name, replacement = STAGES[stage]
    monkeypatch.setattr(module, name, replacement)
    f = mixjit(schemes=["native"])(_fresh())
    first = entry.new_sites(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = f(A)
    a = A
    for g, w in zip(got, (a @ a.T, a.T @ (a @ a.T), (a.T @ (a @ a.T)) @ a)):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    mine = [str(w.message) for w in caught if issubclass(w.category, MixjitWarning)]
    assert len(mine) == 1, mine
    assert "_fresh.<locals>.body(array(float64, 2d, C)) runs as plain Numba" in mine[0]
    assert f"mixjit's {stage} stage failed (Injected: injected failure)" in mine[0]
    assert all(w.filename == __file__ for w in caught if issubclass(w.category, MixjitWarning))
    own = f.sites
    assert own and not any(s.taken for s in own)
    assert all(s.reason.startswith(f"{FALLBACK_REASON}: mixjit's {stage} stage failed") for s in own)
    assert entry.new_sites(0) == first  # no site id used up
    assert "mixjit_gemm_entry" not in f.inspect_llvm(f.signatures[0])


def test_candidates_found_before_the_failure_are_listed(monkeypatch):
    monkeypatch.setattr(linking, "site_of", _broken_site_of)
    f = mixjit(schemes=["native"])(lambda a, b: (a @ b, np.dot(a, b)))
    with pytest.warns(MixjitWarning, match="lowering stage failed"):
        f(A, A.T)
    assert sorted((s.form, s.taken) for s in f.sites) == [("a @ b", False), ("np.dot(a, b)", False)]


def test_importer_refusal_is_one_warning_at_the_def(monkeypatch):
    def refuse(state):
        raise FrontendError("x.py:1: unsupported CFG")

    monkeypatch.setattr(importer, "import_typed_ir", refuse)
    f = mixjit(schemes=["native"])(lambda a: a @ a.T)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(f(A), A @ A.T)
    (warning,) = [w for w in caught if issubclass(w.category, MixjitWarning)]
    assert "import stage failed (FrontendError: x.py:1: unsupported CFG)" in str(warning.message)
    assert warning.filename == __file__
    (site,) = f.sites
    assert site.form == "(whole function)" and not site.taken


def test_user_errors_still_propagate(monkeypatch):
    monkeypatch.setattr(linking, "site_of", _broken_site_of)

    @mixjit(schemes=["native"])
    def bad(a):
        return a @ undefined_name  # noqa: F821

    with pytest.raises(errors.TypingError):
        bad(A)
    f = mixjit(schemes=["native"])(lambda a, h: a @ a.T)
    with pytest.raises(NotImplementedError):  # fails under plain Numba too: the user's error
        f(A, np.ones(2, np.float16))
    assert f.signatures == []
