"""A site's candidates, ordered for the search and pruned to their error/time Pareto front.

The search lowers a site by moving to the next candidate, so the candidates must run from the
most precise (slowest) to the least precise (fastest). A candidate that is both slower and less
precise than another one (on the site alone) can never be part of a good plan, and every such
candidate would cost the greedy search an evaluation: it is pruned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mixjit.passes.tuning.space import Candidate, SiteSpace

__all__ = ["by_modeled_time", "pareto_front", "prune_space"]


def by_modeled_time(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """``candidates`` from the slowest modeled time to the fastest (the search's order: the most
    precise first). Ties: the smaller measured error first, then the given order."""
    indexed = sorted(enumerate(candidates), key=lambda ic: (-ic[1].time, _error_key(ic[1]), ic[0]))
    return tuple(c for _, c in indexed)


def pareto_front(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """The candidates that no other candidate beats on both error and modeled time, most precise
    (slowest) first.

    Candidate ``d`` dominates ``c`` when both errors are measured, ``d.error <= c.error`` and
    ``d.time <= c.time``, with at least one strict; of two candidates with equal error and time
    the first given is kept. A NaN error counts as the worst error. Candidates whose error is not
    measured (``None``) are kept as given: nothing is known against them, and they dominate nothing.
    """
    kept: list[Candidate] = []
    for i, c in enumerate(candidates):
        if c.error is not None and any(_dominates(d, c, j < i) for j, d in enumerate(candidates) if j != i):
            continue
        kept.append(c)
    return by_modeled_time(kept)


def prune_space(space: SiteSpace) -> SiteSpace:
    """``space`` with its candidates pruned by :func:`pareto_front` (same site id)."""
    return SiteSpace(space.site, pareto_front(space.candidates))


def _error_key(c: Candidate) -> float:
    if c.error is None or math.isnan(c.error):
        return math.inf
    return c.error


def _dominates(d: Candidate, c: Candidate, d_first: bool) -> bool:
    """Does ``d`` dominate ``c`` (``d_first``: ``d`` comes first, which breaks exact ties)?"""
    if d.error is None:
        return False
    de, ce = _error_key(d), _error_key(c)
    if de > ce or d.time > c.time:
        return False
    return de < ce or d.time < c.time or d_first
