"""Tuning on the user's executor (issue 25 item 2): ``f.tune(..., executor=E)`` with a process pool
or a Dask cluster (``distributed.Client`` on a ``LocalCluster`` of two worker processes) tunes
exactly as ``workers=1`` (the same plan, judged plans, errors, profiles and report), leaves no
worker process behind and no executor shut down; bad executors are refused with what to pass."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import pathlib
import pickle
import sys
import warnings

import diverging as D
import programs as P
import pytest
from test_parallel_tuning import _same

from mixjit import mixjit
from mixjit.runtime.jit.warning import MixjitWarning
from mixjit.tuning.executor_pool import DISTRIBUTED_EXTRA, check_executor


def _tuned():
    f = mixjit(P.mlp, error_budget=1e-4, tune="explicit", schemes=("mixpert", "native"))
    args, held_out = P.mlp_inputs(32, 64, 0), P.mlp_inputs(32, 64, 1)
    f(*args)
    return f, args, held_out


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid``."""
    out: set[int] = set()
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            out |= {child} | _descendants(child)
    return out


def _nothing(_: int) -> int:
    return os.getpid()


def test_a_process_pool_tunes_exactly_as_one_worker_and_stays_usable():
    f, args, held_out = _tuned()
    one = f.tune(*args, validate=[held_out], workers=1, fp64=False, reuse=False)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        list(pool.map(_nothing, range(4)))  # its workers started
        before = _descendants(os.getpid())
        two = f.tune(*args, validate=[held_out], executor=pool, fp64=False, reuse=False)
        assert _descendants(os.getpid()) == before  # no run's worker left under the pool's processes
        assert pool.submit(sum, [1, 2]).result() == 3  # the user's executor is not shut down
    _same(one, two)


def test_a_run_past_its_time_limit_on_an_executor_is_stopped_there_as_here():
    """A loop with no GEMM call in it is stopped at eval_timeout on the executor's worker too (its
    child killed there): the same runs are stopped, for the same reason, and the plan is the same;
    no process is left under the pool's workers."""
    f = mixjit(D.stall, schemes=D.STALL_SCHEMES, tune="explicit")
    args = D.stall_inputs()
    f(*args)
    one = f.tune(*args, eval_timeout=0.3, fp64=False, workers=1, reuse=False)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        list(pool.map(_nothing, range(4)))
        before = _descendants(os.getpid())
        two = f.tune(*args, eval_timeout=0.3, fp64=False, executor=pool, reuse=False)
        assert _descendants(os.getpid()) == before
    assert one.stopped_runs and all(r.endswith("timed out after 0.3 s") for r in one.stopped_runs)
    _same(one, two)
    assert one.stopped_runs == two.stopped_runs


class _Broken(concurrent.futures.Executor):
    """An executor whose every submission fails (a cluster that went away)."""

    def submit(self, fn, /, *args, **kwargs):
        raise RuntimeError("the cluster is gone")


def test_a_failing_executor_falls_back_to_a_local_worker_with_a_warning():
    f, args, held_out = _tuned()
    one = f.tune(*args, search="exhaustive", workers=1, fp64=False, reuse=False)
    with pytest.warns(MixjitWarning, match="executor failed .*the cluster is gone"):
        two = f.tune(*args, search="exhaustive", executor=_Broken(), fp64=False, reuse=False)
    _same(one, two)


def test_bad_executors_are_refused_with_what_to_pass():
    f, args, _ = _tuned()
    with pytest.raises(TypeError, match="concurrent.futures.Executor .* or a distributed.Client"):
        f.tune(*args, executor="localhost:8786")
    with concurrent.futures.ThreadPoolExecutor(2) as threads, \
            pytest.raises(ValueError, match="ThreadPoolExecutor.*plan table.*ProcessPoolExecutor"):
        f.tune(*args, executor=threads)
    with pytest.raises(ValueError, match="both workers= and executor="):
        f.tune(*args, workers=2, executor=_Broken())


def test_a_dask_client_without_distributed_names_the_extra(monkeypatch):
    client = type("Client", (), {"__module__": "distributed.client"})()
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"mixjit\[distributed\]"):
        check_executor(client, "f.tune(executor=...)")
    assert "mixjit[distributed]" in DISTRIBUTED_EXTRA


def test_a_mixjit_function_pickles_to_a_copy_with_its_options():
    f = mixjit(lambda a, b: a @ b, error_budget=1e-3, tune="explicit", schemes=("mixpert", "native"))
    assert pickle.loads(pickle.dumps(f)) is f  # this process's own, as Numba's dispatchers
    states = f._reduce_states()
    copy = type(f)._rebuild(**{**states, "uuid": states["uuid"] + "-elsewhere"})
    assert copy is not f and copy.mixjit_options == f.mixjit_options and copy.py_func is f.py_func


def test_a_dask_local_cluster_tunes_exactly_as_one_worker():
    distributed = pytest.importorskip("distributed", reason=f"Dask support is optional: {DISTRIBUTED_EXTRA}")
    mixjit(P.mlp, tune="never")(*P.mlp_inputs(8, 8, 0))  # site ids here now differ from a fresh worker's
    f, args, held_out = _tuned()
    one = f.tune(*args, validate=[held_out], workers=1, fp64=False, reuse=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Dask's own, at start-up
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) \
                as cluster, distributed.Client(cluster) as client:
            two = f.tune(*args, validate=[held_out], executor=client, fp64=False, reuse=False)
            exhaustive = f.tune(*args, search="exhaustive", executor=client, fp64=False, reuse=False)
    _same(one, two)
    _same(f.tune(*args, search="exhaustive", workers=1, fp64=False, reuse=False), exhaustive)


def test_a_dask_cluster_of_threads_in_this_process_is_refused():
    distributed = pytest.importorskip("distributed", reason=f"Dask support is optional: {DISTRIBUTED_EXTRA}")
    f, args, _ = _tuned()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client, pytest.raises(ValueError, match="runs its tasks in this process"):
            f.tune(*args, executor=client, fp64=False, reuse=False)
