"""The error against the whole program in float64 uses the user's metric, like the program error."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mixjit.passes.tuning.space import Candidate, SiteSpace
from mixjit.tuning.evaluator import OnlineEvaluator, fp64_error
from mixjit.tuning.outputs import Output, relative_frobenius
from mixjit.tuning.workers import RunOutcome


def max_abs(out, ref) -> float:
    return float(np.max(np.abs(np.asarray(out, dtype=np.float64) - np.asarray(ref, dtype=np.float64))))


OUT = [Output("return", np.array([1.0, 2.0, 4.5], dtype=np.float32))]
F64 = [Output("return", np.array([1.0, 2.0, 4.0]))]


def test_fp64_error_defaults_to_relative_frobenius():
    assert fp64_error(OUT, F64) == pytest.approx(relative_frobenius(OUT[0].value, F64[0].value))


def test_fp64_error_uses_the_given_metric():
    assert fp64_error(OUT, F64, max_abs) == pytest.approx(0.5)
    assert fp64_error(OUT, F64, max_abs) != pytest.approx(fp64_error(OUT, F64))


def test_fp64_error_is_nan_when_the_outputs_do_not_match():
    assert math.isnan(fp64_error(OUT, [Output("return", np.zeros(2))], max_abs))
    assert math.isnan(fp64_error(OUT, [Output("arg 'x'", F64[0].value)], max_abs))


class _FixedRunner:
    def run(self, plans, profile=False):
        return RunOutcome(OUT, (), 0.0, {})


def test_online_evaluator_reports_the_fp64_error_by_the_users_metric():
    spaces = {0: SiteSpace(0, (Candidate("native", "default", 1.0),))}
    ev = OnlineEvaluator(_FixedRunner(), (), spaces, reference=F64, metric=max_abs, fp64=F64)
    assert ev.error({}) == pytest.approx(0.5)
    assert ev.judged[-1].error_vs_fp64 == pytest.approx(0.5)
