"""The tuner's vocabulary: what a site may run, what a plan is, how a plan is judged.

A *candidate* is one (scheme, config) a site may run, with its modeled time on the target
over the profiled calls and, once measured, its error when it alone runs it (every other
site at the reference). A *site space* is a site's candidates, most precise first, so the
search lowers a site by moving to the next index. A *plan* maps each site id to the index
of its candidate. An :class:`Evaluator` says what a plan's program error is: online, one
run of the compiled program; offline, a model fitted from profile attributes.

Every time here is *modeled* (cost model, ``mixjit.runtime.model.costmodel``), never measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Protocol, Sequence

__all__ = ["Candidate", "SiteSpace", "Plan", "Evaluation", "SearchResult", "Evaluator", "prefetch", "speculate", "parallel_runs",
           "plan_time"]


@dataclass(frozen=True)
class Candidate:
    """One (scheme, config) a site may run.

    ``time``: modeled seconds of the site's profiled calls under it, on the target.
    ``error``: the program error when this site alone runs it (``None`` until measured).
    ``products``: low-precision products per GEMM (``Scheme.products``)."""

    scheme: str
    config: str
    time: float
    products: int = 1
    error: float | None = None

    @property
    def label(self) -> str:
        """``scheme[config]``, as plans and reports print it."""
        return f"{self.scheme}[{self.config}]"


@dataclass(frozen=True)
class SiteSpace:
    """The candidates of one site, most precise first (index 0 is where the search starts)."""

    site: int
    candidates: tuple[Candidate, ...]

    def __post_init__(self) -> None:
        if not self.candidates:
            raise ValueError(f"site {self.site} has no candidate; give it at least its most precise config")


Plan = Mapping[int, int]
"""Site id -> index into that site's ``SiteSpace.candidates``."""


def plan_time(spaces: Mapping[int, SiteSpace], plan: Plan) -> float:
    """Modeled time of ``plan``: the sum of its sites' candidate times (correctly rounded)."""
    return math.fsum(spaces[s].candidates[i].time for s, i in sorted(plan.items()))


@dataclass(frozen=True)
class Evaluation:
    """One plan the search judged: its program error and modeled time."""

    plan: Mapping[int, int]
    error: float
    time: float


@dataclass
class SearchResult:
    """What a search found: the chosen plan (within budget, or the most precise plan when none
    is), every evaluation it made in order, and why it stopped."""

    plan: dict[int, int]
    error: float
    time: float
    evaluations: list[Evaluation] = field(default_factory=list)
    within_budget: bool = True
    stopped: str = "complete"  # "complete", "max-evals" or "interrupted"

    @property
    def evaluation_count(self) -> int:
        return len(self.evaluations)


class Evaluator(Protocol):
    """Judges plans. ``error(plan)`` is the program's error under ``plan`` against the
    reference run (the metric is the evaluator's: relative Frobenius error maximised over
    outputs unless the user gave one). Deterministic for fixed inputs."""

    def error(self, plan: Plan) -> float: ...


def parallel_runs(evaluator: Evaluator) -> int:
    """How many plans ``evaluator`` measures at once when told them ahead (``prefetch``); 1 when it
    measures one at a time, where telling it more than the next plan only wastes runs."""
    workers = getattr(evaluator, "workers", 1)
    return workers if isinstance(workers, int) and workers > 1 else 1


def speculate(evaluator: Evaluator, plans: Sequence[Plan]) -> None:
    """Tell an evaluator that measures several plans at once the plan a search judges next
    (``plans[0]``) and those it may judge after it, so that it measures them alongside the first,
    when the first is not measured yet (a run the search waits for anyway), and nothing otherwise.
    Results do not change: ``error`` still judges each plan the search asks for, in order."""
    ahead = getattr(evaluator, "speculate", None)
    if callable(ahead) and plans:
        ahead(plans)


def prefetch(evaluator: Evaluator, plans: Sequence[Plan]) -> None:
    """Tell ``evaluator`` the plans a search is about to judge, in order, so that one that can
    (mixjit's online evaluator: worker processes) measures them at once ahead of the ``error``
    calls. The search's result does not change: ``error`` still judges each plan, in order."""
    ahead = getattr(evaluator, "prefetch", None)
    if callable(ahead):
        ahead(plans)
