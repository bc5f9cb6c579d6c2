"""``build-dag``: the dependence graph of a module's GEMM sites.

Nodes are the ``mix.gemm`` sites (by site id); an edge ``i -> j`` means that site ``i``'s result
may flow into an operand (A, B or C) that site ``j`` reads, directly: through SSA values
(block arguments included), through memory, or through a branch decision. Memory is tracked
per *root* array (:mod:`mixjit.passes.aliasing`): a write into any view of a root
(``L[e:, e:] = ...``, ``C[idx] -= A @ B``, a helper call given the array) taints the root, and a
later read of any view of it (``P = L[e:, k:e]``) picks the taint up. A fresh allocation clears
its memory. The analysis is a forward may-dataflow over the CFG.

Control dependence: what a conditional branch's condition carries reaches everything defined or
written on the paths the branch decides, up to its immediate post-dominator, the block arguments
there (the values it chose) and the sites on those paths (``via = "control"``).

Calls of imported helpers (``py.call`` with ``py.target``): the helper's sites, and its helpers'
at any depth, depend on everything the call's arguments carry; the call's results and the arrays
it gets carry those sites. Each function body is analysed on its own; a helper's body gives the
edges among its sites within one call.

An edge is *loop-carried* (``carried=True``) when the data reaches the reader only through a back
edge of a loop that contains both sites, i.e. in a later iteration of a common loop; the
analysis is re-run without those back edges to tell (flowing out of an inner loop into code
after it in the same outer iteration is not carried). An edge into a helper's site from a site
of the same helper, found at a call of it, spans two calls and is carried too; and the edges on
a cycle that repeated calls close without a loop are marked carried. The other edges form an
acyclic graph (:func:`forward_dag`); :func:`condensation` collapses the cycles that carried
edges close. Each edge records ``via``: ``("value",)``, ``("memory",)``, ``("control",)`` or
several. Each node records its ``loop_depth`` (loops around the site in its function), so the
tuner can weight sites that run many times.

The pass annotates each ``mix.gemm`` with ``mix.loop_depth`` and ``mix.deps`` (its predecessors:
``[{carried = false, site = 0 : i64, via = "memory"}]``). :func:`gemm_dag` returns the networkx
graph; :func:`to_dot` draws it (``mixopt --dag-dot FILE``).

The graph is also an analysis, :class:`GemmDag` (:mod:`mixjit.passes.analysis`): the pass manager
computes it once per module on request and keeps it until a pass that may change the sites runs.
``build-dag`` takes it from there, and so do ``tune`` and the ``@mixjit`` frontend (``f.dag``).
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mixjit.ir.attributes import ArrayAttr, BoolAttr, DictAttr, IntegerAttr, StringAttr, SymbolRefAttr
from mixjit.ir.core import Block, Operation, Region, Value
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.dialects import cf, py
from mixjit.ir.dialects.mix import GemmOp, SiteOp
from mixjit.ir.types import i64
from mixjit.passes.aliasing import Kind, alias_roots, function_bodies, op_kind, successor_values, written_values
from mixjit.passes.analysis import ALL_ANALYSES, Analysis
from mixjit.passes.detect_gemm import STMTS_ATTR
from mixjit.passes.loops import LoopInfo, analyze_loops, immediate_post_dominators
from mixjit.passes.pass_base import ModulePass, PassContext
from mixjit.passes.py_attrs import TARGET_ATTR
from mixjit.passes.registry import register_pass

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "BuildDag", "GemmDag", "gemm_dag", "forward_dag", "condensation", "carried_edges", "annotate_dag", "to_dot",
    "write_dot", "LOOP_DEPTH_ATTR", "DEPS_ATTR",
]

LOOP_DEPTH_ATTR = "mix.loop_depth"
DEPS_ATTR = "mix.deps"

Taint = tuple[int, str]  # (site, "value" | "memory" | "control")
Taints = frozenset[Taint]
_EMPTY: Taints = frozenset()


def _relabel(taints: Taints, via: str) -> Taints:
    return frozenset((site, via) for site, _ in taints)


@dataclass
class _Body:
    """What the dependence analysis needs to know about one function body."""

    name: str
    gemms: list[SiteOp]
    loops: LoopInfo
    ipdom: dict[Block, Block | None]
    roots: dict[Value, frozenset[Value]]
    calls: dict[Operation, frozenset[int]]
    """Each call of an imported helper (``py.target``) -> the sites it may run (transitively)."""

    def site_loops(self) -> dict[int, frozenset[Block]]:
        """Site -> the loops of this body around it (around its calls, for a helper's site)."""
        out: dict[int, frozenset[Block]] = defaultdict(frozenset)
        for op in self.gemms:
            out[op.site.value] |= self.loops.loops_containing(op.parent)
        for call, sites in self.calls.items():
            for site in sites:
                out[site] |= self.loops.loops_containing(call.parent)
        return out


@dataclass
class _Dataflow:
    """One run of the dependence analysis over a function body."""

    body: _Body
    skipped: frozenset[tuple[Block, Block]]
    """CFG edges the data may not take (back edges of the loops under study)."""

    def __post_init__(self) -> None:
        order = self.body.loops.order
        self.roots = self.body.roots
        self.val: dict[Value, Taints] = {}
        self.entry_mem: dict[Block, dict[Value, Taints]] = {b: {} for b in order}
        # Branch block -> what its condition carries, for the branches a block is control
        # dependent on (dropped at the branch's immediate post-dominator).
        self.entry_ctrl: dict[Block, dict[Block, Taints]] = {b: {} for b in order}
        self.edges: dict[tuple[int, int], set[str]] = defaultdict(set)
        self.same_activation: set[tuple[int, int]] = set()
        """Edges found into a site other than across two runs of one helper (see ``depend``)."""
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

    def depend(self, taints: Taints, dst: int, helper_sites: frozenset[int] = frozenset()) -> None:
        """Record edges ``src -> dst``. At a call of a helper, a source among the helper's own sites
        ran in an earlier call of it: such an edge is across activations, like a carried one."""
        for src, via in taints:
            self.edges[(src, dst)].add(via)
            if src not in helper_sites:
                self.same_activation.add((src, dst))

    def run(self) -> _Dataflow:
        self.changed = True
        while self.changed:
            self.changed = False
            for block in self.body.loops.order:
                mem = dict(self.entry_mem[block])
                ctrl = self.entry_ctrl[block]
                guard = _relabel(_EMPTY.union(*ctrl.values()), "control")
                for op in block.ops:
                    self.transfer(op, block, mem, ctrl, guard)
        return self

    def transfer(
        self, op: Operation, block: Block, mem: dict[Value, Taints], ctrl: dict[Block, Taints], guard: Taints
    ) -> None:
        kind = op_kind(op)
        helper_sites = self.body.calls.get(op, frozenset())
        made = frozenset((site, "value") for site in helper_sites)
        if isinstance(op, SiteOp):
            site = op.site.value
            self.depend(guard.union(*(self.content(v, mem) for v in op.operands)), site)
            results = frozenset([(site, "value")])
        elif kind is Kind.VIEW:
            results = guard.union(*(self.val.get(v, _EMPTY) for v in op.operands))
        elif kind in (Kind.COMPUTE, Kind.UNKNOWN):
            read = guard.union(*(self.content(v, mem) for v in op.operands))
            for dst in sorted(helper_sites):  # the helper's sites may read every argument
                self.depend(read, dst, helper_sites)
            results = read | made
        else:  # a source, metadata or a new allocation: only where control went
            results = guard
        for r in op.results:
            self.merge_val(r, results)
        if kind in (Kind.COMPUTE, Kind.ALLOC):  # a fresh result: its memory holds nothing written earlier
            for r in op.results:
                mem.pop(r, None)
        for target in written_values(op):
            stored = guard.union(made, *(self.content(v, mem) for v in op.operands if v is not target))
            stored = _relabel(stored, "memory")
            for root in self.roots.get(target, ()):
                mem[root] = mem.get(root, _EMPTY) | stored
        if not op.successors:
            return
        out_ctrl = dict(ctrl)
        if isinstance(op, cf.CondBranchOp):
            decided = self.content(op.condition, mem)
            if decided:
                out_ctrl[block] = out_ctrl.get(block, _EMPTY) | decided
        path = _relabel(_EMPTY.union(*out_ctrl.values()), "control")  # what chose this edge
        for i, succ in enumerate(op.successors):
            if succ not in self.entry_mem or (block, succ) in self.skipped:
                continue
            self.merge_map(self.entry_mem[succ], mem)
            # Control dependence on a branch ends at its immediate post-dominator.
            self.merge_map(self.entry_ctrl[succ], {b: t for b, t in out_ctrl.items() if self.body.ipdom[b] is not succ})
            for arg, value in zip(succ.args, successor_values(op, i)):
                self.merge_val(arg, self.val.get(value, _EMPTY) | path)

    def merge_map(self, target: dict, source: dict) -> None:
        for key, taints in source.items():
            if not taints <= target.get(key, _EMPTY):
                target[key] = target.get(key, _EMPTY) | taints
                self.changed = True


def _describe(op: SiteOp) -> str:
    if not isinstance(op, GemmOp):
        from mixjit.passes.detect_linalg import describe_linalg

        return describe_linalg(op)  # type: ignore[arg-type]
    product = f"{'A^T' if op.trans_a.value else 'A'} @ {'B^T' if op.trans_b.value else 'B'}"
    if op.c is None:
        return product
    return f"{op.alpha.value:g}*{product} + {op.beta.value:g}*C"


Calls = dict[str, list[tuple[Operation, str]]]
"""Function -> its calls of helpers defined in the module, with each helper's name."""


def _helper_calls(bodies: dict[str, Region]) -> Calls:
    """Function -> its calls of helpers defined in the module, with the helper's name."""
    calls: dict[str, list[tuple[Operation, str]]] = {}
    for name, body in bodies.items():
        calls[name] = []
        for op in body.walk():
            target = op.attributes.get(TARGET_ATTR) if isinstance(op, py.CallOp) else None
            if isinstance(target, SymbolRefAttr) and not target.nested and target.root in bodies:
                calls[name].append((op, target.root))
    return calls


def _sites_run(direct: dict[str, frozenset[int]], calls: Calls) -> dict[str, frozenset[int]]:
    """Function -> the sites a call of it may run: its own and its helpers', at any depth."""
    run = dict(direct)
    changed = True
    while changed:  # a fixed point, so that recursion terminates
        changed = False
        for name, sites in run.items():
            new = sites.union(*(run[callee] for _, callee in calls[name]))
            if new != sites:
                run[name], changed = new, True
    return run


def _add_nodes(graph: nx.DiGraph, name: str, body: _Body) -> None:
    for op in body.gemms:
        site = op.site.value
        if site in graph:
            raise DiagnosticError(Diagnostic.error(
                f"GEMM site id {site} is used twice (also in '{graph.nodes[site]['function']}'); "
                "run detect-gemm on the whole module so that it numbers the sites", op.loc,
            ))
        stmts = op.attributes.get(STMTS_ATTR)
        loops = body.loops
        product = dict(trans_a=op.trans_a.value, trans_b=op.trans_b.value, alpha=op.alpha.value, beta=op.beta.value,
                       fused=op.c is not None) if isinstance(op, GemmOp) else {}
        graph.add_node(
            site, function=name, loc=str(op.loc), line=op.loc.line,
            loop_depth=loops.depth(op.parent) if op.parent in loops.order else 0,
            dtype=str(op.dtype.value), kind=op.name, label=_describe(op), **product,
            stmts={k: v.value for k, v in stmts.value if isinstance(v, StringAttr)} if isinstance(stmts, DictAttr) else {},
        )


def _body_edges(body: _Body) -> dict[tuple[int, int], tuple[set[str], bool]]:
    """The edges found in one body: (src, dst) -> (vias, carried)."""
    if not body.gemms and not body.calls:
        return {}
    every = _Dataflow(body, frozenset()).run()
    # An edge is loop-carried when the data needs a back edge of a loop around both sites: run
    # the analysis again without the back edges of those loops, once per set of common loops.
    site_loops = body.site_loops()
    without: dict[frozenset, _Dataflow] = {}
    out = {}
    for (src, dst), vias in sorted(every.edges.items()):
        common = site_loops[src] & site_loops[dst]
        if common not in without:
            back = frozenset(e for e in body.loops.retreating if e[1] in common)
            without[common] = _Dataflow(body, back).run()
        out[(src, dst)] = (vias, (src, dst) not in without[common].same_activation)
    return out


def _break_activation_cycles(graph: nx.DiGraph) -> None:
    """Mark carried the non-carried edges that lie on a cycle: repeated calls of helpers (F, then G,
    then F again) can close one without any loop. Keeps :func:`forward_dag` acyclic."""
    import networkx as nx

    forward = nx.DiGraph((u, v) for u, v, d in graph.edges(data=True) if not d["carried"])
    for component in nx.strongly_connected_components(forward):
        for u, v in forward.subgraph(component).edges:
            graph.edges[u, v]["carried"] = True


def gemm_dag(module: Operation) -> nx.DiGraph:
    """The dependence graph of the ``mix.gemm`` sites of ``module`` (after ``detect-gemm``): nodes
    are site ids with their ``function``, ``loc``, ``loop_depth``, ``dtype``, ``trans_a``/``trans_b``,
    ``alpha``/``beta``, ``fused`` and ``stmts``; edges carry ``carried`` and ``via``. May contain
    cycles (through carried edges); see :func:`forward_dag` and :func:`condensation`."""
    import networkx as nx  # imported here: every mixopt run loads every pass module

    graph = nx.DiGraph(name="gemm-dag")
    regions = dict(function_bodies(module))
    gemms = {name: [op for op in body.walk() if isinstance(op, SiteOp)] for name, body in regions.items()}
    calls = _helper_calls(regions)
    runs = _sites_run({name: frozenset(op.site.value for op in ops) for name, ops in gemms.items()}, calls)
    found: dict[tuple[int, int], tuple[set[str], bool]] = {}
    for name, region in regions.items():
        loops = analyze_loops(region)
        body = _Body(
            name, gemms[name], loops, immediate_post_dominators(loops, region), alias_roots(region),
            {op: runs[callee] for op, callee in calls[name] if runs[callee]},
        )
        _add_nodes(graph, name, body)
        for edge, (vias, carried) in _body_edges(body).items():
            old_vias, old_carried = found.get(edge, (set(), True))
            found[edge] = (old_vias | vias, old_carried and carried)
    for (src, dst), (vias, carried) in sorted(found.items()):
        graph.add_edge(src, dst, carried=carried, via=tuple(sorted(vias)))
    _break_activation_cycles(graph)
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
        if not isinstance(op, SiteOp) or op.site.value not in graph:
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


class GemmDag(Analysis):
    """The GEMM dependence graph of a module (:func:`gemm_dag`), as a cached analysis."""

    name = "gemm-dag"

    @classmethod
    def compute(cls, module: Operation) -> nx.DiGraph:
        return gemm_dag(module)


@register_pass
@dataclass(frozen=True)
class BuildDag(ModulePass):
    """Build the dependence graph of the GEMM sites (values and memory); annotate each site."""

    name = "build-dag"
    preserved_analyses = ALL_ANALYSES  # only writes mix.deps / mix.loop_depth, which no analysis reads

    def apply(self, module: Operation) -> None:
        annotate_dag(module, gemm_dag(module))

    def run(self, module: Operation, context: PassContext) -> None:
        """Annotate the sites from the pass manager's ``GemmDag`` analysis (computed here if no
        earlier pass requested it), so later passes reuse the same graph."""
        annotate_dag(module, context.analysis(GemmDag))
