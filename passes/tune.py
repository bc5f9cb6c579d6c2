"""``tune``: choose every GEMM site's precision within an error budget.

One pass for both ways in: ``mixopt`` re-tunes a dump offline, and ``@mixjit`` tunes on sample
inputs, through the same pass run by the same pass manager. What differs is the run's
:class:`~mixjit.passes.tuning.backend.TuningBackend` analysis: by default (offline) profiles come
from ``mix.profile`` attributes and plans are judged by the error model fitted from them
(:mod:`mixjit.passes.tuning.error_model`); the ``@mixjit`` tuner registers a backend that
profiles unprofiled sites on the sample inputs and judges a plan by running the compiled
function (``mixjit.tuning.online``).

Each tuned ``mix.gemm`` needs a profile (:mod:`mixjit.passes.tuning.profile`: candidates with
modeled times and the error each gives when its site alone runs it) and the GEMM DAG
(``build-dag``). The pass prunes every site's candidates to their error/time Pareto front, runs
the greedy (MixPert §3.4) or exhaustive search with the backend's evaluator, writes
``mix.profile`` (when measured now), ``mix.plan`` on every tuned site and ``mix.tuning`` on the
module (:mod:`mixjit.passes.tuning.plan_attr`), and emits one remark per site and a summary
remark. Candidates without a measured error are left out, with a warning; a site the backend
does not profile (it never ran on the sample inputs) keeps its most precise config, with a remark.

When ``target`` differs from the target the profiles were recorded for, candidate times are
re-modeled with the cost model (:mod:`mixjit.passes.tuning.retarget`); without one, that is an
error naming the mismatch.

The pass returns its search as its :class:`~mixjit.passes.pass_base.PassResult`'s payload, a
:class:`TuneSearch` (the search's result and the spaces it searched, keyed by module site id):
the ``@mixjit`` tuner reads it from ``PassManager.run_with_results``, not from the backend.

The GEMM DAG comes from the pass manager's ``GemmDag`` analysis when an earlier pass of the same
run computed it (``build-dag,tune{...}``); on a dump whose ``build-dag`` ran in an earlier
``mixopt`` run, from the ``mix.deps`` attributes it left (the analysis's persisted form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mixjit.ir.attributes import ArrayAttr, BoolAttr, DictAttr, IntegerAttr, to_attr
from mixjit.ir.core import Operation
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.dialects.mix import SiteOp
from mixjit.ir.location import Location
from mixjit.passes.analysis import ALL_ANALYSES
from mixjit.passes.build_dag import DEPS_ATTR, GemmDag
from mixjit.passes.pass_base import ModulePass, OptionError, PassContext, PassResult, option
from mixjit.passes.registry import register_pass
from mixjit.passes.tuning.attrs import TuningAttrError
from mixjit.passes.tuning.backend import Backend, OfflineBackend, SiteProfiles, TuningBackend
from mixjit.passes.tuning.candidates import prune_space
from mixjit.passes.tuning.error_model import measured_space
from mixjit.passes.tuning.exhaustive import DEFAULT_MAX_PLANS, SearchTooLarge, exhaustive
from mixjit.passes.tuning.greedy import ORDERS, greedy
from mixjit.passes.tuning.plan_attr import PLAN_ATTR, TUNING_ATTR, SitePlan
from mixjit.passes.tuning.profile import PROFILE_ATTR, SiteProfile
from mixjit.passes.tuning.report import format_seconds
from mixjit.passes.tuning.retarget import TargetMismatch, cost_model, retarget
from mixjit.passes.tuning.sites import site_loc, tunable_sites
from mixjit.passes.tuning.space import SearchResult, SiteSpace, plan_time

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Tune", "TuneSearch", "SEARCHES", "read_deps"]

SEARCHES = ("greedy", "exhaustive")


def read_deps(ops: dict[int, SiteOp]) -> nx.DiGraph:
    """The GEMM dependence graph from the sites' ``mix.deps`` attributes (``build-dag``): an edge
    ``p -> s`` with ``carried`` for every entry of ``s``'s deps. DiagnosticError at the site for a
    missing or malformed attribute, or a predecessor that is not a site of the module."""
    import networkx as nx

    dag = nx.DiGraph(name="gemm-dag")
    dag.add_nodes_from(sorted(ops))
    errors = []
    for site, op in sorted(ops.items()):
        deps = op.attributes.get(DEPS_ATTR)
        where = f"{DEPS_ATTR} of site {site}"
        if deps is None:
            errors.append(Diagnostic.error(
                f"site {site} has no {DEPS_ATTR}: run build-dag before tune (-p \"build-dag,tune{{...}}\")",
                site_loc(op)))
            continue
        if not isinstance(deps, ArrayAttr):
            errors.append(Diagnostic.error(f"{where}: expected an array attribute, got {deps}", site_loc(op)))
            continue
        for i, dep in enumerate(deps):
            pred = dep["site"] if isinstance(dep, DictAttr) and "site" in dep else None
            carried = dep["carried"] if isinstance(dep, DictAttr) and "carried" in dep else None
            if not isinstance(pred, IntegerAttr) or not isinstance(carried, BoolAttr):
                errors.append(Diagnostic.error(
                    f"{where}: entry {i} must be {{carried = <bool>, site = <int>, ...}}, got {dep}", site_loc(op)))
            elif pred.value not in ops:
                errors.append(Diagnostic.error(
                    f"{where}: entry {i} names site {pred.value}, which is not a GEMM site of this module",
                    site_loc(op)))
            else:
                dag.add_edge(pred.value, site, carried=carried.value)
    if errors:
        raise DiagnosticError(errors)
    return dag


@dataclass(frozen=True)
class TuneSearch:
    """The payload of the ``tune`` pass's result: what its search found and the spaces it moved in
    (every tuned site's pruned candidates, most precise first), both keyed by module site id."""

    result: SearchResult
    spaces: dict[int, SiteSpace]


@register_pass
@dataclass(frozen=True)
class Tune(ModulePass):
    """Choose each GEMM site's precision within an error budget, offline, from mix.profile attributes."""

    name = "tune"
    budget: float = option(1e-6, "error budget: the largest modeled program error (relative Frobenius) allowed")
    target: str = option("", "hardware to tune for (empty: the target the profiles were recorded on)")
    search: str = option("greedy", "greedy (MixPert §3.4) or exhaustive (small programs; the optimum)")
    order: str = option("dynamic", "greedy: lower the site with the largest current modeled time (dynamic), "
                                   "or visit each site once by its most precise modeled time (static)")
    jump: bool = option(True, "greedy: judge only the furthest of the steps the sites' measured errors predict "
                              "to fit, bisecting back when it does not (false: judge every step)")
    max_evals: int = option(0, "the most plans the search may judge (0: no limit)")
    max_plans: int = option(DEFAULT_MAX_PLANS, "exhaustive search: refuse programs with more plans than this")
    margin: float = option(0.0, "fraction of the budget kept in reserve: plans must meet budget * (1 - margin)")
    preserved_analyses = ALL_ANALYSES  # writes plan and tuning attributes only: the sites stay

    def __post_init__(self) -> None:
        if not self.budget > 0:  # also refuses NaN
            raise OptionError(f"option 'budget' of pass 'tune' must be a positive number, got {self.budget}",
                              "budget", 0)
        if self.search not in SEARCHES:
            raise OptionError(f"option 'search' of pass 'tune' must be {' or '.join(SEARCHES)}, got '{self.search}'",
                              "search", 0)
        if self.order not in ORDERS:
            raise OptionError(f"option 'order' of pass 'tune' must be {' or '.join(ORDERS)}, got '{self.order}'",
                              "order", 0)
        if self.max_evals < 0:
            raise OptionError(f"option 'max-evals' of pass 'tune' must be at least 0 (0: no limit), got {self.max_evals}",
                              "max-evals", 0)
        if self.max_plans < 1:
            raise OptionError(f"option 'max-plans' of pass 'tune' must be at least 1, got {self.max_plans}",
                              "max-plans", 0)
        if not 0 <= self.margin < 1:
            raise OptionError(f"option 'margin' of pass 'tune' must be in [0, 1), got {self.margin}", "margin", 0)

    def run(self, module: Operation, context: PassContext) -> PassResult[TuneSearch]:
        """Tune every site with a profile; the search as the result's payload (None, and the
        module unchanged, when no site has a profile)."""
        ops = tunable_sites(module)
        if not ops:
            return PassResult(modified=False)
        backend = context.analysis(TuningBackend) if context.analyses is not None else OfflineBackend()
        profiles, remodeled = self._profiles(ops, backend, context)
        if not profiles:
            return PassResult(modified=False)
        dag = context.cached_analysis(GemmDag)
        if dag is None:  # build-dag ran in an earlier mixopt run: its mix.deps are the DAG
            dag = read_deps(ops)
        ops = {site: op for site, op in ops.items() if site in profiles}  # the sites to tune
        spaces = self._spaces(ops, profiles, context)
        result = self._search(spaces, dag, ops, backend)
        for site, op in ops.items():
            if site in remodeled:  # measured now, or re-modeled for the target: keep the dump consistent
                op.attributes[PROFILE_ATTR] = profiles[site].to_attr()
            chosen = spaces[site].candidates[result.plan[site]]
            op.attributes[PLAN_ATTR] = SitePlan.of(chosen).to_attr()
            top = spaces[site].candidates[0]
            error = "unmeasured" if chosen.error is None else f"{chosen.error:.3g}"
            context.remark(
                f"site {site}: {chosen.label}, error alone {error}, modeled {format_seconds(chosen.time)} "
                f"(most precise: {top.label}, modeled {format_seconds(top.time)})", site_loc(op))
        self._summarize(module, self._target(profiles), spaces, result, backend.model, context,
                        site_loc(ops[min(ops)]))
        return PassResult(modified=True, payload=TuneSearch(result, spaces))

    def _summarize(self, module: Operation, target: str, spaces: dict[int, SiteSpace], result: SearchResult,
                   model: str, context: PassContext, loc: Location) -> None:
        """Write ``mix.tuning`` on the module; a summary remark, or a warning when the plan is not
        within budget or the search stopped early."""
        precise_time = plan_time(spaces, {s: 0 for s in spaces})
        module.attributes[TUNING_ATTR] = to_attr({
            "budget": float(self.budget), "margin": float(self.margin), "target": target,
            "search": self.search, "model": model, "error": float(result.error),
            "modeled_time": float(result.time), "precise_modeled_time": float(precise_time),
            "evaluations": result.evaluation_count, "within_budget": result.within_budget,
            "stopped": result.stopped, **({"order": self.order, "jump": self.jump} if self.search == "greedy" else {}),
        })
        search = f"greedy search ({self.order} order)" if self.search == "greedy" else "exhaustive search"
        summary = (f"{search}, {result.evaluation_count} evaluations: modeled program error "
                   f"{result.error:.3g} (budget {self.budget:g}, margin {self.margin:g}), modeled time "
                   f"{format_seconds(result.time)} against {format_seconds(precise_time)} for the most precise plan")
        if not result.within_budget:
            context.warning(f"budget {self.budget:g} is unreachable offline: even the most precise plan has "
                            f"modeled error {result.error:.3g}; kept the most precise plan ({summary})", loc)
        elif result.stopped != "complete":
            context.warning(f"search stopped early ({result.stopped}): best plan so far ({summary})", loc)
        else:
            context.remark(summary, loc)

    def _target(self, profiles: dict[int, SiteProfile]) -> str:
        return self.target or profiles[min(profiles)].target

    def _profiles(self, ops: dict[int, SiteOp], backend: Backend,
                  context: PassContext) -> tuple[dict[int, SiteProfile], set[int]]:
        """Every site's profile (from ``mix.profile``, else measured by the backend), re-modeled
        for the target when needed, and the sites whose profile attribute must be (re)written.
        Sites the backend leaves alone get a remark; every other error is reported at once."""
        found: dict[int, Diagnostic] = {}
        profiles, missing = {}, {}
        for site, op in sorted(ops.items()):
            attr = op.attributes.get(PROFILE_ATTR)
            if attr is None:
                missing[site] = op
                continue
            try:
                profiles[site] = SiteProfile.from_attr(site, attr)
            except TuningAttrError as err:
                found[site] = Diagnostic.error(f"bad {PROFILE_ATTR}: {err}", site_loc(op))
        measured = backend.profile(missing) if missing else SiteProfiles()
        for site, op in missing.items():
            if site in measured.profiles:
                profiles[site] = measured.profiles[site]
            elif site in measured.skipped:
                context.remark(f"site {site} not tuned: {measured.skipped[site]}", site_loc(op))
            else:
                found[site] = Diagnostic.error(
                    f"site {site} has no {PROFILE_ATTR}: tune re-tunes from profiles; profile the program "
                    "on sample inputs (f.tune(...)) and dump it with its profiles", site_loc(op))
        if found:
            raise DiagnosticError([found[site] for site in sorted(found)])
        errors = []
        if not profiles:
            return profiles, set()
        targets = sorted({p.target for p in profiles.values()})
        if not self.target and len(targets) > 1:
            raise DiagnosticError(Diagnostic.error(
                f"the profiles were recorded for different targets ({', '.join(targets)}): "
                "say which one to tune for with tune{target=...}", site_loc(ops[min(ops)])))
        target = self._target(profiles)
        model = cost_model() if any(p.target != target for p in profiles.values()) else None
        remodeled = set(measured.profiles)
        for site, p in profiles.items():
            try:
                profiles[site] = retarget(p, target, model)
            except TargetMismatch as err:
                errors.append(Diagnostic.error(str(err), site_loc(ops[site])))
            if profiles[site] is not p:
                remodeled.add(site)
        if errors:
            raise DiagnosticError(errors)
        return profiles, remodeled

    def _spaces(self, ops: dict[int, SiteOp], profiles: dict[int, SiteProfile],
                context: PassContext) -> dict[int, SiteSpace]:
        """Every site's measured candidates on their Pareto front, most precise first."""
        spaces, errors = {}, []
        for site, profile in sorted(profiles.items()):
            measured, dropped = measured_space(profile.space())
            if measured is None:
                errors.append(Diagnostic.error(
                    f"site {site}: no candidate in its {PROFILE_ATTR} has a measured error; the offline "
                    "model needs each candidate's error measured alone", site_loc(ops[site])))
                continue
            if dropped:
                context.warning(f"site {site}: left out candidates without a measured error: "
                                f"{', '.join(c.label for c in dropped)}", site_loc(ops[site]))
            spaces[site] = prune_space(measured)
        if errors:
            raise DiagnosticError(errors)
        return spaces

    def _search(self, spaces: dict[int, SiteSpace], dag: nx.DiGraph, ops: dict[int, SiteOp],
                backend: Backend) -> SearchResult:
        evaluator = backend.evaluator(spaces)
        max_evals = self.max_evals or None
        progress = backend.progress()
        if self.search == "greedy":
            return greedy(spaces, evaluator, self.budget, dag=dag, max_evals=max_evals, margin=self.margin,
                          order=self.order, progress=progress, jump=self.jump)
        try:
            return exhaustive(spaces, evaluator, self.budget, max_plans=self.max_plans, max_evals=max_evals,
                              margin=self.margin, progress=progress)
        except SearchTooLarge as err:
            raise DiagnosticError(Diagnostic.error(str(err), site_loc(ops[min(ops)]))) from None

