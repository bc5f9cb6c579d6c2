"""Default and keyword arguments wherever sample arguments are taken (issue 26, Why 8): ``f.tune``,
``validate=``, ``f.check_plan``, ``f.ir``, ``f.dump`` and first-call tuning resolve them as the
dispatcher resolves a call (mixjit.arguments), so each names the signature a call runs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numba import types

from mixjit import mixjit
from mixjit.arguments import resolve_arguments


def _make(tune: str = "first-call"):
    @mixjit(tune=tune)
    def solve(a, b, n=3, tol=0.5):
        c = a @ b
        for _ in range(n):
            c = (c @ b) * tol
        return c

    return solve


def _sample(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((8, 8)), rng.standard_normal((8, 8)) / 4


def _expected(a, b, n=3, tol=0.5):
    c = a @ b
    for _ in range(n):
        c = (c @ b) * tol
    return c


def _quiet_call(f, *args, **kws):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kws)


def test_resolve_arguments_folds_defaults_and_keywords_as_the_dispatcher():
    f = _make()
    a, b = _sample()
    _quiet_call(f, a, b)
    _quiet_call(f, a, b, tol=0.25)
    by_default = resolve_arguments(f, (a, b))
    by_keyword = resolve_arguments(f, (a, b), {"tol": 0.25})
    assert set(f.overloads) == {by_default.key, by_keyword.key}
    assert by_default.key[2:] == (types.Omitted(3), types.Omitted(0.5))
    assert by_default.values[2:] == (3, 0.5) and by_default.names == ("a", "b", "n", "tol")
    assert by_keyword.key[3] == types.float64 and by_keyword.values[3] == 0.25
    with pytest.raises(TypeError, match=r"do not fit _make.<locals>.solve\(a, b, n=3, tol=0.5\): missing a required argument: 'b'"):
        resolve_arguments(f, (a,))


def test_tune_with_defaults_tunes_the_signature_a_call_runs():
    f = _make(tune="explicit")
    a, b = _sample()
    _quiet_call(f, a, b)
    (key,) = f.overloads
    result = f.tune(a, b, fp64=False)
    assert set(f.overloads) == {key}, "f.tune compiled another signature than the call's"
    assert result.plan.within_budget and f.plan.argtypes == "(" + ", ".join(map(str, key)) + ")"
    np.testing.assert_allclose(f(a, b), _expected(a, b), rtol=1e-6)


def test_check_plan_after_first_call_tuning_with_defaults():
    f = _make()
    a, b = _sample()
    _quiet_call(f, a, b)
    a2, b2 = _sample(1)
    check = f.check_plan(a2, b2)
    assert check.within_budget and check.error >= 0


def test_keyword_arguments_name_the_keyword_signature():
    f = _make()
    a, b = _sample()
    np.testing.assert_allclose(_quiet_call(f, a, b, tol=0.25), _expected(a, b, tol=0.25), rtol=1e-6)
    (key,) = f.overloads
    assert f.check_plan(a, b, tol=0.25).within_budget
    f.tune(a, b, tol=0.25, fp64=False, validate=[_sample(2)])
    assert set(f.overloads) == {key}
    with pytest.raises(ValueError, match="held-out inputs must have the sample's types"):
        f.tune(a, b, tol=0.25, fp64=False, validate=[(a, b, 2)])


def test_validate_takes_defaults():
    f = _make(tune="explicit")
    a, b = _sample()
    result = f.tune(a, b, fp64=False, validate=[_sample(3)])
    assert len(result.validation) == 1 and result.validation[0].within_budget


def test_dump_alone_dumps_the_tuned_signature(tmp_path):
    f = _make()
    a, b = _sample()
    _quiet_call(f, a, b)
    single = (a.astype(np.float32), b.astype(np.float32), 2, np.float32(0.5))
    _quiet_call(f, *single)  # a second signature, tuned last
    alone = f.dump(tmp_path / "alone.mix").read_text()
    with_args = f.dump(tmp_path / "args.mix", *single).read_text()
    assert alone == with_args
    assert "mix.gemm" in alone and "f32" in alone
    by_types = f.ir(types.float64[:, ::1], types.float64[:, ::1])
    assert by_types == f.ir(a, b) and "f64" in by_types


def test_dump_alone_without_a_signature_names_the_fix(tmp_path):
    f = _make()
    with pytest.raises(ValueError, match=r"pass sample arguments"):
        f.dump(tmp_path / "none.mix")
