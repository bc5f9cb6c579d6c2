"""Profiling a @mixjit function on sample inputs, and its sites' candidates.

One run of the compiled function with the entry's profile flag set
(``mixjit.entry.set_profiling``) records, per site: the (m, n, k) of every call and
how often each came (the entry's lock-free shape log), and the MixPert executor's
statistics (fallback tiles, widest exponent span along K, outputs redone by the
certified path, non-finite outputs). The loop depth comes from the GEMM DAG
(``build-dag``). Each candidate gets its *modeled* time over the profiled calls on
the target (``mixjit.runtime.model.costmodel``); never a measured one.

A site's candidates are every config of its candidate schemes that accept its dtype
and have a compiled executor (``mixjit.entry.EXECUTORS``), plus ``native``. With
``schemes=``, the candidate schemes are those named. Without (``schemes=None``), they
are :data:`TUNING_DEFAULT_SCHEMES` for the site's dtype: the INT8 tensor-core emulations
whose most precise config is FP32-class or better (MixPert's ``mixpert``; for float64
also ``mixpert-fp64`` and Ozaki-II's FP64-class moduli), plus ``native``. So a float64
site may also run ``mixpert`` (float32 accuracy) when the budget allows. Every other
scheme is opt-in through ``schemes=``: the error-tolerant ones (``int8``, ``split``,
``dfp``, ``vitbit``) and the emulations on other tensor-core formats (``tf32x3``,
``bf16xn``, ``fp16x2``, ``ozaki2`` on float32), whose low configs are error-tolerant too.
Why not every scheme: the tuner measures each candidate with one program run, and a
float32 site of every compiled scheme has ~26 candidates (with a compilation of every
executor on the first call).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from mixjit import entry
from mixjit.passes.tuning.profile import SiteProfile
from mixjit.passes.tuning.space import Candidate
from mixjit.plan import (
    LINALG_SCHEME,
    SITE_DTYPES,
    SitePlan,
    SiteRecord,
    candidate_schemes,
    initial_plan,
    linalg_native_plan,
    reference_plan,
    spec_configs,
)
from mixjit.runtime.mixpert.executor import (
    STAT_CERTIFIED,
    STAT_EXACT_COLS,
    STAT_EXACT_ROWS,
    STAT_FALLBACK_TILES,
    STAT_NONFINITE,
    STAT_SLOW_ELEMENTS,
    STAT_TILES,
    STAT_WIDEST_SPAN,
)
from mixjit.runtime.model.costmodel import modeled_calls_time
from mixjit.runtime.schemes import catalog

if TYPE_CHECKING:
    from mixjit.tuning.protocol import TunableFunction

__all__ = ["TUNING_DEFAULT_SCHEMES", "TunedSite", "signature_sites", "ShapeLog", "start_profile", "read_profile",
           "tuning_schemes", "site_candidates", "linalg_candidates", "site_profile"]

TUNING_DEFAULT_SCHEMES: dict[str, tuple[str, ...]] = {
    dt: catalog.default_schemes("tuning", dt) for dt in SITE_DTYPES}
"""The candidate schemes of a site of each dtype when the user names none (module docstring):
the scheme catalogue's ``tuning`` role (mixjit.runtime.schemes.catalog)."""

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

    @property
    def linalg(self) -> str | None:
        """The ``np.linalg`` function of a linalg site (``solve``), None for a GEMM site."""
        op = getattr(self.record, "op", "gemm")
        return None if op == "gemm" else op

    def initial_plan(self, schemes: Sequence[str] | None) -> SitePlan:
        """Its plan before tuning: a GEMM site's first candidate scheme at its most precise
        config (``mixjit.plan.initial_plan``), a linalg site's ``native`` LAPACK call."""
        return linalg_native_plan() if self.linalg else initial_plan(schemes, self.dtype)

    def reference_plan(self) -> SitePlan:
        """What it runs in the tuner's reference run (``mixjit.plan.reference_plan``; a linalg
        site: the LAPACK call, the reference's choice)."""
        return linalg_native_plan() if self.linalg else reference_plan(self.dtype)

    def candidates(self, schemes: Sequence[str] | None, shapes: Sequence[tuple[int, int, int, int]],
                   target: str) -> tuple[Candidate, ...]:
        """Its candidates (:func:`site_candidates`, :func:`linalg_candidates`)."""
        if self.linalg:
            return linalg_candidates(self.linalg, self.dtype, schemes, shapes, target)
        return site_candidates(self.dtype, schemes, shapes, target)


def signature_sites(f: TunableFunction, key: tuple) -> tuple[TunedSite, ...]:
    """The linked sites of one compiled signature (callees' included), in a stable order."""
    from mixjit.plan import SiteBlock

    out: list[TunedSite] = []
    for block in f.site_blocks(key):
        if not isinstance(block, SiteBlock):
            continue  # a compilation that runs as plain Numba (mixjit.sites.NotLinked)
        for sid, rec in zip(block.site_ids(), block.records):
            out.append(TunedSite(sid, len(out), rec))
    return tuple(out)


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


def start_profile(ids: Sequence[int]) -> None:
    """Clear the shape logs and statistics of sites ``ids`` and set the entry's profile flag."""
    entry.reset_profile(list(ids))
    entry.set_profiling(True)


def read_profile(ids: Sequence[int]) -> dict[int, ShapeLog]:
    """Clear the profile flag; the shape log of each site of ``ids`` since ``start_profile``."""
    entry.set_profiling(False)
    out = {}
    for sid in ids:
        shapes, unlogged = entry.shape_log(sid)
        raw = entry.site_stats(sid)
        stats = {name: float(raw[i]) for name, i in _STAT_NAMES.items()} if raw.any() else {}
        out[sid] = ShapeLog(tuple(shapes), unlogged, stats)
    entry.reset_profile(list(ids))
    return out


def tuning_schemes(dtype: np.dtype, schemes: Sequence[str] | None) -> tuple[str, ...]:
    """The candidate schemes of a site of ``dtype``: ``schemes`` when given, else the initial
    plan's scheme (``mixjit.plan.DEFAULT_SCHEMES``) then :data:`TUNING_DEFAULT_SCHEMES`;
    ``native`` always. Unknown names raise ValueError (``candidate_schemes``)."""
    names = list(candidate_schemes(schemes, dtype))
    if schemes is None:
        names += [n for n in TUNING_DEFAULT_SCHEMES[np.dtype(dtype).name] if n not in names]
    if "native" not in names:
        names.append("native")
    return tuple(names)


def site_candidates(dtype: np.dtype, schemes: Sequence[str] | None, shapes: Sequence[tuple[int, int, int, int]],
                    target: str) -> tuple[Candidate, ...]:
    """Every (scheme, config) a site of ``dtype`` may run (:func:`tuning_schemes`, each scheme's
    configs most precise first, schemes without a compiled executor or that refuse ``dtype``
    left out), with its modeled time over ``shapes``; the initial plan's config first."""
    out = []
    for spec in tuning_schemes(np.dtype(dtype), schemes):
        scheme, configs = spec_configs(spec, dtype)  # a spec such as "int8{encoding=sf16}" fixes fields
        name = scheme.name
        if dtype not in scheme.dtypes or not scheme.runs_at_sites:
            continue
        for config in configs:
            out.append(Candidate(name, config.label, modeled_calls_time(name, config.label, shapes, dtype, target),
                                 scheme.products(config)))
    return tuple(out)


def linalg_candidates(fn: str, dtype: np.dtype, schemes: Sequence[str] | None,
                      shapes: Sequence[tuple[int, int, int, int]], target: str) -> tuple[Candidate, ...]:
    """The candidates of a ``np.linalg.<fn>`` site of ``dtype``: ``native`` (the LAPACK call) and a
    blocked candidate (scheme ``linalg``) per GEMM config the site's dtype would offer a GEMM site
    (:func:`site_candidates`, ``native`` left out), at the block size the cost model prices fastest
    over ``shapes``, without refinement and (``solve``, ``inv``, ``lstsq``) with it. With ``shapes``
    (the profiled ``(m, nrhs, n, calls)``, A being m x n: square but for ``lstsq``), a blocked
    candidate not modeled faster than ``native`` is left out: the reference runs ``native``, so it
    would be slower and no more precise."""
    from mixjit.runtime.linalg.config import BLOCK_SIZES, LAPACK, REFINABLE, LinalgConfig
    from mixjit.runtime.linalg.cost import modeled_linalg_time

    def modeled(config: LinalgConfig | str) -> float:
        return sum(calls * modeled_linalg_time(fn, n, nrhs, config, dtype, target, rows=m) for m, nrhs, n, calls in shapes)

    native = linalg_native_plan()
    out = [Candidate(native.scheme, native.config, modeled(LAPACK))]
    refines = (False, True) if fn in REFINABLE else (False,)
    for gemm in site_candidates(dtype, schemes, (), target):
        if gemm.scheme == native.scheme:
            continue
        for refine in refines:
            configs = [LinalgConfig(nb, gemm.scheme, gemm.config, refine) for nb in BLOCK_SIZES]
            best = min(configs, key=modeled)
            time = modeled(best)
            if shapes and time >= out[0].time:
                continue
            out.append(Candidate(LINALG_SCHEME, best.label, time, gemm.products))
    return tuple(out)


def site_profile(site: TunedSite, log: ShapeLog, loop_depth: int, target: str,
                 candidates: Sequence[Candidate]) -> SiteProfile:
    """The ``mix.profile`` record of one site."""
    return SiteProfile(site.id, site.record.dtype, target, log.calls, loop_depth, log.shapes, tuple(candidates),
                       dict(log.stats))
