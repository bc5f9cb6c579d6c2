"""Profiling a @mixjit function on sample inputs, and its sites' candidates.

One run of the compiled function with the entry's profile flag set
(``mixjit.entry.set_profiling``) records, per site: the (m, n, k) of every call and
how often each came (the entry's lock-free shape log), and the MixPert executor's
statistics (fallback tiles, widest exponent span along K, outputs redone by the
certified path, non-finite outputs). The loop depth comes from the GEMM DAG
(``build-dag``). Each candidate gets its *modeled* time over the profiled calls on
the target (``mixjit.runtime.costmodel``); never a measured one.

A site's candidates are every config of each scheme that accepts its dtype and has
a compiled executor (``mixjit.entry.EXECUTORS``), plus ``native``; with ``schemes=``,
only those schemes (and ``native``). So a float64 site may also run ``mixpert``
(float32 accuracy) when the budget allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from mixjit import entry
from mixjit.passes.tuning.profile import SiteProfile
from mixjit.passes.tuning.space import Candidate
from mixjit.plan import SiteRecord, candidate_schemes
from mixjit.runtime.executor_mixpert import (
    STAT_CERTIFIED,
    STAT_EXACT_COLS,
    STAT_EXACT_ROWS,
    STAT_FALLBACK_TILES,
    STAT_NONFINITE,
    STAT_SLOW_ELEMENTS,
    STAT_TILES,
    STAT_WIDEST_SPAN,
)
from mixjit.runtime.costmodel import modeled_calls_time
from mixjit.runtime.schemes.base import get_scheme

__all__ = ["TunedSite", "ShapeLog", "profile_run", "site_candidates", "site_profile"]

_STAT_NAMES = {
    "fallback_tiles": STAT_FALLBACK_TILES,
    "tiles": STAT_TILES,
    "nonfinite_outputs": STAT_NONFINITE,
    "exact_rows": STAT_EXACT_ROWS,
    "exact_cols": STAT_EXACT_COLS,
    "widest_span": STAT_WIDEST_SPAN,
    "certified_outputs": STAT_CERTIFIED,
    "slow_path_outputs": STAT_SLOW_ELEMENTS,
}
"""``mix.profile`` stats keys -> MixPert executor statistic (sums over calls; widest_span: maximum)."""


@dataclass(frozen=True)
class TunedSite:
    """One linked site of a compiled signature: its process id, its position among the
    signature's sites (``index``, stable across processes: plan files use it) and what it is."""

    id: int
    index: int
    record: SiteRecord

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.record.dtype)


@dataclass(frozen=True)
class ShapeLog:
    """What the profiled run saw at one site: (m, n, k, calls) per shape, calls whose shape the
    log could not hold (counted, not modeled), and the executor statistics."""

    shapes: tuple[tuple[int, int, int, int], ...]
    unlogged_calls: int
    stats: dict[str, float]

    @property
    def calls(self) -> int:
        return sum(s[3] for s in self.shapes) + self.unlogged_calls


def profile_run(run: Callable[[], object], sites: Sequence[TunedSite]) -> dict[int, ShapeLog]:
    """Run ``run`` once with the entry's profile flag set; the shape log of each site."""
    ids = [s.id for s in sites]
    entry.reset_profile(ids)
    entry.set_profiling(True)
    try:
        run()
    finally:
        entry.set_profiling(False)
    out = {}
    for sid in ids:
        shapes, unlogged = entry.shape_log(sid)
        raw = entry.site_stats(sid)
        stats = {name: float(raw[i]) for name, i in _STAT_NAMES.items()} if raw.any() else {}
        out[sid] = ShapeLog(tuple(shapes), unlogged, stats)
    entry.reset_profile(ids)
    return out


def site_candidates(dtype: np.dtype, schemes: Sequence[str] | None, shapes: Sequence[tuple[int, int, int, int]],
                    target: str) -> tuple[Candidate, ...]:
    """Every (scheme, config) a site of ``dtype`` may run (see the module docstring), with its
    modeled time over ``shapes``; the initial plan's config first, then as the schemes list them
    (the default schemes, then the other compiled ones by name)."""
    names = list(candidate_schemes(schemes, dtype))
    if schemes is None:  # every compiled scheme may serve, the default ones first
        names += sorted(n for n in entry.EXECUTORS if n not in names)
    if "native" not in names:
        names.append("native")
    out = []
    for name in names:
        scheme = get_scheme(name)
        if dtype not in scheme.dtypes or name not in entry.EXECUTORS:
            continue
        for config in scheme.configs(dtype):
            out.append(Candidate(name, config.label, modeled_calls_time(name, config.label, shapes, dtype, target),
                                 scheme.products(config)))
    return tuple(out)


def site_profile(site: TunedSite, log: ShapeLog, loop_depth: int, target: str,
                 candidates: Sequence[Candidate]) -> SiteProfile:
    """The ``mix.profile`` record of one site."""
    return SiteProfile(site.id, site.record.dtype, target, log.calls, loop_depth, log.shapes, tuple(candidates),
                       dict(log.stats))
