"""tools/bench_tuner_synthetic.py runs and prints one row per (sites, evaluator, budget)."""

from __future__ import annotations

import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def test_bench_tuner_synthetic_prints_its_table(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    sys.modules.pop("bench_tuner_synthetic", None)
    import bench_tuner_synthetic

    assert bench_tuner_synthetic.main(["--seeds", "2", "--sites", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("| 3 |")]
    assert len(rows) == 8  # 2 evaluators x 4 budgets, each with a reachable problem at this seed
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == len(bench_tuner_synthetic.HEADER)
        assert all(0 < float(cells[i]) <= 1 for i in (4, 5, 7, 8, 10, 11))  # greedy never beats the optimum
        assert cells[-2] == "64"  # 4 x 4 x 4 plans judged by exhaustive
