"""Analyses of a module, computed on request and cached until a pass invalidates them.

As in MLIR (``getAnalysis<T>()``, ``markAllAnalysesPreserved``), an analysis is a class with a
kebab-case ``name`` and a ``compute(module)`` class method; the pass manager keeps one
:class:`AnalysisManager` per run, and a pass asks it (through its ``PassContext``) for
the result. The first request computes it, later ones return the cached result. After each pass
the manager drops every cached result the pass does not declare preserved
(``ModulePass.preserved_analyses``; the default preserves nothing, so a pass that changes the
IR is safe without saying anything). A pass that only reads the IR or adds attributes the
analyses do not read declares ``preserved_analyses = ALL_ANALYSES``.

Example: the GEMM dependence graph (``mixjit.passes.build_dag.GemmDag``) is computed once by
``build-dag``; ``tune`` later in the same pipeline reuses it; ``detect-gemm``, which creates
sites, drops it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar, Final, TypeVar

__all__ = ["Analysis", "AnalysisManager", "ALL_ANALYSES", "preserves"]


class Analysis:
    """Base class of analyses: set ``name`` and override ``compute``.

    The result is whatever ``compute`` returns; callers must treat it as read-only, since
    the manager hands the same object to every later request."""

    name: ClassVar[str]

    @classmethod
    def compute(cls, module: Any) -> Any:
        """The analysis result for ``module`` (a ``builtin.module`` op)."""
        raise NotImplementedError(f"analysis '{cls.name}' does not implement compute()")


class _AllAnalyses:
    """The marker for "this pass preserves every analysis" (it leaves what they read alone)."""

    def __repr__(self) -> str:
        return "ALL_ANALYSES"


ALL_ANALYSES: Final = _AllAnalyses()
"""``preserved_analyses`` of a pass that changes nothing any analysis reads."""

A = TypeVar("A", bound=Analysis)


def preserves(preserved: Any, analysis: type[Analysis]) -> bool:
    """True when a pass whose ``preserved_analyses`` is ``preserved`` keeps ``analysis`` valid."""
    return preserved is ALL_ANALYSES or analysis in preserved


class AnalysisManager:
    """The cached analyses of one module.

    ``get`` computes on the first request and caches; ``cached`` never computes;
    ``invalidate(preserved)`` drops what a pass did not preserve. ``computations`` counts how
    often each analysis was computed, so tests (and ``--timing`` readers) can see the cache work.
    """

    def __init__(self, module: Any) -> None:
        self.module = module
        self._results: dict[type[Analysis], Any] = {}
        self._computes: dict[type[Analysis], Callable[[Any], Any]] = {}
        self.computations: Counter[str] = Counter()

    def register(self, analysis: type[Analysis], compute: Callable[[Any], Any]) -> None:
        """Compute ``analysis`` with ``compute(module)`` instead of its ``compute`` class method, for
        this manager only (LLVM's ``AnalysisManager::registerPass`` with a configured analysis, as
        for ``TargetLibraryAnalysis``): how a caller hands passes what the IR does not carry, e.g.
        the online tuner's evaluator (``mixjit.passes.tuning.backend``)."""
        self._computes[analysis] = compute
        self._results.pop(analysis, None)

    def get(self, analysis: type[A]) -> Any:
        """The result of ``analysis`` on the module: cached, or computed now and cached."""
        if analysis not in self._results:
            compute = self._computes.get(analysis, analysis.compute)
            self._results[analysis] = compute(self.module)
            self.computations[analysis.name] += 1
        return self._results[analysis]

    def cached(self, analysis: type[Analysis]) -> Any | None:
        """The cached result of ``analysis``, or None when it is not (or no longer) computed."""
        return self._results.get(analysis)

    def is_cached(self, analysis: type[Analysis]) -> bool:
        """True when ``analysis`` has a valid cached result."""
        return analysis in self._results

    def invalidate(self, preserved: Any = ()) -> None:
        """Drop every cached result not in ``preserved`` (a tuple of analysis classes, or
        ``ALL_ANALYSES`` to keep everything). ``invalidate()`` drops them all."""
        for analysis in list(self._results):
            if not preserves(preserved, analysis):
                del self._results[analysis]
