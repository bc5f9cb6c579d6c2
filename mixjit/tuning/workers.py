"""Where a tuning's program runs happen: a worker process that can be stopped.

Every run of a tuning (the profile and reference runs, each candidate measured alone, each
plan the search judges, the validation runs) is a :class:`RunTask` sent to an
:class:`EvaluationPool`. The pool holds one worker process, *forked* from the tuning process
(``multiprocessing``'s ``"fork"`` context): the child inherits the compiled function, every
input set and every loaded executor, so it compiles nothing and works for closures, lambdas
and ``__main__`` scripts; outputs come back pickled through a pipe. The child writes only its
own copy of the plan table and of the call counters, so trial plans never reach a call of the
function in the tuning process (another thread's, or the first call waiting for its plan).

Each run has limits (:class:`RunLimits`, the driver derives them from the reference run):

* a wall-clock limit: the parent waits on the pipe, kills the worker when the run passes it,
  and forks a fresh one for the next run;
* per-site call limits, enforced by the run-time entry itself (``mixjit.entry.set_call_limits``:
  a call past the limit fails, the compiled function raises): a convergence loop that a cheap
  candidate broke stops after a bounded number of GEMMs even where nothing can kill it.

A stopped run is a :class:`RunOutcome` with ``stopped`` naming why; the tuner counts it as over
budget and the search goes on. The parent waits in short polls, so Ctrl-C reaches it within a
fraction of a second: the running worker is killed and the KeyboardInterrupt goes on to the
search, which returns its best plan. ``close()`` (the pool is a context manager) ends the
worker: none outlives the tuning.

Numba's GNU OpenMP threading layer, once started here (:func:`gnu_openmp_started`: a
``parallel=True`` function compiled or run), terminates a parallel region run by a forked child
of this process (its pool does not survive a fork): the worker is then forked twice
(:class:`DetachedWorker`), which the guard lets through, and runs its parallel regions on one thread.

A worker that dies in a run is replaced and the run retried once on a fresh worker; a second
death counts the run as stopped and makes the pool serial (one worker), with a warning. Where
``fork`` is unavailable or fails, or the worker dies twice in a run without limits, runs
happen in the tuning process (one ``MixjitWarning``), bounded by the call limits only (nopython
code cannot be interrupted).

One worker today; the pool is the seam for ``workers=N`` (several forked workers, runs
dispatched in a fixed order): callers hand it independent tasks and read outcomes only.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from mixjit import entry
from mixjit.plan import LINALG_SCHEME, SitePlan, get_plan, plan_words, set_plan
from mixjit.tuning.outputs import Output, collect, copy_args, written_arguments
from mixjit.tuning.profiling import read_profile, start_profile

__all__ = ["warm_key", "EVAL_TIME_FACTOR", "EVAL_TIME_FLOOR", "CALL_FACTOR", "CALL_FLOOR", "RunLimits", "RunTask", "RunOutcome",
           "EvaluationPool", "check_eval_timeout", "warm_executors"]

EVAL_TIME_FACTOR = 10.0
"""A run may take this many times the wall time of its input set's reference run ..."""
EVAL_TIME_FLOOR = 3.0
"""... plus this many seconds (so that a fast reference run does not make a tight limit)."""
CALL_FACTOR = 10
"""A site may make this many times the calls it made in the reference run ..."""
CALL_FLOOR = 100
"""... plus this many, before its run is stopped."""

_POLL_S = 0.05
"""How often the parent wakes while a worker runs (Ctrl-C lands within this)."""


def check_eval_timeout(value: Any, where: str) -> float | None:
    """``value`` as seconds if it is None or a positive finite number, else ValueError (TypeError
    for a non-number) naming ``where`` it was given."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"mixjit: {where} must be a number of seconds (or None: derived from the reference "
                        f"run), got {type(value).__name__}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"mixjit: {where} must be a positive, finite number of seconds (e.g. 30), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class RunLimits:
    """When a run is stopped: after ``seconds`` of wall time (None: never), or when a site makes
    ``calls[site]`` calls; ``reference_calls`` (all sites) is what the reference run made."""

    seconds: float | None = None
    calls: dict[int, int] = field(default_factory=dict)
    reference_calls: int = 0

    @staticmethod
    def from_reference(seconds: float, calls: dict[int, int], eval_timeout: float | None) -> "RunLimits":
        """The limits of runs on an input set whose reference run took ``seconds`` and made
        ``calls`` per site: ``eval_timeout`` if given, else ``EVAL_TIME_FACTOR * seconds +
        EVAL_TIME_FLOOR``; ``CALL_FACTOR * calls + CALL_FLOOR`` per site."""
        limit = eval_timeout if eval_timeout is not None else EVAL_TIME_FACTOR * seconds + EVAL_TIME_FLOOR
        return RunLimits(limit, {s: CALL_FACTOR * n + CALL_FLOOR for s, n in calls.items()}, sum(calls.values()))


@dataclass(frozen=True)
class RunTask:
    """One run: input set ``inputs`` (an index into the pool's input sets) under ``plans`` (a
    plan per site), on copies of the inputs. ``written``: the argument arrays that count as
    outputs (None: decided by this run, the input set's reference run). ``profile``: record the
    shape log and executor statistics."""

    inputs: int
    plans: dict[int, SitePlan]
    written: tuple[str, ...] | None = None
    profile: bool = False
    limits: RunLimits = RunLimits()


@dataclass
class RunOutcome:
    """What one run gave: its outputs (None when stopped), the argument arrays that counted as
    outputs, its wall time, the calls each site made, the shape logs when profiled, why it
    was stopped (empty when it ran to the end), and the CPU seconds of the process that ran it
    during the run (every thread)."""

    outputs: list[Output] | None
    written: tuple[str, ...]
    seconds: float
    calls: dict[int, int]
    logs: dict[int, Any] | None = None
    stopped: str = ""
    cpu_seconds: float = 0.0


def warm_key(plan: SitePlan, dtype: Any) -> tuple:
    """What tells two (plan, dtype) pairs' warm-ups apart: the executor and the dtype (a GEMM
    executor serves every config of its scheme, its config words read at run time), and for a
    linalg plan its config too (each config's GEMM scheme and config compile their own paths)."""
    return (plan.executor, str(np.dtype(dtype)), plan.config if plan.scheme == LINALG_SCHEME else None)


def warm_executors(plans: Sequence[tuple[SitePlan, Any]]) -> None:
    """Load in this process every executor of ``plans`` ((plan, site dtype) pairs) and fill the
    lazy cells of mixjit's loaded kernels, so that a forked worker compiles nothing (a compile in
    the worker would count against its time limit, and be repeated by every fresh fork)."""
    from mixjit.runtime.jit.lazy_link import fill_lazy_cells

    for plan, dtype in plans:
        if plan.scheme == LINALG_SCHEME:
            warm_linalg(plan.config, dtype)
            continue
        code = int(plan_words(plan)[0])
        entry.load_executor(code, [dtype])
    fill_lazy_cells(package="mixjit")


def warm_linalg(config: str, dtype: Any) -> None:
    """Compile what a linalg site's blocked candidate runs (its panel steps and its GEMM scheme's
    executor) by running it on a small matrix, and load its GEMM scheme's general path by one
    product above the small path's limit (the small matrix's products take the small path: a
    worker would load the general path from the disk cache at its first real-size product, about
    0.2 s, in every fresh worker, against the run's time limit)."""
    from mixjit.runtime.linalg.config import LinalgConfig
    from mixjit.runtime.linalg.solve import run_linalg
    from mixjit.runtime.mixpert.paths.small import SMALL_MAX_WORK_FP32

    a = np.eye(4, dtype=np.dtype(dtype)) * 2
    run_linalg("solve", a, a[:, :1].copy(), config)
    run_linalg("cholesky", a, None, config.replace("refine=on", "refine=off"))
    run_linalg("slogdet", a, None, config.replace("refine=on", "refine=off"))
    run_linalg("lstsq", np.vstack([a, a]), np.ones(8, dtype=a.dtype), config)
    scheme, gemm_config = LinalgConfig.parse(config).gemm()
    n = round(SMALL_MAX_WORK_FP32 ** (1 / 3)) + 8  # n^3 above both domains' small-path limits
    big = np.eye(n, dtype=a.dtype) * 2
    scheme.run_with_stats(big, big, gemm_config)


def execute(call: Callable[..., Any], args: Sequence[Any], names: Sequence[str], sites: Sequence[int],
            task: RunTask) -> RunOutcome:
    """Run ``task`` here: write its plans, run ``call`` on copies of ``args`` with the task's call
    limits, collect the outputs. The sites' counters and limits are left as they were; their
    plans are the task's (the caller restores them where that matters). A run stopped by its
    call limits is an outcome; any other exception of the program propagates."""
    ids = list(sites)
    counts = entry.site_call_counts(ids)
    for sid, plan in task.plans.items():
        set_plan(sid, plan)
    entry.set_site_call_counts(ids, 0)
    entry.set_call_limits(task.limits.calls)
    if task.profile:
        start_profile(ids)
    start, cpu = time.perf_counter(), time.process_time()
    stopped = ""
    result = copies = None
    try:
        copies = copy_args(args)
        result = call(*copies)
    except RuntimeError as err:
        if len(err.args) < 2 or err.args[1] != entry.ENTRY_CALL_LIMIT:
            raise
        stopped = "calls"
    finally:
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        logs = read_profile(ids) if task.profile else None
        entry.set_call_limits({sid: 0 for sid in task.limits.calls})
        made = dict(zip(ids, map(int, entry.site_call_counts(ids))))
        entry.set_site_call_counts(ids, counts)
    if stopped:
        return RunOutcome(None, task.written or (), seconds, made, logs,
                          f"made {sum(made.values())} site calls, reference made {task.limits.reference_calls}", cpu)
    written = task.written if task.written is not None else written_arguments(args, copies, names)
    return RunOutcome(collect(result, copies, names, written), written, seconds, made, logs, "", cpu)


def gnu_openmp_started() -> bool:
    """Has Numba's GNU OpenMP threading layer (``omp``) started in this process (a
    ``parallel=True`` function or one of MixPert's threaded executors ran)? Numba's guard then
    terminates every forked child at the fork (SIGTERM), as GNU OpenMP's thread pool does not
    survive a fork."""
    import numba

    try:
        layer = numba.threading_layer()
    except ValueError:  # not started in this process
        return False
    if layer != "omp":
        return False
    from numba.np.ufunc import omppool

    return getattr(omppool, "openmp_vendor", "") == "GNU"


class DetachedWorker:
    """A worker process forked twice, its parent exiting at once, with the interface of
    ``multiprocessing.Process`` the pool uses (``start``, ``pid``, ``is_alive``, ``exitcode``,
    ``join``).

    For a process whose GNU OpenMP has started: Numba's guard (in its OpenMP ``parallel_for``)
    terminates a parallel region run by a *child* of the process that started the pool (it
    compares ``getppid()`` with that pid), since GNU OpenMP's thread pool does not survive a fork.
    A grandchild passes the guard, and runs each parallel region on its own thread
    (``numba.set_num_threads(1)`` in ``_serve``): no pool thread is needed. Its exit status is
    not ours to read (init reaps it): ``exitcode`` is None."""

    def __init__(self, target: Callable[..., None], args: tuple) -> None:
        self.target, self.args = target, args
        self.pid: int | None = None
        self.exitcode: int | None = None

    def start(self) -> None:
        read, write = os.pipe()
        middle = os.fork()
        if middle == 0:  # the intermediate process: fork the worker, say its pid, exit
            code = 1
            try:
                os.close(read)
                worker = os.fork()
                if worker == 0:
                    os.close(write)
                    try:
                        self.target(*self.args)
                        code = 0
                    finally:
                        os._exit(code)
                os.write(write, worker.to_bytes(8, "little"))
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        os.waitpid(middle, 0)
        data = os.read(read, 8)
        os.close(read)
        if len(data) != 8:
            raise OSError("the intermediate process of a detached worker exited without forking it")
        self.pid = int.from_bytes(data, "little")

    def is_alive(self) -> bool:
        """Running (not exited, not a zombie waiting for a reaper that does not reap)."""
        if self.pid is None:
            return False
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                state = stat.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            return True
        return state not in (b"Z", b"X")

    def join(self, timeout: float | None = None) -> None:
        end = None if timeout is None else time.monotonic() + timeout
        while self.is_alive() and (end is None or time.monotonic() < end):
            time.sleep(0.01)


def fork_context() -> Any:
    """``multiprocessing``'s ``"fork"`` context (ValueError where the platform has none)."""
    return multiprocessing.get_context("fork")


class _CoreShare:
    """A worker's share of the cores for the next run (``set``): Numba's threads and BLAS's.
    ``threads`` None: as the worker inherited them (BLAS's original limits restored). A worker
    forked after GNU OpenMP started in the parent runs Numba's regions on one thread (the
    inherited OpenMP pool has no threads), whatever its share."""

    def __init__(self) -> None:
        # read at the worker's start: setting Numba's threads below starts its threading layer
        # here, after which the check would say so of every worker
        self.one_thread = gnu_openmp_started()
        self.threads: int | None = None
        self.limiter: Any = None  # threadpoolctl's BLAS limits in force, whose restore undoes them
        if self.one_thread:
            import numba

            numba.set_num_threads(1)

    def set(self, threads: int | None) -> None:
        if threads == self.threads:
            return
        import numba
        from threadpoolctl import threadpool_limits

        if not self.one_thread:
            numba.set_num_threads(min(threads or numba.config.NUMBA_NUM_THREADS, numba.config.NUMBA_NUM_THREADS))
        if self.limiter is not None:
            self.limiter.restore_original_limits()
            self.limiter = None
        if threads is not None:
            self.limiter = threadpool_limits(threads, user_api="blas")
        self.threads = threads


def _serve(conn: Any, call: Callable[..., Any], inputs: Sequence[Sequence[Any]], names: Sequence[str],
           sites: Sequence[int]) -> None:
    """The worker's loop (in the forked process): run each task received with its share of the
    cores (``(task, threads)``: None when it runs alone; the executors' results do not depend on
    it), send back its outcome or ("error", exception). Ctrl-C is the parent's to handle: the
    worker ignores SIGINT. Forked from a process whose GNU OpenMP had started (a
    ``DetachedWorker``), its parallel regions run on one thread."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    cores = _CoreShare()
    while True:
        try:
            task = conn.recv()
        except EOFError:
            break
        if task is None:
            break
        task, threads = task
        cores.set(threads)
        try:
            reply: Any = ("ok", execute(call, inputs[task.inputs], names, sites, task))
        except Exception as err:  # the program's own exception: the parent raises it
            reply = ("error", err)
        try:
            conn.send(reply)
        except Exception as err:  # an output or exception that does not pickle
            conn.send(("error", RuntimeError(f"mixjit: a tuning run's result could not be sent back from the "
                                             f"worker process ({type(err).__name__}: {err})")))
    conn.close()


class _Worker:
    """One worker process and the parent's end of its pipe; ``task`` (its index ``index`` in the
    batch) and ``started``: the run it is doing (``task`` None when idle)."""

    def __init__(self, proc: Any, conn: Any) -> None:
        self.proc, self.conn = proc, conn
        self.task: RunTask | None = None
        self.index = -1
        self.started = 0.0

    def stop(self) -> None:
        """Kill the process (if it still runs) and close the pipe."""
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.join()
        self.conn.close()

    def close(self) -> None:
        """Ask the process to end; killed if it does not within a second."""
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(1.0)
        self.stop()

    def died(self) -> str:
        code = self.proc.exitcode
        return f"its worker process died (exit code {'unknown' if code is None else code})"


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def check_workers(value: Any, where: str) -> int | None:
    """``value`` if it is None (one per core) or a positive int, else ValueError / TypeError naming ``where``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"mixjit: {where} must be a number of worker processes (or None: one per core), "
                        f"got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"mixjit: {where} must be at least 1 (1: every run on one worker, in turn), got {value}")
    return value


class EvaluationPool:
    """Runs a tuning's :class:`RunTask` s on forked worker processes (module docstring).

    ``call`` is the compiled function, ``inputs`` every input set (the sample first, then the
    held-out ones), ``names`` the argument names, ``sites`` the process ids of its sites;
    ``workers`` how many processes :meth:`run_many` may use at once (None: one per core;
    :meth:`run` uses one). A worker is forked when first needed (after the caller warmed the
    executors) and again after a kill. Use as a context manager, or call ``close()``."""

    def __init__(self, call: Callable[..., Any], inputs: Sequence[Sequence[Any]], names: Sequence[str],
                 sites: Sequence[int], workers: int | None = 1) -> None:
        self.call = call
        self.inputs = [tuple(v) for v in inputs]
        self.names = tuple(names)
        self.sites = tuple(sites)
        self.workers = check_workers(workers, "workers") or default_workers()
        self.in_process = False
        self.cpu_seconds = 0.0
        """CPU seconds of the runs made on worker processes (a run stopped by killing its worker:
        its wall time); runs made in this process are in this process's own CPU time."""
        self._workers: list[_Worker | None] = [None] * self.workers

    def __enter__(self) -> "EvaluationPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def run(self, task: RunTask) -> RunOutcome:
        """Run ``task`` on a worker (or here when there is none); a run past its time limit
        kills the worker and comes back stopped. KeyboardInterrupt kills the worker and
        propagates; the program's own exceptions propagate."""
        return self.run_many([task], parallel=1)[0]

    def run_many(self, tasks: Sequence[RunTask], parallel: int | None = None,
                 each: Callable[[int, RunOutcome], None] | None = None) -> list[RunOutcome]:
        """Run ``tasks`` on up to ``parallel`` (default: ``workers``) workers at once; their
        outcomes in the order of ``tasks``, each what :meth:`run` gives for it alone (a worker's
        state does not depend on the runs it did before). With several at once, each worker runs
        on its share of the cores (``_CoreShare``). ``each(index, outcome)`` is called as each run
        comes back (in the order they finish; not for a run whose program raised), once the idle
        workers have their next tasks, so that what it does overlaps the runs. The earliest
        task's program exception propagates, as in a serial loop; Ctrl-C kills every worker and
        propagates."""
        width = max(1, min(parallel or self.workers, self.workers, len(tasks)))
        outcomes: dict[int, RunOutcome] = {}
        errors: dict[int, BaseException] = {}
        told: set[int] = set()  # outcomes ``each`` was given
        pending = list(range(len(tasks)))
        retried: set[int] = set()  # tasks whose worker died once: run again on a fresh worker
        threads = None if width == 1 else max(1, default_workers() // width)

        def tell() -> None:
            for index in [i for i in outcomes if i not in told and i not in errors]:
                told.add(index)
                if each is not None:
                    each(index, outcomes[index])

        try:
            while pending or self._busy(width):
                if self.in_process:  # no worker can be forked: the rest here, in order
                    pending = sorted(pending + [w.index for w in self._busy(width)])
                    self._stop_all()
                    for index in pending:
                        outcomes[index] = self._run_here(tasks[index])
                        tell()
                    break
                for slot in range(width):
                    worker = self._workers[slot]
                    if pending and (worker is None or worker.task is None):
                        worker = worker or self._start(slot)
                        if worker is None:
                            break
                        self._send(worker, pending.pop(0), tasks, threads)
                tell()
                again = self._collect(width, outcomes, errors, retried)
                pending[:0] = again  # first, in their order
            tell()
        except BaseException:  # Ctrl-C: the workers are mid-run
            self._stop_all()
            raise
        if errors:
            raise errors[min(errors)]
        return [outcomes[i] for i in range(len(tasks))]

    def _busy(self, width: int) -> list[_Worker]:
        return [w for w in self._workers[:width] if w is not None and w.task is not None]

    @staticmethod
    def _send(worker: _Worker, index: int, tasks: Sequence[RunTask], threads: int | None) -> None:
        worker.task, worker.index, worker.started = tasks[index], index, time.monotonic()
        try:
            worker.conn.send((worker.task, threads))
        except (OSError, BrokenPipeError):
            pass  # found dead by _collect

    def _collect(self, width: int, outcomes: dict[int, RunOutcome], errors: dict[int, BaseException],
                 retried: set[int]) -> list[int]:
        """Wait up to a poll for the busy workers; record the runs that finished, died or ran past
        their limit. A run whose worker died the first time is not recorded: its index is returned
        (and added to ``retried``) to run again on a fresh worker; a second death counts the run as
        stopped and makes the pool serial (one worker) with a warning."""
        from multiprocessing.connection import wait

        busy = self._busy(width)
        if not busy:
            return []
        again: list[int] = []
        ready = wait([w.conn for w in busy], timeout=_POLL_S)
        for worker in busy:
            task, index = worker.task, worker.index
            assert task is not None
            if worker.conn in ready:
                try:
                    kind, value = worker.conn.recv()
                except (EOFError, OSError):
                    if self._retry(worker, index, retried):
                        again.append(index)
                        continue
                    outcome = self._lost(worker, task, worker.died())
                else:
                    worker.task = None
                    if kind == "error":
                        errors[index] = value
                        value = RunOutcome(None, (), math.inf, {}, None, "the program raised")
                    self.cpu_seconds += value.cpu_seconds
                    outcomes[index] = value
                    continue
            else:
                limit = task.limits.seconds
                if not worker.proc.is_alive() and not worker.conn.poll():
                    if self._retry(worker, index, retried):
                        again.append(index)
                        continue
                    outcome = self._lost(worker, task, worker.died())
                elif limit is not None and time.monotonic() - worker.started > limit:
                    outcome = self._lost(worker, task, f"timed out after {limit:.3g} s")
                else:
                    continue
            if task.limits.seconds is None and not task.limits.calls:
                # a run without limits (profile, reference) cannot be stopped: its worker died
                self._fall_back(f"the worker died in a run without limits: {outcome.stopped}")
                outcome = self._run_here(task)
            outcomes[index] = outcome
        return sorted(again)

    def _retry(self, worker: _Worker, index: int, retried: set[int]) -> bool:
        """The worker of task ``index`` died: retry it once on a fresh worker (True), or, the second
        time, go serial (one worker at a time) with a warning and let the caller count the run lost."""
        if index not in retried:
            retried.add(index)
            self._lost(worker, worker.task, worker.died())  # kills what is left, frees the slot
            return True
        if self.workers > 1:
            from mixjit.runtime.jit.warning import MixjitWarning

            self.workers = 1
            warnings.warn(f"mixjit: a tuning worker died twice in one run ({worker.died()}); the run counts as "
                          "stopped and the rest of the tuning runs one worker at a time", MixjitWarning, stacklevel=6)
        return False

    def _run_here(self, task: RunTask) -> RunOutcome:
        before = {sid: get_plan(sid) for sid in task.plans}
        try:
            return execute(self.call, self.inputs[task.inputs], self.names, self.sites, task)
        finally:
            for sid, plan in before.items():
                if plan is not None:
                    set_plan(sid, plan)

    def _start(self, slot: int) -> _Worker | None:
        try:
            context = fork_context()
            parent, child = context.Pipe(duplex=True)
            args = (child, self.call, self.inputs, self.names, self.sites)
            # Numba's guard stops parallel regions in a child: a grandchild runs them; and a daemonic
            # process (a Dask worker: mixjit.tuning.executor_pool) may not have multiprocessing children
            if gnu_openmp_started() or multiprocessing.current_process().daemon:
                proc: Any = DetachedWorker(_serve, args)
            else:
                proc = context.Process(target=_serve, daemon=True, name="mixjit-tuning-worker", args=args)
            proc.start()
        except (ValueError, OSError) as err:
            self._fall_back(f"{type(err).__name__}: {err}")
            return None
        child.close()
        self._workers[slot] = _Worker(proc, parent)
        return self._workers[slot]

    def _fall_back(self, why: str) -> None:
        """Run every later task in this process, with a warning saying ``why``."""
        from mixjit.runtime.jit.warning import MixjitWarning

        self.in_process = True
        warnings.warn(f"mixjit: cannot fork a tuning worker process ({why}); tuning runs in this process, where "
                      "a run that loops without GEMM calls cannot be stopped", MixjitWarning, stacklevel=6)

    def _lost(self, worker: _Worker, task: RunTask, why: str) -> RunOutcome:
        """The run did not finish: kill its worker (a fresh one is forked for the next run)."""
        self.cpu_seconds += time.monotonic() - worker.started
        worker.stop()
        self._workers[self._workers.index(worker)] = None
        return RunOutcome(None, task.written or (), math.inf, {}, None, why)

    def _stop_all(self) -> None:
        for slot, worker in enumerate(self._workers):
            if worker is not None:
                worker.stop()
                self._workers[slot] = None

    def close(self) -> None:
        """End every worker (asked to stop, killed if it does not within a second)."""
        for slot, worker in enumerate(self._workers):
            if worker is not None:
                worker.close()
                self._workers[slot] = None
