"""The greedy search of MixPert §3.4, against any :class:`~mixjit.passes.tuning.space.Evaluator`.

1. Start from the most precise plan (every site at candidate 0) and judge it. If even it breaks
   the budget, stop: nothing faster can do better (``within_budget=False``).
2. Lower sites one candidate at a time, guided by modeled-time predominance, while the program
   error stays within budget. ``order="dynamic"`` (default): every step lowers the site whose
   *current* candidate has the largest modeled time, among the sites not yet finished.
   ``order="static"``: the sites are visited once each, largest modeled time in the most precise
   plan first, and each is lowered as far as it goes before the next. (Ties: smaller site id.)
3. When a step breaks the budget, try raising an immediate predecessor of the site in the GEMM
   dependence graph (``build-dag``) by one candidate, if that predecessor's current modeled time
   is smaller than the site's, and the plan with both moves is modeled faster than the current
   one (else the trade gains nothing). Predecessors are tried loop-independent edges first, then
   the cheapest raise first, then by site id. The first combined plan within budget is kept and
   the site stays in play; if none is, the step is reverted and the site is finished.

Every accepted move makes the plan's modeled time smaller (or, between candidates of equal time,
moves a site strictly down), so no plan repeats and the search ends. Every judged plan is
memoized; the search is deterministic (no randomness, total orders everywhere). It returns the
fastest plan judged within ``budget * (1 - margin)``. ``max_evals`` and Ctrl-C stop it early with
the best plan so far (``stopped`` says which).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from mixjit.passes.tuning.judge import (
    Judge,
    ProgressCallback,
    SearchStopped,
    check_search_inputs,
    effective_budget,
)
from mixjit.passes.tuning.space import Evaluator, SearchResult, SiteSpace

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["greedy", "visit_order", "ORDERS"]

ORDERS = ("dynamic", "static")


def visit_order(spaces: Mapping[int, SiteSpace]) -> list[int]:
    """The static order: largest modeled time at candidate 0 first, then by id."""
    return sorted(spaces, key=lambda s: (-spaces[s].candidates[0].time, s))


def greedy(
    spaces: Mapping[int, SiteSpace],
    evaluator: Evaluator,
    budget: float,
    *,
    dag: nx.DiGraph | None = None,
    max_evals: int | None = None,
    margin: float = 0.0,
    progress: ProgressCallback | None = None,
    order: str = "dynamic",
) -> SearchResult:
    """Search a plan for ``spaces`` whose error (by ``evaluator``) stays within ``budget`` (see the
    module docstring). ``dag``: the GEMM dependence graph over site ids (edges with a ``carried``
    attribute), or None to never raise predecessors. ``max_evals``: the most evaluator calls (None:
    no limit). ``margin``: the fraction of the budget kept in reserve. ``progress`` is called after
    every evaluation. ``order``: ``"dynamic"`` or ``"static"`` predominance (module docstring)."""
    if order not in ORDERS:
        raise ValueError(f"unknown greedy order '{order}': use {' or '.join(ORDERS)}")
    bound = effective_budget(budget, margin)
    check_search_inputs(spaces, max_evals)
    steps = sum(len(space.candidates) - 1 for space in spaces.values())
    judge = Judge(spaces, evaluator, bound, max_evals, progress, total=1 + steps)
    start = {site: 0 for site in sorted(spaces)}
    try:
        if judge.fits(judge.error(start)):
            lower = _lower_dynamic if order == "dynamic" else _lower_static
            lower(judge, spaces, dict(start), dag)
    except SearchStopped as stop:
        return judge.result(start, stop.reason)
    return judge.result(start, "complete")


def _lower_static(judge: Judge, spaces: Mapping[int, SiteSpace], plan: dict[int, int], dag: nx.DiGraph | None) -> None:
    for site in visit_order(spaces):
        while plan[site] + 1 < len(spaces[site].candidates):
            moved = _step(judge, spaces, plan, site, dag)
            if moved is None:
                break  # revert: keep ``plan``, visit the next site
            plan = moved


def _lower_dynamic(judge: Judge, spaces: Mapping[int, SiteSpace], plan: dict[int, int], dag: nx.DiGraph | None) -> None:
    finished: set[int] = set()
    while True:
        open_sites = [s for s in spaces if s not in finished and plan[s] + 1 < len(spaces[s].candidates)]
        if not open_sites:
            return
        site = min(open_sites, key=lambda s: (-spaces[s].candidates[plan[s]].time, s))
        moved = _step(judge, spaces, plan, site, dag)
        if moved is None:
            finished.add(site)  # revert: keep ``plan``; the site is not tried again
        else:
            plan = moved


def _step(judge: Judge, spaces: Mapping[int, SiteSpace], plan: dict[int, int], site: int,
          dag: nx.DiGraph | None) -> dict[int, int] | None:
    """``plan`` with ``site`` lowered one candidate (with a predecessor raised, if that is what it
    takes) when that is within budget, else None."""
    lowered = {**plan, site: plan[site] + 1}
    if judge.fits(judge.error(lowered)):
        return lowered
    return _raise_a_predecessor(judge, spaces, plan, lowered, site, dag)


def _raise_a_predecessor(
    judge: Judge,
    spaces: Mapping[int, SiteSpace],
    plan: dict[int, int],
    lowered: dict[int, int],
    site: int,
    dag: nx.DiGraph | None,
) -> dict[int, int] | None:
    """The first plan ``lowered`` with one predecessor of ``site`` raised a step that is within
    budget (see the module docstring for which predecessors qualify, in which order), or None."""
    if dag is None or site not in dag:
        return None
    site_time = spaces[site].candidates[plan[site]].time
    current_time = judge.time(plan)
    options = []
    for pred in dag.predecessors(site):
        if pred == site or pred not in plan or plan[pred] == 0:
            continue
        cands = spaces[pred].candidates
        if cands[plan[pred]].time >= site_time:
            continue
        traded = {**lowered, pred: plan[pred] - 1}
        if judge.time(traded) >= current_time:
            continue
        raise_cost = cands[plan[pred] - 1].time - cands[plan[pred]].time
        options.append((bool(dag.edges[pred, site].get("carried", False)), raise_cost, pred, traded))
    for *_, traded in sorted(options, key=lambda o: o[:3]):
        if judge.fits(judge.error(traded)):
            return traded
    return None
