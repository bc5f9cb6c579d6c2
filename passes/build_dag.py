"""``build-dag``: the dependence graph of a module's GEMM sites.

Nodes are the ``mix.gemm`` sites (by site id); an edge ``i -> j`` means that site ``i``'s result
may flow into an operand (A, B or C) that site ``j`` reads, directly: through SSA values
(block arguments included) or through memory. Memory is tracked per *root* array
(:mod:`mixjit.passes.aliasing`): a write into any view of a root (``L[e:, e:] = ...``,
``C[idx] -= A @ B``, a helper call given the array) taints the root, and a later read of any
view of it (``P = L[e:, k:e]``) picks the taint up. A fresh allocation clears its memory. The
analysis is a forward may-dataflow over the CFG; control dependence is not tracked.

An edge is *loop-carried* (``carried=True``) when the data reaches the reader only through a back
edge of a loop that contains both sites, i.e. in a later iteration of a common loop; the
analysis is re-run without those back edges to tell (flowing out of an inner loop into code
after it in the same outer iteration is not carried). The other edges form an acyclic graph (:func:`forward_dag`);
:func:`condensation` collapses the cycles that carried edges close. Each edge records ``via``:
``("value",)``, ``("memory",)`` or both. Each node records its ``loop_depth`` (loops around
the site in its function), so the tuner can weight sites that run many times.

Sites of different functions are not connected (calls are not analysed).

The pass annotates each ``mix.gemm`` with ``mix.loop_depth`` and ``mix.deps`` (its predecessors:
``[{carried = false, site = 0 : i64, via = "memory"}]``). :func:`gemm_dag` returns the networkx
graph; :func:`to_dot` draws it (``mixopt --dag-dot FILE``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mixjit.ir.attributes import ArrayAttr, BoolAttr, DictAttr, IntegerAttr, StringAttr
from mixjit.ir.core import Block, Operation, Region, Value
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.dialects.mix import GemmOp
from mixjit.ir.types import i64
from mixjit.passes.aliasing import Kind, alias_roots, function_bodies, op_kind, successor_values, written_values
from mixjit.passes.detect_gemm import STMTS_ATTR
from mixjit.passes.loops import LoopInfo, analyze_loops
from mixjit.passes.pass_base import ModulePass
from mixjit.passes.registry import register_pass

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "BuildDag", "gemm_dag", "forward_dag", "condensation", "carried_edges", "annotate_dag", "to_dot",
    "write_dot", "LOOP_DEPTH_ATTR", "DEPS_ATTR",
]

LOOP_DEPTH_ATTR = "mix.loop_depth"
DEPS_ATTR = "mix.deps"

Taint = tuple[int, str]  # (site, "value" | "memory")
Taints = frozenset[Taint]
_EMPTY: Taints = frozenset()


@dataclass
class _Dataflow:
    """One run of the dependence analysis over a function body."""

    roots: dict[Value, frozenset[Value]]
    loops: LoopInfo
    skipped: frozenset[tuple[Block, Block]]
    """CFG edges the data may not take (back edges of the loops under study)."""

    def __post_init__(self) -> None:
        self.val: dict[Value, Taints] = {}
        self.entry_mem: dict[Block, dict[Value, Taints]] = {b: {} for b in self.loops.order}
        self.edges: dict[tuple[int, int], set[str]] = defaultdict(set)
        self.changed = False

    def content(self, value: Value, mem: dict[Value, Taints]) -> Taints:
        """What ``value`` may carry: its own taints and those of the memory it refers to."""
        out = self.val.get(value, _EMPTY)
        for root in self.roots.get(value, ()):
            out = out | mem.get(root, _EMPTY)
        return out

    def merge_val(self, value: Value, taints: Taints) -> None:
        old = self.val.get(value, _EMPTY)
        if not taints <= old:
            self.val[value] = old | taints
            self.changed = True

    def run(self) -> dict[tuple[int, int], set[str]]:
        self.changed = True
        while self.changed:
            self.changed = False
            for block in self.loops.order:
                mem = dict(self.entry_mem[block])
                for op in block.ops:
                    self.transfer(op, block, mem)
        return self.edges

    def transfer(self, op: Operation, block: Block, mem: dict[Value, Taints]) -> None:
        kind = op_kind(op)
        if isinstance(op, GemmOp):
            site = op.site.value
            for operand in op.operands:
                for src, via in self.content(operand, mem):
                    self.edges[(src, site)].add(via)
            self.merge_val(op.result, frozenset([(site, "value")]))
        elif kind is Kind.VIEW:
            for r in op.results:
                self.merge_val(r, _EMPTY.union(*(self.val.get(v, _EMPTY) for v in op.operands)))
        elif kind in (Kind.COMPUTE, Kind.UNKNOWN):
            read = _EMPTY.union(*(self.content(v, mem) for v in op.operands))
            for r in op.results:
                self.merge_val(r, read)
        if kind is Kind.COMPUTE:  # a fresh result: its memory holds nothing written earlier
            for r in op.results:
                mem.pop(r, None)
        for target in written_values(op):
            stored = _EMPTY.union(*(self.content(v, mem) for v in op.operands if v is not target))
            stored = frozenset((site, "memory") for site, _ in stored)
            for root in self.roots.get(target, ()):
                mem[root] = mem.get(root, _EMPTY) | stored
        for i, succ in enumerate(op.successors):
            if succ not in self.entry_mem or (block, succ) in self.skipped:
                continue
            target_mem = self.entry_mem[succ]
            for root, taints in mem.items():
                if not taints <= target_mem.get(root, _EMPTY):
                    target_mem[root] = target_mem.get(root, _EMPTY) | taints
                    self.changed = True
            for arg, value in zip(succ.args, successor_values(op, i)):
                self.merge_val(arg, self.val.get(value, _EMPTY))


def _describe(op: GemmOp) -> str:
    product = f"{'A^T' if op.trans_a.value else 'A'} @ {'B^T' if op.trans_b.value else 'B'}"
    if op.c is None:
        return product
    return f"{op.alpha.value:g}*{product} + {op.beta.value:g}*C"


def _function_dag(graph: nx.DiGraph, name: str, body: Region) -> None:
    gemms = [op for op in body.walk() if isinstance(op, GemmOp)]
    if not gemms:
        return
    loops = analyze_loops(body)
    for op in gemms:
        site = op.site.value
        if site in graph:
            raise DiagnosticError(Diagnostic.error(
                f"GEMM site id {site} is used twice (also in '{graph.nodes[site]['function']}'); "
                "run detect-gemm on the whole module so that it numbers the sites", op.loc,
            ))
        stmts = op.attributes.get(STMTS_ATTR)
        graph.add_node(
            site, function=name, loc=str(op.loc), line=op.loc.line,
            loop_depth=loops.depth(op.parent) if op.parent in loops.order else 0,
            dtype=str(op.dtype.value), trans_a=op.trans_a.value, trans_b=op.trans_b.value,
            alpha=op.alpha.value, beta=op.beta.value, fused=op.c is not None, label=_describe(op),
            stmts={k: v.value for k, v in stmts.value} if isinstance(stmts, DictAttr) else {},
        )
    roots = alias_roots(body)
    every = _Dataflow(roots, loops, frozenset()).run()
    # An edge is loop-carried when the data needs a back edge of a loop around both sites: run
    # the analysis again without the back edges of those loops, once per set of common loops.
    site_loops = {op.site.value: loops.loops_containing(op.parent) for op in gemms}
    without: dict[frozenset, dict[tuple[int, int], set[str]]] = {}
    for (src, dst), vias in sorted(every.items()):
        common = site_loops[src] & site_loops[dst]
        if common not in without:
            back = frozenset(e for e in loops.retreating if e[1] in common)
            without[common] = _Dataflow(roots, loops, back).run()
        graph.add_edge(src, dst, carried=(src, dst) not in without[common], via=tuple(sorted(vias)))


def gemm_dag(module: Operation) -> nx.DiGraph:
    """The dependence graph of the ``mix.gemm`` sites of ``module`` (after ``detect-gemm``): nodes
    are site ids with their ``function``, ``loc``, ``loop_depth``, ``dtype``, ``trans_a``/``trans_b``,
    ``alpha``/``beta``, ``fused`` and ``stmts``; edges carry ``carried`` and ``via``. May contain
    cycles (through carried edges); see :func:`forward_dag` and :func:`condensation`."""
    import networkx as nx  # imported here: every mixopt run loads every pass module

    graph = nx.DiGraph(name="gemm-dag")
    for name, body in function_bodies(module):
        _function_dag(graph, name, body)
    return graph


def forward_dag(graph: nx.DiGraph) -> nx.DiGraph:
    """The acyclic part: every site, and the edges that are not loop-carried."""
    import networkx as nx

    dag = nx.DiGraph(name="gemm-forward-dag")
    dag.add_nodes_from(graph.nodes(data=True))
    dag.add_edges_from((u, v, d) for u, v, d in graph.edges(data=True) if not d["carried"])
    assert nx.is_directed_acyclic_graph(dag), "loop-independent dependences must be acyclic"
    return dag


def carried_edges(graph: nx.DiGraph) -> list[tuple[int, int]]:
    """The loop-carried edges, sorted."""
    return sorted((u, v) for u, v, d in graph.edges(data=True) if d["carried"])


def condensation(graph: nx.DiGraph) -> nx.DiGraph:
    """The graph with each strongly connected component (sites on one dependence cycle) as one
    node, whose ``members`` are its site ids; always acyclic. Components are numbered 0, 1, ...
    in a topological order (ties broken by their smallest site id); ``graph["mapping"]`` maps
    each site to its component."""
    import networkx as nx

    raw = nx.condensation(graph)
    order = nx.lexicographical_topological_sort(raw, key=lambda c: min(raw.nodes[c]["members"]))
    number = {c: i for i, c in enumerate(order)}
    out = nx.DiGraph(name="gemm-condensation")
    for c in sorted(raw.nodes, key=number.__getitem__):
        out.add_node(number[c], members=set(raw.nodes[c]["members"]))
    out.add_edges_from(sorted((number[u], number[v]) for u, v in raw.edges))
    out.graph["mapping"] = {site: number[c] for site, c in sorted(raw.graph["mapping"].items())}
    return out


def annotate_dag(module: Operation, graph: nx.DiGraph) -> None:
    """Write ``mix.loop_depth`` and ``mix.deps`` (predecessors) on every ``mix.gemm`` of ``module``."""
    for op in module.walk():
        if not isinstance(op, GemmOp) or op.site.value not in graph:
            continue
        site = op.site.value
        op.attributes[LOOP_DEPTH_ATTR] = IntegerAttr(graph.nodes[site]["loop_depth"], i64)
        deps = []
        for src in sorted(graph.predecessors(site)):
            data = graph.edges[src, site]
            deps.append(DictAttr({
                "site": IntegerAttr(src, i64), "carried": BoolAttr(data["carried"]),
                "via": StringAttr("+".join(data["via"])),
            }))
        op.attributes[DEPS_ATTR] = ArrayAttr(deps)


def _dot_label(*lines: str) -> str:
    """A quoted DOT label of ``lines`` (escaped, joined by DOT's ``\\n``)."""
    escaped = (line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    return '"' + "\\n".join(escaped) + '"'


def to_dot(graph: nx.DiGraph) -> str:
    """A Graphviz DOT drawing: one box per site (id, product, dtype, location, loop depth); solid
    edges within an iteration, dashed loop-carried ones, labelled with how the data flows."""
    lines = ["digraph gemm_dag {", "  node [shape=box, fontname=monospace];"]
    for site in sorted(graph.nodes):
        d = graph.nodes[site]
        label = _dot_label(
            f"site {site}: {d['label']}", f"{d['dtype']}  depth {d['loop_depth']}", f"{d['function']} {d['loc']}"
        )
        lines.append(f"  s{site} [label={label}];")
    for src, dst in sorted(graph.edges):
        d = graph.edges[src, dst]
        style = ", style=dashed" if d["carried"] else ""
        label = "+".join(d["via"]) + (" (carried)" if d["carried"] else "")
        lines.append(f"  s{src} -> s{dst} [label={_dot_label(label)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_dot(graph: nx.DiGraph, path: str | Path) -> list[Path]:
    """Write the DOT drawing to ``path`` and, when Graphviz ``dot`` is installed, a PNG next to it
    (``path`` with suffix ``.png``). Returns the files written."""
    path = Path(path)
    path.write_text(to_dot(graph), encoding="utf-8")
    written = [path]
    dot = shutil.which("dot")
    if dot is not None:
        png = path.with_suffix(".png")
        subprocess.run([dot, "-Tpng", str(path), "-o", str(png)], check=True, capture_output=True)
        written.append(png)
    return written


@register_pass
@dataclass(frozen=True)
class BuildDag(ModulePass):
    """Build the dependence graph of the GEMM sites (values and memory); annotate each site."""

    name = "build-dag"

    def apply(self, module: Operation) -> None:
        annotate_dag(module, gemm_dag(module))
