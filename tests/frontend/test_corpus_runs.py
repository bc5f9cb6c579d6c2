"""Every function of the frontend corpus runs under @mixjit with the results of @njit, bit for
bit (every site runs ``native``), with every site detect-gemm finds taken and linked and
nothing run as plain Numba by mixjit's safety net (issue 7: @mixjit never fails where @njit
works)."""

from __future__ import annotations

import copy
import inspect
import warnings

import numpy as np
import pytest
from corpus import CASES
from numba import njit
from numba.core.registry import CPUDispatcher

from mixjit import mixjit
from mixjit.decorator import MixjitWarning
from mixjit.numba_pipeline import make_pipeline
from mixjit.sites import FALLBACK_REASON


def _plain(fn):
    """The @njit reference: ``fn`` itself when it is an @njit function; Numba's pipeline plus
    mixjit's np.matmul -> @ rewrite (no linking) for np.matmul, which Numba 0.68 cannot type."""
    if isinstance(fn, CPUDispatcher):
        return fn
    if "np.matmul" in inspect.getsource(fn):
        return njit(pipeline_class=make_pipeline())(fn)
    return njit(fn)


def _assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")
@pytest.mark.parametrize("name", CASES)
def test_corpus_function_runs_under_mixjit_like_njit(name):
    case = CASES[name]
    args = case.example(np.random.default_rng(11))
    plain = _plain(case.fn)
    mine = mixjit(schemes=["native"])(case.fn)  # an @njit dispatcher keeps its options (parallel=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MixjitWarning)
        got = mine(*copy.deepcopy(args))
    want = plain(*copy.deepcopy(args))
    _assert_same(got, want)
    fallbacks = [str(w.message) for w in caught if "runs as plain Numba, its GEMMs not linked" in str(w.message)]
    assert not fallbacks
    assert not [s for s in mine.sites if s.reason.startswith(FALLBACK_REASON)]
    taken = [s for s in mine.sites if s.taken and not s.form.startswith("np.linalg.")]  # GEMM sites
    assert len(taken) == len(case.sites) and all(s.calls > 0 for s in taken)
    assert sorted(s.reason.split(":")[0] for s in mine.sites if not s.taken) == sorted(case.rejected)
