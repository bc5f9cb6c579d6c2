"""Tuning on several worker processes at once (issue 25 item 1): ``workers=N`` runs the profile
runs and the exhaustive search's plans on N forked workers, and the tuning is the serial one:
the same chosen plan, the same judged plans with the same errors in the same order, the same
profiles and the same report rows (greedy with held-out validation, exhaustive, a metric)."""

from __future__ import annotations

import math
import os
import pathlib

import numpy as np
import programs as P
import pytest

from mixjit import mixjit
from mixjit.tuning.report import rows


def _children() -> set[str]:
    return {p for t in pathlib.Path(f"/proc/{os.getpid()}/task").iterdir()
            for p in (t / "children").read_text().split()}


def _same(a, b) -> None:
    """Two tunings agree on everything but the time they took."""
    assert a.plan.sites == b.plan.sites
    assert (a.plan.error, a.plan.within_budget) == (b.plan.error, b.plan.within_budget)
    assert [(e.plan, e.error, e.time) for e in a.search.evaluations] == \
        [(e.plan, e.error, e.time) for e in b.search.evaluations]
    assert a.judged == b.judged
    assert a.profiles == b.profiles
    assert rows(a) == rows(b)
    assert a.validation == b.validation
    assert a.runs == b.runs


def _mlp_error(out, ref) -> float:
    return float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))


@pytest.mark.parametrize("search", ["greedy", "exhaustive"])
def test_two_workers_tune_exactly_as_one(search):
    f = mixjit(P.mlp, error_budget=1e-4, tune="explicit", schemes=("mixpert", "native"))
    args, held_out = P.mlp_inputs(64, 96, 0), P.mlp_inputs(64, 96, 1)
    f(*args)
    before = _children()
    one = f.tune(*args, validate=[held_out], search=search, workers=1, fp64=False, reuse=False)
    two = f.tune(*args, validate=[held_out], search=search, workers=2, fp64=False, reuse=False)
    _same(one, two)
    assert len(one.profiles) == 3 and all(math.isfinite(p.calls) for p in one.profiles.values())
    assert _children() == before  # no worker outlives tune


def test_two_workers_with_a_metric_tune_exactly_as_one():
    f = mixjit(P.mlp, error_budget=1e-4, tune="explicit", metric=_mlp_error, schemes=("mixpert", "native"))
    args = P.mlp_inputs(32, 64, 2)
    f(*args)
    _same(f.tune(*args, workers=1, fp64=False, reuse=False), f.tune(*args, workers=2, fp64=False, reuse=False))


def test_workers_is_checked():
    with pytest.raises(ValueError, match="workers must be at least 1"):
        mixjit(P.mlp, workers=0)
    with pytest.raises(TypeError, match="number of worker processes"):
        mixjit(P.mlp, workers="2")
    f = mixjit(P.mlp, tune="explicit", workers=2)
    assert f.mixjit_options.workers == 2
    with pytest.raises(ValueError, match=r"f.tune\(workers=...\) must be at least 1"):
        f.tune(*P.mlp_inputs(8, 8, 0), workers=-1)


def _blas_threads():
    from threadpoolctl import threadpool_info

    return np.array([max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")], dtype=np.int64)


def test_a_worker_gets_every_thread_back_for_a_run_alone():
    """While two runs share the cores each worker runs on its share; a run alone after them runs
    with the threads the worker inherited (BLAS's limits restored, not left at the share)."""
    from mixjit.tuning.workers import EvaluationPool, RunTask, default_workers

    inherited = int(_blas_threads()[0])
    with EvaluationPool(_blas_threads, [()], (), (), workers=2) as pool:
        alone = pool.run(RunTask(0, {}))
        shared = pool.run_many([RunTask(0, {}), RunTask(0, {})])
        again = pool.run(RunTask(0, {}))
    value = [int(o.outputs[0].value[0]) for o in (alone, *shared, again)]
    assert value[0] == value[3] == inherited
    assert value[1] == value[2] == min(inherited, max(1, default_workers() // 2))


def _run_number(counter):
    counter[0] += 1
    return counter.copy()


def test_each_run_is_handed_on_while_the_workers_run_the_next():
    """``run_many(..., each=)`` gives every outcome as it comes back (the prefetch measures its error
    there), after the idle workers got their next tasks: when the first one is handed on, a worker
    already runs a later task; every outcome is handed on once."""
    from mixjit.tuning.workers import EvaluationPool, RunTask

    seen: list[tuple[int, list[int]]] = []
    with EvaluationPool(_run_number, [(np.zeros(1, dtype=np.int64),)], ("counter",), (), workers=2) as pool:
        pool.run(RunTask(0, {}))  # the reference run: the written argument is the output
        tasks = [RunTask(0, {}, ("counter",)) for _ in range(6)]
        outcomes = pool.run_many(tasks, each=lambda i, o: seen.append((i, [w.index for w in pool._busy(2)])))
    assert sorted(i for i, _ in seen) == list(range(6))
    assert max(seen[0][1]) >= 2  # a worker is on a run after the first two already
    assert len(outcomes) == 6 and all(not o.stopped for o in outcomes)


def _busy_product(a, b):
    s = 0.0
    for i in range(20_000_000):  # about 20 ms a run: the runs' CPU outweighs the rest
        s += i * 1e-12
    return a @ b + s


def test_tuning_times_are_wall_and_count_the_workers_cpu():
    """``TuneResult.seconds`` is the tuning's wall time and ``cpu_seconds`` its CPU, the runs' on the
    worker processes included, on one worker and on two."""
    import time

    f = mixjit(_busy_product, tune="explicit", schemes=("mixpert",))
    args = (np.ones((8, 8)), np.ones((8, 8)))
    f(*args)
    for workers in (1, 2):
        wall, own = time.perf_counter(), time.process_time()
        result = f.tune(*args, workers=workers, fp64=False, reuse=False)
        wall, own = time.perf_counter() - wall, time.process_time() - own
        runs = sum(t for group in result.schedule for t in group)
        assert result.seconds <= wall and (workers == 2 or runs <= result.seconds)
        # the workers' CPU: the runs' (busy loops: their CPU is their wall time on an idle machine, a
        # third of it at a load of 3 on 2 cores); this process's alone would leave about 0.01 s
        assert result.cpu_seconds - own >= 0.3 * runs
        assert f"{result.seconds:.1f} s ({result.cpu_seconds:.1f} s CPU)" in f.report()
        assert result.summary().endswith(f"runs in {result.seconds:.1f} s")
