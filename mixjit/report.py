"""Readable summaries of a ``@mixjit`` function: its GEMM sites and their DAG.

Used by the examples and the demo; plain text, one line per site / node.
"""

from __future__ import annotations

from typing import Any


def sites_report(fn: Any) -> str:
    """One line per GEMM candidate of ``fn`` (a MixjitDispatcher): its id or why it
    was not taken, what the source said, where, its dtype, plan and call count."""
    lines = ["sites:"]
    for s in fn.sites:
        where = f"site {s.id}" if s.taken else "not taken"
        what = s.plan.label if s.plan else s.reason
        lines.append(f"  {where}: {s.form} at {s.loc} [{s.dtype}] {what} calls={s.calls}")
    return "\n".join(lines)


def dag_report(fn: Any) -> str:
    """The site DAG of ``fn``: its edges as (src, dst, loop-carried), then each node's
    loop depth."""
    dag = fn.dag
    edges = sorted((u, v, bool(d.get("carried", False))) for u, v, d in dag.edges(data=True))
    lines = [f"DAG: {dag.number_of_nodes()} node(s), edges {edges}"]
    lines += [f"  node {node}: loop depth {data.get('loop_depth')}" for node, data in sorted(dag.nodes(data=True))]
    return "\n".join(lines)
