"""Tuning runs are bounded and stoppable (mixjit.tuning.workers): a convergence loop that a cheap
candidate breaks still tunes on its first call, Ctrl-C returns a plan promptly, concurrent first
calls tune once and all run the tuned plan, and no worker process outlives a tuning."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
import time

import diverging as D
import numpy as np
import pytest

from mixjit import entry, mixjit
from mixjit.decorator import MixjitWarning

HERE = pathlib.Path(__file__).parent


def _children() -> set[int]:
    """The process ids of this process's children (every thread's)."""
    out: set[int] = set()
    for task in pathlib.Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text().split()
        out.update(int(p) for p in text)
    return out


def _python(code: str, timeout: float, threading_layer: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    if threading_layer is not None:
        env["NUMBA_THREADING_LAYER"] = threading_layer
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_a_diverging_convergence_loop_tunes_on_its_first_call():
    """Newton-Schulz to a tolerance: mixpert's float32-class configs stall it above the tolerance.
    The first call returns (in a subprocess: today's code never did), with the runs it stopped,
    and why, in the report."""
    proc = _python("""
        import numpy as np
        import diverging as D
        from mixjit import mixjit
        f = mixjit(D.ns_inverse, eval_timeout=300)  # stopped by call counts, not by a loaded machine's clock
        a, x0, eps = D.ns_inputs()
        x = f(a, x0, eps)
        assert np.abs(x @ a - np.eye(len(a))).max() < 1e-10
        print(f.report())
    """, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stopped = [line for line in proc.stdout.splitlines() if line.startswith("stopped: ")]
    assert stopped and all("site calls, reference made" in line for line in stopped), proc.stdout
    assert any("mixpert[level=I]" in line for line in stopped), proc.stdout


def test_the_float64_program_runs_on_a_worker_within_the_limit():
    """f.tune's float64 run of the whole program (for the error against float64) is a run like any
    other: a program that never ends in float64 is stopped at eval_timeout, named in the notes,
    and the tuning goes on (it hung before)."""
    proc = _python("""
        import diverging as D
        from mixjit import mixjit

        f = mixjit(D.stall_in_float64, schemes=("mixpert",), tune="explicit")
        args = D.stall_in_float64_inputs()
        assert f(*args)[1] == 0  # the float32 program ends at once
        result = f.tune(*args, eval_timeout=1.0)
        assert "the float64 program was stopped (timed out after 1 s); no error against it" in result.notes, \
            result.notes
        assert result.reference_vs_fp64 is None and result.plan.within_budget
        print("ok")
    """, timeout=240)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:] + proc.stdout[-2000:]


def test_a_run_past_its_time_limit_is_stopped_and_no_worker_outlives_tune():
    """A loop with no GEMM call in it (the call limits cannot see it) is stopped by eval_timeout;
    the killed worker is replaced, the search goes on, and no child process is left. In a fresh
    process: one whose Numba threading layer is GNU OpenMP (another test's parallel code) cannot
    fork a worker."""
    proc = _python("""
        import os, pathlib, time
        import numpy as np
        import diverging as D
        from mixjit import mixjit

        def children():
            return {p for t in pathlib.Path(f"/proc/{os.getpid()}/task").iterdir()
                    for p in (t / "children").read_text().split()}

        f = mixjit(D.stall, schemes=D.STALL_SCHEMES, tune="explicit")
        args = D.stall_inputs()
        f(*args)
        before = children()
        start = time.monotonic()
        result = f.tune(*args, eval_timeout=0.3, fp64=False)
        assert time.monotonic() - start < 60
        assert result.stopped_runs and all(r.endswith("timed out after 0.3 s") for r in result.stopped_runs), \
            result.stopped_runs
        stopped = {label for j in result.judged if j.stopped for label in j.labels.values()}
        assert "mixpert[level=I]" in stopped, stopped
        assert all(j.error == np.inf for j in result.judged if j.stopped)
        assert result.plan.within_budget and result.plan.sites[0].scheme != "mixpert"
        assert "timed out after 0.3 s" in f.report()
        assert children() <= before, (children(), before)
        s, steps = f(*args)
        assert steps == 0
        print("ok")
    """, timeout=240)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_after_gnu_openmp_started_tuning_still_runs_on_a_worker():
    """After a parallel region ran in this process (a parallel=True function, MixPert's threaded
    executors), the tuner still forks its worker (twice: DetachedWorker), so a run past
    eval_timeout is still stopped."""
    proc = _python("""
        import warnings
        import numpy as np
        from numba import njit, prange
        import diverging as D
        from mixjit import mixjit
        from mixjit.tuning.workers import gnu_openmp_started

        @njit(parallel=True)
        def scale(x):
            for i in prange(x.shape[0]):
                x[i] *= 2.0
        scale(np.ones(1000))
        f = mixjit(D.stall, schemes=D.STALL_SCHEMES, tune="explicit")
        args = D.stall_inputs()
        f(*args)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = f.tune(*args, eval_timeout=0.3, fp64=False)
        assert result.stopped_runs and all(r.endswith("timed out after 0.3 s") for r in result.stopped_runs)
        assert result.plan.within_budget
        print("ok", gnu_openmp_started())
    """, timeout=240, threading_layer="omp")
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
    assert "Terminating" not in proc.stderr


def test_a_parallel_function_tunes_on_a_worker_after_gnu_openmp_started():
    """A parallel=True function starts GNU OpenMP when it compiles; Numba's guard then stops a
    parallel region in a child of this process (the worker died and tuning fell back to running
    here, unbounded, with a warning). The worker is forked twice and runs the region: no warning,
    the stalled candidates are stopped by time, the parallel part's result is right."""
    proc = _python("""
        import warnings
        import numpy as np
        import diverging as D
        from mixjit import mixjit
        from mixjit.tuning.workers import gnu_openmp_started

        f = mixjit(D.stall_parallel, schemes=D.STALL_SCHEMES, tune="explicit", parallel=True)
        args = D.stall_inputs()
        s, steps, rows = f(*args)
        assert gnu_openmp_started()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            result = f.tune(*args, eval_timeout=0.5, fp64=False)
        assert result.stopped_runs and all(r.endswith("timed out after 0.5 s") for r in result.stopped_runs)
        assert result.plan.within_budget
        assert np.allclose(f(*args)[2], args[0].sum(axis=1), rtol=1e-13, atol=0)
        print("ok")
    """, timeout=240, threading_layer="omp")
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
    assert "Terminating" not in proc.stderr


def test_without_fork_runs_happen_here_bounded_by_call_limits(monkeypatch):
    """No fork: one warning, and the call limits still stop the stalled Newton-Schulz runs."""
    from mixjit.tuning import workers

    def no_fork():
        raise ValueError("cannot find context for 'fork'")

    monkeypatch.setattr(workers, "fork_context", no_fork)
    f = mixjit(D.ns_inverse, tune="explicit")
    a, x0, eps = D.ns_inputs()
    f(a, x0, eps)
    counts = f.call_counts()
    with pytest.warns(MixjitWarning, match="cannot fork a tuning worker"):
        result = f.tune(a, x0, eps, fp64=False)
    assert result.stopped_runs and all("site calls, reference made" in r for r in result.stopped_runs)
    assert f.call_counts() == counts  # the tuner's runs leave the counters as they were
    x = f(a, x0, eps)
    assert np.abs(x @ a - np.eye(len(a))).max() < 1e-10


def test_ctrl_c_during_f_tune_returns_promptly_with_a_plan():
    """SIGINT while a stalled candidate runs (its limit is a minute): f.tune returns within
    seconds with the best plan so far, and nothing is printed as 'Exception ignored'."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(HERE / "diverging.py")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "tuning"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _process_children(proc.pid):
            time.sleep(0.1)
        time.sleep(1.5)  # well into a stalled candidate's run
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err[-3000:]
    assert "RESULT interrupted" in out, (out, err[-3000:])
    assert "Exception ignored" not in err and "Traceback" not in err, err[-3000:]
    assert took < 5


def _process_children(pid: int) -> list[int]:
    out = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        try:
            out += (task / "children").read_text().split()
        except OSError:
            pass
    return [int(p) for p in out]


def _layers(x, w1, w2):
    h = np.tanh(x @ w1)
    return np.tanh(h @ w2)


def test_concurrent_first_calls_tune_once_and_all_run_the_tuned_plan():
    """8 threads call a fresh function at once, 20 times each: one tunes, the others wait, and
    every result equals, bit for bit, the tuned plan's result on the same input."""
    f = mixjit(_layers, error_budget=1e-4)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((48, 48)).astype(np.float32)
    w1 = (rng.standard_normal((48, 48)) / 7).astype(np.float32)
    w2 = (rng.standard_normal((48, 48)) / 7).astype(np.float32)
    barrier = threading.Barrier(8)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work():
        try:
            barrier.wait()
            for _ in range(20):
                results.append(f(x, w1, w2))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    from mixjit.tuning.api import state_of

    assert len(state_of(f).results) == 1  # tuned once
    final = f(x, w1, w2)
    assert len(results) == 160
    bad = sum(not np.array_equal(r, final) for r in results)
    assert bad == 0, f"{bad} of 160 results differ from the tuned plan's"


@pytest.mark.parametrize("value, error, message", [
    (0, ValueError, "positive, finite"), (float("inf"), ValueError, "positive, finite"),
    ("3", TypeError, "number of seconds"), (True, TypeError, "number of seconds"),
])
def test_eval_timeout_is_checked(value, error, message):
    with pytest.raises(error, match=message):
        mixjit(D.stall, eval_timeout=value)
    f = mixjit(D.stall, tune="explicit")
    with pytest.raises(error, match=message):
        f.tune(*D.stall_inputs(), eval_timeout=value)


def test_f_tune_writes_no_trial_plan_into_this_process():
    """While f.tune judges plans, this process's plan table keeps the sites' plans of before the
    tuning (the metric runs here, between runs, and looks), and their call counters stay put."""
    f = mixjit(_layers, error_budget=1e-4, tune="explicit")
    rng = np.random.default_rng(4)
    args = [rng.standard_normal((32, 32)).astype(np.float32) for _ in range(3)]
    f(*args)
    ids = [s.id for s in f.sites]
    before = [entry.plan_row(i).tolist() for i in ids]
    counts = f.call_counts()
    seen = []

    def metric(out, ref):
        seen.append([entry.plan_row(i).tolist() for i in ids])
        return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))

    result = f.tune(*args, metric=metric, fp64=False, reuse=False)  # every plan runs (and calls the metric)
    assert len(seen) >= result.runs - 1 > 3
    assert all(rows == before for rows in seen)
    assert f.call_counts() == counts


def test_a_worker_that_dies_is_replaced_and_its_run_retried(tmp_path):
    """A worker killed in the middle of a candidate's run (here: the program kills its own
    process once, on its fourth run) is replaced and the run retried: the tuning counts no run
    as stopped by the death."""
    script = tmp_path / "prog.py"  # a file: Numba's objmode needs the function's source
    script.write_text(textwrap.dedent(f"""
        import os, signal
        import numpy as np
        from numba import objmode
        from mixjit import mixjit

        COUNT, MARKER = {str(tmp_path / 'runs')!r}, {str(tmp_path / 'died')!r}

        def count_run():
            with open(COUNT, "a") as out:
                out.write("x")
            n = os.path.getsize(COUNT)
            if n == 4 and not os.path.exists(MARKER):  # the fourth run: a candidate's, on a worker
                open(MARKER, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            return n

        @mixjit(error_budget=1e-3, target="a100", tune="explicit", workers=2)
        def f(a, b):
            with objmode(n="int64"):
                n = count_run()
            return a @ b if n > 0 else b

        rng = np.random.default_rng(0)
        a = rng.standard_normal((64, 64)).astype(np.float32)
        result = f.tune(a, a, fp64=False)
        print("died", os.path.exists(MARKER), "stopped", [s.reason for s in result.stopped_runs])
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "died True stopped []" in proc.stdout, proc.stdout + proc.stderr[-2000:]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_warming_a_linalg_candidate_reaches_its_schemes_general_path(monkeypatch, dtype):
    """What a worker forked after ``warm_executors`` runs must be loaded already: a linalg
    candidate's products at a real size take the GEMM scheme's general path, which the small
    warm-up matrix alone never reaches (each fresh worker then loaded it at its first run)."""
    from mixjit.runtime.mixpert.paths.small import SMALL_MAX_WORK_FP32
    from mixjit.runtime.schemes.mixpert import MixPert
    from mixjit.tuning.workers import warm_linalg

    work: list[int] = []
    run = MixPert.run_with_stats

    def recorded(self, a, b, config):
        work.append(a.shape[0] * a.shape[1] * b.shape[1])
        return run(self, a, b, config)

    monkeypatch.setattr(MixPert, "run_with_stats", recorded)
    warm_linalg("block=64,gemm=mixpert[level=IV],refine=on", dtype)
    assert max(work) > SMALL_MAX_WORK_FP32
