"""`make gpu-check` without a GPU, as CI runs it: tools/gpu_check.py installs into its own
environment (from the wheels folder where needed), imports mixjit there, finds no device, builds
every kernel with its SASS checks (here for one Hopper and one Blackwell target, to bound CI's
time: tests/cuda builds each family for every target), collects tests/gpu, and exits with its own
status (3) and a summary; at its time limit it stops cleanly with status 4."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "gpu_check.py"


def _run(tmp_path: Path, *extra: str, timeout: float = 900) -> tuple[subprocess.CompletedProcess, dict]:
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, str(TOOL), "--results", str(results), *extra],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return proc, json.loads((results / "summary.json").read_text())


def test_without_a_device_it_checks_what_it_can_and_says_so(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    proc, summary = _run(tmp_path, "--wheels", str(wheels), "--archs", "sm_90", "sm_100a")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    steps = {s["name"]: s for s in summary["steps"]}
    assert summary["exit"] == 3 and summary["device"] is False
    for name in ("environment", "install: wheels", "install: mixjit", "import", "device", "builds", "tests"):
        assert steps[name]["status"] == "ok", (name, steps[name])
    assert "gpu-venv" in summary["python"]
    assert "no device" in steps["device"]["detail"]
    assert "tests collected" in steps["tests"]["detail"] and steps["bench"]["status"] == "skipped"
    log = (tmp_path / "results" / "gpu-check.log").read_text()
    assert "building mixpert" in log and "IMMA" in log  # every kernel built, its SASS read
    assert "sm_100a" in log and "sm_80" not in log  # for the targets asked
    assert "no CUDA device here (exit 3)" in proc.stdout


def test_it_stops_at_its_time_limit(tmp_path):
    proc, summary = _run(tmp_path, "--time-limit", "4", timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    statuses = [s["status"] for s in summary["steps"]]
    assert "timeout" in statuses and summary["exit"] == 4
    assert "stopped at the time limit" in proc.stdout
