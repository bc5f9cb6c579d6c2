"""Speculative greedy (tuning at scale, item 3): with an evaluator that measures several plans at
once, the greedy search tells it, before each judgement, the plans it may judge next (a failing
step's predecessor trades, a jump's bisection points), always the plan judged now first. The
search's record and result are those of the search that told it nothing, on random problems, for
both orders, with and without jumps."""

from __future__ import annotations

import pytest

from mixjit.passes.tuning.greedy import greedy
from mixjit.passes.tuning.synthetic import PropagatingEvaluator, random_problem


class _Parallel(PropagatingEvaluator):
    """A propagating evaluator that says it runs two plans at once and logs what it is told."""

    workers = 2

    def __init__(self, *args, **kws) -> None:
        super().__init__(*args, **kws)
        self.log: list[tuple[str, tuple]] = []

    def error(self, plan):
        self.log.append(("judge", tuple(sorted(plan.items()))))
        return super().error(plan)

    def speculate(self, plans):
        self.log.append(("ahead", tuple(tuple(sorted(p.items())) for p in plans)))


@pytest.mark.parametrize("order", ["dynamic", "static"])
@pytest.mark.parametrize("jump", [True, False])
def test_speculation_changes_nothing_the_search_records(order, jump):
    told = 0
    for seed in range(30):
        problem = random_problem(seed, sites=5)
        budget = 3e-6
        serial = greedy(problem.spaces, PropagatingEvaluator(problem.spaces, problem.dag), budget,
                        dag=problem.dag, order=order, jump=jump)
        evaluator = _Parallel(problem.spaces, problem.dag)
        parallel = greedy(problem.spaces, evaluator, budget, dag=problem.dag, order=order, jump=jump)
        assert parallel == serial
        for i, (kind, what) in enumerate(evaluator.log):
            if kind == "ahead":
                told += 1
                assert 2 <= len(what) <= evaluator.workers
                assert evaluator.log[i + 1] == ("judge", what[0])  # the plan judged now comes first
    assert told > 0  # speculation happened somewhere


def test_no_speculation_for_an_evaluator_that_runs_one_plan_at_a_time():
    problem = random_problem(3, sites=5)
    evaluator = _Parallel(problem.spaces, problem.dag)
    evaluator.workers = 1
    greedy(problem.spaces, evaluator, 3e-6, dag=problem.dag)
    assert all(kind == "judge" for kind, _ in evaluator.log)
