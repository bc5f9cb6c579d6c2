"""The offline evaluator: a program's error under a plan, estimated from the profile alone.

Profiling measures, for every candidate ``c`` of every site ``s``, the program error ``e_s(c)``
when ``s`` alone runs ``c`` and every other site runs the reference (``Candidate.error``). That
measurement already includes how ``s``'s error propagates through everything downstream of it
(the later sites, the loop-carried iterations, the non-GEMM code): the whole program ran.

The model combines these per-site errors to first order. A site that runs ``c`` perturbs its
output by a relative error ``d_s``; to first order in the ``d``'s the program's output error is
the sum of the effects each perturbation has on its own, which are what was measured, so

* ``combine="sum"`` (default): ``E(plan) = sum_s e_s(plan[s])``, the triangle inequality's
  bound on that first-order sum (errors that add up in the same direction); and
* ``combine="rss"``: ``E(plan) = sqrt(sum_s e_s(plan[s])**2)``, its expected size when the
  site errors are independent and zero-mean (rounding errors of different GEMMs usually are).

No amplification factor is applied along DAG edges: each ``e_s`` was measured downstream of
nothing but reference sites and upstream of the whole rest of the program, so multiplying it by
an edge's gain would count that propagation twice. What the model leaves out: the second-order
terms (products ``d_p * d_s`` of a predecessor's and a site's errors, which matter only when site
errors are large, around 1e-2 and up, or the program amplifies them strongly, e.g. a nearly
singular Cholesky), cancellation between sites (``sum`` overestimates then), the maximum over
outputs (a per-site maximum taken on different outputs: ``sum`` overestimates again), and inputs
other than the profiled ones. docs/tuning.md says how far it is from real runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from mixjit.passes.tuning.space import Candidate, Plan, SiteSpace

__all__ = ["ErrorModel", "measured_space", "COMBINE_RULES"]

COMBINE_RULES = ("sum", "rss")


def measured_space(space: SiteSpace) -> tuple[SiteSpace | None, tuple[Candidate, ...]]:
    """The site's space restricted to candidates with a measured error (None when there is none),
    and the candidates left out (the offline model cannot judge them)."""
    kept = tuple(c for c in space.candidates if c.error is not None)
    dropped = tuple(c for c in space.candidates if c.error is None)
    return (SiteSpace(space.site, kept) if kept else None), dropped


@dataclass(frozen=True)
class ErrorModel:
    """Implements the Evaluator protocol from the per-site errors of ``spaces`` (see the module
    docstring). Every candidate must have a measured, non-negative error (``measured_space``)."""

    spaces: Mapping[int, SiteSpace]
    combine: str = "sum"

    def __post_init__(self) -> None:
        if self.combine not in COMBINE_RULES:
            raise ValueError(f"unknown combine rule '{self.combine}': use one of {', '.join(COMBINE_RULES)}")
        for site, space in self.spaces.items():
            for c in space.candidates:
                if c.error is None:
                    raise ValueError(
                        f"site {site}: candidate {c.label} has no measured error; the offline model needs "
                        "every candidate's error measured alone (profile on sample inputs, or drop it)"
                    )
                if not c.error >= 0:  # also refuses NaN
                    raise ValueError(f"site {site}: candidate {c.label} has error {c.error}; errors are >= 0")

    def site_error(self, site: int, index: int) -> float:
        """``e_s(c)``: the program error measured with ``site`` alone at candidate ``index``."""
        space = self.spaces.get(site)
        if space is None:
            raise KeyError(f"plan names site {site}, which the model does not know (sites: {sorted(self.spaces)})")
        if not 0 <= index < len(space.candidates):
            raise IndexError(f"plan gives site {site} candidate {index}; it has {len(space.candidates)}")
        error = space.candidates[index].error
        assert error is not None  # checked in __post_init__
        return error

    def error(self, plan: Plan) -> float:
        """The modeled program error of ``plan`` (which must give every site a candidate)."""
        missing = sorted(set(self.spaces) - set(plan))
        if missing:
            raise KeyError(f"plan gives no candidate to site(s) {missing}")
        errors = [self.site_error(site, index) for site, index in sorted(plan.items())]
        if self.combine == "rss":
            return math.sqrt(math.fsum(e * e for e in errors))
        return math.fsum(errors)
