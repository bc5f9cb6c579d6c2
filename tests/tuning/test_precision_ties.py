"""Ties in measured error are broken by precision order: sample inputs on which every candidate
measures the same error (0) must not make the fastest candidate the "most precise" one."""

from __future__ import annotations

import warnings

import numpy as np
import programs as P

from mixjit import mixjit
from mixjit.decorator import MixjitWarning
from mixjit.passes.tuning.candidates import pareto_front, prune_space
from mixjit.passes.tuning.greedy import greedy
from mixjit.passes.tuning.space import Candidate, SiteSpace
from mixjit.plan import initial_plan
from mixjit.tuning.outputs import relative_frobenius


def _c(config: str, time: float, error: float | None = 0.0) -> Candidate:
    return Candidate("s", config, time, error=error)


def test_all_zero_errors_keep_the_most_precise_candidate_first():
    precise, middle, fast = _c("precise", 5.0), _c("middle", 2.0), _c("fast", 1.0)
    space = prune_space(SiteSpace(3, (precise, middle, fast)))
    assert space.candidates == (precise, middle, fast)
    assert space.candidates[0] == precise  # the fallback "most precise plan" really is


def test_equal_errors_drop_only_candidates_slower_than_a_more_precise_one():
    precise, slow_but_rougher, fast = _c("precise", 2.0), _c("rougher", 3.0), _c("fast", 1.0)
    assert pareto_front([precise, slow_but_rougher, fast]) == (precise, fast)


def test_smaller_error_still_beats_precision_order():
    # a later candidate that measures strictly better and is faster dominates an earlier one
    first, better = _c("first", 3.0, 1e-6), _c("better", 2.0, 1e-7)
    assert pareto_front([first, better]) == (better,)


class _ZeroEvaluator:
    def error(self, plan) -> float:
        return 0.0


def test_greedy_on_all_zero_errors_chooses_the_fastest_but_keeps_the_precise_start():
    space = prune_space(SiteSpace(0, (_c("precise", 5.0), _c("middle", 2.0), _c("fast", 1.0))))
    result = greedy({0: space}, _ZeroEvaluator(), 1e-6)
    assert space.candidates[result.plan[0]].config == "fast"
    assert space.candidates[0].config == "precise"


# --- online: every candidate measures 0 on the sample, the plan fails on held-out inputs --------

SAMPLE_BATCH = 64


def _blind_on_the_sample(out, ref) -> float:
    """0 on the sample's outputs (batch 64), the relative Frobenius error elsewhere: every candidate
    measures 0 on the sample, as k-means labels that no candidate moves."""
    return 0.0 if np.shape(ref)[0] == SAMPLE_BATCH else relative_frobenius(out, ref)


def test_held_out_failure_after_all_zero_sample_errors_falls_back_to_the_most_precise_plan():
    f = mixjit(error_budget=1e-9, target="jetson-agx-orin", tune="explicit", schemes=("mixpert",),
               metric=_blind_on_the_sample)(P.mlp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MixjitWarning)
        result = f.tune(*P.mlp_inputs(SAMPLE_BATCH, 128, 0), validate=[P.mlp_inputs(SAMPLE_BATCH + 1, 128, 1)],
                        fp64=False)
    precise = initial_plan(("mixpert",), np.float32)
    assert result.spaces and all(len(space.candidates) > 1 for space in result.spaces.values())
    for space in result.spaces.values():
        assert all(c.error == 0.0 for c in space.candidates)
        assert (space.candidates[0].scheme, space.candidates[0].config) == (precise.scheme, precise.config)
    assert {c.label for c in result.chosen.values()} == {f"{precise.scheme}[{precise.config}]"}
    assert any("the most precise plan is used" in note for note in result.notes)
