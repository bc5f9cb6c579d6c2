"""tools/bench_tuning_workers.py: the simulation of a tuning's schedule on more workers, and the
schedule a tuning records (TuneResult.schedule) that it replays."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import bench_tuning_workers as bench  # noqa: E402


def test_a_group_takes_the_longest_run_of_each_chunk_of_workers():
    schedule = [[1.0, 1.0, 1.0, 1.0], [2.0], [0.5, 0.25]]
    assert bench.simulate(schedule, 1.0, 1) == pytest.approx(1 + 4 + 2 + 0.75)
    assert bench.simulate(schedule, 1.0, 2) == pytest.approx(1 + 2 + 2 + 0.5)
    assert bench.simulate(schedule, 1.0, 8) == pytest.approx(1 + 1 + 2 + 0.5)
    assert bench.simulate(schedule, 1.0, None) == bench.simulate(schedule, 1.0, 128)


def test_a_tuning_records_its_runs_as_groups_the_profile_runs_together():
    from mixjit import mixjit
    from mixjit.tuning.driver import tune

    f = mixjit(tune="explicit", target="a100", error_budget=1e-4, schemes=("mixpert",))(bench.mlp4)
    args = bench.mlp4_inputs(48, 0)
    f(*args)
    result = tune(f, args, fp64=False, reuse=False, progress=False, workers=1)
    runs = [t for group in result.schedule for t in group]
    assert all(t > 0 for t in runs)
    # the profile run and the reference run, then every judged run
    assert len(runs) == 2 + result.runs
    alone = sum(len(p.candidates) for p in result.profiles.values())
    assert max(map(len, result.schedule)) == alone  # the site-alone runs: one group
    assert np.isclose(bench.simulate(result.schedule, 0.0, 1), sum(runs))
