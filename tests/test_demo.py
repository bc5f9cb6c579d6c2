"""`make demo` (python -m mixjit.demo): one screen that says what happened, per example.

Runs the demo in-process at its --quick sizes (the examples compile once per process;
the run-time entry comes from its warm disk cache)."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest
from numba import njit

from mixjit import demo, mixjit
from mixjit.report import dag_line, sites_report

EXPECTED_CALLS = {"cholesky": 3, "kmeans": 3}  # --quick: n=40 in blocks of 16; 3 Lloyd iterations
FORMS = {"cholesky": "c -= a @ b.T", "kmeans": "a @ b.T"}


@pytest.fixture(scope="module")
def screen(tmp_path_factory) -> tuple[str, Path]:
    out_dir = tmp_path_factory.mktemp("demo")
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        status = demo.main(["--quick", "--repeats", "2", "--out", str(out_dir)])
    assert status == 0
    return buffer.getvalue(), out_dir


def _section(out: str, name: str) -> str:
    parts = re.split(r"^== \d+\. ", out, flags=re.M)
    (section,) = [p for p in parts[1:] if f"(examples/{name}.py)" in p.splitlines()[0]]
    return section


def test_fits_one_screen_and_names_metric_time_and_executor(screen):
    out, _ = screen
    assert len(out.splitlines()) <= 60
    assert "relative Frobenius error" in out and "y_ref = the same program under @njit in float64" in out
    assert re.search(r"^time: wall, best of 2 calls .*measured on this CPU$", out, re.M)
    assert re.search(r"^note: .*CPU executor, a bit-exact simulator .*, not a GPU kernel", out, re.M)
    assert re.search(r"^run-time entry .*: (loaded from its disk cache|compiled) in [\d.]+ s", out, re.M)
    # the full IR is in files, not on the terminal
    assert '"func.func"' not in out and '"mix.gemm"' not in out


@pytest.mark.parametrize("name", ["cholesky", "kmeans"])
def test_each_example_shows_sites_dag_plans_and_calls(screen, name):
    out, _ = screen
    section = _section(out, name)
    fn = demo.load_example(name).__dict__[name]
    taken = [s for s in fn.sites if s.taken]
    assert sorted(s.dtype for s in taken) == ["float32", "float64"]
    for s in taken:  # what each site ran is read from f.sites, per site
        row = re.search(rf"^  site {s.id}\s+examples/{name}\.py:(\d+)\s+(.+?)\s+{s.dtype}\s+(\S+)\s+calls=(\d+)$",
                        section, re.M)
        assert row, f"no row for site {s.id} in:\n{section}"
        assert row[1] == s.loc.rsplit(":", 1)[1] and row[2] == FORMS[name]
        assert row[3] == s.plan.label and int(row[4]) == EXPECTED_CALLS[name]
        assert re.search(rf"^DAG \({s.dtype}\[:, :\].*\): site {s.id} \(loop depth 1\); "
                         rf"edges: {s.id} -> {s.id} \(via memory, loop-carried\)$", section, re.M)


def _rows(section: str) -> dict[str, list[str]]:
    cells = [re.split(r"\s{3,}", line.strip()) for line in re.findall(r"^  (float\d\d .*)$", section, re.M)]
    return {row[0]: row[1:] for row in cells}


@pytest.mark.parametrize("name", ["cholesky", "kmeans"])
def test_errors_are_the_named_metric_next_to_njit(screen, name):
    out, _ = screen
    rows = _rows(_section(out, name))
    assert set(rows) == {"float32", "float64"}
    assert rows["float64"][1] == "(is y_ref)"  # @njit float64 is the reference itself
    case = next(c for c in demo.cases(quick=True) if c.name == name)
    plain = njit(case.fn.py_func)
    for dtype in (np.float64, np.float32):
        args = demo.cast(case.args, dtype)
        ref = case.output(plain(*demo.cast(args, np.float64)))
        want = np.linalg.norm(case.output(case.fn(*args)).astype(np.float64) - ref) / np.linalg.norm(ref)
        shown = rows[np.dtype(dtype).name][0]
        assert (want == 0 and shown == "0 (equal)") or float(shown) == pytest.approx(want, rel=6e-3)
    assert float(rows["float64"][0] if rows["float64"][0] != "0 (equal)" else 0) < 1e-14
    assert float(rows["float32"][0]) < 1e-6 and 1e-9 < float(rows["float32"][1]) < 1e-5
    for cell in rows["float32"][2:] + rows["float64"][2:]:
        assert re.fullmatch(r"[\d.]+ (us|ms|s)", cell)


@pytest.mark.parametrize("name", ["cholesky", "kmeans"])
def test_mixopt_summary_points_at_its_full_output(screen, name):
    out, out_dir = screen
    section = _section(out, name)
    assert re.search(rf"^mixopt {name}\.mix -p {demo.PIPELINE}: \d+ ops, 1 mix\.gemm \(alpha=", section, re.M)
    (path,) = re.findall(r"^  full IR after each pass, with timing: (\S+)$", section, re.M)
    assert Path(path).resolve() == (out_dir / f"{name}.mixopt.txt").resolve()
    text = Path(path).read_text()
    assert "IR Dump After BuildDag (build-dag)" in text and "Total Execution Time" in text


def test_run_case_reports_a_function_without_gemms_and_its_warning():
    @mixjit
    def twice(a):
        return a * 2.0

    case = demo.Case("twice", "twice", twice, (np.arange(6.0).reshape(2, 3),), lambda y: y, "y")
    result = demo.run_case(case, repeats=1)
    assert result.sites == "sites: none found (the function runs as plain Numba code)"
    assert any(w.startswith("MixjitWarning: mixjit: no GEMM found in") for w in result.warnings)
    assert [(r.dtype, r.err_mixjit, r.err_njit) for r in result.rows] == [("float64", 0.0, 0.0),
                                                                         ("float32", 0.0, 0.0)]


def test_sites_report_rows_for_helpers_rejections_and_given_calls():
    plan = SimpleNamespace(label="mixpert[level=full]")
    sites = [
        SimpleNamespace(id=7, taken=True, loc="/nowhere/f.py:12", function="f", form="a @ b", dtype="float32",
                        plan=plan, calls=99, reason=""),
        SimpleNamespace(id=8, taken=True, loc="/nowhere/g.py:3", function="helper", form="c += a @ b",
                        dtype="float64", plan=plan, calls=5, reason=""),
        SimpleNamespace(id=None, taken=False, loc="/nowhere/f.py:20", function="f", form="a @ b",
                        dtype="int64", plan=None, calls=0, reason="int64 GEMMs stay with Numba"),
    ]
    fn = SimpleNamespace(sites=sites, py_func=SimpleNamespace(__qualname__="f"))
    lines = sites_report(fn, calls={7: 2}).splitlines()
    assert lines[1].split() == ["site", "7", "/nowhere/f.py:12", "a", "@", "b", "float32", "mixpert[level=full]",
                                "calls=2"]
    assert "/nowhere/g.py:3 in helper" in lines[2] and lines[2].endswith("calls=0")
    assert lines[3].split()[0] == "-" and lines[3].endswith("not taken: int64 GEMMs stay with Numba")
    assert len({line.index("float") for line in lines[1:3]}) == 1  # columns aligned
    assert "calls=99" in sites_report(fn)


def test_dag_line_names_depths_and_edges():
    dag = nx.DiGraph()
    dag.add_node(4, loop_depth=2)
    dag.add_node(5, loop_depth=0)
    dag.add_edge(4, 5, via=("value", "memory"), carried=False)
    assert dag_line(dag) == "site 4 (loop depth 2), site 5 (loop depth 0); edges: 4 -> 5 (via value+memory)"
    assert dag_line(nx.DiGraph()) == "no sites; edges: none"
