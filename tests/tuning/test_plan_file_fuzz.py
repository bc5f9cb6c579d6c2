"""A seeded fuzz of plan files (issue 26, Why 6): whatever text a plan file holds (mutated bytes,
deep nesting, huge numbers, values of other types), reading it and checking it against a
function's sites raise PlanFileError or nothing, within a time limit; never another error."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

from time_limit import within

from mixjit.tuning.persistence import PlanFileError, TunedPlan, check_fits

SEED = 20261128
RUNS = 3000

PLAN = {"mixjit_plan": 1, "function": "mlp", "source_hash": "0" * 64, "argtypes": "(array(float32, 2d, C),)",
        "target": "a100", "error_budget": 1e-3, "error": 2e-4, "modeled_time_s": 1e-3,
        "native_modeled_time_s": 2e-3, "within_budget": True,
        "sites": [{"index": i, "function": "mlp", "loc": f"m.py:{i}", "form": "a @ b", "dtype": "float32",
                   "scheme": "mixpert", "config": "level=IV", "error": 1e-4, "modeled_time_s": 5e-4}
                  for i in range(2)]}
RECORDS = [SimpleNamespace(function="mlp", loc=f"m.py:{i}", form="a @ b", dtype="float32") for i in range(2)]
VALUES = [None, True, -1, 0, 2**63, 1e308, "x", "", [], {}, [[[]]], {"a": {}}, "segments=99999999,pairs=sig1",
          "level=IV,tile=99999999999999999999x1x1", "mixpert-fp64", "native", "nan", -0.0]
JUNK = '{}[]",:0123456789.eE-+ntruefalsl\\\u00ff'


def _mutated(rng: random.Random) -> str:
    plan = json.loads(json.dumps(PLAN))
    kind = rng.randrange(5)
    if kind == 0:  # a top-level field of another value or type
        plan[rng.choice(sorted(plan))] = rng.choice(VALUES)
    elif kind == 1:  # a site field
        site = rng.choice(plan["sites"])
        site[rng.choice(sorted(site))] = rng.choice(VALUES)
    elif kind == 2:  # a value replaced by deep nesting or a huge number, as text
        text = json.dumps(plan)
        start = rng.choice([i for i, c in enumerate(text) if c == ":"]) + 1
        end = min(i for i in (text.find(",", start), text.find("}", start)) if i >= 0)
        depth = rng.choice((10, 1000, 100_000))
        value = rng.choice(["[" * depth + "]" * depth, "9" * rng.choice((20, 5000)), "1e999", "-1e999"])
        return text[:start] + value + text[end:]
    text = json.dumps(plan)
    chars = list(text)
    for _ in range(rng.randint(1, 6)):  # byte flips
        chars[rng.randrange(len(chars))] = rng.choice(JUNK)
    return "".join(chars)


def test_any_plan_file_text_is_a_plan_or_a_plan_file_error():
    rng = random.Random(SEED)
    outcomes = {"plan": 0, "refused": 0}
    for run in range(RUNS):
        text = _mutated(rng)
        with within(3, f"run {run}: {text[:200]!r}"):
            try:
                check_fits(TunedPlan.from_json(text), "mlp", PLAN["argtypes"], RECORDS)
                outcomes["plan"] += 1
            except PlanFileError:
                outcomes["refused"] += 1
    assert min(outcomes.values()) >= RUNS // 100, outcomes  # the fuzz reaches both outcomes
