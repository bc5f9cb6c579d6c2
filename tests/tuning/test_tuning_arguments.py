"""Bad tuning arguments are refused with errors that name them (issue 26, Why 10): a metric that
raises or returns NaN is named with what it did, validate= of the wrong form is a TypeError naming
validate=, and any real number type is a budget (bool, NaN and non-positive values are not)."""

from __future__ import annotations

import numpy as np
import programs as P
import pytest

from mixjit import mixjit
from mixjit.tuning.driver import check_budget


def _args():
    return P.mlp_inputs(16, 32, 0, np.float32)


def raising_metric(out, ref):
    raise RuntimeError("boom")


def nan_metric(out, ref):
    return float("nan")


@pytest.mark.parametrize(("metric", "said"), [
    (raising_metric, r"the error metric raising_metric failed on output \w+ \(RuntimeError: boom\)"),
    (nan_metric, r"the error metric returned nan for output \w+ \(metric nan_metric\)"),
])
def test_a_failing_metric_is_named_with_what_it_did(metric, said):
    f = mixjit(tune="explicit", metric=metric)(P.mlp)
    with pytest.raises(Exception, match=said):
        f.tune(*_args())


@pytest.mark.parametrize(("validate", "got"), [(5, "got int"), ([5], "got a list holding a int"),
                                               ("ab", "got str")])
def test_validate_of_the_wrong_form_names_validate(validate, got):
    f = mixjit(tune="explicit")(P.mlp)
    with pytest.raises(TypeError, match=rf"f.tune\(validate=...\) takes a list of argument tuples.*{got}"):
        f.tune(*_args(), validate=validate)


@pytest.mark.parametrize("budget", [np.float32(1e-3), np.float64(1e-3), np.int64(1), 1e-3, 1])
def test_any_real_number_type_is_a_budget(budget):
    assert check_budget(budget, "error_budget") == float(budget)
    assert mixjit(error_budget=budget)(P.mlp).mixjit_options.error_budget == float(budget)


@pytest.mark.parametrize("budget", [True, np.bool_(True), float("nan"), np.float32("nan"), 0, -1e-3, "1e-3", None])
def test_bool_nan_non_positive_and_text_budgets_are_refused(budget):
    with pytest.raises(ValueError, match="error_budget must be a positive number"):
        check_budget(budget, "error_budget")
