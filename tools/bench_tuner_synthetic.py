"""Greedy (MixPert §3.4) against exhaustive search on random synthetic tuning problems.

    python tools/bench_tuner_synthetic.py [--seeds 10] [--sites 3,4,5,6] [--write]

Each problem (passes/tuning/synthetic.py) has ``sites`` GEMM sites of 4 candidates each
(modeled times falling, site errors rising with the index) and a random forward DAG. Two
program-error evaluators: *additive* (site errors add up: the offline model's assumption) and
*propagating* (each site's output error is its own plus 3x its predecessors': errors amplify
along the DAG, non-additive). For budgets 1e-7 .. 1e-4, the table gives, over the problems whose
budget is reachable: greedy's modeled speedup (most precise plan's modeled time / the plan's)
as a fraction of the exhaustive optimum's (mean and worst) and how often greedy finds the
optimum, for three greedy variants (dynamic order, static order, dynamic order without the
predecessor-raising rule), and the evaluations each search needed: greedy with its jumps (the
default) and judging every step (``jump=False``, which ends at the same plan: checked here).
Everything is modeled on synthetic numbers: it measures the search, not any hardware.
``--write`` replaces the generated section of docs/results/tuner.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import common

from mixjit.passes.tuning.exhaustive import exhaustive
from mixjit.passes.tuning.greedy import greedy
from mixjit.passes.tuning.synthetic import AdditiveEvaluator, PropagatingEvaluator, random_problem

BUDGETS = (1e-7, 1e-6, 1e-5, 1e-4)
KINDS = ("additive", "propagating")


def evaluator(kind, problem):
    if kind == "additive":
        return AdditiveEvaluator(problem.spaces)
    return PropagatingEvaluator(problem.spaces, problem.dag)


VARIANTS = {  # name -> greedy keyword arguments (the DAG is added where "dag" is True)
    "dynamic": {"order": "dynamic", "dag": True},
    "static": {"order": "static", "dag": True},
    "dynamic, no raise": {"order": "dynamic", "dag": False},
}


def one_row(sites: int, kind: str, budget: float, seeds: int) -> list[str] | None:
    quality: dict[str, list[float]] = {v: [] for v in VARIANTS}
    hits = dict.fromkeys(VARIANTS, 0)
    evals: dict[str, list[int]] = {v: [] for v in VARIANTS}
    stepwise_evals = []
    exhaustive_evals = []
    for seed in range(seeds):
        problem = random_problem(1000 * sites + seed, sites)
        spaces = problem.spaces
        x = exhaustive(spaces, evaluator(kind, problem), budget)
        if not x.within_budget:
            continue
        exhaustive_evals.append(x.evaluation_count)
        for name, opts in VARIANTS.items():
            g = greedy(spaces, evaluator(kind, problem), budget, order=opts["order"],
                       dag=problem.dag if opts["dag"] else None)
            assert g.within_budget and g.time >= x.time
            quality[name].append(x.time / g.time)  # = greedy's modeled speedup / the optimum's
            hits[name] += g.time == x.time
            evals[name].append(g.evaluation_count)
            if name == "dynamic":
                steps = greedy(spaces, evaluator(kind, problem), budget, dag=problem.dag, jump=False)
                assert steps.plan == g.plan, "the jumps changed greedy's plan"
                stepwise_evals.append(steps.evaluation_count)
    if not exhaustive_evals:
        return None
    k = len(exhaustive_evals)
    row = [str(sites), kind, f"{budget:.0e}", str(k)]
    for name in VARIANTS:
        row += [f"{statistics.mean(quality[name]):.3f}", f"{min(quality[name]):.3f}", f"{hits[name]}/{k}"]
    mean_x = statistics.mean(exhaustive_evals)
    row += [f"{statistics.mean(evals['dynamic']):.1f}", f"{statistics.mean(stepwise_evals):.1f}",
            f"{statistics.mean(evals['static']):.1f}", f"{mean_x:.0f}",
            f"{100 * statistics.mean(evals['dynamic']) / mean_x:.1f}%"]
    return row


HEADER = ["sites", "evaluator", "budget", "problems"]
for _name in VARIANTS:
    HEADER += [f"{_name}: speedup / optimum (mean)", "(worst)", "optimum found"]
HEADER += ["dynamic evals", "dynamic evals, every step judged", "static evals", "exhaustive evals",
           "dynamic / exhaustive evals"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="random problems per row (default 10)")
    parser.add_argument("--sites", default="3,4,5,6", help="site counts, comma-separated (default 3,4,5,6)")
    parser.add_argument("--write", action="store_true", help="replace the generated section of docs/results/tuner.md")
    args = parser.parse_args(argv)
    cpu0 = time.process_time()
    rows = []
    for sites in (int(s) for s in args.sites.split(",")):
        for kind in KINDS:
            for budget in BUDGETS:
                row = one_row(sites, kind, budget, args.seeds)
                if row is not None:
                    rows.append(row)
                common.progress(f"{sites} sites, {kind}, budget {budget:.0e}: done")
    lines = common.markdown_table(HEADER, rows)
    lines += ["", f"CPU time: {time.process_time() - cpu0:.1f} s (all rows). Speedups are modeled, "
                  "on synthetic problems (4 candidates a site); problems whose budget is unreachable "
                  "even for the most precise plan are left out of their row."]
    print("\n".join(lines))
    if args.write:
        body = "\n".join(common.provenance(["python", "tools/bench_tuner_synthetic.py", *(argv or sys.argv[1:])], None)
                         + [""] + lines)
        common.replace_generated_section(common.ROOT / "docs" / "results" / "tuner.md", "tuner-synthetic", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
