"""tools/bench_cuda.py: without a device it measures nothing and exits 2 with the reason; its
tables have the accuracy table's form; on a GPU (``gpu``) a quick run writes every row and MixPert
level=IV is at least as accurate as cuBLAS SGEMM (the issue's target)."""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from mixjit.runtime.cuda.device import probe

ROOT = pathlib.Path(__file__).resolve().parents[2]
STATUS = probe()


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        yield importlib.import_module("bench_cuda")
    finally:
        sys.path.remove(str(ROOT / "tools"))


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "bench_cuda.py"), *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


@pytest.mark.skipif(STATUS.available, reason="a CUDA device is present")
def test_without_a_device_nothing_is_measured_and_the_reason_is_printed():
    proc = _run("--quick")
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"no CUDA device: {STATUS.reason}. Nothing was measured" in proc.stderr


def test_bad_arguments_are_refused(bench):
    assert bench.parse_shape("64x32X16") == (64, 32, 16)
    with pytest.raises(Exception, match="write MxKxN"):
        bench.parse_shape("64x32")
    proc = _run("--quick", "--write-docs")
    assert proc.returncode == 2 and "--write-docs needs a full run" in proc.stderr


def test_the_tables_have_the_accuracy_tables_form(bench):
    rows = [bench.Row("float32:sgemm", "cuBLAS SGEMM", "fp32"), bench.Row("float32:mixpert:level=IV", "mixpert", "level=IV"),
            bench.Row("float32:mixpert:level=I", "mixpert", "level=I")]
    shapes = [(64, 64, 64), (128, 32, 8)]
    records = [
        {"row": "float32:sgemm", "shape": [64, 64, 64], "ms": 2.0, "error": 1e-6, "note": ""},
        {"row": "float32:sgemm", "shape": [128, 32, 8], "ms": 1.0, "error": 2e-6, "note": ""},
        {"row": "float32:mixpert:level=IV", "shape": [64, 64, 64], "ms": 0.5, "error": 4.46e-7, "note": ""},
        {"row": "float32:mixpert:level=IV", "shape": [128, 32, 8], "ms": None, "error": None, "note": "handed back: x"},
    ]
    lines = bench.render(rows, records, shapes, ["- command: `x`"]).splitlines()
    assert lines[0] == "- command: `x`"
    assert "### float32 operands: device time per GEMM (speedup over cuBLAS SGEMM), measured" in lines
    assert "| row | config | 64x64x64 | 128x32x8 |" in lines
    assert "| cuBLAS SGEMM | fp32 | 2.000 ms (1.00×) | 1.000 ms (1.00×) |" in lines
    assert "| mixpert | level=IV | 0.500 ms (4.00×) | handed back: x |" in lines
    assert "| mixpert | level=I | - | - |" in lines
    assert "| mixpert | level=IV | 4.46e-07 | - |" in lines
    assert not any("host steps" in line for line in lines)  # mixpert does no host work
    assert not any("float64" in line for line in lines)  # no float64 rows: no float64 tables


def test_float64_rows_are_timed_against_dgemm_and_measured_against_the_double_double_product(bench):
    rows = [bench.Row("float32:sgemm", "cuBLAS SGEMM", "fp32"),
            bench.Row("float64:dgemm", "cuBLAS DGEMM", "fp64", "float64"),
            bench.Row("float64:mixpert-fp64:x", "mixpert-fp64", "x", "float64")]
    records = [{"row": "float32:sgemm", "shape": [64, 64, 64], "ms": 1.0, "error": 1e-7, "note": ""},
               {"row": "float64:dgemm", "shape": [64, 64, 64], "ms": 8.0, "error": 1e-16, "note": ""},
               {"row": "float64:mixpert-fp64:x", "shape": [64, 64, 64], "ms": 2.0, "error": 2e-16, "note": ""}]
    text = bench.render(rows, records, [(64, 64, 64)], ["- command: `x`"])
    assert "### float64 operands: device time per GEMM (speedup over cuBLAS DGEMM), measured" in text
    assert "| mixpert-fp64 | x | 2.000 ms (4.00×) |" in text  # over DGEMM's 8 ms, not SGEMM's 1 ms
    assert "### float64 operands: relative Frobenius error against the double-double product" in text
    a = np.random.default_rng(0).uniform(-1, 1, (5, 7))
    exact = bench.exact_product(a, a.T)
    assert exact.dtype == np.float64 and np.abs(exact - a @ a.T).max() <= 1e-15


def test_untimed_host_steps_are_said_under_the_time_table(bench):
    rows = [bench.Row("float32:ozaki2:moduli=8", "ozaki2", "moduli=8")]
    records = [{"row": "float32:ozaki2:moduli=8", "shape": [64, 64, 64], "ms": 0.5, "error": 1e-9, "note": ""}]
    text = bench.render(rows, records, [(64, 64, 64)], ["- command: `x`"])
    assert "Device time only; these host steps are not in it: ozaki2: the shifts before and the CRT" in text
    assert "split:" not in text


@pytest.mark.gpu
@pytest.mark.skipif(not STATUS.available, reason=f"no CUDA device: {STATUS.reason}")
def test_gpu_quick_run_measures_every_row(tmp_path):
    proc = _run("--quick", "--repeats", "2", "--json", str(tmp_path / "b.json"))
    if proc.returncode == 3:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "b.json").read_text())
    keys = {r["key"] for r in data["rows"]}
    assert {"float32:sgemm", "float32:dgemm", "float32:mixpert:level=IV", "float64:dgemm"} <= keys
    assert any(k.startswith("float64:mixpert-fp64:") for k in keys)
    at = {(r["row"], tuple(r["shape"])): r for r in data["records"]}
    for shape in data["shapes"]:
        assert at[("float32:sgemm", tuple(shape))]["ms"] > 0 and at[("float64:dgemm", tuple(shape))]["ms"] > 0
        assert at[("float32:mixpert:level=IV", tuple(shape))]["error"] <= at[("float32:sgemm", tuple(shape))]["error"]
