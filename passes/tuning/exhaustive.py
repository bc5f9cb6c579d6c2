"""Exhaustive search: judge every plan, return the fastest within budget (the optimum greedy is
compared with). Only for small programs: the number of plans is the product of the sites'
candidate counts, and above ``max_plans`` the search refuses (:class:`SearchTooLarge`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from mixjit.passes.tuning.judge import (
    Judge,
    ProgressCallback,
    SearchStopped,
    check_search_inputs,
    effective_budget,
)
from mixjit.passes.tuning.space import Evaluator, SearchResult, SiteSpace, prefetch

__all__ = ["exhaustive", "plan_count", "SearchTooLarge", "DEFAULT_MAX_PLANS"]

DEFAULT_MAX_PLANS = 4096
"""The default cap on the plans judged: six sites of four candidates each."""
PREFETCH_CHUNK = 32
"""Plans told to the evaluator ahead at a time (``prefetch``: judged at once where it can)."""


class SearchTooLarge(ValueError):
    """The exhaustive search would judge more plans than its cap allows."""


def plan_count(spaces: Mapping[int, SiteSpace]) -> int:
    """How many distinct plans ``spaces`` has: the product of the candidate counts."""
    return math.prod(len(space.candidates) for space in spaces.values())


def exhaustive(
    spaces: Mapping[int, SiteSpace],
    evaluator: Evaluator,
    budget: float,
    *,
    max_plans: int = DEFAULT_MAX_PLANS,
    max_evals: int | None = None,
    margin: float = 0.0,
    progress: ProgressCallback | None = None,
) -> SearchResult:
    """Judge every plan of ``spaces`` (most precise first, in lexicographic order of the sites'
    candidate indices) and return the fastest within ``budget * (1 - margin)`` (ties: smaller
    error, then the first judged), with every evaluation. When no plan fits, the most precise plan
    with ``within_budget=False``. SearchTooLarge above ``max_plans`` plans; ``max_evals`` and Ctrl-C
    stop early with the best plan so far (no longer the optimum: ``stopped`` says so)."""
    bound = effective_budget(budget, margin)
    check_search_inputs(spaces, max_evals)
    count = plan_count(spaces)
    if count > max_plans:
        shape = " x ".join(str(len(spaces[s].candidates)) for s in sorted(spaces))
        raise SearchTooLarge(
            f"exhaustive search over {len(spaces)} sites would judge {count} plans ({shape} candidates), "
            f"more than max-plans={max_plans}: use the greedy search or raise max-plans"
        )
    sites = sorted(spaces)
    judge = Judge(spaces, evaluator, bound, max_evals, progress, total=count)
    start = {site: 0 for site in sites}
    plans = (dict(zip(sites, indices)) for indices in itertools.product(*(range(len(spaces[s].candidates))
                                                                          for s in sites)))
    limit = count if max_evals is None else min(count, max_evals)
    try:
        while chunk := list(itertools.islice(plans, PREFETCH_CHUNK)):
            try:
                prefetch(evaluator, chunk[: max(0, limit - len(judge.evaluations))])
            except KeyboardInterrupt:
                raise SearchStopped("interrupted") from None
            for plan in chunk:
                judge.error(plan)
    except SearchStopped as stop:
        return judge.result(start, stop.reason)
    return judge.result(start, "complete")
