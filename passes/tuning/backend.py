"""Where the ``tune`` pass gets what the IR does not carry: profiles of unprofiled sites, the
evaluator that judges plans and a progress callback. (The search's result goes back to the
caller as the pass's ``PassResult``, not through the backend.)

The pass asks its run's analysis manager for :class:`TuningBackend`. By default that is
:class:`OfflineBackend`: profiles come only from ``mix.profile`` attributes and plans are judged
by the error model fitted from them (``mixopt -p "tune{...}"``). A caller that can run the
program registers its own backend for the run (``AnalysisManager.register(TuningBackend, ...)``,
as LLVM registers a configured ``TargetLibraryAnalysis``): the ``@mixjit`` tuner
(``mixjit.tuning.online``) profiles each site on the sample inputs and judges a plan by writing
the plan table and running the compiled function. Both run the same pass, so the search, its
options, remarks, ``mix.plan`` / ``mix.tuning`` attributes and pass instrumentation are shared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from mixjit.ir.dialects.mix import SiteOp
from mixjit.passes.analysis import Analysis
from mixjit.passes.tuning.error_model import ErrorModel
from mixjit.passes.tuning.judge import ProgressCallback
from mixjit.passes.tuning.profile import SiteProfile
from mixjit.passes.tuning.space import Evaluator, SiteSpace

__all__ = ["Backend", "OfflineBackend", "TuningBackend", "SiteProfiles"]


@dataclass
class SiteProfiles:
    """What a backend found for sites without ``mix.profile``: a profile per site it measured, and
    the reason for each site it leaves at its most precise config (e.g. it never ran)."""

    profiles: dict[int, SiteProfile] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)


class Backend(Protocol):
    """What the ``tune`` pass needs beyond the IR (see the module docstring)."""

    model: str
    """How plans are judged, as ``mix.tuning`` records it (``additive``, ``online``)."""

    def profile(self, ops: Mapping[int, SiteOp]) -> SiteProfiles:
        """Profiles of the sites ``ops`` (site id -> op), which carry no ``mix.profile``."""
        ...

    def evaluator(self, spaces: Mapping[int, SiteSpace]) -> Evaluator:
        """The evaluator of plans over ``spaces`` (the pruned candidates the search moves in)."""
        ...

    def progress(self) -> ProgressCallback | None:
        """Called after every evaluation of the search (a progress bar), or None."""
        ...


class OfflineBackend:
    """The default: profiles only from attributes, plans judged by :class:`ErrorModel`."""

    model = "additive"

    def profile(self, ops: Mapping[int, SiteOp]) -> SiteProfiles:
        return SiteProfiles()  # nothing to measure offline: the pass reports the missing profiles

    def evaluator(self, spaces: Mapping[int, SiteSpace]) -> Evaluator:
        return ErrorModel(spaces)

    def progress(self) -> ProgressCallback | None:
        return None


class TuningBackend(Analysis):
    """The run's tuning backend (an analysis so that a caller can register its own per run)."""

    name: ClassVar[str] = "tuning-backend"

    @classmethod
    def compute(cls, module: Any) -> Backend:
        return OfflineBackend()
