"""tools/accuracy_complex.py, run as a user would (quick form): its tables have the rows, the
issue's checks are stated, and the numbers make sense against independent yardsticks (numpy's
cgemm/zgemm, the correctly rounded product, the documented form-3 behaviour)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_quick_run_measures_every_row_and_states_the_checks(tmp_path):
    out = tmp_path / "acc.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "accuracy_complex.py"), "--quick", "--dists", "uniform", "wide-up",
         "--json", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    recs = data["records"]
    top = {"complex64": "form=4,real=mixpert(segments=4,pairs=sig6,align=row)",
           "complex128": "form=4,real=mixpert-fp64(segments=9,pairs=slices3sig2,tile=16x4096x8)"}
    for dtype, label in top.items():
        for dist in ("uniform", "wide-up"):
            by = {r["row"]: r for r in recs if r["dtype"] == dtype and r["dist"] == dist and r["n"] == 64}
            assert {"numpy", "RN(exact)", label, label.replace("form=4", "form=3", 1)} <= set(by)
            floor = by["RN(exact)"]["frobenius"]
            assert all(r["frobenius"] >= floor * 0.999 for r in by.values())
            assert by[label]["frobenius"] < 2 * floor
    # the checks are stated for every size and pass at these sizes
    assert data["checks"] and all(v["pass"] for v in data["checks"])
    assert proc.stdout.count("PASS:") == len(data["checks"])
    # form 3 loses Im C when the parts are 2^20 apart in A and in B, by about 2^20
    for s in data["form_study"]:
        ratio = s["form3_im_frobenius"] / s["form4_im_frobenius"]
        assert (2.0**18 < ratio < 2.0**22) if s["dist"] in ("wide-up", "wide-down") else ratio < 3
