"""Plan files: saved and loaded (automatically beside Numba's cache, or by path), editable by
hand; every bad file gives one warning naming the file and the problem, and a re-tune."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import programs as P
import pytest

from mixjit import mixjit
from mixjit.decorator import MixjitWarning
from mixjit.plan import get_plan
from mixjit.tuning import PlanFileError, TunedPlan
from mixjit.tuning import api as tuning_api
from mixjit.tuning.persistence import default_plan_path

TARGET = "rtx4090"
BUDGET = 1e-9


def _args(seed: int = 0):
    return P.mlp_inputs(16, 32, seed, np.float64)


@pytest.fixture
def plan_dir(tmp_path, monkeypatch) -> Path:
    """Default plan files go to ``tmp_path`` instead of Numba's cache directory of programs.py."""
    monkeypatch.setattr(tuning_api, "default_plan_path",
                        lambda py_func, argtypes, target, budget: default_plan_path(py_func, argtypes, target, budget)
                        and tmp_path / default_plan_path(py_func, argtypes, target, budget).name)
    return tmp_path


def _new(**kw):
    return mixjit(error_budget=BUDGET, target=TARGET, **kw)(P.mlp)


def _saved(plan_dir: Path) -> Path:
    f = _new(cache=True)
    f(*_args())
    (path,) = plan_dir.glob("*.mixplan.json")
    return path


def test_default_plan_path_is_beside_numbas_cache_and_keyed():
    path = default_plan_path(P.mlp, "(float64)", "h100", 1e-6)
    assert path.parent.name == "__pycache__" and path.parent.parent == Path(P.__file__).parent
    assert path.name.startswith("programs.mlp-") and path.name.endswith(".mixplan.json")
    assert path != default_plan_path(P.mlp, "(float64)", "h100", 1e-7)
    assert path != default_plan_path(P.mlp, "(float64)", "a100", 1e-6)


def test_cache_true_saves_and_a_new_function_loads_without_tuning(plan_dir, capsys):
    path = _saved(plan_dir)
    first = _new(cache=True)
    assert "tuned mlp" in capsys.readouterr().err  # _saved tuned
    first(*_args())
    assert capsys.readouterr().err == ""  # loaded, not tuned
    saved = TunedPlan.from_json(path.read_text())
    assert first.plan == saved
    assert [get_plan(s.id).config for s in first.sites] == [s.config for s in saved.sites]


def test_hand_edited_plan_file_is_run(plan_dir, capsys):
    path = _saved(plan_dir)
    d = json.loads(path.read_text())
    for s in d["sites"]:
        s["scheme"], s["config"] = "mixpert-fp64", "segments=7,pairs=sig6"
    path.write_text(json.dumps(d))
    capsys.readouterr()
    f = _new()
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixjitWarning)
        f(*_args())
    assert capsys.readouterr().err == ""
    assert [get_plan(s.id).label for s in f.sites] == ["mixpert-fp64[segments=7,pairs=sig6]"] * 3


def _break_json(path: Path) -> str:
    path.write_text(path.read_text()[:40])
    return "not valid JSON"


def _break_version(path: Path) -> str:
    d = json.loads(path.read_text())
    d["mixjit_plan"] = 99
    path.write_text(json.dumps(d))
    return "format version 99"


def _break_source(path: Path) -> str:
    d = json.loads(path.read_text())
    d["source_hash"] = "0" * 64
    path.write_text(json.dumps(d))
    return "outdated: the function's source changed"


def _break_config(path: Path) -> str:
    d = json.loads(path.read_text())
    d["sites"][1]["scheme"], d["sites"][1]["config"] = "mixpert", "level=V"
    path.write_text(json.dumps(d))
    return "site 1: .*unknown level 'V'"


def _break_scheme(path: Path) -> str:
    d = json.loads(path.read_text())
    d["sites"][0]["scheme"] = "mixpert-fp128"
    path.write_text(json.dumps(d))
    return "site 0: unknown GEMM scheme 'mixpert-fp128'"


def _break_dtype(path: Path) -> str:
    d = json.loads(path.read_text())
    d["sites"][0]["dtype"] = "float32"
    path.write_text(json.dumps(d))
    return "site 0: dtype is 'float32' in the plan, 'float64' in the function"


def _break_site_count(path: Path) -> str:
    d = json.loads(path.read_text())
    d["sites"] = d["sites"][:2]
    path.write_text(json.dumps(d))
    return "it has 2 sites, the function has 3"


def _break_field(path: Path) -> str:
    d = json.loads(path.read_text())
    d["sites"][0]["speed"] = 3
    path.write_text(json.dumps(d))
    return r"sites\[0\]: unknown field"


def _break_budget(path: Path) -> str:
    d = json.loads(path.read_text())
    d["error_budget"] = -1
    path.write_text(json.dumps(d))
    return "'error_budget' must be a positive number"


def _break_nesting(path: Path) -> str:
    path.write_text("[" * 100_000 + "]" * 100_000)
    return "not a plan: RecursionError"


def _break_huge_integer(path: Path) -> str:
    d = json.loads(path.read_text())
    d["error_budget"] = 12345.0
    path.write_text(json.dumps(d).replace("12345.0", "9" * 5000))
    return "not a plan: ValueError"


def _edit(path: Path, **fields) -> None:
    """Set top-level ``fields`` of the plan file at ``path``."""
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def _set_sites(path: Path, indices: range | list[int], scheme: str, config: str) -> None:
    d = json.loads(path.read_text())
    for i in indices:
        d["sites"][i]["scheme"], d["sites"][i]["config"] = scheme, config
    path.write_text(json.dumps(d))


def _break_types(path: Path) -> str:
    _edit(path, error="small")
    return "'error' must be a non-negative number or null, got 'small'"


def _break_bool_budget(path: Path) -> str:
    _edit(path, error_budget=True)
    return "'error_budget' must be a positive number or 'native', got True"


def _break_range(path: Path) -> str:
    _set_sites(path, [0], "mixpert-fp64", "segments=99999999,pairs=sig1")
    return r"site 0: mixpert: segments=99999999 .* must be in 1\.\.9"


def _break_cheaper(path: Path) -> str:
    """A cheaper config edited in, the recorded errors left as they were: a stale claim."""
    _set_sites(path, range(3), "mixpert", "level=I")
    return r"its error on this call's arguments is .*, above its budget 1e-09 \(the file records "


BREAKERS = [_break_json, _break_version, _break_source, _break_config, _break_scheme, _break_dtype, _break_site_count,
            _break_field, _break_budget, _break_nesting, _break_huge_integer, _break_types, _break_bool_budget,
            _break_range, _break_cheaper]  # (every registered scheme has a compiled executor: none to break)


@pytest.mark.parametrize("breaker", BREAKERS, ids=[b.__name__[7:] for b in BREAKERS])
def test_a_bad_plan_file_warns_once_and_retunes(plan_dir, breaker, capsys):
    path = _saved(plan_dir)
    problem = breaker(path)
    capsys.readouterr()
    f = _new()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(*_args())
    mine = [w for w in caught if issubclass(w.category, MixjitWarning)]
    assert len(mine) == 1, [str(w.message) for w in mine]
    assert str(path) in str(mine[0].message) and "re-tuning" in str(mine[0].message)
    assert __import__("re").search(problem, str(mine[0].message)), str(mine[0].message)
    assert "tuned mlp" in capsys.readouterr().err
    assert f.plan is not None and f.plan.within_budget
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("breaker", [_break_json, _break_nesting, _break_huge_integer, _break_types, _break_range],
                         ids=["json", "nesting", "huge_integer", "types", "range"])
def test_use_plan_of_a_malformed_file_is_a_plan_file_error(plan_dir, breaker):
    path = _saved(plan_dir)
    problem = breaker(path)
    f = _new(tune="never")
    f(*_args())  # compiled: use_plan checks the fit (config ranges included) at once
    with pytest.raises(PlanFileError, match=problem):
        f.use_plan(path)


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink to a directory"])
def test_use_plan_of_something_else_than_a_file_is_a_plan_file_error(tmp_path, kind):
    path = tmp_path / "p.json"
    if kind == "fifo":
        __import__("os").mkfifo(path)  # reading it would block
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(tmp_path)
    with pytest.raises(PlanFileError, match="it is not a regular file"):
        _new(tune="never").use_plan(path)


def test_a_loaded_plan_reports_its_measured_error_not_the_files_claim(plan_dir):
    path = _saved(plan_dir)
    _edit(path, error=1e-300)
    f = _new()
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixjitWarning)
        f(*_args())
    assert f.plan.error != 1e-300 and f.plan.error == f.check_plan(*_args()).error


def test_a_plan_given_before_its_signature_compiles_reports_its_measured_error(plan_dir):
    path = _saved(plan_dir)
    _edit(path, error=1e-300)
    f = _new(tune="never")
    f.use_plan(path)  # not compiled yet: applied, and measured, at the first call
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixjitWarning)
        f(*_args())
    assert f.plan.error != 1e-300 and f.plan.error == f.check_plan(*_args()).error


def test_a_directory_at_the_plan_path_warns_and_the_call_runs(plan_dir, capsys):
    path = _saved(plan_dir)
    path.unlink()
    path.mkdir()
    f = _new(cache=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(*_args())
    messages = [str(w.message) for w in caught if issubclass(w.category, MixjitWarning)]
    assert len(messages) == 1, messages  # nothing to load there; the one problem is that the plan cannot be saved
    assert f"is not saved to {path} (Is a directory); it runs in this process only" in messages[0]
    assert "tuned mlp" in capsys.readouterr().err and f.plan.within_budget and np.all(np.isfinite(out))
    assert path.is_dir()


@pytest.mark.parametrize("where", ["at the plan path", "at the old temporary name"])
def test_save_plan_never_writes_through_a_planted_symlink(plan_dir, tmp_path, where):
    f = _new(tune="explicit")
    f.tune(*_args())
    path, victim = tmp_path / "p.mixplan.json", tmp_path / "victim"
    victim.write_text("keep me")
    (path if where == "at the plan path" else path.with_name(path.name + ".tmp")).symlink_to(victim)
    f.save_plan(path)
    assert victim.read_text() == "keep me"
    assert not path.is_symlink() and TunedPlan.from_json(path.read_text()) == f.plan


def test_use_plan_and_save_plan(plan_dir, tmp_path):
    f = _new(tune="explicit")
    f.tune(*_args())
    path = f.save_plan(tmp_path / "mine" / "p.json")
    g = _new(tune="never")
    g.use_plan(path)  # before its signature is compiled: applied when it compiles
    g(*_args())
    assert [get_plan(s.id).config for s in g.sites] == [s.config for s in f.plan.sites]
    assert g.plan == f.plan
    d = json.loads(path.read_text())
    d["sites"][0]["loc"] = "elsewhere.py:1"
    path.write_text(json.dumps(d))
    with pytest.raises(PlanFileError, match="does not fit mlp: site 0: loc is 'elsewhere.py:1'"):
        g.use_plan(path)
    path.write_text("{")
    with pytest.raises(PlanFileError, match=f"plan file {path}: not valid JSON"):
        g.use_plan(path)


def test_save_plan_without_a_plan_says_what_to_do():
    with pytest.raises(ValueError, match="has no plan yet; call it or f.tune"):
        _new(tune="explicit").save_plan("x.json")


def test_a_loaded_plan_on_a_first_call_with_nan_keeps_no_error_claim(plan_dir):
    path = _saved(plan_dir)
    args = _args()
    args[0][0, 0] = np.nan
    f = _new()
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixjitWarning)
        f(*args)
    saved = TunedPlan.from_json(path.read_text())
    assert f.plan.error is None and f.plan.sites == saved.sites  # applied, its error unmeasured, not claimed
    assert "mlp" in f.report()
