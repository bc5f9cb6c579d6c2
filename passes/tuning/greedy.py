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

4. Jumps (``jump=True``, the default): a program run per step is what greedy costs online, and
   most steps fit. So before stepping, the search follows the steps it would take from the
   current plan (same order, no site finished in between) as long as each is *predicted* to
   fit: the current plan's judged error plus, per lowered site, the difference between the
   errors its candidates gave when that site alone ran them (:func:`predicted_error`, the
   offline model's first-order sum anchored on a real evaluation). When two or more steps are
   predicted to fit, it judges only the furthest; if that breaks the budget it bisects back
   along those steps to the furthest that fits, and the step after it then takes the normal
   path (predecessor raise, else revert). A prediction only chooses which plans get judged:
   every plan accepted at the end of a jump was judged within budget. When the program error
   does not decrease as a site is lowered (others fixed), which holds for the errors these
   schemes make up to rounding noise, the jumping search ends at the same plan as the step by
   step one (tested on random problems against ``jump=False``), with fewer evaluations.

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

__all__ = ["greedy", "visit_order", "predicted_error", "ORDERS"]

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
    jump: bool = True,
) -> SearchResult:
    """Search a plan for ``spaces`` whose error (by ``evaluator``) stays within ``budget`` (see the
    module docstring). ``dag``: the GEMM dependence graph over site ids (edges with a ``carried``
    attribute), or None to never raise predecessors. ``max_evals``: the most evaluator calls (None:
    no limit). ``margin``: the fraction of the budget kept in reserve. ``progress`` is called after
    every evaluation. ``order``: ``"dynamic"`` or ``"static"`` predominance (module docstring).
    ``jump``: skip the evaluations of steps the sites' measured errors predict to fit (module
    docstring); False judges every step."""
    if order not in ORDERS:
        raise ValueError(f"unknown greedy order '{order}': use {' or '.join(ORDERS)}")
    bound = effective_budget(budget, margin)
    check_search_inputs(spaces, max_evals)
    steps = sum(len(space.candidates) - 1 for space in spaces.values())
    judge = Judge(spaces, evaluator, bound, max_evals, progress, total=1 + steps)
    start = {site: 0 for site in sorted(spaces)}
    try:
        if judge.fits(judge.error(start)):
            state: _Order = _Dynamic() if order == "dynamic" else _Static(visit_order(spaces))
            _lower(judge, spaces, dict(start), dag, state, jump)
    except SearchStopped as stop:
        return judge.result(start, stop.reason)
    return judge.result(start, "complete")


class _Order:
    """Which site greedy lowers next, and which sites are done."""

    def next_site(self, spaces: Mapping[int, SiteSpace], plan: Mapping[int, int]) -> int | None:
        raise NotImplementedError

    def finish(self, site: int) -> None:
        raise NotImplementedError

    def copy(self) -> _Order:
        raise NotImplementedError


class _Dynamic(_Order):
    """The open site with the largest current modeled time; a site whose step failed is done."""

    def __init__(self, finished: frozenset[int] = frozenset()) -> None:
        self.finished = finished

    def next_site(self, spaces: Mapping[int, SiteSpace], plan: Mapping[int, int]) -> int | None:
        open_sites = [s for s in spaces if s not in self.finished and plan[s] + 1 < len(spaces[s].candidates)]
        if not open_sites:
            return None
        return min(open_sites, key=lambda s: (-spaces[s].candidates[plan[s]].time, s))

    def finish(self, site: int) -> None:
        self.finished = self.finished | {site}

    def copy(self) -> _Dynamic:
        return _Dynamic(self.finished)


class _Static(_Order):
    """The sites in ``visit_order``, each lowered until it fails or has no faster candidate."""

    def __init__(self, order: list[int], cursor: int = 0) -> None:
        self.order = order
        self.cursor = cursor

    def next_site(self, spaces: Mapping[int, SiteSpace], plan: Mapping[int, int]) -> int | None:
        while self.cursor < len(self.order):
            site = self.order[self.cursor]
            if plan[site] + 1 < len(spaces[site].candidates):
                return site
            self.cursor += 1
        return None

    def finish(self, site: int) -> None:
        self.cursor += 1

    def copy(self) -> _Static:
        return _Static(self.order, self.cursor)


def _lower(judge: Judge, spaces: Mapping[int, SiteSpace], plan: dict[int, int], dag: nx.DiGraph | None,
           order: _Order, jump: bool) -> None:
    while True:
        site = order.next_site(spaces, plan)
        if site is None:
            return
        if jump:
            landed = _jump(judge, spaces, plan, order)
            if landed is not None:
                plan, order = landed
                continue
        moved = _step(judge, spaces, plan, site, dag, order)
        if moved is None:
            order.finish(site)  # revert: keep ``plan``; the site is not lowered again
        else:
            plan = moved


def predicted_error(spaces: Mapping[int, SiteSpace], anchor: Mapping[int, int], anchor_error: float,
                    plan: Mapping[int, int]) -> float | None:
    """The error of ``plan`` predicted from a judged plan ``anchor``: its error plus, for every site
    the two plans run differently, the difference of the errors the site's candidates gave alone.
    None when one of those candidates has no measured error."""
    total = anchor_error
    for site, index in plan.items():
        if index != anchor[site]:
            now, then = spaces[site].candidates[index].error, spaces[site].candidates[anchor[site]].error
            if now is None or then is None:
                return None
            total += now - then
    return total


def _jump(judge: Judge, spaces: Mapping[int, SiteSpace], plan: dict[int, int],
          order: _Order) -> tuple[dict[int, int], _Order] | None:
    """Follow the steps the search would take from ``plan`` while each is predicted to fit
    (:func:`predicted_error`, from ``plan``'s judged error), judge the last one, and bisect back
    along them if it does not fit. The furthest step judged within budget and the order's state
    there, or None when fewer than two steps are predicted to fit or none of them does."""
    anchor_error = judge.known(plan)
    if anchor_error is None:
        return None
    chain: list[tuple[dict[int, int], _Order]] = []
    state, at = order.copy(), plan
    beyond: list[dict[int, int]] = []  # the step the chain stopped at: judged next if its end fits
    while (site := state.next_site(spaces, at)) is not None:
        step = {**at, site: at[site] + 1}
        known = judge.known(step)
        error = known if known is not None else predicted_error(spaces, plan, anchor_error, step)
        if error is None or not judge.fits(error):
            beyond = [step]
            break
        chain.append((step, state.copy()))
        at = step
    if len(chain) < 2:
        return None  # a single step costs one evaluation either way
    fits_up_to, fails_at = -1, len(chain) - 1  # chain[-1] stands for ``plan`` (judged, fits)
    judge.ahead([chain[fails_at][0], *beyond, *(chain[i][0] for i in _bisection_points(fits_up_to, fails_at, fails_at)[1:])])
    if judge.fits(judge.error(chain[fails_at][0])):
        return chain[fails_at]
    while fails_at - fits_up_to > 1:
        mid = (fits_up_to + fails_at) // 2
        judge.ahead([chain[i][0] for i in _bisection_points(fits_up_to, fails_at, mid)])
        if judge.fits(judge.error(chain[mid][0])):
            fits_up_to = mid
        else:
            fails_at = mid
    return chain[fits_up_to] if fits_up_to >= 0 else None


def _bisection_points(fits_up_to: int, fails_at: int, first: int) -> list[int]:
    """The chain indices a bisection between ``fits_up_to`` and ``fails_at`` may judge, in the order
    the next ones come: ``first`` (the midpoint judged now), then the midpoints of each half
    (speculation for ``Judge.ahead``: which ones are judged depends on the outcomes)."""
    out, spans = [first], [(fits_up_to, fails_at)]
    while spans and len(out) < 8:
        low, high = spans.pop(0)
        if high - low > 1:
            mid = (low + high) // 2
            if mid not in out:
                out.append(mid)
            spans += [(low, mid), (mid, high)]
    return out


def _step(judge: Judge, spaces: Mapping[int, SiteSpace], plan: dict[int, int], site: int,
          dag: nx.DiGraph | None, order: _Order) -> dict[int, int] | None:
    """``plan`` with ``site`` lowered one candidate (with a predecessor raised, if that is what it
    takes) when that is within budget, else None. ``order``: the search's state, for speculation."""
    lowered = {**plan, site: plan[site] + 1}
    trades = _predecessor_trades(judge, spaces, plan, lowered, site, dag)
    judge.ahead([lowered, *_judged_after(judge, spaces, plan, lowered, site, order, trades)])
    if judge.fits(judge.error(lowered)):
        return lowered
    for traded in trades:
        if judge.fits(judge.error(traded)):
            return traded
    return None


def _judged_after(judge: Judge, spaces: Mapping[int, SiteSpace], plan: dict[int, int], lowered: dict[int, int],
                  site: int, order: _Order, trades: list[dict[int, int]]) -> list[dict[int, int]]:
    """The plans the search judges after ``lowered`` on the path the sites' measured errors predict
    (:func:`predicted_error` from ``plan``): if the step is predicted to fit, the next step from
    ``lowered``; if not, the predecessor trades in turn, then the next site's step from ``plan``
    (``site`` finished). Without a prediction, both paths. Speculation for ``Judge.ahead``: a plan
    measured off the path the search takes costs a run and the cores it takes from the others."""
    after = order.copy()
    nxt = after.next_site(spaces, lowered)
    success = [] if nxt is None else [{**lowered, nxt: lowered[nxt] + 1}]
    failed = order.copy()
    failed.finish(site)
    nxt = failed.next_site(spaces, plan)
    failure = [*trades, *([] if nxt is None else [{**plan, nxt: plan[nxt] + 1}])]
    anchor = judge.known(plan)
    predicted = None if anchor is None else predicted_error(spaces, plan, anchor, lowered)
    if predicted is None:
        return [*trades, *success, *failure[len(trades):]]
    return [*success, *failure] if judge.fits(predicted) else [*failure, *success]


def _predecessor_trades(
    judge: Judge,
    spaces: Mapping[int, SiteSpace],
    plan: dict[int, int],
    lowered: dict[int, int],
    site: int,
    dag: nx.DiGraph | None,
) -> list[dict[int, int]]:
    """The plans ``lowered`` with one predecessor of ``site`` raised a step that a failing step
    tries, in the order it tries them (see the module docstring for which predecessors qualify)."""
    if dag is None or site not in dag:
        return []
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
    return [traded for *_, traded in sorted(options, key=lambda o: o[:3])]
