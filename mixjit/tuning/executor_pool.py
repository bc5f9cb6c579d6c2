"""A tuning's runs on the user's executor: a ``concurrent.futures`` process pool or a Dask cluster.

``f.tune(..., executor=E)`` hands every run of the tuning (profile and reference runs, each
candidate measured alone, the plans the search judges or speculates on, the validation runs) to
``E`` in place of the forked workers of :class:`mixjit.tuning.workers.EvaluationPool`.
:class:`ExecutorPool` has the pool's interface (``run``, ``run_many``, ``workers``,
``in_process``, ``inputs``, ``close``), so the evaluator and the search do not know the
difference, and the outcomes come back in the order of the tasks: the chosen plan, every
recorded error and the report are those of ``workers=1``.

What reaches an executor's worker is a :class:`Program`: the ``@mixjit`` function pickled (its
Python function, by value where it is not importable, its options and Numba options:
``MixjitDispatcher._reduce_states``), the argument types, the input sets and the executors to
load. Each worker process compiles the function once per program (:data:`_COMPILED`, keyed by
:attr:`Program.fingerprint`) and knows its sites by their index among the signature's sites, the
same in every process. Each task carries one :class:`~mixjit.tuning.workers.RunTask`; the worker
runs it on a forked child (an ``EvaluationPool`` of one worker, closed after the run), which
writes its own plan table and is killed at the run's time limit, as on one machine.

With a ``distributed.Client`` the program (the inputs with it) is scattered once to every worker
(``client.scatter(..., broadcast=True)``) and each task carries the plan only; a process pool
gets the program with each task (it has no scatter). An executor this pool was given is never
shut down. An executor whose tasks run in this process (a ``ThreadPoolExecutor``, a Dask
cluster with ``processes=False``) is refused: its runs would share this process's plan table.
When the executor fails (a worker process dies, the function cannot be rebuilt there), the
remaining runs happen on a forked worker here, with a ``MixjitWarning`` naming the failure.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import pickle
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from mixjit.plan import SitePlan
from mixjit.tuning.profiling import signature_sites
from mixjit.tuning.workers import EvaluationPool, RunOutcome, RunTask, default_workers, warm_executors

__all__ = ["DISTRIBUTED_EXTRA", "Program", "ExecutorPool", "check_executor", "is_dask_client"]

DISTRIBUTED_EXTRA = "pip install 'mixjit[distributed]'"
"""How to install the optional Dask support (``distributed``)."""


def is_dask_client(executor: Any) -> bool:
    """Is ``executor`` a ``distributed.Client`` (told by its class, without importing distributed)?"""
    return any(c.__module__.split(".")[0] == "distributed" and c.__name__ == "Client" for c in type(executor).__mro__)


def _distributed() -> Any:
    """The ``distributed`` module; ImportError naming the extra that installs it."""
    try:
        import distributed
    except ImportError as err:
        raise ImportError(f"mixjit: tuning on a Dask cluster needs the 'distributed' package: {DISTRIBUTED_EXTRA}") \
            from err
    return distributed


def check_executor(executor: Any, where: str) -> Any:
    """``executor`` if it is None, a ``concurrent.futures.Executor`` whose tasks run in other
    processes, or a ``distributed.Client``; else TypeError (not an executor) or ValueError (a
    thread pool: its runs would share this process's plan table), naming ``where`` it was given."""
    if executor is None:
        return None
    if is_dask_client(executor):
        _distributed()
        return executor
    if isinstance(executor, concurrent.futures.ThreadPoolExecutor):
        raise ValueError(f"mixjit: {where} got a ThreadPoolExecutor, whose threads would share this process's plan "
                         "table; pass a concurrent.futures.ProcessPoolExecutor or a distributed.Client, or use "
                         "workers=N for worker processes on this machine")
    if not isinstance(executor, concurrent.futures.Executor):
        raise TypeError(f"mixjit: {where} must be a concurrent.futures.Executor running tasks in other processes "
                        f"(e.g. ProcessPoolExecutor) or a distributed.Client ({DISTRIBUTED_EXTRA}), got "
                        f"{type(executor).__name__}")
    return executor


@dataclass(frozen=True)
class Program:
    """What an executor's worker needs to run a tuning's tasks: ``function`` (the pickled
    ``@mixjit`` function), ``key`` (its argument types), ``sites`` (the tuning process's site
    ids, in the signature's order), the argument ``names``, the input sets and the executors to
    load before the first run (``warm``); ``home``: the tuning process's id."""

    function: bytes
    key: tuple
    sites: tuple[int, ...]
    names: tuple[str, ...]
    inputs: tuple[tuple[Any, ...], ...]
    warm: tuple[tuple[SitePlan, Any], ...]
    home: int

    @property
    def fingerprint(self) -> str:
        """The compiled function's identity: its pickle and argument types."""
        return hashlib.sha256(self.function + repr(self.key).encode()).hexdigest()


@dataclass(frozen=True)
class _Compiled:
    """A program's function compiled in a worker process: its entry point and its site ids, in
    the signature's order (those of ``Program.sites`` here)."""

    call: Callable[..., Any]
    sites: tuple[int, ...]


_COMPILED: dict[str, _Compiled] = {}
"""Per worker process: each program's compiled function, by ``Program.fingerprint``."""


def _compile(program: Program) -> _Compiled:
    """``program``'s function compiled here (once per process) with its executors loaded."""
    compiled = _COMPILED.get(program.fingerprint)
    if compiled is None:
        function = pickle.loads(program.function)
        function.compile(program.key)
        sites = tuple(s.id for s in signature_sites(function, program.key))
        if len(sites) != len(program.sites):
            raise RuntimeError(f"mixjit: {function.py_func.__qualname__} compiled with {len(sites)} GEMM sites on an "
                               f"executor's worker, {len(program.sites)} in the tuning process")
        warm_executors(program.warm)
        compiled = _COMPILED[program.fingerprint] = _Compiled(function.overloads[program.key].entry_point, sites)
    return compiled


def run_task(program: Program, task: RunTask) -> tuple[str, Any]:
    """On an executor's worker: run ``task`` (keyed by the tuning process's site ids) on a forked
    child, as ``EvaluationPool.run`` does. ``("ok", outcome)`` keyed by those ids again,
    ``("error", exception)`` when the program raised, ``("home", None)`` in the tuning process."""
    if os.getpid() == program.home:
        return "home", None
    compiled = _compile(program)
    here = dict(zip(program.sites, compiled.sites))
    back = dict(zip(compiled.sites, program.sites))
    limits = replace(task.limits, calls={here[s]: n for s, n in task.limits.calls.items()})
    local = replace(task, plans={here[s]: p for s, p in task.plans.items()}, limits=limits)
    try:
        with EvaluationPool(compiled.call, program.inputs, program.names, compiled.sites, workers=1) as pool:
            outcome = pool.run(local)
    except Exception as err:  # the program's own exception: the tuning process raises it
        return "error", err
    logs = None if outcome.logs is None else {back[s]: log for s, log in outcome.logs.items()}
    return "ok", replace(outcome, calls={back[s]: n for s, n in outcome.calls.items()}, logs=logs)


class ExecutorPool:
    """Runs a tuning's tasks on ``executor`` (module docstring); ``fallback`` makes the local pool
    the remaining tasks run on if the executor fails. Use as a context manager, or call ``close()``."""

    def __init__(self, executor: Any, program: Program, fallback: Callable[[], EvaluationPool]) -> None:
        self.executor = executor
        self.program = program
        self.inputs = [tuple(v) for v in program.inputs]
        self.in_process = False
        self._fallback = fallback
        self._local: EvaluationPool | None = None
        self._remote_cpu = 0.0  # CPU seconds of the runs made on the executor's workers
        self._dask = is_dask_client(executor)
        self._scattered: Any = None
        if self._dask:
            self.workers = max(1, sum(executor.nthreads().values()))
        else:
            self.workers = getattr(executor, "_max_workers", None) or default_workers()

    def __enter__(self) -> "ExecutorPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds of the runs made on the executor's workers and on the local pool
        (``EvaluationPool.cpu_seconds``)."""
        return self._remote_cpu + (self._local.cpu_seconds if self._local is not None else 0.0)

    def run(self, task: RunTask) -> RunOutcome:
        """One run, on the executor (``EvaluationPool.run``)."""
        return self.run_many([task])[0]

    def run_many(self, tasks: Sequence[RunTask], parallel: int | None = None,
                 each: Callable[[int, RunOutcome], None] | None = None) -> list[RunOutcome]:
        """Submit ``tasks`` at once (the executor decides how many run together: ``parallel`` is
        the local pool's); their outcomes in the order of ``tasks``, each also given to ``each``
        (``EvaluationPool.run_many``). The earliest task's program exception propagates, as in a
        serial loop; Ctrl-C cancels the tasks not started and propagates (runs already started
        finish on their worker, their results dropped)."""
        if self._local is not None:
            return self._local.run_many(tasks, parallel, each)
        futures = []
        try:
            futures = [self._submit(task) for task in tasks]
            replies = [f.result() for f in futures]
        except KeyboardInterrupt:
            self._cancel(futures)
            raise
        except Exception as err:  # the executor failed, not the program: the rest here
            self._cancel(futures)
            self._fall_back(err)
            return self._local.run_many(tasks, parallel, each)
        for kind, value in replies:
            if kind == "home":
                raise ValueError("mixjit: f.tune(executor=...) runs its tasks in this process (threads, or a Dask "
                                 "cluster with processes=False), where they would share this process's plan table; "
                                 "use worker processes (LocalCluster(processes=True), ProcessPoolExecutor)")
            if kind == "error":
                raise value
        outcomes = [value for _, value in replies]
        self._remote_cpu += sum(o.cpu_seconds for o in outcomes)
        for index, outcome in enumerate(outcomes):
            if each is not None:
                each(index, outcome)
        return outcomes

    def _submit(self, task: RunTask) -> Any:
        if not self._dask:
            return self.executor.submit(run_task, self.program, task)
        if self._scattered is None:
            self._scattered = self.executor.scatter(self.program, broadcast=True, hash=False)
        return self.executor.submit(run_task, self._scattered, task, pure=False)

    def _cancel(self, futures: Sequence[Any]) -> None:
        if self._dask:
            self.executor.cancel(list(futures))
        else:
            for f in futures:
                f.cancel()

    def _fall_back(self, err: BaseException) -> None:
        """Run every later task on a local worker, with a warning saying why."""
        from mixjit.runtime.jit.warning import MixjitWarning

        warnings.warn(f"mixjit: the tuning's executor failed ({type(err).__name__}: {str(err)[:200]}); the remaining "
                      "runs happen on a worker process of this machine", MixjitWarning, stacklevel=5)
        self._local = self._fallback()
        self.in_process = self._local.in_process
        self.workers = self._local.workers

    def close(self) -> None:
        """Release the scattered program and close the local pool (the executor stays as it was)."""
        if self._scattered is not None:
            self.executor.cancel([self._scattered])
            self._scattered = None
        if self._local is not None:
            self._local.close()
            self._local = None
