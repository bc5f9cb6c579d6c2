"""The tuning report of a module (``mixopt --report``): one row per GEMM site with its location,
shapes, calls, chosen config, products, error contribution, modeled time and modeled speedup
against the site's ``native`` candidate, from ``mix.profile``, ``mix.plan`` and ``mix.tuning``.
Every time and speedup is from the cost model and labelled "modeled".

:func:`render_table` is the one table renderer of the tuner's reports (this one and
``f.report()``, ``mixjit.tuning.report``). It uses ``rich``, imported when a table is rendered,
never when the tuner is imported: for a terminal, with box lines and colour at the terminal's
width; otherwise (a file, a pipe, a test) plain ASCII without colour, as wide as its rows.
"""

from __future__ import annotations

import io
from collections.abc import Collection, Sequence
from typing import TextIO

from mixjit.ir.attributes import Attribute, BoolAttr, DictAttr, FloatAttr, IntegerAttr, StringAttr
from mixjit.ir.core import Operation
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.passes.tuning.attrs import TuningAttrError
from mixjit.passes.tuning.plan_attr import PLAN_ATTR, TUNING_ATTR, SitePlan
from mixjit.passes.tuning.profile import PROFILE_ATTR, SiteProfile
from mixjit.passes.tuning.sites import site_loc, tunable_sites
from mixjit.passes.tuning.space import Candidate

__all__ = ["format_seconds", "format_report", "render_table", "NATIVE_SCHEME"]

NATIVE_SCHEME = "native"
_HEADER = ("site", "loc", "shapes (m x n x k)", "calls", "chosen", "products", "error alone",
           "modeled time", "modeled speedup vs native")
_NUMBERS = (0, 3, 5, 6, 7, 8)  # right-aligned columns
_MAX_SHAPES = 2


def format_seconds(seconds: float) -> str:
    """``1.30 ms``, ``12.0 us``, ``2.50 s``: three significant digits in a readable unit."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Collection[int] = (),
                 stream: TextIO | None = None) -> str:
    """``rows`` under ``headers`` as text (see the module docstring); ``right``: the indices of the
    columns to right-align (numbers). Rendered for ``stream`` when it is a terminal, else plain."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    terminal = _isatty(stream)
    table = Table(box=box.HEAVY_HEAD if terminal else box.ASCII2, header_style="bold" if terminal else "",
                  show_edge=terminal)
    for i, header in enumerate(headers):
        table.add_column(Text(header), justify="right" if i in right else "left")
    for row in rows:
        table.add_row(*(Text(c) for c in row))  # text, not rich markup: "mixpert[level=II]" stays
    out = io.StringIO()
    width = None if terminal else 4 + sum(3 + max(len(c) for c in column) for column in zip(headers, *rows))
    console = Console(file=out, width=width, force_terminal=terminal, no_color=not terminal,
                      color_system="standard" if terminal else None, highlight=False)
    if terminal and stream is not None:
        console.size = Console(file=stream).size  # the terminal's width, not the buffer's
    console.print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def format_report(module: Operation, stream: TextIO | None = None) -> str:
    """The report table of ``module``'s sites (see the module docstring), with a header line from
    ``mix.tuning`` when the module was tuned, rendered for ``stream`` (:func:`render_table`).
    DiagnosticError (at the site) for a malformed ``mix.profile`` or ``mix.plan``."""
    rows, totals, errors = [], [0.0, 0.0], []
    for site, op in tunable_sites(module).items():
        try:
            profile = SiteProfile.from_attr(site, op.attributes[PROFILE_ATTR]) \
                if PROFILE_ATTR in op.attributes else None
            plan = SitePlan.from_attr(site, op.attributes[PLAN_ATTR]) if PLAN_ATTR in op.attributes else None
        except TuningAttrError as err:
            errors.append(Diagnostic.error(str(err), site_loc(op)))
            continue
        rows.append(_row(site, str(site_loc(op)), profile, plan, totals))
    if errors:
        raise DiagnosticError(errors)
    lines = [_title(module)]
    if not rows:
        return lines[0] + "\nno GEMM site\n"
    speedup = f"{totals[0] / totals[1]:.2f}x" if totals[1] > 0 and totals[0] > 0 else "-"
    rows.append(("total", "", "", "", "", "", "", format_seconds(totals[1]) if totals[1] else "-", speedup))
    return "\n".join(lines) + "\n" + render_table(_HEADER, rows, right=_NUMBERS, stream=stream)


def _title(module: Operation) -> str:
    attr = module.attributes.get(TUNING_ATTR)
    if not isinstance(attr, DictAttr):
        return "tuning report (not tuned: no mix.tuning on the module)"
    t = {k: _plain(v) for k, v in attr.as_dict().items()}
    fits = "within budget" if t.get("within_budget") == "true" else "NOT within budget"
    order = f" ({t['order']} order)" if "order" in t else ""
    return (f"tuning report: target {t.get('target', '?')}, budget {t.get('budget', '?')}, "
            f"{t.get('search', '?')} search{order}, {t.get('evaluations', '?')} evaluations, "
            f"modeled program error {t.get('error', '?')} ({fits}, search {t.get('stopped', '?')})")


def _plain(a: Attribute) -> str:
    """An attribute's value without its type: ``1e-05``, ``a100``, ``true``."""
    if isinstance(a, FloatAttr):
        return f"{a.value:.3g}"
    if isinstance(a, (IntegerAttr, StringAttr)):
        return str(a.value)
    if isinstance(a, BoolAttr):
        return "true" if a.value else "false"
    return str(a)


def _shapes(profile: SiteProfile) -> str:
    shown = [f"{m}x{n}x{k}" + (f" ({c})" if len(profile.shapes) > 1 else "") for m, n, k, c in profile.shapes]
    if len(shown) > _MAX_SHAPES:
        shown = shown[:_MAX_SHAPES] + [f"+{len(shown) - _MAX_SHAPES} more"]
    return ", ".join(shown) or "-"


def _row(site: int, loc: str, profile: SiteProfile | None, plan: SitePlan | None,
         totals: list[float]) -> tuple[str, ...]:
    shapes = _shapes(profile) if profile else "-"
    calls = str(profile.calls) if profile else "-"
    if plan is None:
        return (str(site), loc, shapes, calls, "(not tuned)", "-", "-", "-", "-")
    chosen = _candidate(profile, plan.scheme, plan.config) if profile else None
    native = _native(profile)
    products = str(chosen.products) if chosen else "-"
    error = f"{plan.error:.3g}" if plan.error is not None else "-"
    speedup = "-"
    if native is not None and plan.modeled_time > 0:
        speedup = f"{native.time / plan.modeled_time:.2f}x"
        totals[0] += native.time
    else:
        totals[0] = float("nan")  # no native time for some site: no total speedup
    totals[1] += plan.modeled_time
    return (str(site), loc, shapes, calls, plan.label, products, error, format_seconds(plan.modeled_time), speedup)


def _candidate(profile: SiteProfile, scheme: str, config: str) -> Candidate | None:
    return next((c for c in profile.candidates if (c.scheme, c.config) == (scheme, config)), None)


def _native(profile: SiteProfile | None) -> Candidate | None:
    if profile is None:
        return None
    return next((c for c in profile.candidates if c.scheme == NATIVE_SCHEME), None)
