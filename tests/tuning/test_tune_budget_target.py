"""``f.tune(..., budget=, target=)``: one tuning for another budget or GPU than the decorator's,
without touching the decorator's options; bad values refused before anything compiles; the
plan file of such a tuning is keyed by its own budget and target."""

from __future__ import annotations

import math
from pathlib import Path

import programs as P
import pytest

from mixjit import mixjit
from mixjit.passes import tune as tune_module
from mixjit.tuning import api as tuning_api
from mixjit.tuning.persistence import default_plan_path

TARGET = "jetson-agx-orin"
FP64 = ["mixpert-fp64"]
TIGHT, LOOSE = 1e-17, 1e-15  # around mixpert-fp64's ~1e-16 on this MLP (test_online_search.py)


def _new(**kw):
    return mixjit(error_budget=TIGHT, target=TARGET, tune="explicit", schemes=FP64, **kw)(P.mlp)


@pytest.fixture
def tune_specs(monkeypatch) -> list[str]:
    """The ``tune{...}`` pipeline text of every tune pass run while the test runs."""
    runs: list[str] = []
    real_run = tune_module.Tune.run

    def spy(self, module, context):
        runs.append(self.pipeline_spec())
        return real_run(self, module, context)

    monkeypatch.setattr(tune_module.Tune, "run", spy)
    return runs


def test_budget_keyword_tunes_for_that_budget_and_leaves_the_decorators(tune_specs):
    f = _new()
    loose = f.tune(*P.mlp64_inputs(0), budget=LOOSE)
    assert tune_specs == [f"tune{{budget={LOOSE:g},target={TARGET}}}"]
    assert loose.budget == loose.plan.error_budget == LOOSE
    assert loose.plan.within_budget and TIGHT < loose.plan.error <= LOOSE  # it spent the loose budget
    tight = f.tune(*P.mlp64_inputs(0))  # no keyword: the decorator's budget, unchanged
    assert tune_specs[-1] == f"tune{{budget={TIGHT:g},target={TARGET}}}"
    assert f.mixjit_options.error_budget == TIGHT and tight.plan.error_budget == TIGHT
    assert loose.plan.modeled_time_s < tight.plan.modeled_time_s
    assert [s.config for s in loose.plan.sites] != [s.config for s in tight.plan.sites]


def test_target_keyword_models_times_for_that_gpu(tune_specs, tmp_path, monkeypatch):
    monkeypatch.setattr(tuning_api, "default_plan_path",
                        lambda py_func, argtypes, target, budget: tmp_path / default_plan_path(
                            py_func, argtypes, target, budget).name)
    f = _new()
    orin = f.tune(*P.mlp64_inputs(0), budget=LOOSE)
    a100 = f.tune(*P.mlp64_inputs(0), budget=LOOSE, target="a100")
    assert tune_specs[-1] == f"tune{{budget={LOOSE:g},target=a100}}"
    assert a100.target == a100.plan.target == "a100" and f.mixjit_options.target == TARGET
    # A100's FP64 is strong, Orin's weak: the same sites are modeled at other speeds
    assert a100.plan.native_modeled_time_s != orin.plan.native_modeled_time_s
    # the default plan file of this plan is keyed by the plan's own target and budget, so that
    # a function decorated for them loads it, and one decorated for other values never does
    path = Path(f.save_plan())
    assert path.name == default_plan_path(P.mlp, a100.plan.argtypes, "a100", LOOSE).name
    assert path.name != default_plan_path(P.mlp, a100.plan.argtypes, TARGET, TIGHT).name


@pytest.mark.parametrize("budget", [0, -1e-6, math.nan, "1e-6", True])
def test_bad_budgets_are_refused_before_compiling(budget):
    f = _new()
    with pytest.raises(ValueError, match=r"f\.tune\(budget=\.\.\.\) must be a positive number .*e\.g\. 1e-6"):
        f.tune(*P.mlp64_inputs(0), budget=budget)
    assert not f.signatures


@pytest.mark.parametrize("target, error, message", [
    ("z100", ValueError, r"f\.tune\(target=\.\.\.\) got 'z100', not a known GPU; choose one of .*a100.*h100"),
    (100, TypeError, r"f\.tune\(target=\.\.\.\) must be a GPU name \(a str\), got int; known: .*h100"),
])
def test_bad_targets_are_refused_before_compiling(target, error, message):
    f = _new()
    with pytest.raises(error, match=message):
        f.tune(*P.mlp64_inputs(0), target=target)
    assert not f.signatures
