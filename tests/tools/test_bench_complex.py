"""tools/bench_complex.py runs end to end at a small size and writes what the docs cite."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import bench_complex  # noqa: E402


def test_small_run_measures_both_dtypes_and_forms_and_fills_the_page(tmp_path, capsys):
    out, page = tmp_path / "speed.json", tmp_path / "page.md"
    page.write_text("x\n<!-- BEGIN GENERATED: complex-speed -->\n<!-- END GENERATED: complex-speed -->\ny\n")
    assert bench_complex.main(["--sizes", "48", "--repeats", "2", "--out", str(out), "--page", str(page)]) == 0
    records = json.loads(out.read_text())["records"]
    assert [(r["dtype"], r["config"].split(",")[0]) for r in records] == [
        ("complex64", "form=4"), ("complex64", "form=3"), ("complex128", "form=4"), ("complex128", "form=3")]
    assert all(r["median_ratio"] > 0 and len(r["seconds"]) == 2 for r in records)
    text = page.read_text()
    assert "| complex128 | 48 |" in text and text.startswith("x\n") and text.endswith("y\n")
