"""Tuning @mixjit functions on sample inputs: plans meet the budget on held-out inputs, change
with the budget, are tightened when held-out inputs break them, survive Ctrl-C; the decorator's
tune= modes and bad inputs.

The programs are small float64 ones tuned for a Jetson AGX Orin (weak FP64, so the cost model
prefers mixpert-fp64 configs even at these sizes, and the search has real choices), restricted to
mixpert-fp64 (and native) to keep the runs few; float32 ones where a test needs the reference
outside the candidates."""

from __future__ import annotations

import math
import warnings

import numpy as np
import programs as P
import pytest

from mixjit import mixjit
from mixjit.decorator import MixjitWarning
from mixjit.plan import get_plan, reference_plan, set_plan
from mixjit.runtime.schemes.base import get_scheme

TARGET = "jetson-agx-orin"
FP64 = ["mixpert-fp64"]


def _error_against_reference(f, args) -> float:
    """Run ``f`` under its current plans and under the reference plan; relative Frobenius error
    of the output (computed here, independently of mixjit.tuning)."""
    sites = [s for s in f.sites if s.taken]
    plans = {s.id: get_plan(s.id) for s in sites}
    got = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    for s in sites:
        set_plan(s.id, reference_plan(s.dtype))
    ref = f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    for sid, plan in plans.items():
        set_plan(sid, plan)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def test_cholesky_plan_meets_the_budget_on_held_out_inputs():
    budget = 1e-12
    chol = mixjit(error_budget=budget, target=TARGET, tune="explicit", schemes=FP64)(P.cholesky_ll)
    held_out = [(P.spd(64, seed, np.float64), 16) for seed in (1, 2)]
    result = chol.tune(P.spd(64, 0, np.float64), 16, validate=held_out)
    assert result.plan.within_budget and len(result.validation) == 2
    assert all(v.error <= budget for v in result.validation)
    assert any(s.config != reference_plan("float64").config for s in result.plan.sites)  # it did lower sites
    for args in held_out:
        assert _error_against_reference(chol, args) <= budget


def test_mlp_plans_change_with_the_budget():
    plans = {}
    # With mixpert-fp64's componentwise guarantee even its fastest config errs by ~1e-16 on
    # this MLP, so the tight budget sits below that and the loose one above it.
    for budget in (1e-17, 1e-15):
        f = mixjit(error_budget=budget, target=TARGET, tune="explicit", schemes=FP64)(P.mlp)
        result = f.tune(*P.mlp64_inputs(0), validate=[P.mlp64_inputs(1)])
        assert result.plan.error <= budget and all(v.within_budget for v in result.validation)
        assert _error_against_reference(f, P.mlp64_inputs(1)) <= budget
        plans[budget] = result.plan
    tight, loose = plans[1e-17], plans[1e-15]
    assert loose.modeled_time_s < tight.modeled_time_s
    assert [s.config for s in loose.sites] != [s.config for s in tight.sites]


def test_held_out_inputs_that_break_the_plan_tighten_it():
    absolute = lambda out, ref: float(np.abs(out - ref).max())  # noqa: E731  (scale-dependent on purpose)
    f = mixjit(error_budget=1e-14, target=TARGET, tune="explicit", schemes=FP64, metric=absolute)(P.mlp)
    loose = f.tune(*P.mlp64_inputs(0))
    assert loose.plan.error > 0  # some site lowered below the reference config
    result = f.tune(*P.mlp64_inputs(0), validate=[P.mlp64_inputs(1, scale=1e4)])
    assert any("breaks the budget on held-out" in n for n in result.notes)
    assert all(v.within_budget for v in result.validation)  # tightened until it holds
    assert result.plan.modeled_time_s >= loose.plan.modeled_time_s


def test_validation_inputs_must_have_the_sample_types():
    f = mixjit(error_budget=1e-9, target=TARGET, tune="explicit", schemes=FP64)(P.mlp)
    with pytest.raises(ValueError, match="held-out inputs must have the sample's types"):
        f.tune(*P.mlp64_inputs(0), validate=[tuple(a.astype(np.float32) for a in P.mlp64_inputs(1))])


@pytest.mark.parametrize("stop_at", [3, 15])  # while measuring sites alone (3 x 4 runs), during the search
def test_ctrl_c_returns_the_best_plan_so_far(stop_at, capsys):
    calls = []

    def interrupting(out, ref):  # called once per judged run (mlp has one output)
        calls.append(1)
        if len(calls) == stop_at:
            raise KeyboardInterrupt
        return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))

    f = mixjit(error_budget=1e-9, target=TARGET, tune="explicit", schemes=FP64, metric=interrupting)(P.mlp)
    result = f.tune(*P.mlp64_inputs(0), reuse=False)  # every judged run calls the metric
    assert result.stopped == "interrupted"
    assert any("interrupted" in n for n in result.notes)
    assert "interrupted" in capsys.readouterr().err
    assert result.plan.error is None or result.plan.error <= 1e-9
    assert all(get_plan(s.id) is not None and get_plan(s.id).executor != "reference" for s in f.sites)


def test_first_call_tunes_once_prints_one_line_and_counts_only_real_calls(capsys):
    f = mixjit(error_budget=1e-9, target=TARGET, schemes=FP64)(P.mlp)
    args = P.mlp64_inputs(0)
    f(*args)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mixjit: tuned mlp: 3 sites")
    assert f.plan is not None and f.plan.within_budget
    f(*args)
    assert capsys.readouterr().err == ""
    assert [s.calls for s in f.sites if s.taken] == [2, 2, 2]
    assert [get_plan(s.id).config for s in f.sites] == [s.config for s in f.plan.sites]


def test_never_and_explicit_do_not_tune_on_the_first_call(capsys):
    for mode in ("never", "explicit"):
        f = mixjit(error_budget=1e-9, target=TARGET, tune=mode)(P.mlp)
        f(*P.mlp64_inputs(0))
        assert capsys.readouterr().err == ""
        assert f.plan is None
        most_precise = get_scheme("mixpert-fp64").default_config(np.float64).label
        assert all(get_plan(s.id).config == most_precise for s in f.sites)


@pytest.mark.parametrize("budget", [0, -1e-6, float("nan"), "1e-6"])
def test_bad_budgets_are_refused_at_decoration(budget):
    with pytest.raises(ValueError, match="error_budget must be a positive number"):
        mixjit(error_budget=budget)(P.mlp)


def test_bad_tune_mode_is_refused():
    with pytest.raises(ValueError, match="tune='sometimes'; choose one of 'first-call', 'explicit', 'never'"):
        mixjit(tune="sometimes")(P.mlp)


def test_non_finite_samples_are_refused_by_tune_and_left_untuned_by_first_call(capsys):
    args = list(P.mlp64_inputs(0))
    args[2] = args[2].copy()
    args[2][0, 0] = np.inf
    f = mixjit(error_budget=1e-9, target=TARGET, tune="explicit", schemes=FP64)(P.mlp)
    with pytest.raises(ValueError, match="input w2 of mlp contains Inf"):
        f.tune(*args)
    g = mixjit(error_budget=1e-9, target=TARGET)(P.mlp)
    with pytest.warns(MixjitWarning, match="contains Inf.*Not tuned"):
        g(*args)
    assert g.plan is None


def test_an_unreachable_budget_keeps_the_most_precise_plan_and_warns():
    # float32 under MixPert and native: no plan is that precise (bf16x9, ozaki2 can be exact: left out)
    f = mixjit(error_budget=1e-13, target="h100", schemes=("mixpert", "native"))(P.cholesky_ll)
    with pytest.warns(MixjitWarning, match="meets error budget 1e-13.*exceeds the budget"):
        f(P.spd(32, 0), 16)
    assert not f.plan.within_budget and f.plan.error > 1e-13
    assert math.isfinite(f.plan.error)


def test_in_place_function_is_tuned_on_the_argument_it_writes():
    f = mixjit(error_budget=1e-12, target=TARGET, tune="explicit", schemes=FP64)(P.cholesky_inplace)
    a = P.spd(48, 0, np.float64)
    result = f.tune(a, 16)
    assert result.plan.error > 0  # the written argument is an output: lowering shows up as error
    lowered = [j for j in result.judged if j.error > 0]
    assert lowered
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b = a.copy()
        assert f(b, 16) is None
    assert np.allclose(np.tril(b), np.linalg.cholesky(a), atol=1e-10)
