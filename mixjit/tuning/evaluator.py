"""The online evaluator: judge a plan by running the compiled function under it on a worker.

A plan (site id -> candidate index, ``mixjit.passes.tuning.space.Plan``) becomes a plan per site
(:func:`site_plans`); sites the plan leaves out run the reference plan
(``mixjit.plan.reference_plan``), so ``error({s: i})`` is site ``s`` alone at candidate ``i``.
No recompilation: each run is a task for the tuning's worker process
(``mixjit.tuning.workers``), which writes its own plan table and runs the compiled function on
fresh copies of the sample arguments, within limits derived from the reference run. A run
stopped at its limit counts as an infinite error, and says why (``Judged.stopped``).
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

from mixjit.passes.tuning.space import Plan, SiteSpace
from mixjit.plan import SitePlan
from mixjit.tuning.eval_cache import EvaluationCache, Measured
from mixjit.tuning.outputs import Metric, Output, program_error
from mixjit.tuning.profiling import TunedSite
from mixjit.tuning.workers import EvaluationPool, RunLimits, RunOutcome, RunTask

__all__ = ["ProgramRunner", "OnlineEvaluator", "Judged", "site_plans"]


class ProgramRunner:
    """Runs the compiled signature on one input set of ``pool`` (``inputs``: its index) under a
    plan per site; ``limits`` apply once the input set's reference run set them."""

    def __init__(self, pool: EvaluationPool, inputs: int = 0, on_runs: Callable[[int], None] | None = None) -> None:
        self.pool = pool
        self.inputs = inputs
        self.on_runs = on_runs  # told how many runs came back (the progress bar's count)
        self.written: tuple[str, ...] | None = None  # decided by the first (reference) run
        self.limits = RunLimits()
        self.schedule: list[list[float]] = []
        """Each run's wall seconds, in groups of runs that could go at once (:meth:`group`)."""
        self._group: list[float] | None = None

    @contextmanager
    def group(self) -> Iterator[None]:
        """Runs made inside are one group of the schedule (runs independent of each other)."""
        self._group = []
        try:
            yield
        finally:
            if self._group:
                self.schedule.append(self._group)
            self._group = None

    def run(self, plans: Mapping[int, SitePlan], profile: bool = False) -> RunOutcome:
        """One run; the first decides which argument arrays count as outputs (those it wrote)."""
        outcome = self.pool.run(RunTask(self.inputs, dict(plans), self.written, profile, self.limits))
        if self.written is None and not outcome.stopped:
            self.written = outcome.written
        self._ran([outcome])
        return outcome

    def run_many(self, plans: Sequence[Mapping[int, SitePlan]],
                 each: Callable[[int, RunOutcome], None] | None = None) -> list[RunOutcome]:
        """Runs under each of ``plans`` (after the reference run), on the pool's workers at once;
        each outcome what :meth:`run` gives for it alone, also given to ``each(index, outcome)``
        as it comes back, while the other runs go on (``EvaluationPool.run_many``)."""
        assert self.written is not None, "the reference run decides the outputs first"

        def back(index: int, outcome: RunOutcome) -> None:
            if self.on_runs is not None:
                self.on_runs(1)
            if each is not None:
                each(index, outcome)

        tasks = [RunTask(self.inputs, dict(p), self.written, False, self.limits) for p in plans]
        outcomes = self.pool.run_many(tasks, each=back)
        self._ran(outcomes, counted=True)
        return outcomes

    def _ran(self, outcomes: Sequence[RunOutcome], counted: bool = False) -> None:
        """Record the runs' seconds in the schedule; tell ``on_runs`` unless ``counted`` already."""
        seconds = [o.seconds for o in outcomes]
        if self._group is not None:
            self._group.extend(seconds)
        else:
            self.schedule.append(seconds)
        if self.on_runs is not None and not counted:
            self.on_runs(len(outcomes))

    def reference(self, sites: Sequence[TunedSite], eval_timeout: float | None) -> list[Output]:
        """The reference run of this input set (every site at its reference plan, no limits), whose
        wall time and site calls set the limits of the later runs (``RunLimits.from_reference``)."""
        outcome = self.run(site_plans(sites, {}, {}))
        assert outcome.outputs is not None, "a run without limits came back stopped"
        self.limits = RunLimits.from_reference(outcome.seconds, outcome.calls, eval_timeout)
        return outcome.outputs


def site_plans(sites: Sequence[TunedSite], spaces: Mapping[int, SiteSpace], plan: Plan) -> dict[int, SitePlan]:
    """The plan of every site under ``plan``; sites it leaves out get the reference plan."""
    out = {}
    for site in sites:
        if site.id in plan:
            c = spaces[site.id].candidates[plan[site.id]]
            out[site.id] = SitePlan(c.scheme, c.config, c.scheme)
        else:
            out[site.id] = site.reference_plan()
    return out


@dataclass(frozen=True)
class Judged:
    """One program run under a plan: its error against the reference run and, when the
    float64 program ran, against it (the whole program in float64, for information).
    ``stopped``: why the run was stopped at its limits (its error is then infinite)."""

    plan: dict[int, int]
    error: float
    error_vs_fp64: float | None
    modeled_time: float
    labels: dict[int, str]
    """What each site of ``plan`` ran (``scheme[config]``); sites left out ran the reference."""
    stopped: str = ""


class OnlineEvaluator:
    """``error(plan)``: the program error of ``plan`` on the sample inputs (an ``Evaluator``).

    ``prefetch(plans)`` runs plans ahead on the pool's workers at once and keeps what each
    measured; ``error`` then takes it from there, in the search's own order, so the judged
    plans, their errors and the count of runs are those of the serial search.

    ``cache`` (mixjit.tuning.eval_cache) gives the errors an earlier tuning of the same program on
    the same inputs measured, and keeps every new one: a plan found there is not run again."""

    def __init__(self, runner: ProgramRunner, sites: Sequence[TunedSite], spaces: Mapping[int, SiteSpace],
                 reference: Sequence[Output], metric: Metric | None = None,
                 fp64: Sequence[Output] | None = None, cache: EvaluationCache | None = None) -> None:
        self.runner = runner
        self.sites = tuple(sites)
        self.spaces = spaces
        self.reference = list(reference)
        self.metric = metric
        self.fp64 = fp64
        self.judged: list[Judged] = []
        self.runs = 0
        self._ahead: dict[tuple, Measured] = {}
        self.cache = cache
        self._index = {s.id: s.index for s in self.sites}
        self._reused: set[tuple] = set()  # plans measured ahead whose error came from the cache

    def error(self, plan: Plan) -> float:
        plans = site_plans(self.sites, self.spaces, plan)
        measured = self._ahead.pop(_key(plans), None)
        reused = _key(plans) in self._reused
        if measured is None:
            measured = self._cached(plans)
            reused = measured is not None
        if measured is None:
            measured = self._store(plans, self._measure(self.runner.run(plans)))
        self.runs += 0 if reused else 1  # program runs: an error taken from the cache ran nothing
        chosen = {s: self.spaces[s].candidates[i] for s, i in plan.items()}
        self.judged.append(Judged(dict(plan), measured.error, measured.error_vs_fp64,
                                  sum(c.time for c in chosen.values()), {s: c.label for s, c in chosen.items()},
                                  measured.stopped))
        return measured.error

    @property
    def workers(self) -> int:
        """How many runs the pool makes at once (``prefetch``); 1 once it runs in this process."""
        pool = self.runner.pool
        return 1 if pool.in_process else pool.workers

    def prefetch(self, plans: Sequence[Plan]) -> None:
        """Run ``plans`` (not yet measured) ahead, as many at once as the pool has workers, and
        keep what each measured for :meth:`error`."""
        todo: dict[tuple, dict[int, SitePlan]] = {}
        for plan in plans:
            run = site_plans(self.sites, self.spaces, plan)
            if _key(run) in self._ahead:
                continue
            found = self._cached(run)
            if found is not None:
                self._ahead[_key(run)] = found
                self._reused.add(_key(run))
            else:
                todo.setdefault(_key(run), run)
        keys = list(todo)

        def measured(index: int, outcome: RunOutcome) -> None:  # while the workers run the next plans
            self._ahead[keys[index]] = self._store(todo[keys[index]], self._measure(outcome))

        with self.runner.group():  # the plans are independent: one group of the schedule
            self.runner.run_many([todo[k] for k in keys], each=measured)

    def speculate(self, plans: Sequence[Plan]) -> None:
        """Measure ``plans[0]`` (the plan about to be judged) and, alongside it on the other
        workers, the rest (plans a search may judge next), unless ``plans[0]`` is measured already:
        then nothing runs, so speculation never delays a judgement."""
        if not plans or _key(site_plans(self.sites, self.spaces, plans[0])) in self._ahead:
            return
        self.prefetch(list(plans)[: max(1, self.workers)])

    def _cached(self, plans: Mapping[int, SitePlan]) -> Measured | None:
        if self.cache is None:
            return None
        return self.cache.get(EvaluationCache.plan_key(plans, self._index), self.fp64 is not None)

    def _store(self, plans: Mapping[int, SitePlan], measured: Measured) -> Measured:
        # a run stopped at its limits is not kept: a time limit depends on this session's machine
        if self.cache is not None and not measured.stopped:
            self.cache.put(EvaluationCache.plan_key(plans, self._index), measured)
        return measured

    def _measure(self, outcome: RunOutcome) -> Measured:
        outs = outcome.outputs
        err = math.inf if outs is None else program_error(outs, self.reference, self.metric)
        vs64 = fp64_error(outs, self.fp64, self.metric) if self.fp64 is not None and outs is not None else None
        return Measured(err, vs64, outcome.stopped)


def _key(plans: Mapping[int, SitePlan]) -> tuple:
    return tuple(sorted(plans.items()))


def fp64_error(outs: Sequence[Output], fp64: Sequence[Output], metric: Metric | None = None) -> float:
    """The error of the outputs against the whole program run in float64, by the same metric as
    the program error (``metric``, or relative Frobenius when None), maximised over outputs; so it
    compares with the budget in the user's own terms. NaN when the float64 program's outputs do
    not match these in number, name or shape (nothing to compare)."""
    if [o.name for o in outs] != [r.name for r in fp64] \
            or any(np.shape(o.value) != np.shape(r.value) for o, r in zip(outs, fp64)):
        return math.nan
    return program_error(outs, fp64, metric)
