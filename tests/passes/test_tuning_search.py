"""The pure tuner search: Pareto pruning, greedy (MixPert §3.4) and exhaustive search, on
synthetic site spaces, DAGs and evaluators."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import pytest

from mixjit.passes.tuning.candidates import by_modeled_time, pareto_front, prune_space
from mixjit.passes.tuning.exhaustive import SearchTooLarge, exhaustive, plan_count
from mixjit.passes.tuning.greedy import greedy, predicted_error, visit_order
from mixjit.passes.tuning.judge import Judge, SearchStopped
from mixjit.passes.tuning.space import Candidate, SiteSpace, plan_time
from mixjit.passes.tuning.synthetic import AdditiveEvaluator, PropagatingEvaluator, random_problem


def C(time, error, config=None):
    return Candidate("s", config or f"t={time}", time, error=error)


def space(site, *pairs):
    return SiteSpace(site, tuple(C(t, e) for t, e in pairs))


def brute_force_optimum(spaces, evaluator, bound):
    """The fastest plan within ``bound``, computed independently of the searches."""
    sites = sorted(spaces)
    best = None
    for idx in itertools.product(*(range(len(spaces[s].candidates)) for s in sites)):
        plan = dict(zip(sites, idx))
        if evaluator.error(plan) <= bound:
            t = plan_time(spaces, plan)
            if best is None or t < best[0]:
                best = (t, plan)
    return best


# --- Pareto pruning ---------------------------------------------------------------------------

def test_pareto_front_drops_dominated_candidates_and_orders_most_precise_first():
    fast_bad = C(1.0, 1e-3, "fast")
    slow_good = C(5.0, 1e-7, "slow")
    middle = C(2.0, 1e-5, "middle")
    dominated = C(3.0, 1e-4, "dominated")  # slower and less precise than middle
    front = pareto_front([fast_bad, dominated, middle, slow_good])
    assert front == (slow_good, middle, fast_bad)


def test_pareto_front_keeps_unmeasured_candidates_and_they_dominate_nothing():
    unmeasured = C(0.5, None, "unmeasured")
    measured = C(2.0, 1e-6, "measured")
    worse = C(3.0, 1e-5, "worse")  # dominated by measured only
    assert pareto_front([worse, unmeasured, measured]) == (measured, unmeasured)


def test_pareto_front_keeps_the_first_of_exact_ties_and_ranks_nan_last():
    a, b = C(1.0, 1e-6, "a"), C(1.0, 1e-6, "b")
    assert pareto_front([a, b]) == (a,)
    nan = C(0.5, math.nan, "nan")
    assert pareto_front([nan, C(0.4, 1.0, "cheap")]) == (C(0.4, 1.0, "cheap"),)
    assert pareto_front([nan, a]) == (a, nan)  # faster than a: kept, as the least precise


def test_by_modeled_time_orders_slowest_first_ties_by_error():
    a, b, c = C(1.0, 1e-5, "a"), C(3.0, 1e-7, "b"), C(1.0, 1e-6, "c")
    assert by_modeled_time([a, b, c]) == (b, c, a)
    assert prune_space(SiteSpace(7, (a, b, c))) == SiteSpace(7, (b, c))


# --- the judge: memo, max-evals, interrupt ------------------------------------------------------

def test_judge_memoizes_identical_plans():
    spaces = {0: space(0, (2, 1e-7), (1, 1e-6))}
    ev = AdditiveEvaluator(spaces)
    judge = Judge(spaces, ev, 1e-5)
    assert judge.error({0: 1}) == judge.error({0: 1}) == 1e-6
    assert ev.calls == 1 and len(judge.evaluations) == 1


# --- greedy ------------------------------------------------------------------------------------

def trade_problem():
    """Site 0 (predecessor of site 1) is lowered fully first (it has the larger modeled time in
    either order); lowering site 1 then breaks the budget unless site 0 goes back up one step,
    which is worth it: site 1 gains 9 (modeled), site 0 costs 6."""
    spaces = {
        0: space(0, (20, 0), (11, 4e-6), (5, 5e-6)),
        1: space(1, (10, 0), (1, 5.5e-6), (0.5, 9e-6)),
    }
    dag = nx.DiGraph()
    dag.add_edge(0, 1, carried=False)
    return spaces, dag


def test_visit_order_is_by_modeled_time_of_the_most_precise_plan():
    spaces = {3: space(3, (1, 0)), 1: space(1, (5, 0)), 2: space(2, (5, 0))}
    assert visit_order(spaces) == [1, 2, 3]


@pytest.mark.parametrize("order", ["dynamic", "static"])
def test_greedy_raises_the_predecessor_when_that_makes_the_plan_faster(order):
    spaces, dag = trade_problem()
    with_dag = greedy(spaces, AdditiveEvaluator(spaces), 1e-5, dag=dag, order=order)
    without = greedy(spaces, AdditiveEvaluator(spaces), 1e-5, order=order)
    assert without.plan == {0: 2, 1: 0} and without.time == 15
    assert with_dag.plan == {0: 1, 1: 1} and with_dag.time == 12
    assert with_dag.error == pytest.approx(9.5e-6) and with_dag.within_budget
    # the trade was judged as one plan (site 1 lowered, site 0 raised together)
    plans = [e.plan for e in with_dag.evaluations]
    assert plans.index({0: 1, 1: 1}) == plans.index({0: 2, 1: 1}) + 1
    # and it is the optimum here
    assert exhaustive(spaces, AdditiveEvaluator(spaces), 1e-5).plan == with_dag.plan


@pytest.mark.parametrize("order", ["dynamic", "static"])
def test_greedy_does_not_raise_a_predecessor_that_is_costlier_than_the_site(order):
    spaces, dag = trade_problem()
    # site 0's lowest config is costlier than site 1's most precise one: no trade
    spaces[0] = space(0, (40, 0), (30, 4e-6), (20, 5e-6))
    result = greedy(spaces, AdditiveEvaluator(spaces), 1e-5, dag=dag, order=order)
    assert result.plan == {0: 2, 1: 0}
    assert all(e.plan[0] == 2 for e in result.evaluations if e.plan[1] > 0)


def test_greedy_does_not_trade_when_the_raise_costs_more_than_the_step_gains():
    spaces, dag = trade_problem()
    spaces[0] = space(0, (20, 0), (16, 4e-6), (5, 5e-6))  # raising 5 -> 16 costs 11 > 9 gained
    result = greedy(spaces, AdditiveEvaluator(spaces), 1e-5, dag=dag)
    assert result.plan == {0: 2, 1: 0}
    assert {0: 1, 1: 1} not in [e.plan for e in result.evaluations]


def test_greedy_ignores_self_loops_and_carried_predecessors_come_last():
    spaces, dag = trade_problem()
    dag.add_edge(1, 1, carried=True)
    assert greedy(spaces, AdditiveEvaluator(spaces), 1e-5, dag=dag).plan == {0: 1, 1: 1}


def test_dynamic_order_lowers_where_the_time_is_now():
    # Static visits site 0 (20) and lowers it fully, leaving no room for the costly site 1;
    # dynamic lowers site 0 once, then site 1 (now the largest), and finds the optimum.
    spaces = {0: space(0, (20, 0), (1, 4e-6), (0.5, 5e-6)), 1: space(1, (10, 0), (3, 5.5e-6))}
    static = greedy(spaces, AdditiveEvaluator(spaces), 1e-5, order="static")
    dynamic = greedy(spaces, AdditiveEvaluator(spaces), 1e-5)
    assert static.plan == {0: 2, 1: 0} and dynamic.plan == {0: 1, 1: 1}
    assert dynamic.time == brute_force_optimum(spaces, AdditiveEvaluator(spaces), 1e-5)[0] == 4
    with pytest.raises(ValueError, match="unknown greedy order 'random'"):
        greedy(spaces, AdditiveEvaluator(spaces), 1e-5, order="random")


def test_greedy_margin_keeps_part_of_the_budget_in_reserve():
    spaces, dag = trade_problem()
    full = greedy(spaces, AdditiveEvaluator(spaces), 1e-5, dag=dag)
    reserved = greedy(spaces, AdditiveEvaluator(spaces), 1e-5, dag=dag, margin=0.5)
    assert full.error > 5e-6
    assert reserved.error <= 5e-6 and reserved.time > full.time


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("kind", ["additive", "propagating"])
@pytest.mark.parametrize("order", ["dynamic", "static"])
def test_greedy_is_feasible_and_never_beats_the_optimum(seed, kind, order):
    problem = random_problem(seed, sites=4, candidates=4)
    spaces, dag = problem.spaces, problem.dag

    def make():
        return AdditiveEvaluator(spaces) if kind == "additive" else PropagatingEvaluator(spaces, dag)

    budget = 10 ** (-7 + seed % 4)
    g = greedy(spaces, make(), budget, dag=dag, order=order)
    x = exhaustive(spaces, make(), budget)
    optimum = brute_force_optimum(spaces, make(), budget)
    if optimum is None:
        assert not g.within_budget and not x.within_budget
        assert g.plan == x.plan == {s: 0 for s in spaces}
        return
    assert x.within_budget and x.time == optimum[0]
    assert g.within_budget and g.error <= budget
    assert g.time >= x.time
    assert x.evaluation_count == plan_count(spaces) == 256
    assert g.evaluation_count < x.evaluation_count // 4


@pytest.mark.parametrize("kind", ["additive", "propagating"])
@pytest.mark.parametrize("order", ["dynamic", "static"])
def test_jumping_greedy_ends_where_the_step_by_step_greedy_does(kind, order):
    # Both evaluators make errors grow as a site is lowered; the propagating one amplifies them
    # along the DAG, so predictions from the sites' errors alone are optimistic and jumps that
    # overshoot must bisect back.
    total_steps = total_jumps = bisected = 0
    for seed in range(60):
        problem = random_problem(seed, sites=3 + seed % 4, candidates=3 + seed % 3)
        spaces, dag = problem.spaces, problem.dag

        def make(spaces=spaces, dag=dag):
            return AdditiveEvaluator(spaces) if kind == "additive" else PropagatingEvaluator(spaces, dag)

        budget = 10 ** (-7 + seed % 4)
        steps = greedy(spaces, make(), budget, dag=dag, order=order, jump=False)
        jumps = greedy(spaces, make(), budget, dag=dag, order=order)
        assert (jumps.plan, jumps.error, jumps.within_budget) == (steps.plan, steps.error, steps.within_budget)
        if kind == "additive":  # exact predictions: a jump never overshoots
            assert jumps.evaluation_count <= steps.evaluation_count
        total_steps += steps.evaluation_count
        total_jumps += jumps.evaluation_count
        bisected += sum(e.error > budget for e in jumps.evaluations) > sum(e.error > budget for e in steps.evaluations)
    # an overshooting jump costs its bisection, but on the whole jumps save evaluations
    assert total_jumps < (0.6 if kind == "additive" else 0.8) * total_steps
    if kind == "propagating":
        assert bisected > 0  # the optimistic predictions were caught by judging


def test_jumps_judge_the_furthest_predicted_step_and_bisect_back_when_it_fails():
    spaces = {0: space(0, (10, 0), (8, 1e-6), (6, 2e-6), (4, 3e-6), (2, 4e-6), (1, 5e-6))}

    class Nonadditive:  # the real error of the last two candidates is far above the prediction
        def error(self, plan):
            return [0, 1e-6, 2e-6, 3e-6, 9e-6, 9e-6][plan[0]]

    result = greedy(spaces, Nonadditive(), 6e-6)
    # predicted to fit up to index 5 (5e-6): judged 5 (fails), bisected: 2 (fits), 3 (fits), 4 (fails)
    assert [e.plan[0] for e in result.evaluations] == [0, 5, 2, 3, 4]
    assert result.plan == {0: 3} and result.error == 3e-6
    assert greedy(spaces, Nonadditive(), 6e-6, jump=False).plan == result.plan


def test_greedy_does_not_jump_over_unmeasured_candidates():
    spaces = {0: space(0, (10, 0), (8, None), (6, None), (4, None))}
    result = greedy(spaces, AdditiveEvaluator(spaces), 1e-6)
    assert [e.plan[0] for e in result.evaluations] == [0, 1, 2, 3]


def test_predicted_error_anchors_on_a_judged_plan():
    spaces = {0: space(0, (3, 1e-7), (2, 1e-6)), 1: space(1, (3, 0.0), (1, 4e-6))}
    assert predicted_error(spaces, {0: 0, 1: 0}, 5e-7, {0: 1, 1: 1}) == pytest.approx(5e-7 + 9e-7 + 4e-6)
    assert predicted_error(spaces, {0: 0, 1: 0}, 5e-7, {0: 0, 1: 0}) == 5e-7
    spaces[1] = space(1, (3, 0.0), (1, None))
    assert predicted_error(spaces, {0: 0, 1: 0}, 5e-7, {0: 0, 1: 1}) is None


def test_greedy_counts_only_distinct_evaluator_calls():
    problem = random_problem(3, sites=5)
    ev = PropagatingEvaluator(problem.spaces, problem.dag)
    result = greedy(problem.spaces, ev, 1e-6, dag=problem.dag)
    plans = [tuple(sorted(e.plan.items())) for e in result.evaluations]
    assert ev.calls == result.evaluation_count == len(set(plans))


def test_greedy_is_deterministic_whatever_the_order_of_the_spaces():
    problem = random_problem(5, sites=6)
    first = greedy(problem.spaces, PropagatingEvaluator(problem.spaces, problem.dag), 1e-6, dag=problem.dag)
    reordered = dict(reversed(list(problem.spaces.items())))
    dag = nx.DiGraph()
    dag.add_nodes_from(reversed(list(problem.dag.nodes)))
    dag.add_edges_from(reversed(list(problem.dag.edges(data=True))))
    second = greedy(reordered, PropagatingEvaluator(reordered, dag), 1e-6, dag=dag)
    assert first.plan == second.plan
    assert [e.plan for e in first.evaluations] == [e.plan for e in second.evaluations]


def test_greedy_stops_at_max_evals_with_the_best_plan_so_far():
    problem = random_problem(1, sites=4)
    full = greedy(problem.spaces, AdditiveEvaluator(problem.spaces), 1e-4, dag=problem.dag, jump=False)
    assert full.evaluation_count > 3 and full.stopped == "complete"
    ev = AdditiveEvaluator(problem.spaces)
    cut = greedy(problem.spaces, ev, 1e-4, dag=problem.dag, max_evals=3, jump=False)
    assert cut.stopped == "max-evals" and cut.evaluation_count == ev.calls == 3
    assert [e.plan for e in cut.evaluations] == [e.plan for e in full.evaluations[:3]]
    fitting = [e for e in cut.evaluations if e.error <= 1e-4]
    assert cut.time == min(e.time for e in fitting) and cut.within_budget


class Interrupting:
    """Raises KeyboardInterrupt on call number ``at`` (as Ctrl-C inside a program run would)."""

    def __init__(self, inner, at):
        self.inner, self.at, self.calls = inner, at, 0

    def error(self, plan):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.inner.error(plan)


def test_greedy_returns_the_best_plan_so_far_on_ctrl_c():
    spaces, dag = trade_problem()
    result = greedy(spaces, Interrupting(AdditiveEvaluator(spaces), at=4), 1e-5, dag=dag, jump=False)
    assert result.stopped == "interrupted" and result.evaluation_count == 3
    assert result.plan == {0: 2, 1: 0} and result.within_budget  # the third plan judged
    assert [e.plan for e in result.evaluations] == [{0: 0, 1: 0}, {0: 1, 1: 0}, {0: 2, 1: 0}]


def test_greedy_interrupted_before_any_plan_is_judged_says_so():
    spaces, dag = trade_problem()
    result = greedy(spaces, Interrupting(AdditiveEvaluator(spaces), at=1), 1e-5, dag=dag)
    assert result.stopped == "interrupted" and not result.within_budget
    assert result.plan == {0: 0, 1: 0} and math.isnan(result.error) and result.evaluation_count == 0


def test_unreachable_budget_returns_the_most_precise_plan_not_within_budget():
    spaces = {0: space(0, (3, 2e-6), (1, 1e-5)), 1: space(1, (2, 1e-6), (1, 1e-4))}
    for search in (greedy, exhaustive):
        result = search(spaces, AdditiveEvaluator(spaces), 1e-6)
        assert result.plan == {0: 0, 1: 0} and not result.within_budget
        assert result.error == pytest.approx(3e-6) and result.time == 5
    assert greedy(spaces, AdditiveEvaluator(spaces), 1e-6).evaluation_count == 1


@pytest.mark.parametrize("budget", [0.0, -1e-6, math.nan])
def test_bad_budgets_are_refused(budget):
    spaces, _ = trade_problem()
    for search in (greedy, exhaustive):
        with pytest.raises(ValueError, match="error budget must be a positive number"):
            search(spaces, AdditiveEvaluator(spaces), budget)


def test_bad_search_options_are_refused():
    spaces, _ = trade_problem()
    with pytest.raises(ValueError, match=r"safety margin must be in \[0, 1\)"):
        greedy(spaces, AdditiveEvaluator(spaces), 1e-5, margin=1.0)
    with pytest.raises(ValueError, match="max_evals must be at least 1"):
        greedy(spaces, AdditiveEvaluator(spaces), 1e-5, max_evals=0)
    with pytest.raises(ValueError, match="no GEMM site"):
        greedy({}, AdditiveEvaluator({}), 1e-5)
    with pytest.raises(ValueError, match="space of site 0 is filed under site 1"):
        greedy({1: spaces[0]}, AdditiveEvaluator(spaces), 1e-5)


def test_progress_is_reported_after_every_evaluation():
    problem = random_problem(2, sites=3)
    seen = []
    result = greedy(problem.spaces, AdditiveEvaluator(problem.spaces), 1e-5, dag=problem.dag, progress=seen.append)
    assert [p.evaluations for p in seen] == list(range(1, result.evaluation_count + 1))
    assert seen[0].total == 1 + 3 * 3
    assert seen[-1].best is not None and seen[-1].best.time == result.time


# --- exhaustive --------------------------------------------------------------------------------

def test_exhaustive_refuses_above_its_cap_and_names_the_count():
    problem = random_problem(0, sites=7, candidates=4)
    with pytest.raises(SearchTooLarge, match=r"would judge 16384 plans .*max-plans=4096"):
        exhaustive(problem.spaces, AdditiveEvaluator(problem.spaces), 1e-5)
    small = random_problem(0, sites=3, candidates=4)
    with pytest.raises(SearchTooLarge, match="more than max-plans=10"):
        exhaustive(small.spaces, AdditiveEvaluator(small.spaces), 1e-5, max_plans=10)


def test_exhaustive_judges_every_plan_once_and_can_be_cut_short():
    problem = random_problem(4, sites=3, candidates=3)
    ev = AdditiveEvaluator(problem.spaces)
    result = exhaustive(problem.spaces, ev, 1e-5)
    assert ev.calls == result.evaluation_count == 27
    assert len({tuple(sorted(e.plan.items())) for e in result.evaluations}) == 27
    cut = exhaustive(problem.spaces, AdditiveEvaluator(problem.spaces), 1e-5, max_evals=5)
    assert cut.stopped == "max-evals" and cut.evaluation_count == 5


def test_judge_raises_search_stopped_at_max_evals():
    spaces = {0: space(0, (2, 1e-7), (1, 1e-6))}
    judge = Judge(spaces, AdditiveEvaluator(spaces), 1e-5, max_evals=1)
    judge.error({0: 0})
    with pytest.raises(SearchStopped) as stop:
        judge.error({0: 1})
    assert stop.value.reason == "max-evals"
    assert judge.error({0: 0}) == 1e-7  # memoized plans cost nothing


def test_the_tuner_library_imports_neither_numba_nor_numpy():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "passes"
    for path in [root / "tune.py", *sorted((root / "tuning").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert name.split(".")[0] not in ("numba", "numpy", "llvmlite"), f"{path.name} imports {name}"


def test_exhaustive_returns_the_best_plan_so_far_on_ctrl_c():
    spaces, _ = trade_problem()
    result = exhaustive(spaces, Interrupting(AdditiveEvaluator(spaces), at=5), 1e-5)
    assert result.stopped == "interrupted" and result.evaluation_count == 4
    # plans judged: (0,0) (0,1) (0,2) (1,0); the fastest within budget among them
    assert result.plan == {0: 0, 1: 2} and result.time == 20.5
