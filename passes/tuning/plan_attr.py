"""The tuner's result in the IR: ``mix.plan`` on each ``mix.gemm``, ``mix.tuning`` on the module.

``mix.plan`` (discardable, written by the ``tune`` pass) is the candidate the site runs, with the
error and modeled time it was chosen with::

    mix.plan = {config = "level=III", error = 2.0e-07 : f64, modeled_time = 0.0013 : f64,
                scheme = "mixpert"}

``error``: the program error measured with this site alone on this candidate (its contribution;
absent if never measured). ``modeled_time``: modeled seconds of the site's profiled calls on the
target (cost model, not a measurement).

``mix.tuning`` (on the ``builtin.module``) says how the plan was found: budget, margin, target,
search, error model, the plan's modeled program error and modeled time, the most precise plan's
modeled time, the number of evaluations, whether the plan is within budget, and why the search
stopped (``complete``, ``max-evals`` or ``interrupted``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mixjit.ir.attributes import Attribute, DictAttr, dict_attr
from mixjit.passes.tuning.attrs import as_dict, as_float, as_str, get
from mixjit.passes.tuning.space import Candidate

__all__ = ["PLAN_ATTR", "TUNING_ATTR", "SitePlan"]

PLAN_ATTR = "mix.plan"
TUNING_ATTR = "mix.tuning"


@dataclass(frozen=True)
class SitePlan:
    """What a site runs after tuning (the ``mix.plan`` attribute)."""

    scheme: str
    config: str
    modeled_time: float
    error: float | None = None

    @property
    def label(self) -> str:
        """``scheme[config]``, as :attr:`Candidate.label`."""
        return f"{self.scheme}[{self.config}]"

    @staticmethod
    def of(candidate: Candidate) -> "SitePlan":
        """The plan entry of a chosen candidate."""
        return SitePlan(candidate.scheme, candidate.config, candidate.time, candidate.error)

    def to_attr(self) -> DictAttr:
        """The ``mix.plan`` attribute value."""
        entry: dict[str, object] = {"scheme": self.scheme, "config": self.config,
                                    "modeled_time": float(self.modeled_time)}
        if self.error is not None:
            entry["error"] = float(self.error)
        return dict_attr(entry)

    @staticmethod
    def from_attr(site: int, attr: Attribute) -> "SitePlan":
        """Read a ``mix.plan`` value back; TuningAttrError names the missing or bad field."""
        where = f"{PLAN_ATTR} of site {site}"
        d = as_dict(attr, where)
        error = as_float(d["error"], f"{where}: error", nonnegative=True) if "error" in d else None
        return SitePlan(as_str(get(d, "scheme", where), f"{where}: scheme"),
                        as_str(get(d, "config", where), f"{where}: config"),
                        as_float(get(d, "modeled_time", where), f"{where}: modeled_time", nonnegative=True),
                        error)
