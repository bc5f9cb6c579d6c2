"""The ``@mixjit`` tuner's side of the ``tune`` pass: the online backend and the pipeline runs.

``f.tune`` does not search on its own: it imports the signature's module and runs the pass
instances ``[DetectGemm(), BuildDag(), Tune(...)]`` (``mixopt``'s passes) through the pass
manager, with verify-each and per-pass timing, after registering :class:`OnlineBackend` as the
run's ``TuningBackend`` (``mixjit.passes.tuning.backend``). The ``tune`` pass then asks the backend
to profile its sites (each candidate measured with that site alone lowered, on the sample inputs)
and to judge plans (``mixjit.tuning.evaluator``: write the plan table, run the compiled function),
and returns its search as its ``PassResult``, which :class:`TuningPipeline` reads. A repeated
search (tightened after a validation failure) runs ``Tune(..., margin=...)`` again on the same
module: the profiles are attributes by then, and the DAG is still the cached analysis.

The pass knows sites by their id in the imported module; the compiled code by process site ids
(``f.sites``). The backend translates plans it judges; :class:`TuningPipeline` translates the
search it reads back.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping, Sequence

from mixjit.frontend_pipeline import FRONTEND_PASSES, FrontendResult, run_frontend_pipeline
from mixjit.ir.attributes import IntegerAttr
from mixjit.ir.dialects.mix import SiteOp
from mixjit.passes.build_dag import LOOP_DEPTH_ATTR
from mixjit.passes.dfp_chain import DfpChain
from mixjit.passes.tune import Tune, TuneSearch
from mixjit.passes.tuning.backend import SiteProfiles
from mixjit.passes.tuning.judge import ProgressCallback
from mixjit.passes.tuning.plan_attr import PLAN_ATTR, SitePlan
from mixjit.passes.tuning.profile import SiteProfile
from mixjit.passes.tuning.sites import gemm_sites
from mixjit.passes.tuning.space import Plan, SearchResult, SiteSpace
from mixjit.sites import process_site_ids
from mixjit.tuning.evaluator import OnlineEvaluator
from mixjit.tuning.profiling import ShapeLog, TunedSite, site_profile

__all__ = ["OnlineBackend", "TuningPipeline"]


class OnlineBackend:
    """A ``TuningBackend`` that measures on the sample inputs (see the module docstring).

    ``evaluator`` judges plans keyed by process site id over ``full`` (every site's candidates
    with modeled times). ``profiles`` holds the profiles it measured, keyed by process site id."""

    model = "online"

    def __init__(self, imported: Any, sites: Sequence[TunedSite], logs: Mapping[int, ShapeLog],
                 full: Mapping[int, SiteSpace], evaluator: OnlineEvaluator, target: str,
                 progress: ProgressCallback | None = None) -> None:
        self.imported = imported
        self.sites = {s.id: s for s in sites}
        self.logs = logs
        self.full = full
        self.online = evaluator
        self.target = target
        self._progress = progress
        self._ids: dict[int, int] | None = None
        self.profiles: dict[int, SiteProfile] = {}

    @property
    def process_ids(self) -> dict[int, int]:
        """Module site id -> process site id (the pass asks the backend only after detect-gemm)."""
        if self._ids is None:
            self._ids = {}
            for function in self.imported.functions:
                self._ids.update(process_site_ids(function) or {})
        return self._ids

    def profile(self, ops: Mapping[int, SiteOp]) -> SiteProfiles:
        """Measure every candidate of every site that ran on the sample inputs, that site alone
        lowered (every other site at the reference). An error that is not a number (a candidate
        that made the program produce NaN) is recorded as infinite: never within a budget."""
        out = SiteProfiles()
        self.online.spaces = self.full
        self.online.prefetch([{pid: i} for site in sorted(ops) for pid in [self.process_ids.get(site)]
                              if pid in self.sites and pid in self.full
                              for i in range(len(self.full[pid].candidates))])
        for site, op in sorted(ops.items()):
            pid = self.process_ids.get(site)
            if pid is None or pid not in self.sites:
                out.skipped[site] = "it is not linked in the compiled code (it runs as plain Numba)"
                continue
            if pid not in self.full:
                out.skipped[site] = "it did not run on the sample inputs: it keeps its most precise config"
                continue
            measured = []
            for i, c in enumerate(self.full[pid].candidates):
                error = self.online.error({pid: i})
                measured.append(replace(c, error=math.inf if math.isnan(error) else error))
            depth = op.attributes.get(LOOP_DEPTH_ATTR)
            profile = site_profile(self.sites[pid], self.logs[pid], depth.value if isinstance(depth, IntegerAttr)
                                   else 0, self.target, measured)
            self.profiles[pid] = profile
            out.profiles[site] = replace(profile, site=site)
        return out

    def evaluator(self, spaces: Mapping[int, SiteSpace]) -> "_ByModuleId":
        self.online.spaces = {self.process_ids[s]: replace(space, site=self.process_ids[s])
                              for s, space in spaces.items()}
        return _ByModuleId(self.online, self.process_ids)

    def progress(self) -> ProgressCallback | None:
        return self._progress


class _ByModuleId:
    """The online evaluator, for plans keyed by module site id."""

    def __init__(self, online: OnlineEvaluator, ids: Mapping[int, int]) -> None:
        self.online = online
        self.ids = ids

    def error(self, plan: Plan) -> float:
        return self.online.error(_relabel(plan, self.ids))

    @property
    def workers(self) -> int:
        return self.online.workers

    def prefetch(self, plans: Sequence[Plan]) -> None:
        self.online.prefetch([_relabel(p, self.ids) for p in plans])

    def speculate(self, plans: Sequence[Plan]) -> None:
        self.online.speculate([_relabel(p, self.ids) for p in plans])


def _relabel(plan: Mapping[int, Any], ids: Mapping[int, int]) -> dict[int, Any]:
    return {ids[s]: v for s, v in plan.items()}


class TuningPipeline:
    """The pass-manager runs of one tuning: ``[DetectGemm(), BuildDag(), tune]`` first, then the
    ``tune`` pass alone on the same module and analyses for each repeated search.

    After a search, ``spaces`` holds the spaces it searched, keyed by process site id."""

    def __init__(self, imported: Any, backend: OnlineBackend) -> None:
        self.module = imported.module
        self.backend = backend
        self.runs: list[FrontendResult] = []
        self.spaces: dict[int, SiteSpace] = {}

    def search(self, tune: Tune) -> SearchResult:
        """Run the pass ``tune`` through the pass manager and read its search from the result it
        returns; the search's result, keyed by process site id. ``PassFailure`` when a pass fails."""
        first = not self.runs
        run = run_frontend_pipeline(self.module, [*FRONTEND_PASSES, tune] if first else [tune], timing=True,
                                    analyses=None if first else self.runs[-1].analyses,
                                    tuning_backend=self.backend)
        self.runs.append(run)
        searched = run.result_of(tune).payload
        if not isinstance(searched, TuneSearch):  # sites ran on the sample inputs, so one should be tuned
            said = "; ".join(d.message for d in run.diagnostics) or "the imported module has no GEMM site"
            raise RuntimeError(f"the tune pass tuned no GEMM site of the imported module ({said}); "
                               "the compiled function's sites and its imported module disagree")
        ids = self.backend.process_ids
        self.spaces = {ids[s]: replace(space, site=ids[s]) for s, space in searched.spaces.items()}
        result = searched.result
        evaluations = [replace(e, plan=_relabel(e.plan, ids)) for e in result.evaluations]
        return replace(result, plan=_relabel(result.plan, ids), evaluations=evaluations)

    def carry_dfp(self) -> dict[int, SitePlan]:
        """Run ``dfp-chain`` on the module after the last search: the plans it changed, keyed by
        process site id. A dfp site that reads another dfp site's ``out=dfp`` result (no wider than
        its own bits) then keeps that site's shared exponent: the same bits with less work
        (passes/dfp_chain.py), so the search's measured error still holds."""
        def plans() -> dict[int, SitePlan]:
            return {s: SitePlan.from_attr(s, op.attributes[PLAN_ATTR])
                    for s, op in gemm_sites(self.module).items() if PLAN_ATTR in op.attributes}

        before = plans()
        self.runs.append(run_frontend_pipeline(self.module, [DfpChain()], timing=True,
                                               analyses=self.runs[-1].analyses, tuning_backend=self.backend))
        ids = self.backend.process_ids
        return {ids[s]: plan for s, plan in plans().items()
                if s in ids and before.get(s) is not None and plan.config != before[s].config}

    @property
    def diagnostics(self) -> list[Any]:
        """The remarks and warnings of every run, in order."""
        return [d for run in self.runs for d in run.diagnostics]

    @property
    def timings(self) -> list[tuple[str, float]]:
        """(pass spec, seconds) of every pass of every run, in order."""
        return [t for run in self.runs if run.timing is not None for t in run.timing.times]

