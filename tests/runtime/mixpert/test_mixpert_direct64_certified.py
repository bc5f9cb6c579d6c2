"""The float64 direct path's shortcut past the guarantee check
(executor_mixpert_direct64._surely_certified) is sound: wherever it proves a call
certified, mixpert_bound.fp64_doubtful marks no output of it doubtful; it proves the
well-scaled calls the benchmark times; the off-grid flags of ``_row_slices`` and
``_col_slices`` are the check's ``delta`` rows; the config constants are the compiled code's values."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mixjit.runtime.mixpert import executor as ex
from mixjit.runtime.mixpert.guarantee.bound import dropped_weight, fp64_doubtful
from mixjit.runtime.mixpert.paths import direct64 as d64
from mixjit.runtime.mixpert.segments import ZERO_EXP, width
from mixjit.runtime.mixpert.words import kept_pairs
from mixjit.runtime.schemes import get_scheme

MP64 = get_scheme("mixpert-fp64")
PARAMS = np.asarray(MP64.default_config(np.float64).words(), dtype=np.int64)
W = width(9, int(PARAMS[ex.W_SEG0_BITS]))
TK = int(PARAMS[ex.W_TK])


@njit
def _certified(araw, braw, agexp, bgexp, aref, bref, aoff, boff, tk, w, out):
    return d64._surely_certified(araw, braw, agexp, bgexp, aref, bref, aoff, boff, tk, w, out,
                                 np.empty(braw.shape[1], np.int64))


@njit
def _off_flags(xt, gexp, w, trunc):
    """The rows' off-grid counts of pass 2 over A (``_row_slices``)."""
    r, k = xt.shape
    s = np.empty((r, k))
    off = np.empty(r, np.int64)
    d64._row_slices(xt, gexp, w, trunc, s, s.copy(), s.copy(), s.copy(), off)
    return off


@njit
def _col_off_flags(x, gexp, w, trunc):
    """The columns' off-grid counts of pass 2 over B (``_col_slices``, B's layout)."""
    k, n = x.shape
    s = np.empty((k, n))
    off = np.empty(n, np.int64)
    d64._col_slices(x, gexp, w, trunc, s, s.copy(), s.copy(), s.copy(), off, np.empty(n))
    return off


def _exponents(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row exponents as the direct path's pass 1 gives them (``gexp``, ``ref``)."""
    top = np.abs(x).max(axis=1)
    e = np.where(top > 0, np.frexp(top)[1] - 1, ZERO_EXP).astype(np.int64)
    return e[:, None].copy(), np.where(e == ZERO_EXP, 0, e).astype(np.int64)


def _true_off(x: np.ndarray, gexp: np.ndarray) -> np.ndarray:
    """Rows holding a nonzero element that is not a multiple of ``2^(E-w+1)``
    (mixpert_bound._bound_operand's test, on exact rationals via frexp)."""
    out = np.zeros(x.shape[0], np.int64)
    for i, row in enumerate(x):
        grid = int(gexp[i, 0]) - W + 1
        for v in row:
            if v != 0.0:
                m, e = np.frexp(v)  # v = m 2^e, m with 53 bits: v = mant 2^(e-53)
                mant, lsb = int(m * 2.0**53), int(e) - 53
                below = grid - lsb  # bits of mant below the grid
                out[i] |= below >= 53 or (below > 0 and mant % (1 << below) != 0)
    return out


def _case(kind: str, rng, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    if kind == "cancel":  # outputs that cancel to about 2^-52 of their terms: the check's pass 2
        for j in range(0, n, 2):
            b[-1, j] = -(a[j % m, :-1] @ b[:-1, j]) / a[j % m, -1]
    elif kind == "offgrid":  # elements far below their row's largest: delta rows, some outputs doubtful
        a *= np.exp2(rng.integers(-40, 1, a.shape))
        b *= np.exp2(rng.integers(-40, 1, b.shape))
    elif kind == "shifted":  # elements shifted out entirely: doubtful outputs
        a *= np.exp2(rng.integers(-80, 1, a.shape))
    elif kind == "scaled":  # extreme but accepted scales
        a *= 2.0 ** rng.choice([-900, -400, 450])
        b *= 2.0 ** rng.choice([-30, 40])
    elif kind == "integers":  # on the grid: no delta, exact cancellations to 0
        a = rng.integers(-8, 9, (m, k)).astype(np.float64)
        b = rng.integers(-8, 9, (k, n)).astype(np.float64)
    return a, b


@pytest.mark.parametrize("kind", ["normal", "cancel", "offgrid", "shifted", "scaled", "integers"])
def test_certified_calls_have_no_doubtful_output(kind):
    """Soundness, and both answers occur (a test of a check that always says False
    or always says True would fail here on some kind)."""
    rng = np.random.default_rng(len(kind))
    answers = set()
    for trial in range(40):
        m, n, k = rng.integers(1, 20), rng.integers(1, 20), int(rng.choice([1, 2, 5, 16, 33, 200]))
        a, b = _case(kind, rng, m, n, k)
        c = np.empty((m, n))
        stats = np.zeros(ex.N_STATS, np.int64)
        if d64.direct_gemm64(a, b, c, PARAMS, stats) != ex.OK:
            continue
        bt = b.T.copy()
        agexp, aref = _exponents(a)
        bgexp, bref = _exponents(bt)
        aoff, boff = _true_off(a, agexp), _true_off(bt, bgexp)
        np.testing.assert_array_equal(_off_flags(a, agexp, W, False) > 0, aoff > 0)
        np.testing.assert_array_equal(_col_off_flags(b, bgexp, W, False) > 0, boff > 0)
        doubt = fp64_doubtful(a, agexp, aref, bt, bgexp, bref, TK, W, d64._DROPPED, c)
        ok = _certified(a, b, agexp, bgexp, aref, bref, aoff, boff, TK, W, c)
        answers.add((bool(ok), bool(doubt.any())))
        assert not (ok and doubt.any()), (kind, trial)
        assert stats[ex.STAT_RECOMPUTED] == doubt.sum()
    if kind in ("normal", "cancel", "integers"):
        assert (True, False) in answers, answers
    if kind == "shifted":
        assert (False, True) in answers, answers


@pytest.mark.parametrize("size", [4, 32])
def test_benchmark_cases_are_certified(size):
    """The benchmark's well-scaled calls skip fp64_doubtful (the speed of the direct
    path rests on it): fails if the proof gets too weak to cover them."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size))
    b = rng.standard_normal((size, size))
    c = np.empty((size, size))
    assert d64.direct_gemm64(a, b, c, PARAMS, np.zeros(ex.N_STATS, np.int64)) == ex.OK
    bt = b.T.copy()
    agexp, aref = _exponents(a)
    bgexp, bref = _exponents(bt)
    assert _certified(a, b, agexp, bgexp, aref, bref, _true_off(a, agexp), _true_off(bt, bgexp), TK, W, c)


def test_config_constants():
    """The pair words and dropped weight evaluated at import are those of the config."""
    assert d64.slice_pairs(PARAMS)
    assert d64._DROPPED == dropped_weight(kept_pairs(PARAMS), 9, int(PARAMS[ex.W_SEG0_BITS]), 0)
    other = np.asarray(MP64.parse_config("segments=9,pairs=sig8").words(), dtype=np.int64)
    assert not d64.slice_pairs(other)
