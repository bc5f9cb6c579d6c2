"""The pass pipeline ``@mixjit`` runs on imported code: ``mixopt``'s passes and pass manager.

``@mixjit`` does not call passes by hand. When a signature compiles, ``mixjit.linking.find_sites``
imports the typed Numba IR and hands the module to :func:`run_frontend_pipeline`, which runs
:data:`FRONTEND_PASSES` (``detect-gemm,detect-linalg,build-dag``) with the pass manager, with verify-each and,
on request, IR dumps after every pass and a timing report. A pipeline is given as pass instances
(``[DetectGemm(), BuildDag(), Tune(budget=...)]``) or as ``mixopt -p`` text, built from the pass
registry; both run the same way. The result carries the module, the remarks and warnings the
passes emitted (detect-gemm's rejections among them, as
:class:`~mixjit.passes.detect_gemm.NotGemmRemark`), what each pass returned (its
:class:`~mixjit.passes.pass_base.PassResult`, ``result.result_of(pass_)``) and the run's
:class:`~mixjit.passes.analysis.AnalysisManager`, from which the GEMM DAG is taken
(``result.dag``: computed once by build-dag, not recomputed).

Tuning runs the same way: ``f.tune`` (``mixjit.tuning.online``) runs
``[*FRONTEND_PASSES, Tune(...)]`` through :func:`run_frontend_pipeline` with its online backend
registered and reads the search from the ``tune`` pass's result, so the tuner is the ``tune``
pass ``mixopt`` runs, with verify-each, remarks and timing.

``f.ir(*args, pipeline=..., print_ir_after_all=True, timing=True)`` runs the same function on the
imported module of a ``@mixjit`` function, to see what the JIT's pipeline does. A failing pass
raises ``PassFailure`` naming it and the passes before it; ``find_sites`` turns that into the
``StageError`` that makes the function fall back to plain Numba with a warning.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from mixjit.ir.diagnostics import Diagnostic
from mixjit.ir.printer import print_op
from mixjit.ir.verifier import verify
from mixjit.passes.analysis import AnalysisManager
from mixjit.passes.build_dag import BuildDag, GemmDag
from mixjit.passes.detect_gemm import DetectGemm, GemmSite, NotGemmRemark, Rejection, detection_report
from mixjit.passes.detect_linalg import DetectLinalg
from mixjit.passes.instrumentation import PrintIRInstrumentation, TimingInstrumentation, VerifyInstrumentation
from mixjit.passes.manager import PassFailure, PassManager, PipelineRun
from mixjit.passes.pass_base import ModulePass, PassResult
from mixjit.passes.pipeline import build_pipeline
from mixjit.passes.tuning.backend import TuningBackend

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["FRONTEND_PASSES", "FRONTEND_PIPELINE", "FrontendResult", "run_frontend_pipeline", "failure_stage"]

FRONTEND_PASSES: tuple[ModulePass, ...] = (DetectGemm(), DetectLinalg(), BuildDag())
"""The passes ``@mixjit`` runs on every compiled signature (frozen instances: safe to share)."""

FRONTEND_PIPELINE = ",".join(p.pipeline_spec() for p in FRONTEND_PASSES)
""":data:`FRONTEND_PASSES` as ``mixopt -p`` text (``detect-gemm,detect-linalg,build-dag``)."""


@dataclass
class FrontendResult:
    """What one run of the frontend pipeline produced."""

    module: Any
    """The ``builtin.module`` the passes ran on (rewritten in place)."""
    run: PipelineRun
    """The pass manager's run: the passes, what each returned, the remarks and warnings."""
    analyses: AnalysisManager
    """The run's analyses, still valid after the last pass (ask it with ``get``)."""
    timing: TimingInstrumentation | None = None
    """Per-pass times, when the run was asked for them (``timing.report()``)."""

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """The remarks and warnings the passes emitted, in order."""
        return self.run.diagnostics

    def result_of(self, pass_: ModulePass) -> PassResult[Any]:
        """What ``pass_`` (an instance of the pipeline given as instances) returned."""
        return self.run.result_of(pass_)

    @property
    def rejections(self) -> list[Rejection]:
        """The matrix products detect-gemm left to Numba, from its remarks, in op order."""
        return [d.rejection for d in self.diagnostics if isinstance(d, NotGemmRemark) and d.rejection]

    @property
    def sites(self) -> list[GemmSite]:
        """The ``mix.gemm`` sites of the module, by site id."""
        return detection_report(self.module).sites

    @property
    def linalg_sites(self) -> list[GemmSite]:
        """The ``mix.linalg`` sites of the module (detect-linalg), by site id."""
        return detection_report(self.module).linalg_sites

    @property
    def dag(self) -> nx.DiGraph:
        """The GEMM dependence graph: the ``GemmDag`` analysis (cached by build-dag when it ran)."""
        return self.analyses.get(GemmDag)


def run_frontend_pipeline(
    module: Any,
    pipeline: str | Sequence[ModulePass] = FRONTEND_PASSES,
    *,
    verify_each: bool = True,
    print_ir_after_all: bool | TextIO = False,
    timing: bool = False,
    analyses: AnalysisManager | None = None,
    tuning_backend: Any = None,
) -> FrontendResult:
    """Run ``pipeline`` (default :data:`FRONTEND_PASSES`) on ``module`` with the pass manager.

    ``pipeline``: pass instances, or ``mixopt -p`` text built from the pass registry; either
    runs with the same instrumentation, diagnostics and analyses. Ask ``result.result_of(p)``
    for what an instance ``p`` returned.

    ``verify_each`` verifies the IR after every pass (a verifier error fails that pass).
    ``print_ir_after_all`` prints the module after every pass to a stream (``True``: stderr),
    as ``mixopt --print-ir-after-all`` does; ``timing`` records per-pass times in
    ``result.timing``. ``analyses``: the ``AnalysisManager`` of an earlier run on the same module,
    whose still-valid analyses (the GEMM DAG) this run reuses. ``tuning_backend``: what the
    ``tune`` pass profiles and judges plans with (``mixjit.passes.tuning.backend``; default: the
    offline error model), registered as the run's ``TuningBackend`` analysis. Raises
    ``PipelineError`` for a bad pipeline and ``PassFailure`` (naming the pass and those before it)
    when a pass fails."""
    passes = build_pipeline(pipeline) if isinstance(pipeline, str) else list(pipeline)
    instrumentations = []
    if verify_each:
        instrumentations.append(VerifyInstrumentation(verify))
    if print_ir_after_all:
        stream = sys.stderr if print_ir_after_all is True else print_ir_after_all
        instrumentations.append(PrintIRInstrumentation(stream, print_ir=print_op))
    timer = TimingInstrumentation() if timing else None
    if timer is not None:
        instrumentations.append(timer)  # added last: it wraps each pass most tightly
    if analyses is None:
        analyses = AnalysisManager(module)
    if tuning_backend is not None:
        analyses.register(TuningBackend, lambda _module: tuning_backend)
    run = PassManager(passes, instrumentations).run_with_results(module, analyses)
    return FrontendResult(module, run, analyses, timer)


def failure_stage(failure: PassFailure) -> str:
    """The safety net's stage name for a failed pass: ``detect-gemm``, or ``build-dag (after
    detect-gemm)`` when passes ran before it."""
    name = failure.pass_.pipeline_spec()
    if not failure.previous:
        return name
    return f"{name} (after {', '.join(p.pipeline_spec() for p in failure.previous)})"
