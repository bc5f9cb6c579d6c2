"""The JIT's pass pipeline (mixjit.frontend_pipeline): @mixjit runs detect-gemm and build-dag
through the pass manager, so it gets verify-each, remarks, IR dumps and timing like mixopt, and
a failing pass still falls back to plain Numba with a warning that names it."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

from mixjit import mixjit
from mixjit.decorator import MixjitWarning
from mixjit.frontend_pipeline import FRONTEND_PASSES, FRONTEND_PIPELINE, run_frontend_pipeline
from mixjit.importer import import_function
from mixjit.ir.diagnostics import Severity
from mixjit.ir.printer import print_op
from mixjit.passes import build_dag
from mixjit.passes.build_dag import BuildDag
from mixjit.passes.canonicalize import Canonicalize
from mixjit.passes.cse import CommonSubexpressionElimination
from mixjit.passes.dce import DeadCodeElimination
from mixjit.passes.detect_gemm import DetectGemm, detection_report
from mixjit.passes.manager import PassFailure
from mixjit.passes.pass_base import PassResult
from mixjit.sites import FALLBACK_REASON

A = np.arange(16.0).reshape(4, 4) / 7.0
V = np.arange(4.0)


def chain(a, v):
    b = a @ a          # site 0
    c = b @ a.T        # site 1, reads site 0's result
    return c, np.dot(v, v)   # a 1-D dot: left to numba


def test_the_frontend_pipeline_returns_module_remarks_and_the_dag_analysis():
    module = import_function(chain, A, V).module
    stream = io.StringIO()
    result = run_frontend_pipeline(module, print_ir_after_all=stream, timing=True)
    assert FRONTEND_PIPELINE == "detect-gemm,detect-linalg,build-dag"
    assert [s.site for s in result.sites] == [0, 1]
    # rejections come through the remark channel, with their structured record
    (remark,) = [d for d in result.diagnostics if d.severity is Severity.REMARK]
    assert "[dot-1d]" in remark.message
    assert [(r.reason, r.detail) for r in result.rejections] == [
        (r.reason, r.detail) for r in detection_report(module).rejected] == [("dot-1d", "A is 1-D, B is 1-D")]
    # the DAG is build-dag's analysis, computed once and cached
    assert sorted(result.dag.edges) == [(0, 1)] and result.dag is result.dag
    assert result.analyses.computations == {"gemm-dag": 1}
    dumps = stream.getvalue()
    assert "IR Dump After DetectGemm (detect-gemm)" in dumps and "IR Dump After BuildDag (build-dag)" in dumps
    assert [name for name, _ in result.timing.times] == ["detect-gemm", "detect-linalg", "build-dag"]


def test_a_pipeline_of_pass_instances_runs_as_the_same_pipeline_as_text():
    text = "detect-gemm{fuse-updates=false},build-dag,canonicalize{max-iterations=3},cse,dce"
    instances = [DetectGemm(fuse_updates=False), BuildDag(), Canonicalize(max_iterations=3),
                 CommonSubexpressionElimination(), DeadCodeElimination()]
    runs = []
    for pipeline in (text, instances):
        module = import_function(chain, A, V).module
        stream = io.StringIO()
        result = run_frontend_pipeline(module, pipeline, print_ir_after_all=stream, timing=True)
        runs.append((print_op(result.module), [str(d) for d in result.diagnostics], stream.getvalue(),
                     [name for name, _ in result.timing.times], sorted(result.dag.edges)))
    assert runs[0] == runs[1]
    ir, diagnostics, dumps, names, edges = runs[1]
    assert "mix.gemm" in ir and "[dot-1d]" in diagnostics[0] and edges == [(0, 1)]
    assert names == ["detect-gemm{fuse-updates=false}", "build-dag", "canonicalize{max-iterations=3}", "cse", "dce"]
    assert result.result_of(instances[0]) == PassResult()  # what each instance returned
    # the default pipeline is these instances, and its text is theirs
    assert [p.pipeline_spec() for p in FRONTEND_PASSES] == FRONTEND_PIPELINE.split(",")


def test_a_pipeline_takes_pass_instances_not_classes():
    module = import_function(chain, A, V).module
    with pytest.raises(TypeError, match="pass 1 of the pipeline is a type, not a ModulePass instance"):
        run_frontend_pipeline(module, [DetectGemm(), BuildDag])


def test_verify_each_fails_the_pass_that_broke_the_ir(monkeypatch):
    module = import_function(chain, A, V).module

    def break_ir(self, module, context):  # move the first product after its user: invalid IR
        product = next(op for op in module.walk() if op.name == "py.binop" and op.result.uses)
        user = product.result.uses[0].operation
        block = user.parent
        block.insert_op_before(product.detach(), block.ops[-1])

    monkeypatch.setattr(DetectGemm, "run", break_ir)
    with pytest.raises(PassFailure, match="pass 'detect-gemm' failed"):
        run_frontend_pipeline(module)


def test_ir_shows_the_jit_pipeline_with_dumps_and_timing(capsys):
    f = mixjit(schemes=["native"])(chain)
    text = f.ir(A, V, pipeline="detect-gemm,build-dag", print_ir_after_all=True, timing=True)
    err = capsys.readouterr().err
    assert "mix.deps" in text  # build-dag ran
    assert "IR Dump After DetectGemm (detect-gemm)" in err and "IR Dump After BuildDag (build-dag)" in err
    assert "Pass execution timing report" in err and "build-dag" in err.split("timing report")[1]
    assert "mix.deps" not in f.ir(A, V)  # the default shows detect-gemm alone


def test_a_failing_pass_falls_back_to_plain_numba_naming_it_and_the_passes_before(monkeypatch):
    def fail(module):
        raise RuntimeError("injected failure")

    monkeypatch.setattr(build_dag, "gemm_dag", fail)

    def body(a):
        return a @ a.T

    f = mixjit(schemes=["native"])(body)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_allclose(f(A), A @ A.T, rtol=1e-13)
    (warning,) = [str(w.message) for w in caught if issubclass(w.category, MixjitWarning)]
    assert "mixjit's build-dag (after detect-gemm, detect-linalg) stage failed (RuntimeError: injected failure)" in warning
    (site,) = f.sites
    assert not site.taken and site.reason.startswith(f"{FALLBACK_REASON}: mixjit's build-dag (after detect-gemm, detect-linalg)")
