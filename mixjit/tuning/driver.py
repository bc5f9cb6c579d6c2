"""Tuning one compiled signature of a @mixjit function on sample inputs.

``tune(f, args)``:

1. **Profile**: one run under the initial plans (most precise configs) with the entry's
   profile flag set: shapes and calls per site, MixPert statistics
   (``mixjit.tuning.profiling``).
2. **Reference**: one run under the reference plan (``mixjit.plan.reference_plan``); its
   outputs are what every plan is measured against. Optionally the whole program in
   float64 (plain Numba, float32 inputs upcast), for information, compared by the same metric.
3. **The tune pass**: the signature's module runs ``detect-gemm,detect-linalg,build-dag,tune{...}`` through
   the pass manager (``mixjit.tuning.online``), as ``mixopt`` runs it, with the online backend
   registered: the pass has each site's candidates (with *modeled* times on the target)
   measured alone (that site lowered, every other site at the reference), prunes them to the
   error/time Pareto front and runs the greedy search (MixPert §3.4) or the exhaustive one,
   judging each plan through the online evaluator (``mixjit.tuning.evaluator``). No
   recompilation: each plan is written to the plan table of a forked worker process
   (``mixjit.tuning.workers``) and the compiled function runs there again on copies of the
   inputs; with ``executor=`` (a process pool, a ``distributed.Client``) on that executor's
   workers instead (``mixjit.tuning.executor_pool``), with the same plan. Loop depths come from build-dag.
4. **Validation** on held-out inputs: a plan that breaks the budget there is reported and
   the search repeats (``tune{...}`` again, with a safety margin; at most ``MAX_TIGHTENINGS``
   times, then the most precise plan); never silently accepted.

Every run after the reference runs within limits derived from it (``eval_timeout`` seconds, or
``EVAL_TIME_FACTOR`` times the reference's wall time plus ``EVAL_TIME_FLOOR``; ``CALL_FACTOR``
times its calls per site plus ``CALL_FLOOR``): a run past them is stopped, counts as an infinite
error, is named in the report with its reason, and the search goes on. Ctrl-C returns the best
plan found so far (the most precise plan before the reference run), and says so. Tuning leaves
no trace in the sites' call counters, and no trial plan in this process's plan table: calls of
the function from other threads run the plan they ran before, then the tuned one. Tunings of
one function take turns (``f.tuning_lock``: mixjit.tuning.protocol).
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
import pickle
import sys
import time
import warnings
import weakref
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np
from numba.core import errors

from mixjit.arguments import resolve_arguments
from mixjit.passes.tune import Tune
from mixjit.passes.tuning.profile import SiteProfile
from mixjit.passes.tuning.space import Candidate, SearchResult, SiteSpace
from mixjit.plan import SitePlan, get_plan, set_plan
from mixjit.runtime.schemes import catalog
from mixjit.tuning.eval_cache import EvaluationCache
from mixjit.tuning.evaluator import Judged, OnlineEvaluator, ProgramRunner, fp64_error, site_plans
from mixjit.tuning.executor_pool import ExecutorPool, Program, check_executor
from mixjit.tuning.native_budget import NATIVE, budget_text, is_native, native_budget, native_plan
from mixjit.tuning.online import OnlineBackend, TuningPipeline
from mixjit.tuning.outputs import Metric, Output, check_finite, program_error
from mixjit.tuning.persistence import PlanSite, TunedPlan, source_hash
from mixjit.tuning.profiling import TunedSite, signature_sites
from mixjit.tuning.progress import SearchBar
from mixjit.tuning.protocol import TunableFunction
from mixjit.tuning.workers import (
    EvaluationPool,
    RunLimits,
    RunTask,
    check_eval_timeout,
    check_workers,
    warm_executors,
    warm_key,
)

__all__ = ["TuneResult", "Validation", "tune", "check_budget", "check_target", "check_metric", "current_plan_error", "plan_error",
           "signature_sites", "signature_of", "MAX_TIGHTENINGS"]

MAX_TIGHTENINGS = 3
"""Searches repeated with a larger margin after a validation failure, before falling back to
the most precise plan."""

_PERF_WARNING = r".* is faster on contiguous arrays"


@dataclass(frozen=True)
class Validation:
    """The chosen plan's error on one held-out input set (``index`` into ``validate``)."""

    index: int
    error: float
    within_budget: bool
    stopped: str = ""
    """Why the run was stopped at its limits (its error is then infinite); empty when it ran."""


@dataclass
class TuneResult:
    """Everything one tuning found: what ``f.report()`` prints and ``f.plan`` holds."""

    qualname: str
    argtypes: str
    target: str
    budget: float
    sites: tuple[TunedSite, ...]
    profiles: dict[int, SiteProfile]
    spaces: dict[int, SiteSpace]
    chosen: dict[int, Candidate]
    plan: TunedPlan
    search: SearchResult | None
    judged: list[Judged]
    validation: list[Validation] = field(default_factory=list)
    margin: float = 0.0
    stopped: str = "complete"
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    """Wall seconds of the whole tuning (profile, reference, search, validation)."""
    runs: int = 0
    reference_vs_fp64: float | None = None
    pipeline: TuningPipeline | None = None
    """The pass-manager runs of the search (``detect-gemm,detect-linalg,build-dag,tune{...}``, then ``tune{...}``
    for each tightened search): their remarks, warnings, per-pass timing and the tuned module."""
    native_error: float | None = None
    """The program's error with every site native, against the reference run (``native_budget``)."""
    schedule: list[list[float]] = field(default_factory=list)
    """The tuning's program runs in order, as groups it could make at once (the profile runs, an
    exhaustive search's plans; a greedy step alone), each run's wall seconds in the worker: what
    tools/bench_tuning_workers.py replays on more workers."""
    cpu_seconds: float = 0.0
    """CPU seconds of the tuning: this process's and every program run's, on whichever worker
    process or executor it ran (``EvaluationPool.cpu_seconds``)."""

    @property
    def error(self) -> float | None:
        return self.plan.error

    @property
    def stopped_runs(self) -> list[str]:
        """Every run stopped at its limits: what it ran and why (``timed out after 3 s``,
        ``made 2100 site calls, reference made 40``), in order."""
        index = {s.id: s.index for s in self.sites}
        out = [f"{_plan_text({index[s]: label for s, label in j.labels.items()})}: {j.stopped}"
               for j in self.judged if j.stopped]
        out += [f"held-out input {v.index}: {v.stopped}" for v in self.validation if v.stopped]
        return out

    def summary(self) -> str:
        """One line: what was tuned, the plan's error and modeled speedup, the cost of tuning."""
        p = self.plan
        speed = f"{p.modeled_speedup:.2f}x" if p.modeled_speedup is not None else "n/a"
        err = f"{p.error:.2e}" if p.error is not None and math.isfinite(p.error) else "n/a"
        budget = "within" if p.within_budget else "EXCEEDS"
        extra = ""
        if self.validation:
            worst = max(v.error for v in self.validation)
            extra = f", held-out {worst:.2e}"
        if self.stopped == "interrupted":
            extra += ", interrupted: best plan so far"
        if self.stopped_runs:
            extra += f", {len(self.stopped_runs)} runs stopped at their limits"
        return (f"mixjit: tuned {self.qualname}: {len(self.chosen)} sites, error {err} ({budget} budget "
                f"{budget_text(p.error_budget, self.budget)}){extra}, modeled speedup {speed} vs native on {self.target}, "
                f"{self.runs} runs in {self.seconds:.1f} s")


def check_budget(budget: Any, where: str) -> float | str:
    """``budget`` as a float if it is a positive number (the relative error a plan may have),
    ``"native"`` as it is (``mixjit.tuning.native_budget``), else ValueError naming ``where`` it
    was given and an example of a good value."""
    if is_native(budget):  # "no less accurate than native": resolved when native's error is measured
        return NATIVE
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Real) or not budget > 0:  # > 0: no NaN
        raise ValueError(f"mixjit: {where} must be a positive number (the relative error the tuner may spend, "
                         f"e.g. 1e-6) or 'native' (no less accurate than the native run), got {budget!r}")
    return float(budget)


def check_target(target: Any, where: str) -> str:
    """``target`` if it names a GPU of ``mixjit.runtime.model.hardware``, else ValueError (TypeError
    for a non-string) naming ``where`` it was given and the known names."""
    from mixjit.runtime.model.hardware import HARDWARE

    if not isinstance(target, str):
        raise TypeError(f"mixjit: {where} must be a GPU name (a str), got {type(target).__name__}; "
                        f"known: {', '.join(sorted(HARDWARE))}")
    if target not in HARDWARE:
        raise ValueError(f"mixjit: {where} got {target!r}, not a known GPU; choose one of "
                         f"{', '.join(sorted(HARDWARE))}")
    return target


def check_metric(metric: Any) -> None:
    """TypeError unless ``metric`` is None or a callable ``metric(out, ref) -> float``."""
    if metric is not None and not callable(metric):
        raise TypeError(f"mixjit: metric must be a callable metric(out, ref) -> float, got {type(metric).__name__}")


def check_validate(validate: Any) -> list[Sequence[Any]]:
    """``validate`` as a list of argument tuples (held-out inputs), else TypeError naming what it
    got and the expected form."""
    sets = (list, tuple)
    if not isinstance(validate, sets):
        got = type(validate).__name__
    else:
        bad = [type(v).__name__ for v in validate if not isinstance(v, sets)]
        if not bad:
            return list(validate)
        got = f"a {type(validate).__name__} holding a {bad[0]}"
    raise TypeError(f"mixjit: f.tune(validate=...) takes a list of argument tuples, one per held-out input set "
                    f"(e.g. validate=[(a2, b2), (a3, b3)]), got {got}")


def _plan_text(labels: dict[int, str]) -> str:
    return "plan " + (", ".join(f"site {s}: {label}" for s, label in sorted(labels.items())) or "(reference)")


def signature_of(f: TunableFunction, args: Sequence[Any], kws: dict[str, Any] | None = None) -> tuple:
    """The overload key of ``args`` / ``kws`` for ``f``, resolved as a call resolves them
    (``mixjit.arguments``: defaults, keywords), compiled if needed."""
    return _compiled(f, resolve_arguments(f, args, kws).key)


def _compiled(f: TunableFunction, key: tuple) -> tuple:
    """``key``, compiled for ``f`` if it is not yet."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", _PERF_WARNING, errors.NumbaPerformanceWarning)
        f.compile(key)
    return key


def argument_names(py_func: Callable, args: Sequence[Any]) -> tuple[str, ...]:
    params = list(inspect.signature(py_func).parameters)
    return tuple(params[i] if i < len(params) else f"#{i}" for i in range(len(args)))


def argtypes_text(key: tuple) -> str:
    return "(" + ", ".join(map(str, key)) + ")"


def tune(f: TunableFunction, args: Sequence[Any], *, validate: Sequence[Sequence[Any]] = (), search: str = "greedy",
         budget: float | str | None = None, target: str | None = None, metric: Metric | None = None,
         margin: float = 0.0, max_evals: int | None = None, fp64: bool = True,
         progress: bool = True, eval_timeout: float | None = None, workers: int | None = None,
         executor: Any = None, kws: dict[str, Any] | None = None, reuse: bool = True) -> TuneResult:
    """Tune the signature of ``args`` / ``kws`` (taken as a call takes them: ``mixjit.arguments``;
    each ``validate`` tuple with the same ``kws``; see the module docstring); writes the chosen plan to the
    plan table and returns what was found. ``budget`` / ``target`` / ``eval_timeout`` (None: the
    decorator's ``error_budget`` / ``target`` / ``eval_timeout``) are this tuning's. ValueError
    for bad inputs (NaN/Inf samples, a budget that is not positive, an unknown target,
    validation inputs of other types, an eval_timeout that is not a positive number of
    seconds, ``workers`` and ``executor`` both given); TypeError for a target that is not a str or
    an ``executor`` that is not one (``mixjit.tuning.executor_pool.check_executor``). ``reuse``:
    take the errors an earlier tuning of the same program on the same inputs measured, and keep
    the new ones (mixjit.tuning.eval_cache); False measures every plan again."""
    opts = f.mixjit_options
    eval_timeout = check_eval_timeout(eval_timeout, "f.tune(eval_timeout=...)")
    if eval_timeout is None:
        eval_timeout = opts.eval_timeout
    executor = check_executor(executor, "f.tune(executor=...)")
    if executor is not None and workers is not None:
        raise ValueError("mixjit: f.tune got both workers= and executor=; give one: with an executor, its workers "
                         "run the program (workers= is for worker processes forked on this machine)")
    workers = check_workers(workers, "f.tune(workers=...)") or opts.workers
    budget = opts.error_budget if budget is None else check_budget(budget, "f.tune(budget=...)")
    spec_budget = 1.0 if is_native(budget) else float(budget)  # "native" is resolved once native ran
    target = opts.target if target is None else check_target(target, "f.tune(target=...)")
    if search not in ("greedy", "exhaustive"):
        raise ValueError(f"mixjit: search must be 'greedy' or 'exhaustive', got {search!r}")
    if max_evals is not None and (isinstance(max_evals, bool) or not isinstance(max_evals, int) or max_evals < 1):
        raise ValueError(f"mixjit: max_evals must be a positive integer (None: no limit), got {max_evals!r}")
    check_metric(metric)
    metric = metric or opts.metric
    try:  # the tune pass checks its options: refuse bad ones before any program run
        _tune_pass(margin, budget=spec_budget, target=target, search=search, max_evals=max_evals)
    except ValueError as err:
        raise ValueError(f"mixjit: {err}") from None
    qualname = f.py_func.__qualname__
    sample = resolve_arguments(f, args, kws)
    args, names = sample.values, sample.names
    check_finite(args, names, qualname)
    key = _compiled(f, sample.key)
    held_out = [resolve_arguments(f, v, kws) for v in check_validate(validate)]  # with the sample's keywords
    validate = [h.values for h in held_out]
    for i, (v, vkey) in enumerate((h.values, h.key) for h in held_out):
        check_finite(v, names, f"{qualname} (validate[{i}])")
        if vkey != key:
            raise ValueError(f"mixjit: validate[{i}] has argument types {argtypes_text(vkey)}; "
                             f"held-out inputs must have the sample's types {argtypes_text(key)}")
    sites = signature_sites(f, key)
    if not sites:
        raise ValueError(f"mixjit: {qualname}{argtypes_text(key)} has no linked GEMM site to tune")
    if not isinstance(reuse, bool):
        raise TypeError(f"mixjit: f.tune(reuse=...) must be True or False, got {reuse!r}")
    cache = EvaluationCache.for_tuning(f.py_func, argtypes_text(key), args, metric) if reuse else None
    with f.tuning_lock:
        before = {s.id: get_plan(s.id) for s in sites}
        start, cpu = time.perf_counter(), time.process_time()
        try:
            result = _tune(f, key, args, names, sites, list(validate), search, budget, target, metric,
                           margin, max_evals, fp64, progress, eval_timeout, workers, executor, cache)
        except BaseException:
            for sid, plan in before.items():
                if plan is not None:
                    set_plan(sid, plan)
            raise
    result.seconds = time.perf_counter() - start
    result.cpu_seconds += time.process_time() - cpu  # the runs' CPU is there already
    return result



def _warm(sites: Sequence[TunedSite], schemes: Sequence[str] | None, target: str,
          initial: dict[int, SitePlan]) -> list[tuple[SitePlan, Any]]:
    """Load every executor the tuning's runs may need here, before the worker forks; the
    (plan, dtype) pairs loaded (an executor's workers load them too)."""
    plans = {}
    for s in sites:
        for plan in (initial[s.id], s.reference_plan(),
                     *(SitePlan(c.scheme, c.config, c.scheme) for c in s.candidates(schemes, (), target))):
            plans.setdefault(warm_key(plan, s.dtype), (plan, s.dtype))
    warm_executors(list(plans.values()))
    return list(plans.values())


def _tune(f, key, args, names, sites, validate, search, asked, target, metric, margin, max_evals, fp64,
          progress, eval_timeout, workers, executor, cache) -> TuneResult:
    opts = f.mixjit_options
    initial = {s.id: s.initial_plan(opts.schemes) for s in sites}
    warm = _warm(sites, opts.schemes, target, initial)
    here = partial(EvaluationPool, f.overloads[key].entry_point, [args, *validate], names, [s.id for s in sites])
    if executor is None:
        pool: EvaluationPool | ExecutorPool = here(workers)
    else:
        program = Program(pickle.dumps(f), key, tuple(s.id for s in sites), tuple(names),
                          tuple(tuple(v) for v in (args, *validate)), tuple(warm), os.getpid())
        pool = ExecutorPool(executor, program, partial(here, 1))
    with pool:
        # the bar counts every program run from the start (the profile and reference runs too)
        bar = SearchBar(f"mixjit: tuning {f.py_func.__qualname__}", workers=pool.workers) if progress else None
        try:
            return _tune_on(pool, f, key, names, sites, validate, search, asked, target, metric, margin, max_evals,
                            fp64, bar, eval_timeout, initial, cache)
        finally:
            if bar is not None:
                bar.close()


def _tune_on(pool, f, key, names, sites, validate, search, asked, target, metric, margin, max_evals, fp64,
             bar, eval_timeout, initial, cache) -> TuneResult:
    opts = f.mixjit_options
    qualname = f.py_func.__qualname__
    args = pool.inputs[0]
    on_runs = bar.add_runs if bar is not None else None
    runner = ProgramRunner(pool, 0, on_runs)
    notes: list[str] = []
    try:
        logs = runner.run(initial, profile=True).logs or {}
        reference = runner.reference(sites, eval_timeout)
        fp64_outs, fp64_cpu = _float64_outputs(f.py_func, args, names, runner.written, notes,
                                               runner.limits.seconds) if fp64 else (None, 0.0)
    except KeyboardInterrupt:
        notes.append("interrupted before the search: the most precise plan is kept")
        for s in sites:
            set_plan(s.id, initial[s.id])
        plan = _tuned_plan(f, key, target, asked, sites, initial, {}, {}, None, True, None)
        budget = math.nan if is_native(asked) else float(asked)  # native's error was not measured
        return TuneResult(qualname, argtypes_text(key), target, budget, sites, {}, {}, {}, plan, None, [],
                          stopped="interrupted", notes=notes, runs=0, cpu_seconds=pool.cpu_seconds)
    called = [s for s in sites if logs[s.id].calls > 0]
    for s in sites:
        if s not in called:
            notes.append(f"site {s.index} ({s.record.loc}) did not run on the sample inputs: it keeps "
                         f"{initial[s.id].label}")
        elif logs[s.id].unlogged_calls:
            notes.append(f"site {s.index}: {logs[s.id].unlogged_calls} calls of shapes beyond the shape log "
                         "are not in its modeled time")
    full = {s.id: SiteSpace(s.id, s.candidates(opts.schemes, logs[s.id].shapes, target))
            for s in called}
    evaluator = OnlineEvaluator(runner, sites, full, reference, metric, fp64_outs, cache)
    native = native_plan(full)
    native_error = evaluator.error(native) if native else None  # said when it breaks the budget
    budget = native_budget(native_error) if is_native(asked) else float(asked)
    imported = f.imported(key, raw=True)
    backend = OnlineBackend(imported, sites, logs, full, evaluator, target, bar)
    pipeline = TuningPipeline(imported, backend)
    tune_pass = partial(_tune_pass, budget=budget, target=target, search=search, max_evals=max_evals)
    stopped = "complete"
    search_result: SearchResult | None = None
    validation: list[Validation] = []
    held_out: list[_HeldOut] = []
    try:
        if called:
            held_out = [_HeldOut(ProgramRunner(pool, 1 + i, on_runs), sites, eval_timeout) for i in range(len(validate))]
            search_result, validation, margin = _search_and_validate(
                pipeline, tune_pass, evaluator, held_out, budget, margin, metric, notes)
    except KeyboardInterrupt:  # the search itself turns Ctrl-C into a result: this came while measuring
        stopped = "interrupted"
        notes.append("interrupted while measuring sites alone: the most precise plan is kept")
    spaces = pipeline.spaces if search_result is not None else {}
    chosen_plan: dict[int, int] = {}
    if search_result is not None:
        stopped = search_result.stopped
        chosen_plan = search_result.plan
        if stopped == "interrupted":
            notes.append("interrupted: the best plan found so far is used")
    chosen = {sid: spaces[sid].candidates[i] for sid, i in chosen_plan.items()}
    # a family that carries values along chains of its sites (dfp: block exponents; same bits,
    # less work) re-plans them after the search (Family.carries_chains in the scheme catalogue)
    if any(getattr(catalog.family_of(c.scheme), "carries_chains", False) for c in chosen.values()):
        for sid, carried in pipeline.carry_dfp().items():
            if sid in chosen:
                chosen[sid] = replace(chosen[sid], config=carried.config, time=carried.modeled_time)
    for s in sites:
        set_plan(s.id, SitePlan(chosen[s.id].scheme, chosen[s.id].config, chosen[s.id].scheme)
                 if s.id in chosen else initial[s.id])
    within = search_result.within_budget if search_result is not None else True
    error = search_result.error if search_result is not None else None
    if validation and any(not v.within_budget for v in validation):
        within = False
    if cache is not None and cache.reused:
        where = f" ({cache.path})" if cache.path is not None else ""
        notes.append(f"reused {cache.reused} error(s) an earlier tuning of this program on these inputs measured{where}")
    ref64 = fp64_error(reference, fp64_outs, metric) if fp64_outs is not None else None
    plan = _tuned_plan(f, key, target, asked, sites, initial, chosen, full, error, within, native_error)
    return TuneResult(qualname, argtypes_text(key), target, budget, sites, dict(backend.profiles), spaces, chosen,
                      plan, search_result, evaluator.judged, validation, margin, stopped, notes, 0.0, evaluator.runs,
                      ref64, pipeline, native_error, runner.schedule + [g for h in held_out for g in h.runner.schedule],
                      pool.cpu_seconds + fp64_cpu)


def _tune_pass(margin: float, *, budget: float, target: str, search: str, max_evals: int | None) -> Tune:
    """The ``tune`` pass of one search (``OptionError`` for a bad option)."""
    return Tune(budget=budget, target=target, search=search, margin=margin, max_evals=max_evals or 0)


def _validation(held_out: Sequence["_HeldOut"], spaces, plan, metric, budget: float) -> list[Validation]:
    return [Validation(i, e, e <= budget, why) for i, h in enumerate(held_out)
            for e, why in [h.error(spaces, plan, metric)]]


def _search_and_validate(pipeline, tune_pass, evaluator, held_out, budget, margin, metric,
                         notes) -> tuple[SearchResult, list[Validation], float]:
    for attempt in range(MAX_TIGHTENINGS + 1):
        result = pipeline.search(tune_pass(margin))
        spaces = pipeline.spaces
        if result.stopped == "interrupted" or not held_out:
            return result, [], margin
        try:
            validation = _validation(held_out, spaces, result.plan, metric, budget)
        except KeyboardInterrupt:
            notes.append("validation interrupted: the plan was not checked on the held-out inputs")
            return result, [], margin
        worst = max(v.error for v in validation)
        if worst <= budget:
            return result, validation, margin
        bad = [v.index for v in validation if not v.within_budget]
        if not result.within_budget or all(i == 0 for i in result.plan.values()):
            notes.append(f"the most precise plan exceeds the budget on held-out input(s) {bad} "
                         f"(error {worst:.2e} > {budget:g})")
            return result, validation, margin
        ratio = worst / max(result.error, budget * 1e-6)
        new_margin = max(1.0 - 0.8 / ratio, 1.0 - (1.0 - margin) / 2)
        notes.append(f"plan with sample error {result.error:.2e} breaks the budget on held-out input(s) {bad} "
                     f"(error {worst:.2e} > {budget:g}); searching again with margin {new_margin:.3f}")
        if new_margin >= 0.999 or attempt == MAX_TIGHTENINGS:
            break
        margin = new_margin
    spaces = pipeline.spaces
    precise = {sid: 0 for sid in spaces}
    evaluator.spaces = spaces
    fallback = SearchResult(precise, evaluator.error(precise), sum(spaces[s].candidates[0].time for s in spaces),
                            list(result.evaluations), result.within_budget, result.stopped)
    validation = _validation(held_out, spaces, precise, metric, budget)
    notes.append("no tightened plan held on the held-out inputs: the most precise plan is used")
    if any(not v.within_budget for v in validation):
        notes.append("the most precise plan also exceeds the budget on held-out inputs")
    return fallback, validation, margin


class _HeldOut:
    """One held-out input set: its reference outputs (computed once, setting the limits of its
    runs) and a plan's error on it, with why its run was stopped (error infinite) or ""."""

    def __init__(self, runner: ProgramRunner, sites: Sequence[TunedSite], eval_timeout: float | None) -> None:
        self.runner = runner
        self.sites = sites
        self.eval_timeout = eval_timeout
        self.reference: list[Output] | None = None

    def error(self, spaces, plan, metric) -> tuple[float, str]:
        if self.reference is None:
            self.reference = self.runner.reference(self.sites, self.eval_timeout)
        outcome = self.runner.run(site_plans(self.sites, spaces, plan))
        if outcome.outputs is None:
            return math.inf, outcome.stopped
        return program_error(outcome.outputs, self.reference, metric), ""


def current_plan_error(f: TunableFunction, key: tuple, args: Sequence[Any], metric: Metric | None) -> float:
    """The program error, by ``metric``, of the plan the sites of signature ``key`` run now, on
    ``args`` against their own reference run (``mixjit.plan.reference_plan``): :func:`plan_error`
    of the current plans."""
    current = {s.id: plan for s in signature_sites(f, key) if (plan := get_plan(s.id)) is not None}
    return plan_error(f, key, args, current, metric)


def plan_error(f: TunableFunction, key: tuple, args: Sequence[Any], plans: dict[int, SitePlan], metric: Metric | None) -> float:
    """The program error, by ``metric``, of signature ``key`` with its sites at ``plans`` (sites
    left out: the reference) on ``args``, against its reference run; both runs on copies of
    ``args`` in a worker process (``mixjit.tuning.workers``): the sites' plans and call counters
    here are left as they were. Infinite when the run is stopped at its limits."""
    sites = signature_sites(f, key)
    plans = {**site_plans(sites, {}, {}), **plans}
    warm_executors([(plan, s.dtype) for s in sites for plan in (s.reference_plan(), plans[s.id])])
    with f.tuning_lock, EvaluationPool(f.overloads[key].entry_point, [args], argument_names(f.py_func, args),
                                        [s.id for s in sites]) as pool:
        runner = ProgramRunner(pool)
        reference = runner.reference(sites, None)
        outcome = runner.run(plans)
        if outcome.outputs is None:
            return math.inf
        return program_error(outcome.outputs, reference, metric)


_FLOAT64_PROGRAMS: "weakref.WeakKeyDictionary[Callable, Any]" = weakref.WeakKeyDictionary()


def _float64_outputs(py_func: Callable, args: Sequence[Any], names: Sequence[str], written: Sequence[str] | None,
                     notes: list[str], seconds: float | None) -> tuple[list[Output] | None, float]:
    """The outputs of the whole program in float64 (plain Numba, float32 inputs upcast), or None
    with a note when it cannot run, and the CPU seconds of its run. Compiled here, run on a worker
    process (``EvaluationPool``) stopped after ``seconds``, as every other run of a tuning is."""
    from numba import njit

    try:
        program = _FLOAT64_PROGRAMS.get(py_func)
        if program is None:
            program = _FLOAT64_PROGRAMS[py_func] = njit(py_func)
        up = tuple(_upcast(a) for a in args)
        program.compile(tuple(program.typeof_pyval(a) for a in up))  # here: the worker compiles nothing
        with EvaluationPool(program, [up], names, ()) as pool:
            outcome = pool.run(RunTask(0, {}, tuple(written or ()), limits=RunLimits(seconds)))
        if outcome.outputs is None:
            notes.append(f"the float64 program was stopped ({outcome.stopped}); no error against it")
        return outcome.outputs, pool.cpu_seconds
    except Exception as e:
        notes.append(f"the float64 program did not run ({type(e).__name__}: {str(e).splitlines()[0][:120]}); "
                     "no error against it")
        return None, 0.0


def _upcast(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        if x.dtype == np.float32 or x.dtype == np.float16:
            return x.astype(np.float64, order="K")
        if x.dtype == np.complex64:
            return x.astype(np.complex128, order="K")
        return x.copy(order="K")
    if isinstance(x, (np.float32, np.float16)):
        return float(x)
    if isinstance(x, tuple):
        return tuple(_upcast(v) for v in x)
    return x


def _tuned_plan(f, key, target, budget, sites, initial, chosen, full, error, within, native_error) -> TunedPlan:
    out = []
    for s in sites:
        c = chosen.get(s.id)
        plan = SitePlan(c.scheme, c.config, c.scheme) if c is not None else initial[s.id]
        out.append(PlanSite(s.index, s.record.function, s.record.loc, s.record.form, s.record.dtype,
                            plan.scheme, plan.config, c.error if c is not None else None,
                            c.time if c is not None else None))
    native = [next((c.time for c in full[sid].candidates if c.scheme == "native"), None) for sid in chosen]
    native_time = sum(native) if chosen and None not in native else None
    plan_time = sum(c.time for c in chosen.values()) if chosen else None
    return TunedPlan(f.py_func.__qualname__, source_hash(f.py_func), argtypes_text(key), target,
                     budget if is_native(budget) else float(budget), tuple(out), error, plan_time, native_time,
                     bool(within), native_error)


def print_summary(result: TuneResult) -> None:
    """Print the one-line summary (and the notes) to stderr."""
    print(result.summary(), file=sys.stderr)
