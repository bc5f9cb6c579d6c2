"""The analysis manager: analyses are computed once on request, cached, and dropped after a pass
that does not preserve them; the GEMM DAG is one, shared by build-dag and tune."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from test_tuning_offline import module_text, profile

from mixjit.ir.parser import parse_module
from mixjit.passes import tune as tune_module
from mixjit.passes.analysis import ALL_ANALYSES, Analysis, AnalysisManager
from mixjit.passes.build_dag import BuildDag, GemmDag
from mixjit.passes.detect_gemm import DetectGemm
from mixjit.passes.manager import PassFailure, PassManager
from mixjit.passes.pass_base import ModulePass, PassContext
from mixjit.passes.pipeline import build_pipeline
from mixjit.passes.tune import Tune


class Module:
    """A stand-in module: analyses read ``value``, passes may change it."""

    def __init__(self) -> None:
        self.value = 1


class Double(Analysis):
    name = "double"

    @classmethod
    def compute(cls, module: Module) -> int:
        return 2 * module.value


class Negate(Analysis):
    name = "negate"

    @classmethod
    def compute(cls, module: Module) -> int:
        return -module.value


@dataclass(frozen=True)
class Ask(ModulePass):
    """Request both analyses and record what they returned."""

    name = "ask"
    preserved_analyses = ALL_ANALYSES

    def run(self, module, context: PassContext) -> None:
        module.seen = (context.analysis(Double), context.analysis(Negate))


@dataclass(frozen=True)
class Bump(ModulePass):
    """Change what the analyses read; declares nothing preserved (the default)."""

    name = "bump"

    def apply(self, module) -> None:
        module.value += 1


@dataclass(frozen=True)
class BumpKeepingDouble(Bump):
    """Change the value, but (say it) keep Double valid."""

    name = "bump-keeping-double"
    preserved_analyses = (Double,)


@dataclass(frozen=True)
class Fail(ModulePass):
    name = "fail"
    preserved_analyses = ALL_ANALYSES

    def apply(self, module) -> None:
        raise RuntimeError("broken")


def test_an_analysis_is_computed_once_and_cached():
    module = Module()
    analyses = AnalysisManager(module)
    assert analyses.cached(Double) is None
    assert analyses.get(Double) == 2
    module.value = 5  # the cache does not look at the module again
    assert analyses.get(Double) == 2 and analyses.cached(Double) == 2
    assert analyses.computations == {"double": 1}


def test_invalidate_drops_what_is_not_preserved():
    module = Module()
    analyses = AnalysisManager(module)
    analyses.get(Double), analyses.get(Negate)
    analyses.invalidate((Double,))
    assert analyses.is_cached(Double) and not analyses.is_cached(Negate)
    analyses.invalidate(ALL_ANALYSES)
    assert analyses.is_cached(Double)
    analyses.invalidate()
    assert not analyses.is_cached(Double)


def test_the_pass_manager_keeps_analyses_across_a_preserving_pass():
    module = Module()
    analyses = AnalysisManager(module)
    PassManager([Ask(), Ask()]).run(module, analyses)
    assert analyses.computations == {"double": 1, "negate": 1}
    assert module.seen == (2, -1)


def test_a_pass_that_preserves_nothing_invalidates_every_analysis():
    module = Module()
    analyses = AnalysisManager(module)
    PassManager([Ask(), Bump(), Ask()]).run(module, analyses)
    assert analyses.computations == {"double": 2, "negate": 2}
    assert module.seen == (4, -2)  # recomputed on the changed module, not the stale 2, -1


def test_a_pass_keeps_exactly_the_analyses_it_declares():
    module = Module()
    analyses = AnalysisManager(module)
    PassManager([Ask(), BumpKeepingDouble(), Ask()]).run(module, analyses)
    assert analyses.computations == {"double": 1, "negate": 2}
    assert module.seen == (2, -2)  # Double was declared preserved: the cached result stays


def test_a_failing_pass_drops_every_analysis():
    module = Module()
    analyses = AnalysisManager(module)
    with pytest.raises(PassFailure):
        PassManager([Ask(), Fail()]).run(module, analyses)
    assert not analyses.is_cached(Double) and not analyses.is_cached(Negate)


def test_an_analysis_manager_of_another_module_is_refused():
    with pytest.raises(ValueError, match="belongs to another module"):
        PassManager([Ask()]).run(Module(), AnalysisManager(Module()))


def test_a_context_without_a_manager_says_how_to_get_one():
    context = PassContext(lambda d: None)
    assert context.cached_analysis(Double) is None
    with pytest.raises(RuntimeError, match="run the pass through a PassManager"):
        context.analysis(Double)


# -- the GEMM DAG ------------------------------------------------------------------------------
CHAIN = '''"func.func"() <{sym_name = "f", function_type = (!py.array<f64, 2, C>) -> !py.array<f64, 2, C>}> ({
^bb0(%a: !py.array<f64, 2, C>):
  %b = "py.binop"(%a, %a) <{op = "@"}> : (!py.array<f64, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C>
  %c = "py.binop"(%b, %a) <{op = "@"}> : (!py.array<f64, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C>
  "func.return"(%c) : (!py.array<f64, 2, C>) -> ()
}) : () -> ()
'''


def test_build_dag_computes_the_dag_once_and_detect_gemm_drops_it():
    module = parse_module(CHAIN, "chain.mix")
    analyses = AnalysisManager(module)
    PassManager(build_pipeline("detect-gemm,build-dag")).run(module, analyses)
    dag = analyses.cached(GemmDag)
    assert dag is not None and sorted(dag.edges) == [(0, 1)]
    assert analyses.computations == {"gemm-dag": 1}
    PassManager([BuildDag()]).run(module, analyses)  # preserves it: no second computation
    assert analyses.computations == {"gemm-dag": 1} and analyses.cached(GemmDag) is dag
    PassManager([DetectGemm()]).run(module, analyses)  # may create sites: the DAG is stale
    assert analyses.cached(GemmDag) is None


def test_tune_takes_the_dag_from_the_analysis_when_build_dag_ran(monkeypatch):
    text = module_text([profile(0), profile(1)])
    module = parse_module(text, "t.mix")
    analyses = AnalysisManager(module)

    def refuse(ops):
        raise AssertionError("tune re-read mix.deps although the GemmDag analysis was cached")

    monkeypatch.setattr(tune_module, "read_deps", refuse)
    PassManager([BuildDag(), Tune(budget=1e-5)]).run(module, analyses)
    assert analyses.computations["gemm-dag"] == 1  # (tune also asks for its backend: offline here)
    assert analyses.is_cached(GemmDag)  # tune preserves it too


def test_tune_alone_reads_the_dag_build_dag_left_in_a_dump(monkeypatch):
    # deps say the sites are independent although %g0 feeds %g1: tune alone must follow mix.deps
    module = parse_module(module_text([profile(0), profile(1)], deps=[[], []]), "t.mix")
    analyses = AnalysisManager(module)
    seen = []
    real = tune_module.read_deps

    def spy(ops):
        seen.append(real(ops))
        return seen[-1]

    monkeypatch.setattr(tune_module, "read_deps", spy)
    PassManager([Tune(budget=1e-5)]).run(module, analyses)
    assert [sorted(g.edges) for g in seen] == [[]]
    assert "gemm-dag" not in analyses.computations  # nothing recomputed from the IR

