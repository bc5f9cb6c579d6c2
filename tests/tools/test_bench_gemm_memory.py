"""tools/bench_gemm_memory.py runs end to end on a small GEMM and records what the docs cite."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import bench_gemm_memory  # noqa: E402


def test_small_gemm_memory_is_measured_and_written(tmp_path, capsys):
    out = tmp_path / "memory.json"
    assert bench_gemm_memory.main(["--n", "512", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    result_bytes = 512 * 512 * 4
    for how in ("numpy", "mixjit"):
        assert record[how]["result_bytes"] == result_bytes
        assert record[how]["above_baseline_bytes"] >= result_bytes // 2  # the result's pages at least
    stages = record["mixjit_stages_bytes"]
    assert stages["split A: raw, q (bytes)"] == [512 * 512 * 8, 512 * 512 * 8]
    assert record["ratio"] > 0 and "ratio mixjit/numpy" in capsys.readouterr().out
