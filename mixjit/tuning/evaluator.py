"""The online evaluator: judge a plan by writing the plan table and running the compiled function.

A plan (site id -> candidate index, ``mixjit.passes.tuning.space.Plan``) is applied with
``mixjit.plan.set_plan``; sites the plan leaves out run the reference plan
(``mixjit.plan.reference_plan``), so ``error({s: i})`` is site ``s`` alone at candidate ``i``.
No recompilation: the compiled entry reads the table at every call. Each run works on
fresh copies of the sample arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from mixjit.passes.tuning.space import Plan, SiteSpace
from mixjit.plan import SitePlan, reference_plan, set_plan
from mixjit.tuning.outputs import Metric, Output, collect, copy_args, program_error, written_arguments
from mixjit.tuning.profiling import TunedSite

__all__ = ["ProgramRunner", "OnlineEvaluator", "Judged"]


class ProgramRunner:
    """Runs one compiled signature on copies of fixed sample arguments and collects its outputs."""

    def __init__(self, call: Callable[..., Any], args: Sequence[Any], names: Sequence[str]) -> None:
        self.call = call
        self.args = tuple(args)
        self.names = tuple(names)
        self.written: tuple[str, ...] | None = None  # decided by the first (reference) run

    def run(self) -> list[Output]:
        """One run; the first decides which argument arrays count as outputs (those it wrote)."""
        copies = copy_args(self.args)
        result = self.call(*copies)
        if self.written is None:
            self.written = written_arguments(self.args, copies, self.names)
        return collect(result, copies, self.names, self.written)


def apply_plan(sites: Sequence[TunedSite], spaces: Mapping[int, SiteSpace], plan: Plan) -> None:
    """Write ``plan`` into the plan table; sites it leaves out get the reference plan."""
    for site in sites:
        if site.id in plan:
            c = spaces[site.id].candidates[plan[site.id]]
            set_plan(site.id, SitePlan(c.scheme, c.config, c.scheme))
        else:
            set_plan(site.id, reference_plan(site.dtype))


@dataclass(frozen=True)
class Judged:
    """One program run under a plan: its error against the reference run and, when the
    float64 program ran, against it (the whole program in float64, for information)."""

    plan: dict[int, int]
    error: float
    error_vs_fp64: float | None
    modeled_time: float
    labels: dict[int, str]
    """What each site of ``plan`` ran (``scheme[config]``); sites left out ran the reference."""


class OnlineEvaluator:
    """``error(plan)``: the program error of ``plan`` on the sample inputs (an ``Evaluator``)."""

    def __init__(self, runner: ProgramRunner, sites: Sequence[TunedSite], spaces: Mapping[int, SiteSpace],
                 reference: Sequence[Output], metric: Metric | None = None,
                 fp64: Sequence[Output] | None = None) -> None:
        self.runner = runner
        self.sites = tuple(sites)
        self.spaces = spaces
        self.reference = list(reference)
        self.metric = metric
        self.fp64 = fp64
        self.judged: list[Judged] = []
        self.runs = 0

    def error(self, plan: Plan) -> float:
        apply_plan(self.sites, self.spaces, plan)
        outs = self.runner.run()
        self.runs += 1
        err = program_error(outs, self.reference, self.metric)
        vs64 = fp64_error(outs, self.fp64, self.metric) if self.fp64 is not None else None
        chosen = {s: self.spaces[s].candidates[i] for s, i in plan.items()}
        self.judged.append(Judged(dict(plan), err, vs64, sum(c.time for c in chosen.values()),
                                  {s: c.label for s, c in chosen.items()}))
        return err


def fp64_error(outs: Sequence[Output], fp64: Sequence[Output], metric: Metric | None = None) -> float:
    """The error of the outputs against the whole program run in float64, by the same metric as
    the program error (``metric``, or relative Frobenius when None), maximised over outputs; so it
    compares with the budget in the user's own terms. NaN when the float64 program's outputs do
    not match these in number, name or shape (nothing to compare)."""
    if [o.name for o in outs] != [r.name for r in fp64] \
            or any(np.shape(o.value) != np.shape(r.value) for o, r in zip(outs, fp64)):
        return math.nan
    return program_error(outs, fp64, metric)
