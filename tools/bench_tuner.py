"""The tuner on real programs: greedy against the exhaustive optimum, held-out errors, tuning
time, and the offline estimate against a real run (MixPert Fig. 10's shape, issue 8 item 11).

    python tools/bench_tuner.py [--chol-n 1536 --block 512] [--mlp-width 512 --mlp-batch 1024] [--time-n 512] [--write]

Two float32 programs under ``@mixjit``: the tiled Cholesky of examples/cholesky_tiled.py (4
dependent GEMM sites: potrf, trsm, syrk, gemm) and the 3-layer MLP of examples/mlp.py. For each
budget in ``BUDGETS`` the online tuner (``mixjit.tuning.driver.tune``, target A100) runs:

* **greedy** (the default search) on sample inputs (seed 0), validated on seed 1 (the driver
  tightens a plan that fails there); its plan is then run on seeds 2 and 3, which the tuner never
  saw (**held-out** errors);
* **greedy judging every step** (``jump=False``): replayed on the errors the exhaustive tuning
  recorded (no program run), to show that the jumps change the evaluation count, not the plan;
* **exhaustive**: one online exhaustive tuning judges every plan of the Pareto-pruned candidates
  once; the optimum for each budget is the exhaustive search re-run over those recorded errors
  (same plans, same errors, no re-run of the program). Its evaluation count is the number of plans.

Modeled speedups (cost model, never measured on a GPU) are over the most precise plan and over
native FP32, on A100 (the tuning target) and H100 (the same plan re-modeled). Errors are the
relative Frobenius error against the reference run (float64 products), maximised over outputs.
Tuning times are CPU seconds (``TuneResult.cpu_seconds``: this process and its worker processes,
where the program runs) of the whole tuning: profile, reference,
site-alone measurements, search, validation.

**Offline vs real**: the greedy tuning's profiles are written as a dump
(``mixjit.tuning.annotate.profiled_module``) and re-tuned with ``mixopt -p tune{budget=...}``
(the additive error model, no program run); the plan it chooses is then run on the sample inputs,
and the table gives predicted / measured error.

``--schemes`` (default ``mixpert,native``) restricts every site's candidates: with every
compiled scheme a float32 site has 26 candidates (mixpert, native, tf32x3, bf16xN, fp16x2,
int8, split, ozaki2), and the exhaustive optimum the targets are checked against would judge
thousands of program runs, which a 2-core CPU cannot afford.

``--time-n`` also tunes the Cholesky at that size once (greedy, tightest budget) for the
tuning-time target. ``--write`` replaces the generated section of docs/results/tuner.md and writes
docs/results/figures/tuner_pareto.png.
"""

from __future__ import annotations

import argparse
import io
import math
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import common
import numpy as np

sys.path.insert(0, str(common.ROOT / "examples"))

import cholesky_tiled  # noqa: E402  (examples/)
import mlp as mlp_example  # noqa: E402

from mixjit import mixjit  # noqa: E402
from mixjit.entry import EXECUTORS  # noqa: E402
from mixjit.passes.tuning.candidates import split_scheme_specs  # noqa: E402
from mixjit.passes.tuning.exhaustive import SearchTooLarge, exhaustive  # noqa: E402
from mixjit.passes.tuning.greedy import greedy  # noqa: E402
from mixjit.passes.tuning.space import Evaluation, Plan, SiteSpace  # noqa: E402
from mixjit.plan import SitePlan  # noqa: E402
from mixjit.runtime.model.costmodel import modeled_calls_time  # noqa: E402
from mixjit.tuning.driver import TuneResult, plan_error, signature_of, tune  # noqa: E402

BUDGETS = (1e-7, 1e-6, 1e-5, 1e-4, 1e-3)
SCHEMES = ("mixpert", "native")
TARGET = "a100"
OTHER_TARGET = "h100"
VALIDATE_SEED = 1
HELD_OUT_SEEDS = (2, 3)
SECTION = "tuner-bench"
FIGURE = common.ROOT / "docs" / "results" / "figures" / "tuner_pareto.png"


@dataclass(frozen=True)
class Program:
    """A benchmark program: its Python function and its arguments for a seed."""

    name: str
    py_func: Callable[..., Any]
    make_args: Callable[[int], tuple]
    size: str


def cholesky_program(n: int, block: int = 32) -> Program:
    return Program("cholesky", cholesky_tiled.cholesky_tiled_py,
                   lambda seed: (cholesky_tiled.spd_matrix(n, seed).astype(np.float32), block),
                   f"n={n}, tile={block}")


def mlp_program(width: int, batch: int | None = None) -> Program:
    batch = width if batch is None else batch
    return Program("mlp", mlp_example.mlp_forward, lambda seed: mlp_example.network(width, batch, seed),
                   f"width={width}, batch={batch}")


@dataclass
class BudgetRow:
    """What one budget gave on one program (times modeled, errors measured on the CPU)."""

    budget: float
    greedy_plan: list[str]
    greedy_error: float
    greedy_time: float  # modeled seconds on TARGET
    greedy_within: bool
    greedy_evals: int  # plans the search judged
    greedy_runs: int  # program runs of the whole tuning (site-alone measurements, validation included)
    greedy_margin: float
    speedup: dict[str, dict[str, float]]  # target -> {"precise": x, "native": x} (modeled)
    validation_errors: list[float]
    held_out_errors: list[float]
    tuning_cpu_s: float
    optimum_plan: list[str] | None
    optimum_error: float | None
    optimum_time: float | None
    optimum_speedup: float | None  # modeled, over the most precise plan, on TARGET
    exhaustive_evals: int | None
    stepwise_evals: int | None  # greedy judging every step (jump=False), replayed on the recorded errors
    stepwise_same: bool | None  # did it end at the plan the jumping greedy chose?
    offline_plan: list[str]
    offline_predicted: float
    offline_measured: float
    notes: list[str] = field(default_factory=list)

    @property
    def greedy_over_optimum(self) -> float | None:
        """Greedy's modeled speedup as a fraction of the optimum's (1.0: greedy found it)."""
        if self.optimum_time is None:
            return None
        return self.optimum_time / self.greedy_time

    @property
    def offline_ratio(self) -> float:
        """Offline predicted error / measured error of the plan the offline tuner chose."""
        return self.offline_predicted / self.offline_measured if self.offline_measured > 0 else math.inf


@dataclass
class ProgramResult:
    """One program's benchmark: the rows per budget and every plan exhaustive judged."""

    name: str
    size: str
    sites: int
    candidates: list[int]  # Pareto-pruned candidates per site
    precise_time: float  # modeled seconds of the most precise plan on TARGET
    rows: list[BudgetRow]
    all_plans: list[Evaluation]  # every plan exhaustive judged (error on the sample inputs, modeled time)
    exhaustive_cpu_s: float
    exhaustive_note: str = ""


class RecordedErrors:
    """An Evaluator that answers from errors already measured by running the program."""

    def __init__(self, evaluations: Sequence[Evaluation]) -> None:
        self.errors = {_key(e.plan): e.error for e in evaluations}

    def error(self, plan: Plan) -> float:
        return self.errors[_key(plan)]


def _key(plan: Plan) -> tuple:
    return tuple(sorted(plan.items()))


def _labels(result: TuneResult) -> list[str]:
    """The chosen plan as ``s<index> scheme[config]`` per site, in site order."""
    return [f"s{s.index} {result.chosen[s.id].label}" for s in result.sites if s.id in result.chosen]


def _plan_labels(result: TuneResult, spaces: dict[int, SiteSpace], plan: Plan) -> list[str]:
    return [f"s{s.index} {spaces[s.id].candidates[plan[s.id]].label}" for s in result.sites if s.id in plan]


def _site_time(result: TuneResult, sid: int, scheme: str, config: str, target: str) -> float:
    p = result.profiles[sid]
    return modeled_calls_time(scheme, config, p.shapes, p.dtype, target)


def modeled_speedups(result: TuneResult, target: str) -> dict[str, float]:
    """The chosen plan's modeled speedup on ``target`` over the most precise plan and over native
    FP32 (each site's first ``native`` candidate)."""
    chosen = precise = native = 0.0
    for sid, c in result.chosen.items():
        chosen += _site_time(result, sid, c.scheme, c.config, target)
        top = result.spaces[sid].candidates[0]
        precise += _site_time(result, sid, top.scheme, top.config, target)
        nat = next(c for c in result.profiles[sid].candidates if c.scheme == "native")
        native += _site_time(result, sid, nat.scheme, nat.config, target)
    return {"precise": precise / chosen, "native": native / chosen}


def measured_error(f: Any, args: tuple, site_configs: dict[int, tuple[str, str]]) -> float:
    """Run ``f`` on ``args`` with each site at ``site_configs[id]`` = (scheme, config) and return
    its error against the reference run on the same inputs."""
    key = signature_of(f, args)
    plans = {sid: SitePlan(scheme, config, scheme) for sid, (scheme, config) in site_configs.items()}
    return plan_error(f, key, args, plans, None)


def offline_retune(f: Any, result: TuneResult, args: tuple, budget: float) -> tuple[dict[int, tuple[str, str]], float]:
    """Re-tune ``result``'s profiles offline with ``mixopt -p tune{...}``: the plan it chooses
    (site id -> (scheme, config)) and the offline model's predicted program error."""
    from mixjit import mixopt
    from mixjit.ir.parser import parse_module
    from mixjit.passes.tuning.plan_attr import PLAN_ATTR, TUNING_ATTR
    from mixjit.passes.tuning.plan_attr import SitePlan as PlanAttr
    from mixjit.tuning.annotate import profiled_module
    from mixjit.tuning.api import state_of

    state_of(f).results[signature_of(f, args)] = result
    dump = profiled_module(f, *args).text()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{result.qualname}.mix"
        path.write_text(dump)
        out, err = io.StringIO(), io.StringIO()
        status = mixopt.main([str(path), "-p", f"tune{{budget={budget!r},target={result.target}}}"], out, err)
    if status != 0:
        raise RuntimeError(f"mixopt tune failed on the profiled dump of {result.qualname}: {err.getvalue()}")
    module = parse_module(out.getvalue())
    plan = {}
    for op in module.walk():
        if op.name == "mix.gemm":
            p = PlanAttr.from_attr(op.site.value, op.attributes[PLAN_ATTR])
            plan[op.site.value] = (p.scheme, p.config)
    predicted = module.attributes[TUNING_ATTR].as_dict()["error"].value
    return plan, float(predicted)


def _exhaustive_all(f: Any, args: tuple, budget: float) -> TuneResult:
    return tune(f, args, search="exhaustive", budget=budget, target=TARGET, fp64=False, progress=False, reuse=False)


def bench_program(program: Program, budgets: Sequence[float] = BUDGETS, *, with_exhaustive: bool = True,
                  schemes: Sequence[str] | None = SCHEMES) -> ProgramResult:
    """Tune ``program`` at every budget (see the module docstring) among ``schemes`` (None: all)."""
    f = mixjit(error_budget=budgets[0], target=TARGET, tune="explicit", schemes=schemes)(program.py_func)
    args = program.make_args(0)
    validate = [program.make_args(VALIDATE_SEED)]
    held_out = [program.make_args(s) for s in HELD_OUT_SEEDS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(*args)  # compile (not part of any tuning time)
    common.progress(f"{program.name} ({program.size}): compiled")
    all_plans: list[Evaluation] = []
    ex_spaces: dict[int, SiteSpace] | None = None
    ex_cpu = 0.0
    ex_note = ""
    if with_exhaustive:
        try:
            ex = _exhaustive_all(f, args, max(budgets))
            all_plans = list(ex.search.evaluations)
            ex_spaces = ex.spaces
            ex_cpu = ex.cpu_seconds
        except SearchTooLarge as e:
            ex_note = f"exhaustive refused: {e}"
        common.progress(f"{program.name}: exhaustive judged {len(all_plans)} plans in {ex_cpu:.1f} s CPU")
    dag = f.dag_for(*args)
    rows = []
    result = None
    for budget in budgets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = tune(f, args, validate=validate, search="greedy", budget=budget, target=TARGET, fp64=False,
                          progress=False, reuse=False)
        g = result.search
        notes = list(result.notes)
        if ex_spaces is not None and any(ex_spaces[s].candidates != result.spaces[s].candidates for s in ex_spaces):
            notes.append("the greedy tuning measured other Pareto candidates than the exhaustive one")
        held = [measured_error(f, h, {sid: (c.scheme, c.config) for sid, c in result.chosen.items()})
                for h in held_out]
        speed = {t: modeled_speedups(result, t) for t in (TARGET, OTHER_TARGET)}
        opt_plan = opt_error = opt_time = opt_speedup = opt_evals = None
        if ex_spaces is not None:
            opt = exhaustive(ex_spaces, RecordedErrors(all_plans), budget)
            if opt.within_budget:
                opt_plan = _plan_labels(result, ex_spaces, opt.plan)
                opt_error, opt_time = opt.error, opt.time
                opt_speedup = sum(ex_spaces[s].candidates[0].time for s in ex_spaces) / opt.time
            opt_evals = opt.evaluation_count
        step_evals = step_same = None
        if ex_spaces is not None and all(ex_spaces[s].candidates == result.spaces[s].candidates for s in ex_spaces):
            steps = greedy(ex_spaces, RecordedErrors(all_plans), budget, dag=dag, margin=result.margin, jump=False)
            step_evals, step_same = steps.evaluation_count, steps.plan == g.plan
        off_plan, predicted = offline_retune(f, result, args, budget)
        measured = measured_error(f, args, off_plan)
        rows.append(BudgetRow(
            budget, _labels(result), g.error, g.time, result.plan.within_budget, g.evaluation_count, result.runs,
            result.margin, speed, [v.error for v in result.validation], held, result.cpu_seconds, opt_plan, opt_error,
            opt_time, opt_speedup, opt_evals, step_evals, step_same,
            [f"s{s.index} {off_plan[s.id][0]}[{off_plan[s.id][1]}]" for s in result.sites if s.id in off_plan],
            predicted, measured, notes))
        common.progress(f"{program.name}: budget {budget:.0e} done ({result.cpu_seconds:.1f} s CPU)")
    assert result is not None
    precise_time = sum(result.spaces[s].candidates[0].time for s in result.spaces)
    return ProgramResult(program.name, program.size, len(result.spaces),
                         [len(result.spaces[s].candidates) for s in sorted(result.spaces)], precise_time, rows,
                         all_plans, ex_cpu, ex_note)


def time_cholesky(n: int, budget: float = BUDGETS[0], block: int = 32,
                  schemes: Sequence[str] | None = SCHEMES) -> tuple[float, int, int]:
    """CPU seconds of one greedy tuning (with validation on one held-out set) of the tiled
    Cholesky at size ``n`` (tile ``block``), its program runs and its sites."""
    program = cholesky_program(n, block)
    f = mixjit(error_budget=budget, target=TARGET, tune="explicit", schemes=schemes)(program.py_func)
    args = program.make_args(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(*args)
        result = tune(f, args, validate=[program.make_args(VALIDATE_SEED)], budget=budget, target=TARGET,
                      fp64=False, progress=False, reuse=False)
    return result.cpu_seconds, result.runs, len(result.spaces)


# ---------------------------------------------------------------- output


def _fmt(x: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "-" if x is None else f"{x:{spec}}{suffix}"


def plan_table(p: ProgramResult) -> list[str]:
    header = ["budget", "greedy plan", "error (sample)", "modeled speedup A100 vs precise / vs FP32",
              "modeled speedup H100 vs precise / vs FP32", "exhaustive optimum", "optimum modeled speedup A100",
              "greedy / optimum", "evaluations greedy (runs) / exhaustive",
              "greedy judging every step: evaluations, same plan", "held-out errors (validate; unseen)",
              "tuning CPU s"]
    rows = []
    for r in p.rows:
        a, h = r.speedup[TARGET], r.speedup[OTHER_TARGET]
        held = ", ".join(common.fmt_sci(e, 1) for e in r.validation_errors) + "; " + \
            ", ".join(common.fmt_sci(e, 1) for e in r.held_out_errors)
        rows.append([f"{r.budget:.0e}", "<br>".join(r.greedy_plan), common.fmt_sci(r.greedy_error, 1)
                     + ("" if r.greedy_within else " (over)"),
                     f"{a['precise']:.2f}x / {a['native']:.2f}x", f"{h['precise']:.2f}x / {h['native']:.2f}x",
                     "<br>".join(r.optimum_plan) if r.optimum_plan else "-",
                     _fmt(r.optimum_speedup, ".2f", "x"), _fmt(r.greedy_over_optimum, ".3f"),
                     f"{r.greedy_evals} ({r.greedy_runs}) / {_fmt(r.exhaustive_evals, 'd')}",
                     "-" if r.stepwise_evals is None else f"{r.stepwise_evals}, {'yes' if r.stepwise_same else 'no'}",
                     held,
                     f"{r.tuning_cpu_s:.1f}"])
    return common.markdown_table(header, rows)


def offline_table(p: ProgramResult) -> list[str]:
    header = ["budget", "offline plan (mixopt tune)", "same as online greedy", "predicted error (offline model)",
              "measured error (run)", "predicted / measured"]
    rows = [[f"{r.budget:.0e}", "<br>".join(r.offline_plan), "yes" if r.offline_plan == r.greedy_plan else "no",
             common.fmt_sci(r.offline_predicted), common.fmt_sci(r.offline_measured), f"{r.offline_ratio:.2f}"]
            for r in p.rows]
    return common.markdown_table(header, rows)


@dataclass(frozen=True)
class TargetCheck:
    name: str
    met: bool
    detail: str


def check_targets(results: Sequence[ProgramResult], timing: tuple[int, float, int, int] | None) -> list[TargetCheck]:
    """The issue's targets, each met or not, with the figures behind the verdict."""
    checks = []
    quality = [(p.name, r.budget, r.greedy_over_optimum) for p in results for r in p.rows
               if r.greedy_over_optimum is not None]
    bad = [f"{n} {b:.0e}: {q:.3f}" for n, b, q in quality if q < 0.95]
    checks.append(TargetCheck("greedy >= 95% of the optimum's modeled speedup", bool(quality) and not bad,
                              f"{len(quality) - len(bad)}/{len(quality)} rows" + (f"; below: {', '.join(bad)}" if bad else "")))
    ev = [(p.name, r.budget, r.greedy_evals, r.exhaustive_evals) for p in results for r in p.rows if r.exhaustive_evals]
    bad = [f"{n} {b:.0e}: {g}/{x}" for n, b, g, x in ev if g > 0.1 * x]
    checks.append(TargetCheck("greedy evaluations <= 10% of exhaustive's", bool(ev) and not bad,
                              f"{len(ev) - len(bad)}/{len(ev)} rows" + (f"; above: {', '.join(bad)}" if bad else "")))
    # a budget that even the most precise plan misses on the sample is reported by the tuner
    # (within_budget=False, a warning): no plan was tuned for it, so it is listed, not counted
    held = [(p.name, r.budget, max(r.held_out_errors + r.validation_errors)) for p in results for r in p.rows
            if r.greedy_within]
    unreachable = [f"{p.name} {r.budget:.0e} (most precise plan: {r.greedy_error:.1e})" for p in results
                   for r in p.rows if not r.greedy_within]
    bad = [f"{n} {b:.0e}: {e:.2e}" for n, b, e in held if not e <= b]
    checks.append(TargetCheck("budget holds on held-out inputs for every tuned plan", bool(held) and not bad,
                              f"{len(held) - len(bad)}/{len(held)} plans tuned within budget" + (f"; over: {', '.join(bad)}" if bad else "")
                              + (f"; unreachable budgets, reported by the tuner: {', '.join(unreachable)}" if unreachable else "")))
    if timing is not None:
        n, cpu, runs, sites = timing
        largest = [f"{p.name} {p.size}: at most {max(r.tuning_cpu_s for r in p.rows):.1f} s CPU per budget"
                   for p in results if p.name == "cholesky"]
        checks.append(TargetCheck(f"tuning the {sites}-site Cholesky at n = {n} (tile 32) under 30 s", cpu < 30,
                                  f"{cpu:.1f} s CPU, {runs} program runs; " + "; ".join(largest)
                                  + " (machine shared: CPU time, not wall)"))
    bad = []
    for p in results:
        times = [r.greedy_time for r in p.rows]
        if any(b > a * (1 + 1e-12) for a, b in zip(times, times[1:])):
            bad.append(f"{p.name}: a looser budget gave a slower plan")
        for r in p.rows:
            faster_exists = r.optimum_time is not None and r.optimum_time < p.precise_time * (1 - 1e-12)
            if faster_exists and not r.greedy_time < p.precise_time * (1 - 1e-12):
                bad.append(f"{p.name} {r.budget:.0e}: a faster plan exists but greedy kept the most precise one")
    distinct = {p.name: len({tuple(r.greedy_plan) for r in p.rows}) for p in results}
    checks.append(TargetCheck("plans change with the budget (looser: faster, where one exists)", not bad,
                              ", ".join(f"{n}: {d} distinct plans over {len(BUDGETS)} budgets" for n, d in distinct.items())
                              + (f"; {'; '.join(bad)}" if bad else "")))
    return checks


def report(results: Sequence[ProgramResult], timing: tuple[int, float, int, int] | None, cpu: float,
           schemes: Sequence[str] | None = SCHEMES) -> list[str]:
    lines = ["", "Candidate schemes at every site: " + (", ".join(schemes) if schemes else "every compiled scheme")
             + " (`--schemes`; see the tool's docstring)."]
    for p in results:
        lines += ["", f"### {p.name} ({p.size}, float32, target {TARGET})", "",
                  f"{p.sites} sites; Pareto-pruned candidates per site: {p.candidates} "
                  f"({math.prod(p.candidates)} plans); most precise plan modeled at "
                  f"{p.precise_time * 1e6:.1f} us on {TARGET}; exhaustive judged {len(p.all_plans)} plans in "
                  f"{p.exhaustive_cpu_s:.1f} s CPU. {p.exhaustive_note}", ""]
        lines += plan_table(p)
        lines += ["", "Offline estimate against a real run (same profiles, `mixopt -p tune{budget=...}`):", ""]
        lines += offline_table(p)
        notes = sorted({n for r in p.rows for n in r.notes})
        if notes:
            lines += ["", "Tuner notes: " + "; ".join(notes)]
    lines += ["", "### Targets", ""]
    lines += common.markdown_table(["target", "met", "figures"],
                                   [[c.name, "yes" if c.met else "**no**", c.detail] for c in check_targets(results, timing)])
    lines += ["", f"CPU time of the whole benchmark: {cpu:.1f} s. Speedups are modeled by the cost model "
                  f"(docs/costmodel.md), never measured on a GPU; errors are measured on the CPU against the "
                  f"reference run; plans are tuned for {TARGET} and re-modeled for {OTHER_TARGET}."]
    return lines


def plot(results: Sequence[ProgramResult], path: Path) -> None:
    """Modeled speedup (over the most precise plan, A100) against error for every plan exhaustive
    judged, the greedy and optimal plans of each budget marked (like MixPert Fig. 10)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4.5), squeeze=False)
    for ax, p in zip(axes[0], results):
        floor = 1e-12
        if p.all_plans:
            ax.scatter([max(e.error, floor) for e in p.all_plans], [p.precise_time / e.time for e in p.all_plans],
                       s=8, c="0.6", label="every plan (exhaustive)")
        colors = plt.cm.viridis(np.linspace(0, 0.9, len(p.rows)))
        for r, color in zip(p.rows, colors):
            ax.axvline(r.budget, color=color, ls="--", lw=0.8)
            ax.scatter([max(r.greedy_error, floor)], [p.precise_time / r.greedy_time], marker="*", s=160,
                       color=color, edgecolors="k", zorder=3, label=f"greedy, budget {r.budget:.0e}")
            if r.optimum_time is not None:
                ax.scatter([max(r.optimum_error, floor)], [p.precise_time / r.optimum_time], marker="o", s=70,
                           facecolors="none", edgecolors=color, lw=1.5, zorder=3)
        ax.set_xscale("log")
        ax.set_xlabel("program error (relative Frobenius vs reference)")
        ax.set_ylabel(f"modeled speedup over most precise plan ({TARGET})")
        ax.set_title(f"{p.name} ({p.size}); circles: exhaustive optimum")
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("Tuner: modeled speedup vs measured error (modeled times, not GPU measurements)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chol-n", type=int, default=1536, help="Cholesky size (default 1536)")
    parser.add_argument("--block", type=int, default=512, help="Cholesky tile (default 512)")
    parser.add_argument("--mlp-width", type=int, default=512, help="MLP width (default 512)")
    parser.add_argument("--mlp-batch", type=int, default=1024, help="MLP batch (default 1024)")
    parser.add_argument("--time-n", type=int, default=512,
                        help="Cholesky size of the tuning-time target, tile 32 (0: skip)")
    parser.add_argument("--schemes", default=",".join(SCHEMES),
                        help="candidate schemes, comma-separated ('all': every compiled scheme)")
    parser.add_argument("--budgets", default=",".join(f"{b:.0e}" for b in BUDGETS), help="comma-separated")
    parser.add_argument("--plot", type=Path, default=None, help="write the Pareto plot here")
    parser.add_argument("--write", action="store_true",
                        help="replace the generated section of docs/results/tuner.md and write docs/results/figures/tuner_pareto.png")
    args = parser.parse_args(argv)
    budgets = tuple(float(b) for b in args.budgets.split(","))
    schemes = tuple(sorted(EXECUTORS)) if args.schemes == "all" else split_scheme_specs(args.schemes)
    cpu0 = time.process_time()
    results = [bench_program(cholesky_program(args.chol_n, args.block), budgets, schemes=schemes),
               bench_program(mlp_program(args.mlp_width, args.mlp_batch), budgets, schemes=schemes)]
    timing = None
    if args.time_n:
        cpu, runs, sites = time_cholesky(args.time_n, schemes=schemes)
        timing = (args.time_n, cpu, runs, sites)
    lines = report(results, timing, time.process_time() - cpu0, schemes)
    print("\n".join(lines))
    plot_path = FIGURE if args.write else args.plot
    if plot_path is not None:
        plot(results, plot_path)
    if args.write:
        body = "\n".join(common.provenance(["python", "tools/bench_tuner.py", *(argv or sys.argv[1:])], 0) + lines
                         + ["", f"![modeled speedup vs error](figures/{FIGURE.name})"])
        common.replace_generated_section(common.ROOT / "docs" / "results" / "tuner.md", SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
