"""The evaluation cache (issue 25 item 4): re-tuning a program on the same inputs with another
budget reuses the errors the first tuning measured, says how many, and chooses the plan a tuning
without the cache chooses; other inputs, an edited program or reuse=False measure again; a
damaged file costs only its damaged lines."""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest

from mixjit.tuning.eval_cache import EvaluationCache

SOURCE = textwrap.dedent('''
    import numpy as np
    from mixjit import mixjit

    @mixjit(tune="explicit", target="a100", schemes=("mixpert",), workers=1)
    def mlp(x, w1, w2):
        h = np.tanh(x @ w1)
        return h @ w2
''')


@pytest.fixture
def program(tmp_path, monkeypatch):
    """A fresh module per test, so that its cache lives under tmp_path/__pycache__."""
    (tmp_path / "evalcache_prog.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("evalcache_prog", None)
    module = importlib.import_module("evalcache_prog")
    yield module
    sys.modules.pop("evalcache_prog", None)


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((64, 96)).astype(np.float32), rng.standard_normal((96, 80)).astype(np.float32),
            rng.standard_normal((80, 32)).astype(np.float32))


def _reused(result) -> int:
    notes = [n for n in result.notes if n.startswith("reused ")]
    return int(notes[0].split()[1]) if notes else 0


def test_retuning_with_another_budget_reuses_the_measured_errors_and_chooses_the_same_plan(program):
    f = program.mlp
    first = f.tune(*_inputs(0), budget=1e-6)
    assert _reused(first) == 0 and first.runs > 0
    again = f.tune(*_inputs(0), budget=1e-3)
    fresh = f.tune(*_inputs(0), budget=1e-3, reuse=False)
    assert _reused(again) > 0 and _reused(fresh) == 0
    assert again.runs < fresh.runs  # the reused errors ran nothing
    assert again.plan.sites == fresh.plan.sites and again.plan.error == fresh.plan.error
    assert [(j.plan, j.error) for j in again.judged] == [(j.plan, j.error) for j in fresh.judged]


def test_other_inputs_or_an_edited_program_measure_again(program, tmp_path):
    f = program.mlp
    f.tune(*_inputs(0), budget=1e-6)
    assert _reused(f.tune(*_inputs(1), budget=1e-6)) == 0
    (tmp_path / "evalcache_prog.py").write_text(SOURCE.replace("h @ w2", "(h @ w2) * 1.0"))
    sys.modules.pop("evalcache_prog", None)
    edited = importlib.import_module("evalcache_prog").mlp
    assert _reused(edited.tune(*_inputs(0), budget=1e-6)) == 0


def test_a_damaged_file_loses_only_its_damaged_lines(program):
    f = program.mlp
    first = f.tune(*_inputs(0), budget=1e-6)
    cache = EvaluationCache.for_tuning(f.py_func, "(array(float32, 2d, C), array(float32, 2d, C), "
                                       "array(float32, 2d, C))", _inputs(0), None)
    assert cache.path is not None and cache.path.is_file()
    lines = cache.path.read_text().splitlines()
    assert len(lines) == 1 + first.runs  # the header, then one line per measured plan
    damaged = [lines[0], "{not json", lines[1][: len(lines[1]) // 2], '{"plan": 3, "error": -1}', *lines[2:]]
    cache.path.write_text("\n".join(damaged) + "\n")
    again = f.tune(*_inputs(0), budget=1e-6)
    assert _reused(again) == first.runs - 1  # every plan but the truncated one
    assert again.plan.sites == first.plan.sites


def test_metrics_with_the_same_source_but_other_captured_values_do_not_share_errors(program):
    def scaled(scale):
        def metric(out, ref):
            return scale * float(np.abs(out - ref).max() / np.abs(ref).max())
        return metric

    f = program.mlp
    f.tune(*_inputs(0), budget=1e-6, metric=scaled(1.0))
    assert _reused(f.tune(*_inputs(0), budget=1e-6, metric=scaled(2.0))) == 0
    assert _reused(f.tune(*_inputs(0), budget=1e-6, metric=scaled(1.0))) > 0
