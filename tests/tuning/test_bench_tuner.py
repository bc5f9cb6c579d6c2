"""tools/bench_tuner.py: structure and invariants of its output at tiny sizes, and its target checks."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(TOOLS))
    try:
        spec = importlib.util.spec_from_file_location("bench_tuner", TOOLS / "bench_tuner.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_tuner"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("bench_tuner", None)
        sys.path.remove(str(TOOLS))


BUDGETS = (1e-6, 1e-3)


@pytest.fixture(scope="module")
def mlp_result(bench):
    return bench.bench_program(bench.mlp_program(16, 16), BUDGETS)


def test_every_budget_has_a_row_with_greedy_exhaustive_and_offline_figures(bench, mlp_result):
    p = mlp_result
    assert p.sites == 3 and [r.budget for r in p.rows] == list(BUDGETS)
    assert len(p.all_plans) == math.prod(p.candidates)  # exhaustive judged every plan once
    for r in p.rows:
        assert len(r.greedy_plan) == 3 and r.optimum_plan is not None and len(r.optimum_plan) == 3
        assert r.exhaustive_evals == math.prod(p.candidates)
        assert 1 <= r.greedy_evals <= r.greedy_runs  # the runs add the site-alone measurements
        assert r.stepwise_same is True and r.stepwise_evals >= 1  # jumps change the count, not the plan
        # the optimum is the fastest plan within budget: greedy can match it, never beat it
        assert r.optimum_time <= r.greedy_time * (1 + 1e-12) and 0 < r.greedy_over_optimum <= 1 + 1e-12
        assert r.greedy_error <= r.budget and r.optimum_error <= r.budget
        assert len(r.held_out_errors) == len(bench.HELD_OUT_SEEDS) and len(r.validation_errors) == 1
        assert all(math.isfinite(e) and e >= 0 for e in r.held_out_errors + r.validation_errors)
        for target in (bench.TARGET, bench.OTHER_TARGET):
            assert r.speedup[target]["precise"] >= 1 - 1e-12 and r.speedup[target]["native"] > 0
        assert r.speedup[bench.TARGET]["precise"] == pytest.approx(p.precise_time / r.greedy_time, rel=1e-9)
        assert r.offline_predicted >= 0 and r.offline_measured >= 0 and len(r.offline_plan) == 3
        assert r.tuning_cpu_s > 0
    assert p.rows[-1].greedy_time <= p.rows[0].greedy_time  # a looser budget never gives a slower plan


def test_report_prints_modeled_tables_and_target_verdicts(bench, mlp_result, tmp_path):
    lines = bench.report([mlp_result], None, 1.0)
    text = "\n".join(lines)
    assert "modeled speedup A100" in text and "predicted / measured" in text
    budget_rows = [line for line in lines if line.startswith("| 1e-06 |") or line.startswith("| 1e-03 |")]
    assert len(budget_rows) == 2 * len(BUDGETS)  # plan table and offline table
    verdicts = [line for line in lines[lines.index("### Targets"):] if line.startswith("| ") and "|---" not in line]
    assert len(verdicts) == 1 + 4  # header + 4 targets (no timing given)
    out = tmp_path / "pareto.png"
    bench.plot([mlp_result], out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_target_checks_pass_on_good_rows_and_fail_when_greedy_misses(bench, mlp_result):
    import copy

    timing = (512, 3.0, 9, 4)
    assert [c.met for c in bench.check_targets([mlp_result], timing)][3] is True  # 3 s < 30 s
    p = copy.deepcopy(mlp_result)
    row = p.rows[0]
    row.greedy_evals = row.exhaustive_evals  # as many evaluations as exhaustive
    row.held_out_errors = [row.budget * 2]  # the budget broken on held-out inputs
    row.optimum_time = row.greedy_time * 0.5  # the optimum twice as fast
    checks = bench.check_targets([p], (512, 31.0, 9, 4))
    assert [c.met for c in checks[:4]] == [False, False, False, False]
    assert "0.500" in checks[0].detail and "31.0 s CPU" in checks[3].detail


@pytest.mark.slow
def test_main_runs_both_programs_at_tiny_sizes(bench, capsys, tmp_path):
    assert bench.main(["--chol-n", "96", "--block", "32", "--mlp-width", "16", "--mlp-batch", "16", "--time-n", "96", "--budgets", "1e-5",
                       "--plot", str(tmp_path / "p.png")]) == 0
    out = capsys.readouterr().out
    assert "### cholesky" in out and "### mlp" in out and "tuning the 4-site Cholesky at n = 96 (tile 32)" in out
