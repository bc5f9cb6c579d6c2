"""`make demo` (python -m mixjit.demo): Cholesky and k-means tuned end to end, run on an unseen
input, then re-tuned offline and emitted as CUDA by mixopt; every figure checked against what
the functions and files say.

Runs the demo once, in-process, at its --quick sizes (the run-time entry comes from its warm
disk cache)."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest
from numba import njit

from mixjit import demo
from mixjit.report import dag_line, sites_report
from mixjit.tuning.api import last_result
from mixjit.tuning.outputs import relative_frobenius

NAMES = ("cholesky", "kmeans")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> SimpleNamespace:
    out_dir = tmp_path_factory.mktemp("demo")
    examples = demo.build_examples(quick=True)
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        status = demo.run_demo(examples, out_dir)
    assert status == 0
    return SimpleNamespace(out=buffer.getvalue(), out_dir=out_dir, examples={ex.name: ex for ex in examples})


def _section(out: str, name: str) -> str:
    parts = re.split(r"^== \d+\. ", out, flags=re.M)
    (section,) = [p for p in parts[1:] if f"(examples/{name}.py)" in p.splitlines()[0]]
    return section


def test_every_time_and_speedup_printed_is_labelled_modeled(run):
    lines = run.out.splitlines()
    assert re.search(r"^target: .*every time and speedup printed is modeled for it", run.out, re.M)
    figures = [line for line in lines if re.search(r"speedup|modeled time| us\b", line)]
    assert figures  # the report and the mixopt lines give modeled figures
    table_rows = [line for line in lines if re.match(r"^\s*\d+\s+\|\s+\S+\.py:\d+", line)]
    for line in figures:
        assert "modeled" in line or line in table_rows, line
    assert len(table_rows) == len(NAMES)  # one site each; its columns are headed "modeled ..."
    assert len(re.findall(r"modeled time\s+\|\s+modeled speedup vs native", run.out)) == len(NAMES)
    assert re.search(r"^written under \S+/ ; demo took \d+ s$", run.out, re.M)
    assert '"mix.gemm"' not in run.out  # the IR is in files, not on the terminal


@pytest.mark.parametrize("name", NAMES)
def test_report_is_f_report_and_the_files_are_written(run, name):
    ex, section = run.examples[name], _section(run.out, name)
    report = ex.fn.report()
    assert report in section
    assert (run.out_dir / f"{name}.report.txt").read_text() == report + "\n"
    assert (run.out_dir / f"{name}.pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plan = json.loads((run.out_dir / f"{name}.mixplan.json").read_text())
    assert (plan["target"], plan["error_budget"]) == (demo.TARGET, ex.budget)
    assert re.search(rf"^@mixjit\(error_budget={ex.budget:g}, target='{demo.TARGET}'", section, re.M)
    (files,) = re.findall(r"^  files: (.+)$", section, re.M)
    listed = [Path(p).resolve() for p in files.split(", ")]
    assert listed[:4] == [(run.out_dir / f"{name}.{kind}").resolve()
                          for kind in ("report.txt", "pareto.png", "mixplan.json", "retune.txt")]
    assert all(p.exists() for p in listed)


@pytest.mark.parametrize("name", NAMES)
def test_tuning_has_real_choices_and_keeps_the_budget(run, name):
    ex = run.examples[name]
    plan = ex.fn.plan
    assert plan.within_budget and plan.error <= ex.budget
    assert any(s.scheme != "native" for s in plan.sites)  # the demo's sizes and target make emulation pay
    assert plan.modeled_speedup > 1.0
    result = last_result(ex.fn)
    assert sum(len(space.candidates) for space in result.spaces.values()) > len(result.spaces)  # >1 a site
    assert result.validation and all(v.within_budget for v in result.validation)


def _unseen_lines(section: str) -> list[str]:
    return section.split("run on an input the tuner never saw", 1)[1].splitlines()


@pytest.mark.parametrize("name", NAMES)
def test_unseen_run_errors_are_recomputed_from_the_functions(run, name):
    ex, section = run.examples[name], _section(run.out, name)
    unseen = ex.inputs["unseen"]
    got, ref = ex.fn(*unseen), njit(ex.fn.py_func)(*unseen)
    got32 = njit(ex.fn.py_func)(*demo.cast(unseen, np.float32))
    shown = re.search(r"vs the FP64 run \(relative Frobenius\): (\S+); the same program in float32 \(@njit\): (\S+)$",
                      section, re.M)
    assert shown, section
    assert float(shown[1]) == pytest.approx(relative_frobenius(ex.output(got), ex.output(ref)), rel=6e-3, abs=1e-300)
    assert float(shown[2]) == pytest.approx(relative_frobenius(ex.output(got32), ex.output(ref)), rel=6e-3)
    for s in (s for s in ex.fn.sites if s.taken):  # what each site ran after tuning, from f.sites
        assert re.search(rf"^    site {s.id}\s+examples/{name}\.py:\d+\s+.+\s+float64\s+{re.escape(s.plan.label)}\s+"
                         rf"calls=\d+$", section, re.M)
        assert s.plan.label == f"{ex.fn.plan.sites[0].scheme}[{ex.fn.plan.sites[0].config}]"


def test_application_metrics(run):
    chol = run.examples["cholesky"]
    a = chol.inputs["unseen"][0]
    L = chol.fn(*chol.inputs["unseen"])
    backward = np.linalg.norm(a - L @ L.T) / np.linalg.norm(a)
    (shown,) = re.findall(r"backward error \|\|A - L L\^T\|\|_F / \|\|A\|\|_F: (\S+) \(FP64 run: (\S+)\)",
                          _section(run.out, "cholesky"))
    assert float(shown[0]) == pytest.approx(backward, rel=6e-3) and float(shown[1]) < 1e-14
    km = run.examples["kmeans"]
    labels = km.fn(*km.inputs["unseen"])[1]
    labels64 = njit(km.fn.py_func)(*km.inputs["unseen"])[1]
    (agree,) = re.findall(r"agree with the FP64 run on ([\d.]+)% of the points \((\d+)/(\d+)\)", _section(run.out, "kmeans"))
    assert int(agree[1]) == int(np.sum(labels == labels64)) and int(agree[2]) == labels.size
    assert float(agree[0]) == pytest.approx(100 * int(agree[1]) / labels.size, abs=0.005)


@pytest.mark.parametrize("name", NAMES)
def test_offline_retune_meets_the_tighter_budget(run, name):
    ex, section = run.examples[name], _section(run.out, name)
    assert ex.offline_budget < ex.budget
    line = re.search(rf"^  tune\{{budget={ex.offline_budget:g}\}}: site (\d+) -> (\S+); modeled program error (\S+) "
                     rf"\(within budget {ex.offline_budget:g}\), modeled speedup ([\d.]+)x vs native$", section, re.M)
    assert line, section
    assert float(line[3]) <= ex.offline_budget
    log = (run.out_dir / f"{name}.retune.txt").read_text()
    assert log.startswith("$ mixopt ") and f"{name}.mix -p " in log.splitlines()[0]
    assert f"tune{{budget={ex.offline_budget:g},target={demo.TARGET}}}" in log and "--report" in log
    assert "tuning report: target jetson-agx-orin" in log and 'mix.plan = {config = ' in log
    site = next(s for s in ex.fn.sites if s.taken)
    if ex.fn.plan.error > ex.offline_budget:  # the online plan breaks the tighter budget: the plan must change
        assert line[2] != site.plan.label


def test_cholesky_offline_retune_moves_to_fp64_emulation(run):
    section = _section(run.out, "cholesky")
    assert run.examples["cholesky"].fn.plan.sites[0].scheme == "mixpert"  # FP32-class emulation at 1e-6
    assert re.search(r"^  tune\{budget=1e-12\}: site \d+ -> mixpert-fp64\[", section, re.M)


@pytest.mark.parametrize("name", NAMES)
def test_emit_cuda_writes_the_kernel_of_the_plan_the_program_runs(run, name):
    ex, section = run.examples[name], _section(run.out, name)
    emit_dir = run.out_dir / "cuda" / name
    kernels = json.loads((emit_dir / "manifest.json").read_text())["kernels"]
    site = next(s for s in ex.fn.sites if s.taken)
    log = (emit_dir / "mixopt.txt").read_text()
    assert f"emit-cuda{{arch={demo.ARCH}}}" in log
    line = re.search(r"^  emit-cuda\{arch=sm_90\} \(the plan it runs\): (\d+) kernel\(s\)(.*)$", section, re.M)
    assert line and int(line[1]) == len(kernels)
    if kernels:
        (k,) = kernels
        assert (k["scheme"], k["config"], k["sites"]) == (site.plan.scheme, site.plan.config, [site.id])
        assert "__global__" in (emit_dir / k["file"]).read_text() and k["file"] in line[2]
    else:  # a scheme without a CUDA kernel: said, not hidden
        assert "keep their CPU executor" in line[2] and "keeps its CPU executor" in log
    if name == "cholesky":
        assert len(kernels) == 1  # mixpert has CUDA kernels


def test_assignment_metric_counts_moved_points_and_measures_centroids():
    labels = np.array([0, 1, 2, 3], np.int64)
    assert demo.assignment_metric(labels, labels) == 0.0
    assert demo.assignment_metric(np.array([0, 1, 2, 0]), labels) == 0.25
    C, ref = np.array([[1.0, 2.0]]), np.array([[1.0, 2.5]])
    assert demo.assignment_metric(C, ref) == pytest.approx(0.5 / np.linalg.norm(ref))


def test_retune_failure_is_reported_with_its_log(tmp_path, run):
    ex = run.examples["cholesky"]
    bad = tmp_path / "cholesky.mix"
    bad.write_text("this is not mix IR\n")
    status, summary, log = demo.retune_offline(ex, bad, tmp_path, native_time=None)
    assert status != 0 and summary.startswith(f"mixopt failed (exit {status})")
    assert log == tmp_path / "cholesky.retune.txt" and "error" in log.read_text()


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
