"""Tuning wall time against the number of workers, measured side by side, and a simulation of
the same schedule on more workers (issue 25 item 7).

    python tools/bench_tuning_workers.py [--width 768] [--chol-n 768] [--repeats 2] [--quick] [--write]

Two programs under ``@mixjit`` (float32, target A100, ``fp64=False``, ``reuse=False`` so every
error is measured): a 4-site MLP (``tanh(x @ w1)`` and three more layers, ``--width`` square
operands) and the tiled Cholesky of examples/cholesky_tiled.py (4 dependent sites, order
``--chol-n``). Each is tuned with ``workers=1``, ``workers=2`` and a Dask ``LocalCluster`` of 2
worker processes (one thread each), in turn, ``--repeats`` times in one process (the machines
are shared: only ratios measured side by side are compared); the wall time (``perf_counter``) of
each tuning, its plan and its program runs are recorded. The plans must be identical.

**Simulation** (labelled *simulated*, not measured): each ``workers=1`` tuning records its
schedule (``TuneResult.schedule``: every group of program runs the tuning could make at once,
with each run's measured seconds: the profile runs in one large group, the greedy steps one at a
time). With ``W`` workers a group of runs takes the
sum over its chunks of ``W`` runs of the longest run of the chunk (the pool waits for a chunk);
what is not a program run (the search, forking, collecting outputs, computing errors) is the
measured wall time less the runs' seconds, and is kept. Speculative greedy (plans a search may
judge next, run on idle workers) is not modeled: the simulated times are those of a search
that judges its steps one at a time, an upper bound on what speculation could reach.
The **cap** is the wall time with unlimited workers: every group at its longest run.

**A run on all cores or on one**: the median seconds of the site-alone runs (each tuning's largest
group) under ``workers=1`` (a run has every core: BLAS's threads and Numba's) and under
``workers=2`` (each of the two runs at once has one core of two); ``2 runs at once / in turn`` is
twice the first over the second, what two workers can gain on those runs at most when a run
alone already uses both cores (measured, not simulated).

Results go to ``docs/results/tuning_workers.json`` and the table of ``docs/results/tuner.md``
(between its generated-section markers) with ``--write``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, markdown_table, progress, provenance, replace_generated_section, write_json  # noqa: E402

DEFAULT_JSON = ROOT / "docs" / "results" / "tuning_workers.json"
DEFAULT_PAGE = ROOT / "docs" / "results" / "tuner.md"
SIMULATED_WORKERS = (1, 2, 8, 32, 128)
TARGET = "a100"
BUDGET = 1e-4


def mlp4(x, w1, w2, w3, w4):
    """Four dense layers with tanh between them: 4 GEMM sites in a chain."""
    h = np.tanh(x @ w1)
    h = np.tanh(h @ w2)
    h = np.tanh(h @ w3)
    return h @ w4


def mlp4_inputs(width: int, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    return tuple((rng.standard_normal((width, width)) / math.sqrt(width)).astype(np.float32) for _ in range(5))


def cholesky_inputs(n: int, seed: int) -> tuple:
    sys.path.insert(0, str(ROOT / "examples"))
    from _common import spd_matrix

    return spd_matrix(n, seed).astype(np.float32), 64


def simulate(schedule: Sequence[Sequence[float]], overhead: float, workers: int | None) -> float:
    """Modeled wall time of ``schedule`` (groups of run seconds) on ``workers`` (None: unlimited)
    plus ``overhead`` (see the module docstring)."""
    total = overhead
    for group in schedule:
        if workers is None:
            total += max(group, default=0.0)
            continue
        for start in range(0, len(group), workers):
            total += max(group[start:start + workers])
    return total


def _tuners(program: Callable, inputs: Callable[[int], tuple]) -> dict[str, Callable[[], Any]]:
    from mixjit import mixjit
    from mixjit.tuning.driver import tune as tune_signature

    def run(**how: Any) -> Callable[[], Any]:
        def tune() -> Any:
            f = mixjit(tune="explicit", target=TARGET, error_budget=BUDGET)(program)
            f(*inputs(0))  # compile outside the timing: tuning time is what is compared
            start = time.perf_counter()
            result = tune_signature(f, inputs(0), fp64=False, reuse=False, progress=False, **how)
            return result, time.perf_counter() - start
        return tune

    def cluster() -> Any:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
                Client(lc) as client:
            return run(executor=client)()

    return {"workers=1": run(workers=1), "workers=2": run(workers=2), "LocalCluster(2)": cluster}


def measure(name: str, program: Callable, inputs: Callable[[int], tuple], repeats: int) -> dict[str, Any]:
    """Tune ``program`` every way ``repeats`` times in turn; the wall times, runs, plans and the
    serial tuning's schedule."""
    tuners = _tuners(program, inputs)
    walls: dict[str, list[float]] = {k: [] for k in tuners}
    plans, runs, schedules = {}, {}, []
    largest: dict[str, list[float]] = {"workers=1": [], "workers=2": []}  # the site-alone runs' seconds
    for r in range(repeats):
        order = list(tuners) if r % 2 == 0 else list(reversed(tuners))
        for how in order:
            progress(f"{name}: {how} (repeat {r + 1})")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result, wall = tuners[how]()
            walls[how].append(wall)
            plans[how] = [(s.scheme, s.config) for s in result.plan.sites]
            runs[how] = result.runs
            if how == "workers=1":
                schedules.append((wall, [list(g) for g in result.schedule]))
            if how in ("workers=1", "workers=2"):
                largest[how].extend(max(result.schedule, key=len))
    if len({tuple(p) for p in plans.values()}) != 1:
        raise SystemExit(f"{name}: the plans differ between the ways of tuning: {plans}")
    wall1, schedule = min(schedules, key=lambda s: s[0])
    run_seconds = sum(sum(g) for g in schedule)
    overhead = max(0.0, wall1 - run_seconds)
    simulated = {str(w): simulate(schedule, overhead, w) for w in SIMULATED_WORKERS}
    alone, shared = (float(np.median(largest[k])) for k in ("workers=1", "workers=2"))
    return {"program": name, "walls": walls, "runs": runs, "plan": plans["workers=1"], "overhead_s": overhead,
            "run_all_cores_s": alone, "run_one_core_s": shared,
            "run_seconds": run_seconds, "groups": len(schedule), "largest_group": max(map(len, schedule)),
            "simulated_s": simulated, "cap_s": simulate(schedule, overhead, None)}


def table(results: Sequence[dict[str, Any]]) -> list[str]:
    header = ["program", "workers=1 (s)", "workers=2 (s)", "ratio", "LocalCluster(2) (s)", "ratio",
              "a run: all cores / 1 core of 2 (ms)", "2 runs at once / in turn",
              *[f"{w} workers, simulated" for w in SIMULATED_WORKERS[2:]], "cap (unlimited, simulated)"]
    rows = []
    for r in results:
        w1, w2, lc = (min(r["walls"][k]) for k in ("workers=1", "workers=2", "LocalCluster(2)"))
        sim = r["simulated_s"]
        alone, shared = r["run_all_cores_s"], r["run_one_core_s"]
        rows.append([r["program"], f"{w1:.1f}", f"{w2:.1f}", f"{w1 / w2:.2f}x", f"{lc:.1f}", f"{w1 / lc:.2f}x",
                     f"{alone * 1e3:.0f} / {shared * 1e3:.0f}", f"{2 * alone / shared:.2f}x",
                     *[f"{sim[str(w)]:.1f} s ({sim['1'] / sim[str(w)]:.2f}x)" for w in SIMULATED_WORKERS[2:]],
                     f"{r['cap_s']:.1f} s ({sim['1'] / r['cap_s']:.2f}x)"])
    return markdown_table(header, rows)


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=768, help="MLP operand size")
    parser.add_argument("--chol-n", type=int, default=768, help="order of the tiled Cholesky's matrix")
    parser.add_argument("--repeats", type=int, default=2, help="tunings of each kind, in turn")
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat (a smoke test)")
    parser.add_argument("--write", action="store_true", help="write the JSON and the results page")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--page", type=Path, default=DEFAULT_PAGE)
    args = parser.parse_args(argv)
    if args.quick:
        args.width, args.chol_n, args.repeats = 96, 128, 1
    sys.path.insert(0, str(ROOT / "examples"))
    from cholesky_tiled import cholesky_tiled_py

    results = [measure(f"4-layer MLP {args.width}x{args.width}", mlp4, lambda s: mlp4_inputs(args.width, s),
                       args.repeats),
               measure(f"tiled Cholesky n={args.chol_n}", cholesky_tiled_py, lambda s: cholesky_inputs(args.chol_n, s),
                       args.repeats)]
    lines = table(results)
    print("\n".join(lines))
    for r in results:
        print(f"{r['program']}: {r['groups']} groups of runs (largest {r['largest_group']}), "
              f"{r['run_seconds']:.1f} s in runs, {r['overhead_s']:.1f} s besides")
    if args.write:
        write_json(args.json, {"provenance": provenance(sys.argv, None), "results": results})
        body = "\n".join([*provenance(sys.argv, None), "", *lines, "",
                          "Simulated columns: the serial tuning's schedule of runs replayed on more workers "
                          "(tools/bench_tuning_workers.py's docstring); not measured."])
        replace_generated_section(args.page, "tuning-workers", body)
    return results


if __name__ == "__main__":
    main()
