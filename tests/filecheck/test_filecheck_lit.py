"""Run the lit + FileCheck golden tests in this directory, so plain `pytest` is the one gate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def test_lit_golden_tests_pass():
    proc = subprocess.run(
        [sys.executable, "-c", "from lit.main import main; main()", "-sv", "-j2", str(HERE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"lit failed:\n{report}"
    golden = sorted(HERE.glob("*.mix"))
    assert golden, "no golden tests found"
    assert f"Passed: {len(golden)}" in report, report
