"""tools/encodings_accuracy.py: its quick form runs as a user would, lists every row
with a "modeled" speed, and the numbers make sense against the formats' precision."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_quick_run_lists_every_row_and_labels_speed_modeled(tmp_path):
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "encodings_accuracy.py"), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    records = {(r["scheme"], r["config"]): r for r in json.loads(out.read_text())}
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import encodings_accuracy as tool
    finally:
        sys.path.pop(0)
    assert len(records) == len(tool.ROWS)
    table_rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "scheme" not in line]
    assert len(table_rows) == len(tool.ROWS) and all("(modeled)" in line for line in table_rows)
    err = {key: r["error"]["0.005"] for key, r in records.items()}
    # sf16 keeps 15 bits for the inliers and the outliers exactly: far below int8's
    # error once outliers inflate int8's per-row scale, and above FP32's
    assert 2.0**-24 < err[("int8", "scale=row-col,encoding=sf16")] < 2.0**-12 < err[("int8", "scale=row-col")]
    assert records[("int8", "scale=row-col,encoding=sf16")]["kept_fp32"] > 0
    assert records[("vitbit", "bits=8")]["error"] == records[("int8", "scale=row-col")]["error"]
