"""``f.report()``: what the tuner chose for each site and why, and a Pareto plot of the plans.

Runs the tuner stopped at their limits (mixjit.tuning.workers) are listed under the table, each
with what it ran and why. The table (rendered with rich, as ``mixopt --report``'s) lists per site: its source location and form,
the shapes and calls profiled, the chosen config, its low-precision products, its measured
error when it alone runs that config (the rest at the reference), its *modeled* time over the
profiled calls and the *modeled* speedup against native on the target. The plot
(matplotlib, Agg) shows modeled speedup against measured program error for every whole plan
the search evaluated, the chosen one marked, as in the MixPert paper's Fig. 10. Every time
and speedup here is modeled by the cost model, never measured.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Sequence

from mixjit.tuning.driver import TuneResult
from mixjit.tuning.native_budget import budget_text, slowdown_advice
from mixjit.tuning.protocol import TunableFunction

__all__ = ["report", "report_text", "pareto_plot"]

HEADERS = ("site", "location", "form", "shapes (m x n x k)", "calls", "config", "products", "error alone",
           "modeled time", "modeled speedup vs native")
_NUMBERS = (0, 4, 6, 7, 8, 9)  # right-aligned columns


def report(f: TunableFunction, plot: str | Path | None = None) -> str:
    """The report of ``f``'s last tuning (see the module docstring); also written to ``plot``."""
    from mixjit.tuning.api import current_plan, last_result

    result = last_result(f)
    if result is None:
        plan = current_plan(f)
        if plan is None:
            raise ValueError(f"mixjit: {f.py_func.__qualname__} has not been tuned; call it (tune='first-call') "
                             "or f.tune(*sample_args) first")
        return (f"{plan.function}{plan.argtypes}: plan loaded, not tuned in this process (no profile); "
                + ", ".join(f"site {s.index}: {s.scheme}[{s.config}]" for s in plan.sites))
    if plot is not None:
        pareto_plot(result, plot)
    return report_text(result)


def _fmt(x: float | None, spec: str = ".2e") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _seconds(s: float | None) -> str:
    if s is None:
        return "-"
    return f"{s * 1e6:.1f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def _shapes(shapes: Sequence[tuple[int, int, int, int]]) -> str:
    if not shapes:
        return "-"
    text = ", ".join(f"{m}x{n}x{k}" + (f" (x{c})" if c > 1 else "") for m, n, k, c in shapes[:3])
    return text + (f", +{len(shapes) - 3} more" if len(shapes) > 3 else "")


def rows(result: TuneResult) -> list[tuple[str, ...]]:
    """One row per site (``HEADERS``)."""
    out = []
    for s in result.sites:
        prof = result.profiles.get(s.id)
        chosen = result.chosen.get(s.id)
        ps = result.plan.sites[s.index]
        native = next((c.time for c in prof.candidates if c.scheme == "native"), None) if prof else None
        speedup = native / chosen.time if chosen is not None and native and chosen.time else None
        out.append((
            str(s.index), os.path.basename(s.record.loc), s.record.form,
            _shapes(prof.shapes) if prof else "-", str(prof.calls) if prof else "0",
            f"{ps.scheme}[{ps.config}]", str(chosen.products) if chosen else "-",
            _fmt(chosen.error if chosen else None), _seconds(chosen.time if chosen else None),
            _fmt(speedup, ".2f") + ("x" if speedup is not None else ""),
        ))
    return out


def _header(result: TuneResult) -> list[str]:
    p = result.plan
    lines = [f"{result.qualname}{result.argtypes} on {result.target} (modeled), error budget "
             f"{budget_text(p.error_budget, result.budget)}",
             f"plan error {_fmt(p.error)} against the reference run"
             + ("" if p.within_budget else " (EXCEEDS the budget)")
             + f"; modeled time {_seconds(p.modeled_time_s)}, modeled speedup "
             + (f"{p.modeled_speedup:.2f}x" if p.modeled_speedup else "-") + " vs native"]
    if result.native_error is not None:
        lines.append(f"native plan (every site native) error {_fmt(result.native_error)} against the reference run")
    advice = slowdown_advice(result.qualname, result.native_error, result.budget, p.error_budget, p)
    if advice:
        lines.append(advice.removeprefix("mixjit: "))
    vs64 = next((j.error_vs_fp64 for j in reversed(result.judged) if j.plan == result.search.plan), None) \
        if result.search is not None else None
    if vs64 is not None or result.reference_vs_fp64 is not None:
        lines.append(f"against the whole program in float64: plan {_fmt(vs64)}, reference run "
                     f"{_fmt(result.reference_vs_fp64)}")
    for v in result.validation:
        lines.append(f"held-out input {v.index}: error {v.error:.2e}" + ("" if v.within_budget else " EXCEEDS"))
    search = result.search
    lines.append(f"{result.runs} program runs ({search.evaluation_count if search else 0} plans searched, "
                 f"{search.stopped if search else result.stopped}), {result.seconds:.1f} s ({result.cpu_seconds:.1f} s CPU)"
                 + (f", margin {result.margin:.3f}" if result.margin else ""))
    return lines


def report_text(result: TuneResult) -> str:
    """The report as text: a header, the site table (``passes.tuning.report.render_table``, the
    same renderer as ``mixopt --report``: plain ASCII, since the text is returned, not printed), the
    notes."""
    from mixjit.passes.tuning.report import render_table

    body = render_table(HEADERS, rows(result), right=_NUMBERS).rstrip("\n")
    notes = [f"stopped: {run}" for run in result.stopped_runs] + [f"note: {n}" for n in result.notes]
    return "\n".join([*_header(result), body, *notes])


def pareto_plot(result: TuneResult, path: str | Path) -> Path:
    """Modeled speedup vs native against program error of every whole plan evaluated, the
    chosen plan marked (matplotlib, Agg backend); returns the path written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    native = result.plan.native_modeled_time_s
    whole = [j for j in result.judged if set(j.plan) == set(result.chosen) and j.modeled_time > 0]
    fig, ax = plt.subplots(figsize=(6, 4))
    if native and whole:
        xs = [max(j.error, 1e-18) for j in whole]
        ys = [native / j.modeled_time for j in whole]
        ax.scatter(xs, ys, s=14, color="tab:blue", label="plans evaluated")
        if result.chosen and result.plan.modeled_speedup is not None and result.plan.error is not None:
            ax.scatter([max(result.plan.error, 1e-18)], [result.plan.modeled_speedup], s=90, marker="*",
                       color="tab:red", label="chosen plan", zorder=3)
        ax.axvline(result.budget, color="gray", linestyle="--", linewidth=1, label="error budget")
        ax.set_xscale("log")
        ax.legend(loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no whole plan was evaluated", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("program error against the reference run (measured)")
    ax.set_ylabel(f"modeled speedup vs native on {result.target}")
    ax.set_title(f"{result.qualname}: plans (modeled times)", fontsize=10)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
