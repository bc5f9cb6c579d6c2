"""Ties in measured error are broken by precision order: sample inputs on which every candidate
measures the same error (0) must not make the fastest candidate the "most precise" one."""

from __future__ import annotations

from mixjit.passes.tuning.candidates import pareto_front, prune_space
from mixjit.passes.tuning.greedy import greedy
from mixjit.passes.tuning.space import Candidate, SiteSpace


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
