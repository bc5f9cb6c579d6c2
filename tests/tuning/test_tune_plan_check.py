"""``f.check_plan(*args)``: a tuned plan's error on inputs it was not tuned on. The tuner meets
its budget on the samples (and ``validate=`` inputs); elsewhere it is measured, and a breach
warns rather than passing in silence."""

from __future__ import annotations

import numpy as np
import programs as P
import pytest

from mixjit import entry, mixjit
from mixjit.decorator import MixjitWarning
from mixjit.plan import get_plan

TARGET = "jetson-agx-orin"
FP64 = ["mixpert-fp64"]


def absolute(out, ref) -> float:
    """Scale-dependent on purpose: inputs scaled by 100 give errors 100 times larger."""
    return float(np.abs(out - ref).max())


@pytest.fixture(scope="module")
def tuned():
    f = mixjit(error_budget=1e-14, target=TARGET, tune="explicit", schemes=FP64, metric=absolute)(P.mlp)
    result = f.tune(*P.mlp64_inputs(0))
    assert result.plan.within_budget and result.plan.error > 0  # a plan below the reference's precision
    return f, result


def test_on_the_sample_it_measures_what_the_tuner_measured(tuned, recwarn):
    f, result = tuned
    plans = {s.id: get_plan(s.id) for s in f.sites}
    counts = entry.site_call_counts([s.id for s in f.sites]).copy()
    check = f.check_plan(*P.mlp64_inputs(0))
    assert check.error == result.plan.error and check.budget == 1e-14 and check.within_budget
    assert not [w for w in recwarn if issubclass(w.category, MixjitWarning)]
    # the plan table and the call counters are as they were
    assert {s.id: get_plan(s.id) for s in f.sites} == plans
    assert (entry.site_call_counts([s.id for s in f.sites]) == counts).all()


def test_an_input_that_breaks_the_budget_warns(tuned):
    f, result = tuned
    with pytest.warns(MixjitWarning, match=r"above its budget 1e-14: the tuner meets the budget on its samples"):
        check = f.check_plan(*P.mlp64_inputs(1, scale=100.0))
    assert not check.within_budget and check.error > 1e-14
    # the same input judged by another metric, given here: relative errors do not scale
    assert f.check_plan(*P.mlp64_inputs(1, scale=100.0), metric=lambda o, r: 0.0).within_budget


def test_no_plan_and_bad_inputs_are_refused():
    f = mixjit(error_budget=1e-14, target=TARGET, tune="explicit", schemes=FP64)(P.mlp)
    with pytest.raises(ValueError, match=r"has no plan to check; tune it first \(f\.tune"):
        f.check_plan(*P.mlp64_inputs(0))
    f.tune(*P.mlp64_inputs(0))
    args = list(P.mlp64_inputs(1))
    args[0] = args[0].copy()
    args[0][0, 0] = np.nan
    with pytest.raises(ValueError, match="contains NaN"):
        f.check_plan(*args)
    with pytest.raises(TypeError, match="metric must be a callable"):
        f.check_plan(*P.mlp64_inputs(1), metric="max")
