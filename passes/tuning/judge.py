"""What every search shares: checking its inputs, and judging plans through the evaluator once each.

A :class:`Judge` wraps an :class:`~mixjit.passes.tuning.space.Evaluator`: it memoizes the error
of each distinct plan (the greedy search may reach one plan twice), records every evaluation in
order, enforces ``max_evals``, reports progress, and turns a Ctrl-C during an evaluation into a
clean stop (:class:`SearchStopped`) so that the search can return its best plan so far.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from mixjit.passes.tuning.space import (
    Evaluation,
    Evaluator,
    Plan,
    SearchResult,
    SiteSpace,
    parallel_runs,
    plan_time,
    speculate,
)

__all__ = ["SearchProgress", "ProgressCallback", "SearchStopped", "Judge", "check_search_inputs", "effective_budget"]


@dataclass(frozen=True)
class SearchProgress:
    """Where a search stands after an evaluation, for a progress bar.

    ``evaluations``: distinct plans judged so far. ``total``: the expected number (exact for the
    exhaustive search; for greedy an estimate, one per lowering step, that predecessor raises and
    early stops move). ``best``: the fastest plan within budget so far (None until one is)."""

    evaluations: int
    total: int | None
    last: Evaluation
    best: Evaluation | None


ProgressCallback = Callable[[SearchProgress], None]


class SearchStopped(Exception):
    """Raised by :meth:`Judge.error` when the search must stop: ``reason`` is ``"max-evals"`` or
    ``"interrupted"`` (a KeyboardInterrupt inside the evaluator)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def effective_budget(budget: float, margin: float) -> float:
    """The error bound plans must meet: ``budget * (1 - margin)``; ValueError for a budget that is
    not positive (or NaN) or a margin outside [0, 1)."""
    if not isinstance(budget, (int, float)) or math.isnan(budget) or budget <= 0:
        raise ValueError(f"error budget must be a positive number, got {budget!r}")
    if not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise ValueError(f"safety margin must be in [0, 1) (a fraction of the budget kept in reserve), got {margin!r}")
    return budget * (1 - margin)


def check_search_inputs(spaces: Mapping[int, SiteSpace], max_evals: int | None) -> None:
    """ValueError for an empty program, a space filed under another site id, or ``max_evals < 1``."""
    if not spaces:
        raise ValueError("nothing to tune: the program has no GEMM site")
    for site, space in spaces.items():
        if space.site != site:
            raise ValueError(f"the space of site {space.site} is filed under site {site}")
    if max_evals is not None and max_evals < 1:
        raise ValueError(f"max_evals must be at least 1 (the most precise plan is always judged), got {max_evals}")


class Judge:
    """Judges plans of ``spaces`` with ``evaluator`` against ``bound`` (the effective budget)."""

    def __init__(
        self,
        spaces: Mapping[int, SiteSpace],
        evaluator: Evaluator,
        bound: float,
        max_evals: int | None = None,
        progress: ProgressCallback | None = None,
        total: int | None = None,
    ) -> None:
        self.spaces = spaces
        self.evaluator = evaluator
        self.bound = bound
        self.max_evals = max_evals
        self.progress = progress
        self.total = total
        self.evaluations: list[Evaluation] = []
        self._memo: dict[tuple[tuple[int, int], ...], Evaluation] = {}
        self._best: Evaluation | None = None

    def ahead(self, plans: Sequence[Plan]) -> None:
        """Speculation: tell an evaluator that measures several plans at once the plans the search
        may judge next, the first of them the one it judges now (``speculate``); only those not
        judged yet, as many as it runs at once. Nothing is judged here: the search's record and
        result are those of a search that told it nothing. A KeyboardInterrupt stops the search."""
        slots = parallel_runs(self.evaluator)
        if slots < 2 or not plans or self.known(plans[0]) is not None:
            return  # one run at a time, or the plan judged now is known: nothing to run alongside
        todo = [dict(p) for p in plans if self.known(p) is None][:slots]
        if len(todo) < 2:
            return
        try:
            speculate(self.evaluator, todo)
        except KeyboardInterrupt:
            raise SearchStopped("interrupted") from None

    def fits(self, error: float) -> bool:
        """Is ``error`` within the bound (NaN never is)?"""
        return error <= self.bound

    def time(self, plan: Plan) -> float:
        return plan_time(self.spaces, plan)

    def known(self, plan: Plan) -> float | None:
        """The error of ``plan`` if it was judged already, else None (never evaluates)."""
        evaluation = self._memo.get(tuple(sorted(plan.items())))
        return None if evaluation is None else evaluation.error

    def error(self, plan: Plan) -> float:
        """The program error of ``plan``: from the memo, or one evaluator call. Raises
        SearchStopped when ``max_evals`` plans were judged already or on a KeyboardInterrupt."""
        key = tuple(sorted(plan.items()))
        if key in self._memo:
            return self._memo[key].error
        if self.max_evals is not None and len(self.evaluations) >= self.max_evals:
            raise SearchStopped("max-evals")
        frozen = dict(key)
        try:
            error = float(self.evaluator.error(frozen))
        except KeyboardInterrupt:
            raise SearchStopped("interrupted") from None
        evaluation = Evaluation(frozen, error, self.time(frozen))
        self._memo[key] = evaluation
        self.evaluations.append(evaluation)
        if self.fits(error) and (self._best is None or _faster(evaluation, self._best)):
            self._best = evaluation
        if self.progress is not None:
            self.progress(SearchProgress(len(self.evaluations), self.total, evaluation, self._best))
        return error

    def result(self, fallback: Plan, stopped: str) -> SearchResult:
        """The fastest plan judged within the bound, or ``fallback`` (the most precise plan)
        marked ``within_budget=False`` when there is none."""
        if self._best is not None:
            best = self._best
            return SearchResult(dict(best.plan), best.error, best.time, list(self.evaluations), True, stopped)
        key = tuple(sorted(fallback.items()))
        error = self._memo[key].error if key in self._memo else math.nan
        return SearchResult(dict(fallback), error, self.time(fallback), list(self.evaluations), False, stopped)


def _faster(a: Evaluation, b: Evaluation) -> bool:
    """``a`` before ``b``: smaller modeled time, then smaller error (first judged wins ties)."""
    return (a.time, a.error) < (b.time, b.error)
