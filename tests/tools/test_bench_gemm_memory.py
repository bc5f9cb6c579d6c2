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
    # a call's float32-domain split keeps no values and int32 mantissas
    assert stages["split A: raw kept, q (bytes)"] == [0, 512 * 512 * 4]
    assert record["ratio"] > 0 and "ratio mixjit/numpy" in capsys.readouterr().out


def test_a_2048_float32_gemm_peaks_at_most_the_target_times_numpy():
    """The target itself (the default MixPert config, 2048 x 2048 float32): peak above baseline
    at most ``TARGET_RATIO`` times numpy's ``a @ b``, each in a fresh process (11.2x before the
    float32 row form, int32 mantissas, results written into C and the wide path's panels)."""
    rows = {how: bench_gemm_memory.measure(how, 2048, "float32", "mixpert") for how in ("numpy", "mixjit")}
    ratio = rows["mixjit"]["above_baseline_bytes"] / rows["numpy"]["above_baseline_bytes"]
    assert ratio <= bench_gemm_memory.TARGET_RATIO, rows
