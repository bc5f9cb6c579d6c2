"""Speculative greedy (tuning at scale, item 3): with an evaluator that measures several plans at
once, the greedy search tells it, before each judgement, the plans it may judge next (a failing
step's predecessor trades, a jump's bisection points), always the plan judged now first. The
search's record and result are those of the search that told it nothing, on random problems, for
both orders, with and without jumps."""

from __future__ import annotations

import pytest

from mixjit.passes.tuning.greedy import greedy
from mixjit.passes.tuning.space import Candidate, SiteSpace
from mixjit.passes.tuning.synthetic import AdditiveEvaluator, PropagatingEvaluator, random_problem


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


class _Rounds(AdditiveEvaluator):
    """An additive evaluator measuring up to ``workers`` plans at once: ``rounds`` counts the times
    the search waited for a run (a speculation batch, or a judgement of a plan not measured ahead)."""

    def __init__(self, spaces, workers: int) -> None:
        super().__init__(spaces)
        self.workers = workers
        self.measured: set[tuple] = set()
        self.rounds = 0

    def speculate(self, plans):  # as the online evaluator: nothing runs when plans[0] was measured
        if tuple(sorted(plans[0].items())) in self.measured:
            return
        self.rounds += 1
        self.measured.update(tuple(sorted(p.items())) for p in plans[: self.workers])

    def error(self, plan):
        key = tuple(sorted(plan.items()))
        if key not in self.measured:
            self.measured.add(key)
            self.rounds += 1
        return super().error(plan)


def test_speculation_follows_the_path_the_site_errors_predict():
    """Four equal sites whose last lowering breaks the budget, each alone and so as predicted (the
    MLP of tools/bench_tuning_workers.py): the search judges the start, jumps to every site at
    candidate 2, then four steps fail one by one. On two workers, the jump's end goes with the
    step after it, and each failing step with the next site's (the path predicted), not with the
    step after a success: 4 waits for runs, not 6."""
    spaces = {s: SiteSpace(s, tuple(Candidate("synthetic", f"level={i}", 1.0 / (i + 1), error=e)
                                    for i, e in enumerate((1e-9, 1e-8, 1e-7, 1e-3))))
              for s in range(4)}
    evaluator = _Rounds(spaces, workers=2)
    result = greedy(spaces, evaluator, 1e-4, dag=None)
    assert result.plan == {s: 2 for s in range(4)}
    assert len(result.evaluations) == 6  # the start, the jump's end, four failing steps
    assert evaluator.rounds == 4
