"""Re-model a profile's candidate times for another target.

A profile records modeled times for the target it was profiled for. Tuning for another target
needs the cost model (``mixjit.runtime.model.costmodel.modeled_calls_time(scheme, config, shapes,
dtype, target)``: modeled seconds of the profiled ``[m, n, k, calls]`` shapes); the measured
errors stay (the schemes' numerics do not depend on the hardware). Without a cost model the
mismatch is an error: times of one part are never silently used for another. The cost model is
imported only when a profile must be re-modeled.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from mixjit.passes.tuning.profile import SiteProfile

__all__ = ["TargetMismatch", "cost_model", "retarget"]

COSTMODEL_MODULE = "mixjit.runtime.model.costmodel"

CallsTime = Callable[[str, str, Sequence[tuple[int, int, int, int]], str, str], float]
"""``(scheme, config, shapes, dtype, target) -> modeled seconds`` of all the shapes' calls."""


class TargetMismatch(ValueError):
    """A profile's target is not the requested one, and its times cannot be re-modeled."""


def cost_model() -> CallsTime | None:
    """``modeled_calls_time`` of the cost model, or None when the cost model is not installed."""
    try:
        module = importlib.import_module(COSTMODEL_MODULE)
    except ModuleNotFoundError as err:
        if err.name is not None and COSTMODEL_MODULE.startswith(err.name):
            return None
        raise
    return getattr(module, "modeled_calls_time", None)


def retarget(profile: SiteProfile, target: str, calls_time: CallsTime | None) -> SiteProfile:
    """``profile`` with every candidate's time re-modeled for ``target`` over the profiled shapes
    by ``calls_time`` (:func:`cost_model`). ``profile`` itself when it was recorded for ``target``.
    TargetMismatch when it was not and ``calls_time`` is None, or when the cost model refuses a
    candidate (its message is kept)."""
    if profile.target == target:
        return profile
    move = f"site {profile.site}'s profile was recorded for target '{profile.target}', not '{target}'"
    if calls_time is None:
        raise TargetMismatch(
            f"{move}: re-modeling its times needs {COSTMODEL_MODULE}.modeled_calls_time, which is not available; "
            f"tune with target={profile.target} or profile again for {target}"
        )
    if not profile.shapes:
        raise TargetMismatch(f"{move}: it records no shapes to re-model its times from")
    candidates = []
    for c in profile.candidates:
        try:
            time = calls_time(c.scheme, c.config, profile.shapes, profile.dtype, target)
        except (KeyError, ValueError) as err:
            raise TargetMismatch(f"{move}: the cost model cannot re-model {c.label}: {err}") from None
        candidates.append(replace(c, time=float(time)))
    return replace(profile, target=target, candidates=tuple(candidates))
