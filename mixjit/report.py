"""Readable summaries of a ``@mixjit`` function: its GEMM sites and their DAG.

The one place that formats them: the examples and ``make demo`` print these.
Plain aligned text, one row per site and one line per compiled signature's DAG.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence


def short_path(path: str) -> str:
    """``path`` relative to the working directory when it lies under it, else unchanged."""
    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _short_loc(loc: str) -> str:
    """``file:line`` with the file shortened by ``short_path``."""
    file, sep, line = loc.rpartition(":")
    return f"{short_path(file)}:{line}" if sep and line.isdigit() else short_path(loc)


def aligned(rows: Sequence[Sequence[str]], indent: str = "  ", gap: str = "  ") -> list[str]:
    """``rows`` as lines with every column padded to its widest cell."""
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(max(len(r) for r in rows))]
    return [indent + gap.join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def sites_report(fn: Any, calls: Mapping[int, int] | None = None) -> str:
    """One row per GEMM candidate of ``fn`` (a MixjitDispatcher): its site id (or
    ``-`` when not taken), where the source wrote it (and in which function, when
    a helper), what the source said, its dtype, what it ran (the plan label of
    ``f.sites``, with ``on cuda`` when a device runs it, or why it was not taken) and
    how many times it ran: ``calls[id]`` when given (e.g. the calls of one run), else
    its total so far."""
    own = fn.py_func.__qualname__
    rows = []
    for s in fn.sites:
        where = _short_loc(s.loc) + ("" if s.function == own else f" in {s.function}")
        if s.taken:
            ran = s.plan.label if s.plan else "no plan"
            backend = getattr(s, "backend", None)
            if backend is not None and backend.runs != "cpu":
                ran += f" on {backend.runs}"
            rows.append([f"site {s.id}", where, s.form, s.dtype, ran, f"calls={s.calls if calls is None else calls.get(s.id, 0)}"])
        else:
            rows.append(["-", where, s.form, s.dtype, f"not taken: {s.reason}"])
    if not rows:
        return "sites: none found (the function runs as plain Numba code)"
    return "\n".join(["sites (id, source line, form, dtype, what it ran, calls):", *aligned(rows)])


def type_text(ty: Any) -> str:
    """A Numba type as a signature would spell it: ``float64[:, :]`` for arrays."""
    if hasattr(ty, "dtype") and hasattr(ty, "ndim"):
        return f"{ty.dtype}[{', '.join([':'] * ty.ndim)}]"
    return str(ty)


def dag_line(dag: Any) -> str:
    """One DAG (networkx, as ``f.dag_for`` returns it): its sites with their loop
    depth, then its edges (``via`` what, and whether loop-carried)."""
    nodes = ", ".join(f"site {n} (loop depth {d.get('loop_depth')})" for n, d in sorted(dag.nodes(data=True)))
    edges = []
    for u, v, d in sorted(dag.edges(data=True), key=lambda e: (e[0], e[1])):
        via = d.get("via") or ()
        notes = ["via " + "+".join([via] if isinstance(via, str) else via)] if via else []
        notes += ["loop-carried"] if d.get("carried") else []
        edges.append(f"{u} -> {v}" + (f" ({', '.join(notes)})" if notes else ""))
    return f"{nodes or 'no sites'}; edges: {', '.join(edges) or 'none'}"


def dag_report(fn: Any) -> str:
    """The site DAG of each compiled signature of ``fn``, one line each."""
    lines = []
    for sig in fn.signatures:
        lines.append(f"DAG ({', '.join(type_text(t) for t in sig)}): {dag_line(fn.dag_for(*sig))}")
    return "\n".join(lines) if lines else "DAG: no compiled signature yet"
