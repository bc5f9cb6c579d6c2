"""Greedy (MixPert §3.4) against exhaustive search on random synthetic tuning problems.

    python tools/bench_tuner_synthetic.py [--seeds 10] [--sites 3,4,5,6] [--write]

Each problem (passes/tuning/synthetic.py) has ``sites`` GEMM sites of 4 candidates each
(modeled times falling, site errors rising with the index) and a random forward DAG. Two
program-error evaluators: *additive* (site errors add up: the offline model's assumption) and
*propagating* (each site's output error is its own plus 3x its predecessors': errors amplify
along the DAG, non-additive). For budgets 1e-7 .. 1e-4, the table gives, over the problems whose
budget is reachable: greedy's modeled speedup (most precise plan's modeled time / the plan's)
as a fraction of the exhaustive optimum's (mean and worst), how often greedy finds the optimum,
the same for greedy without the predecessor-raising rule, and the evaluations each search needed.
Everything is modeled on synthetic numbers: it measures the search, not any hardware.
``--write`` replaces the generated section of docs/tuning.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import common

from mixjit.passes.tuning.exhaustive import exhaustive
from mixjit.passes.tuning.greedy import greedy
from mixjit.passes.tuning.space import plan_time
from mixjit.passes.tuning.synthetic import AdditiveEvaluator, PropagatingEvaluator, random_problem

BUDGETS = (1e-7, 1e-6, 1e-5, 1e-4)
KINDS = ("additive", "propagating")


def evaluator(kind, problem):
    if kind == "additive":
        return AdditiveEvaluator(problem.spaces)
    return PropagatingEvaluator(problem.spaces, problem.dag)


def one_row(sites: int, kind: str, budget: float, seeds: int) -> list[str] | None:
    quality, quality_nodag, hits, hits_nodag, evals_g, evals_x = [], [], 0, 0, [], []
    for seed in range(seeds):
        problem = random_problem(1000 * sites + seed, sites)
        spaces = problem.spaces
        precise = plan_time(spaces, {s: 0 for s in spaces})
        x = exhaustive(spaces, evaluator(kind, problem), budget)
        if not x.within_budget:
            continue
        g = greedy(spaces, evaluator(kind, problem), budget, dag=problem.dag)
        n = greedy(spaces, evaluator(kind, problem), budget)
        assert g.within_budget and n.within_budget and g.time >= x.time and n.time >= x.time
        quality.append((precise / g.time) / (precise / x.time))
        quality_nodag.append((precise / n.time) / (precise / x.time))
        hits += g.time == x.time
        hits_nodag += n.time == x.time
        evals_g.append(g.evaluation_count)
        evals_x.append(x.evaluation_count)
    if not quality:
        return None
    k = len(quality)
    return [str(sites), kind, f"{budget:.0e}", str(k),
            f"{statistics.mean(quality):.3f}", f"{min(quality):.3f}", f"{hits}/{k}",
            f"{statistics.mean(quality_nodag):.3f}", f"{min(quality_nodag):.3f}", f"{hits_nodag}/{k}",
            f"{statistics.mean(evals_g):.1f}", f"{statistics.mean(evals_x):.0f}",
            f"{100 * statistics.mean(evals_g) / statistics.mean(evals_x):.1f}%"]


HEADER = ["sites", "evaluator", "budget", "problems", "greedy/optimum speedup (mean)", "(worst)", "optimum found",
          "no-raise greedy/optimum (mean)", "(worst)", "optimum found", "greedy evals", "exhaustive evals",
          "greedy / exhaustive evals"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="random problems per row (default 10)")
    parser.add_argument("--sites", default="3,4,5,6", help="site counts, comma-separated (default 3,4,5,6)")
    parser.add_argument("--write", action="store_true", help="replace the generated section of docs/tuning.md")
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
        common.replace_generated_section(common.ROOT / "docs" / "tuning.md", "tuner-synthetic", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
