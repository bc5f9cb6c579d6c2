"""Fewer arrays per mixpert-fp64 call, never at the cost of a wrong result: within one
call A is read in place where it is a writable C-contiguous float64 array
(executor_mixpert_split.prepare_call_operand; prepare_operand, whose result may be
kept across calls, still copies), and the result goes straight into C where C is a C-contiguous
float64 array apart from the operands (executor_mixpert_pack.result_array); where C
overlaps an operand, the executor still reads the operand's values, not its own output."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mixjit.runtime.mixpert import words as W
from mixjit.runtime.mixpert.driver import multiply_into
from mixjit.runtime.mixpert.pack import is_array, result_array
from mixjit.runtime.mixpert.split import prepare_call_operand, prepare_operand
from mixjit.runtime.schemes import get_scheme

MP64 = get_scheme("mixpert-fp64")
MP = get_scheme("mixpert")


@njit
def _result_is_c(c, a, b):
    return is_array(result_array(c, a, b), c)


def test_result_array_is_c_only_where_it_is_apart_and_c_contiguous_float64():
    a = np.ones((4, 5))
    b = np.ones((6, 5))
    c = np.empty((4, 6))
    assert _result_is_c(c, a, b)
    big = np.empty((10, 10))
    assert not _result_is_c(big[:4], big[2:6], b)  # overlaps A's memory
    assert not _result_is_c(big[:4], a, big[3:9])  # overlaps B's memory
    assert not _result_is_c(np.empty((6, 4)).T, a, b)  # not C-contiguous
    assert not _result_is_c(np.empty((4, 6), np.float32), a, b)


def test_c_contiguous_float64_a_is_read_in_place_within_a_call_only():
    p64 = np.asarray(MP64.default_config(np.float64).words(), dtype=np.int64)
    p32 = np.asarray(MP.default_config(np.float32).words(), dtype=np.int64)
    a = np.random.default_rng(0).standard_normal((5, 7))
    assert np.shares_memory(prepare_call_operand(a, False, p64).raw, a)
    assert not np.shares_memory(prepare_operand(a, False, p64).raw, a)  # may be kept: its own copy
    assert not np.shares_memory(prepare_call_operand(a, True, p64).raw, a)  # B: transposed row form
    assert not prepare_call_operand(a, False, p32).raw_kept  # float32 domain: values not kept (rebuilt if needed)
    f = np.asfortranarray(a)
    assert not np.shares_memory(prepare_call_operand(f, False, p64).raw, f)
    ro = a.copy()
    ro.flags.writeable = False
    assert not np.shares_memory(prepare_call_operand(ro, False, p64).raw, ro)


@pytest.mark.parametrize("n", [80, 130])
def test_c_aliasing_a_gives_the_separate_result(n):
    # C is A's own memory (square, in place): the check and recompute must still read A
    p = np.asarray(MP64.default_config(np.float64).words(), dtype=np.int64)
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))
    b = rng.standard_normal((n, n))
    a[:, -1] *= 2.0**-80  # below its row's width: lost from X, so the check recomputes
    b[-1, :] *= 2.0**80  # ... outputs where its product matters, from A's values
    want = np.empty((n, n))
    st = np.zeros(W.N_STATS, dtype=np.int64)
    assert multiply_into(prepare_operand(a, False, p), prepare_operand(b, True, p), p, want, st) == 0
    assert st[W.STAT_RECOMPUTED] > 0
    pa = prepare_call_operand(a, False, p)
    assert np.shares_memory(pa.raw, a)
    assert multiply_into(pa, prepare_operand(b, True, p), p, a, st) == 0  # writes into A itself
    assert (a.view(np.uint64) == want.view(np.uint64)).all()
