"""One pipeline: ``f.tune`` runs mixopt's ``detect-gemm,detect-linalg,build-dag,tune{...}`` through the pass
manager, with the online backend injected, rather than a search of its own."""

from __future__ import annotations

import numpy as np
import programs as P
import pytest

from mixjit import mixjit
from mixjit.entry import new_sites
from mixjit.ir.attributes import DictAttr
from mixjit.passes import tune as tune_module
from mixjit.passes.build_dag import GemmDag
from mixjit.passes.tune import TuneSearch
from mixjit.passes.tuning.plan_attr import PLAN_ATTR, TUNING_ATTR, SitePlan
from mixjit.passes.tuning.profile import PROFILE_ATTR
from mixjit.passes.tuning.sites import gemm_sites

TARGET = "jetson-agx-orin"
FP64 = ["mixpert-fp64"]


def test_f_tune_runs_the_tune_pass_through_the_pass_manager(monkeypatch):
    runs = []
    real_run = tune_module.Tune.run

    def spy(self, module, context):
        runs.append(self.pipeline_spec())
        return real_run(self, module, context)

    monkeypatch.setattr(tune_module.Tune, "run", spy)
    new_sites(5)  # the process site ids then differ from the module's 0, 1, 2 (run alone or not)
    f = mixjit(error_budget=1e-15, target=TARGET, tune="explicit", schemes=FP64)(P.mlp)
    result = f.tune(*P.mlp64_inputs(0))

    assert runs == ["tune{budget=1e-15,target=jetson-agx-orin}"]
    # the timing instrumentation of the pass manager saw the whole pipeline, in order
    assert [name for name, _ in result.pipeline.timings] == ["detect-gemm", "detect-linalg", "build-dag", runs[0]]
    # the pass's remarks: one per site and the summary, with the search's evaluation count
    messages = [d.message for d in result.pipeline.diagnostics]
    assert sum(m.startswith("site ") for m in messages) == 3
    assert any(m.startswith(f"greedy search (dynamic order), {result.search.evaluation_count} evaluations")
               for m in messages)
    # the pass wrote the profiles it had measured, its plan and how it chose it into the module
    module = result.pipeline.module
    ops = gemm_sites(module)
    tuning = module.attributes[TUNING_ATTR]
    assert isinstance(tuning, DictAttr) and tuning["model"].value == "online"
    assert tuning["evaluations"].value == result.search.evaluation_count
    assert all(PROFILE_ATTR in op.attributes for op in ops.values())
    chosen = [SitePlan.from_attr(site, op.attributes[PLAN_ATTR]).label for site, op in ops.items()]
    assert chosen == [f"{s.scheme}[{s.config}]" for s in result.plan.sites]
    # f.tune's search is the one the tune pass returned (its PassResult), keyed by process site id
    (run,) = result.pipeline.runs
    assert len(run.run.results) == 4  # detect-gemm, detect-linalg, build-dag, tune
    tuned = run.run.results[-1]
    assert isinstance(tuned.payload, TuneSearch) and tuned.modified
    ids = result.pipeline.backend.process_ids
    assert sorted(ids) == [0, 1, 2] and all(pid != s for s, pid in ids.items())
    assert {ids[s]: i for s, i in tuned.payload.result.plan.items()} == result.search.plan
    assert tuned.payload.result.evaluation_count == result.search.evaluation_count
    assert {ids[s]: space.candidates for s, space in tuned.payload.spaces.items()} == \
        {pid: space.candidates for pid, space in result.spaces.items()}
    assert [(pid, space.site) for pid, space in result.spaces.items()] == [(pid, pid) for pid in result.spaces]


def test_a_tightened_search_reruns_tune_alone_on_the_cached_dag():
    absolute = lambda out, ref: float(np.abs(out - ref).max())  # noqa: E731  (scale-dependent on purpose)
    f = mixjit(error_budget=1e-14, target=TARGET, tune="explicit", schemes=FP64, metric=absolute)(P.mlp)
    result = f.tune(*P.mlp64_inputs(0), validate=[P.mlp64_inputs(1, scale=100.0)])  # held-out errors 100x the sample's
    assert any("searching again with margin" in n for n in result.notes)
    names = [name for name, _ in result.pipeline.timings]
    assert names[:3] == ["detect-gemm", "detect-linalg", "build-dag"] and len(names) >= 5
    assert all(name.startswith("tune{") for name in names[3:])
    assert "margin=" in names[4]
    last = result.pipeline.runs[-1].analyses
    assert last.is_cached(GemmDag) and last.computations["gemm-dag"] == 1  # computed once, by build-dag


@pytest.mark.parametrize("options, message", [
    ({"margin": 1.0}, r"option 'margin' of pass 'tune' must be in \[0, 1\), got 1.0"),
    ({"margin": -0.1}, r"option 'margin' of pass 'tune' must be in \[0, 1\)"),
    ({"max_evals": 0}, "max_evals must be a positive integer"),
    ({"search": "random"}, "search must be 'greedy' or 'exhaustive'"),
    ({"metric": "max"}, "metric must be a callable"),
])
def test_bad_tuning_options_are_refused_before_any_run(options, message):
    f = mixjit(error_budget=1e-15, target=TARGET, tune="explicit", schemes=FP64)(P.mlp)
    with pytest.raises((ValueError, TypeError), match=message):
        f.tune(*P.mlp64_inputs(0), **options)
    assert not f.signatures  # refused before compiling, let alone running


def test_a_search_that_tunes_no_site_is_an_error_not_an_empty_plan():
    from types import SimpleNamespace

    from mixjit.ir.parser import parse_module
    from mixjit.passes.tune import Tune
    from mixjit.tuning.online import TuningPipeline

    text = '"func.func"() <{sym_name = "f", function_type = () -> ()}> ({\n  "func.return"() : () -> ()\n}) : () -> ()\n'
    pipeline = TuningPipeline(SimpleNamespace(module=parse_module(text, "t.mix")), backend=None)
    with pytest.raises(RuntimeError, match=r"the tune pass tuned no GEMM site of the imported module "
                                           r"\(the imported module has no GEMM site\)"):
        pipeline.search(Tune(budget=1e-6))
    assert [name for name, _ in pipeline.timings] == ["detect-gemm", "detect-linalg", "build-dag", "tune"]
