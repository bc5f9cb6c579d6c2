"""No silent slowdown (issue 26, Why 9): when native's own error breaks the budget, one warning
and the report say so (native's error, the budget, the plan chosen and its modeled speedup, what
to do); ``error_budget="native"`` means "no less accurate than the native run" and is checked
wherever budgets are (mixjit.tuning.native_budget)."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

from mixjit import MixjitWarning, mixjit
from mixjit.tuning.api import last_result
from mixjit.tuning.native_budget import NATIVE_MARGIN
from mixjit.tuning.persistence import PlanFileError, TunedPlan, load_plan


def _operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return (rng.standard_normal((48, 96)).astype(np.float32), rng.standard_normal((96, 40)).astype(np.float32))


def _product(a, b):
    return a @ b


def _first_call(f, *args) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(*args)
    return [str(w.message) for w in caught if issubclass(w.category, MixjitWarning)]


def test_native_breaking_the_budget_warns_once_and_the_report_says_so():
    f = mixjit(error_budget=1e-9, schemes=["mixpert"])(_product)
    messages = _first_call(f, *_operands())
    result = last_result(f)
    assert result.native_error is not None and result.native_error > 1e-9
    said = [m for m in messages if "native plan breaks the error budget" in m]
    assert len(said) == 1, messages
    (warning,) = said
    assert f"native's error is {result.native_error:.2e}" in warning and "above the budget 1e-09" in warning
    site = f.plan.sites[0]
    assert f"chosen: site 0 {site.scheme}[{site.config}]" in warning and site.scheme != "native"
    assert f.plan.modeled_speedup < 1 and f"modeled {f.plan.modeled_speedup:.2f}x native (slower than native)" in warning
    assert "error_budget='native'" in warning and "metric=" in warning
    assert re.search(r"error_budget=\d\.\de-\d\d", warning)
    report = f.report()
    assert f"native plan (every site native) error {result.native_error:.2e}" in report
    assert "the native plan breaks the error budget" in report


def test_no_advice_when_native_meets_the_budget():
    f = mixjit(error_budget=1e-2)(_product)
    messages = _first_call(f, *_operands())
    assert not [m for m in messages if "breaks the error budget" in m], messages
    assert "breaks the error budget" not in f.report()


def test_native_budget_is_native_error_with_its_margin(tmp_path):
    f = mixjit(error_budget="native")(_product)
    a, b = _operands()
    messages = _first_call(f, a, b)
    assert not [m for m in messages if "breaks the error budget" in m], messages
    result, plan = last_result(f), f.plan
    assert plan.error_budget == "native" and plan.native_error == result.native_error > 0
    assert result.budget == pytest.approx(NATIVE_MARGIN * result.native_error) == plan.budget
    assert plan.within_budget and plan.error <= plan.budget
    assert plan.modeled_speedup >= 1.0, "a native budget ran slower than native"
    assert "error budget native (1.25 x native's error" in f.report()
    assert f.check_plan(a, b).budget == plan.budget
    path = f.save_plan(tmp_path / "plan.json")
    assert load_plan(path) == plan
    retuned = f.tune(a, b, budget="native", fp64=False)
    assert retuned.plan.error_budget == "native"


@pytest.mark.parametrize("bad", ["nativ", "NATIVE", "", "1e-6"])
def test_native_budget_spelling_is_checked(bad):
    with pytest.raises(ValueError, match="must be a positive number"):
        mixjit(error_budget=bad)(_product)
    f = mixjit(tune="explicit")(_product)
    with pytest.raises(ValueError, match="must be a positive number"):
        f.tune(*_operands(), budget=bad)


def test_plan_file_with_a_native_budget_needs_native_error(tmp_path):
    f = mixjit(error_budget="native")(_product)
    _first_call(f, *_operands())
    data = json.loads(f.plan.to_json())
    assert data["error_budget"] == "native" and data["native_error"] > 0
    for bad in (None, "x", -1.0):
        data["native_error"] = bad
        with pytest.raises(PlanFileError, match="native_error"):
            TunedPlan.from_json(json.dumps(data))
    data["error_budget"], data["native_error"] = "nativ", 1e-7
    with pytest.raises(PlanFileError, match="positive number or 'native'"):
        TunedPlan.from_json(json.dumps(data))

