"""The pass manager: runs passes in order and calls instrumentation hooks around each.

All cross-cutting behaviour (verify-each, IR dumps, timing) is an instrumentation
object with ``before_pass`` / ``after_pass`` / ``after_failure`` callbacks; the
manager knows nothing else. As in MLIR, ``before_pass`` hooks run in registration
order and ``after_pass`` / ``after_failure`` hooks in reverse order, so an
instrumentation added last (timing) wraps the pass most tightly.

Each pass runs with Python's cyclic garbage collector paused (``mixjit.ir.collector``):
on large IR its scans of the live op graph cost a third of a pass's time; the ops a pass
erased are collected once it resumes.

A pass that raises, or whose ``after_pass`` hooks raise (e.g. the verifier), stops
the pipeline with a ``PassFailure`` naming the pass and the passes that ran before it.

Passes report remarks and warnings through the ``PassContext`` the manager passes to
``ModulePass.run``; ``run`` returns them in the order emitted (a ``PassFailure`` carries
those emitted before the failure), so the caller decides how to show them.
``run_with_results`` returns them beside each pass's :class:`~mixjit.passes.pass_base.PassResult`,
in pipeline order (as torch.fx's pass manager collects its passes' ``PassResult``): how a pass
hands its caller what it found (``tune``: its search) without a side channel.

Analyses (:mod:`mixjit.passes.analysis`) live in an ``AnalysisManager`` for the run; a pass
requests them through its context. After each pass the manager drops the cached analyses the
pass does not list in ``preserved_analyses``; after a failure it drops them all. A caller that
passes its own ``AnalysisManager`` to ``run`` can read the analyses afterwards (the frontend
takes the GEMM DAG from it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mixjit.ir.collector import paused_collector
from mixjit.ir.diagnostics import Diagnostic
from mixjit.passes.analysis import AnalysisManager
from mixjit.passes.pass_base import ModulePass, PassContext, PassResult

__all__ = ["PassInstrumentation", "PassManager", "PassFailure", "PipelineRun"]


class PassInstrumentation:
    """Hooks called by the pass manager around every pass; override what you need."""

    def before_pass(self, pass_: ModulePass, module: Any) -> None:
        """Called before ``pass_`` runs on ``module``."""

    def after_pass(self, pass_: ModulePass, module: Any) -> None:
        """Called after ``pass_`` succeeded; may raise to fail the pass (verifier)."""

    def after_failure(self, pass_: ModulePass, module: Any, error: BaseException) -> None:
        """Called after ``pass_`` (or an ``after_pass`` hook) raised ``error``."""


class PassFailure(Exception):
    """A pass failed: names the pass, the passes that ran before it and the cause.

    ``cause`` is the exception the pass (or a hook, e.g. the verifier) raised; when
    it is a DiagnosticError its diagnostics carry the source locations. ``emitted``
    holds the remarks and warnings the passes emitted before the failure.
    """

    def __init__(
        self,
        pass_: ModulePass,
        previous: Sequence[ModulePass],
        cause: BaseException,
        emitted: Sequence[Diagnostic] = (),
    ) -> None:
        self.pass_ = pass_
        self.previous = list(previous)
        self.cause = cause
        self.emitted = list(emitted)
        super().__init__(f"{self.summary()}: {type(cause).__name__}: {cause}")  # never a bare "failed"

    def summary(self) -> str:
        """``pass 'x' failed (after: a, b)`` -- the context to attach to the cause."""
        ran = ", ".join(p.pipeline_spec() for p in self.previous) or "none"
        return f"pass '{self.pass_.pipeline_spec()}' failed (passes run before it: {ran})"


@dataclass
class PipelineRun:
    """What one run of a pass manager produced."""

    passes: list[ModulePass]
    """The passes that ran, in order."""
    results: list[PassResult[Any]]
    """What each pass returned, in the same order (``PassResult()`` for a pass that returned None)."""
    diagnostics: list[Diagnostic]
    """The remarks and warnings the passes emitted, in order."""

    def result_of(self, pass_: ModulePass) -> PassResult[Any]:
        """The result of ``pass_`` (this very instance, as given to the pass manager)."""
        for ran, result in zip(self.passes, self.results):
            if ran is pass_:
                return result
        raise KeyError(f"pass '{pass_.pipeline_spec()}' is not one of the passes of this run "
                       f"({', '.join(p.pipeline_spec() for p in self.passes) or 'none'}); "
                       "ask for an instance given to the pass manager")


class PassManager:
    """Runs a list of passes (``ModulePass`` instances) over a module with instrumentation."""

    def __init__(
        self,
        passes: Iterable[ModulePass],
        instrumentations: Iterable[PassInstrumentation] = (),
    ) -> None:
        self.passes = list(passes)
        for i, pass_ in enumerate(self.passes):
            if not isinstance(pass_, ModulePass):
                raise TypeError(f"pass {i} of the pipeline is a {type(pass_).__name__}, not a ModulePass "
                                "instance: give instances (DetectGemm(), Tune(budget=...)), not classes or text")
        self.instrumentations = list(instrumentations)

    def add_instrumentation(self, instrumentation: PassInstrumentation) -> None:
        """Append a hook object; it runs after (before_pass) / before (after_*) earlier ones."""
        self.instrumentations.append(instrumentation)

    def run(self, module: Any, analyses: AnalysisManager | None = None) -> list[Diagnostic]:
        """Run every pass on ``module`` in order; return the remarks and warnings they emitted
        (``run_with_results`` also returns what each pass returned)."""
        return self.run_with_results(module, analyses).diagnostics

    def run_with_results(self, module: Any, analyses: AnalysisManager | None = None) -> PipelineRun:
        """Run every pass on ``module`` in order; return each pass's ``PassResult`` and the remarks
        and warnings they emitted.

        ``analyses`` (for ``module``; default: a new one) caches the analyses the passes request,
        and keeps those still valid after the run. Raises PassFailure on the first failure (a pass
        that returns neither None nor a PassResult fails with a TypeError).
        """
        if analyses is None:
            analyses = AnalysisManager(module)
        elif analyses.module is not module:
            raise ValueError("the AnalysisManager given to PassManager.run belongs to another module; "
                             "make one with AnalysisManager(module)")
        emitted: list[Diagnostic] = []
        results: list[PassResult[Any]] = []
        context = PassContext(emitted.append, analyses)
        for index, pass_ in enumerate(self.passes):
            for inst in self.instrumentations:
                inst.before_pass(pass_, module)
            try:
                with paused_collector():  # see mixjit.ir.collector: a third faster on large IR
                    returned = pass_.run(module, context)
                results.append(PassResult.of(pass_, returned))
                analyses.invalidate(pass_.preserved_analyses)
                for inst in reversed(self.instrumentations):
                    inst.after_pass(pass_, module)
            except Exception as error:  # any failure becomes a located diagnostic
                analyses.invalidate()  # the IR may be half rewritten
                for inst in reversed(self.instrumentations):
                    inst.after_failure(pass_, module, error)
                raise PassFailure(pass_, self.passes[:index], error, emitted) from error
        return PipelineRun(list(self.passes), results, emitted)
