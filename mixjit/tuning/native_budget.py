"""Native precision and the error budget: ``error_budget="native"``, and no silent slowdown.

Every tuning measures the program's error with every site native (plain BLAS in the program's
own precision) against the reference run (exact products). Two things follow from it:

* ``error_budget="native"`` means "no less accurate than this program's native run": the budget
  of the tuning is ``NATIVE_MARGIN`` times native's measured error on the tuning sample. Native
  itself always meets it, so the plan never runs slower than native (modeled); any faster plan
  the tuner finds is at most a quarter less accurate than native on the sample.
* When a numeric budget is below native's error, the tuner cannot choose native: it picks a more
  precise emulation, which may be slower than native. ``slowdown_advice`` says so, with native's
  error, the budget, the plan chosen and its modeled speedup, and what to do; ``f.report()``
  shows it, and the tuning warns once with it when the plan chosen is modeled slower than
  native (``slows_down``).
"""

from __future__ import annotations

import math
import sys
from typing import Any, Mapping

__all__ = ["NATIVE", "NATIVE_MARGIN", "is_native", "native_budget", "budget_text", "native_plan",
           "slowdown_advice", "slows_down"]

NATIVE = "native"
"""The ``error_budget`` (``f.tune(budget=...)``, plan files) meaning "no less accurate than native"."""

NATIVE_MARGIN = 1.25
"""``error_budget="native"`` is this many times native's measured error: the error of a plan is
measured on one sample, and a scheme of native's accuracy that rounds differently lands a few
percent to either side of it; a quarter more keeps such schemes eligible while no plan may be
noticeably less accurate than native."""


def is_native(budget: Any) -> bool:
    """Is ``budget`` the ``"native"`` budget?"""
    return isinstance(budget, str) and budget == NATIVE


def native_budget(native_error: float | None) -> float:
    """The numeric budget of ``error_budget="native"`` for a measured native error (None: no site
    ran, nothing to compare: the smallest positive budget). ValueError when native's error is
    not finite (native overflowed on the sample: "as accurate as native" bounds nothing)."""
    if native_error is None:
        return sys.float_info.min
    if not math.isfinite(native_error):
        raise ValueError(f"mixjit: error_budget='native': the program's native run has error {native_error} on "
                         "these inputs (not finite), so it bounds nothing; give a numeric budget")
    return max(NATIVE_MARGIN * native_error, sys.float_info.min)


def budget_text(asked: float | str, budget: float | None = None) -> str:
    """A budget as the user gave it: ``1e-06``, or ``native`` with its value (``budget``) if known."""
    if is_native(asked):
        return f"native ({NATIVE_MARGIN:g} x native's error = {budget:.2e})" if budget is not None else NATIVE
    return f"{asked:g}"


def native_plan(spaces: Mapping[int, Any]) -> dict[int, int] | None:
    """The plan running every site of ``spaces`` (``SiteSpace`` by site id) native: its candidate
    index per site; None when a site has no native candidate."""
    plan = {}
    for sid, space in spaces.items():
        index = next((i for i, c in enumerate(space.candidates) if c.scheme == NATIVE), None)
        if index is None:
            return None
        plan[sid] = index
    return plan


def slowdown_advice(qualname: str, native_error: float | None, budget: float, asked: float | str,
                    plan: Any) -> str | None:
    """What to say when native's error breaks the (numeric) budget: native's error, the budget,
    the plan chosen (a ``TunedPlan``) and its modeled speedup, and what to do. None when native
    meets the budget (the tuner is free to run native) or was not measured."""
    if native_error is None or is_native(asked) or (math.isfinite(native_error) and native_error <= budget):
        return None
    chosen = ", ".join(f"site {s.index} {s.scheme}[{s.config}]" for s in plan.sites)
    speedup = plan.modeled_speedup
    pace = (f"modeled {speedup:.2f}x native" + (" (slower than native)" if speedup < 1 else "")
            if speedup is not None else "modeled speed unknown")
    suggest = f"{native_error:.1e}" if math.isfinite(native_error) else "a larger number"
    return (f"mixjit: {qualname}: the native plan breaks the error budget: native's error is {native_error:.2e} "
            f"against the reference (exact products), above the budget {budget:g}, so the tuner cannot choose "
            f"it; chosen: {chosen} ({pace}). To let it run native, give a budget at or above native's error "
            f"(error_budget={suggest}, or error_budget='native': no less accurate than the native run); if "
            "outputs are not unique (eigenvector signs, ties), give a metric= that compares what is (e.g. "
            "eigenvalues, or vectors up to sign)")


def slows_down(plan: Any) -> bool:
    """Is ``plan`` (a ``TunedPlan``) modeled slower than native, or its speed unknown?"""
    return plan.modeled_speedup is None or plan.modeled_speedup < 1
