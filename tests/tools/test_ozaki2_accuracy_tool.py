"""tools/accuracy_ozaki2.py, run as a user would (quick form): its table has the rows
and the numbers make sense against independent yardsticks (BLAS, RN(exact))."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_quick_run_reports_every_moduli_row(tmp_path):
    out = tmp_path / "acc.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "accuracy_ozaki2.py"), "--quick", "--dists", "normal", "wide",
         "--long-k", "128", "--json", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    recs = json.loads(out.read_text())["records"]
    assert "256 × 128 × 256" in proc.stdout  # the long-K table
    for dtype, top in (("float32", "moduli=8"), ("float64", "moduli=15")):
        for dist in ("normal", "wide"):
            by = {r["row"]: r for r in recs if r["dtype"] == dtype and r["dist"] == dist and r["n"] == 64
                  and r["k"] == 64}
            assert {"native", "RN(exact)", top, top + ",mode=accurate"} <= set(by)
            best = by["RN(exact)"]["frobenius"]
            # RN(exact) is the floor; the precise configs reach it within a factor 2 and beat BLAS
            assert all(r["frobenius"] >= best * 0.999 for r in by.values())
            assert by[top]["frobenius"] < 2 * best and by[top]["frobenius"] <= by["native"]["frobenius"]
