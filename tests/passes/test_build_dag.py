"""build-dag: dependence edges (values and memory), loop-carried edges, loop depths, export."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from corpus import fresh_module  # noqa: E402

from mixjit import mixopt  # noqa: E402
from mixjit.importer import dump_ir  # noqa: E402
from mixjit.ir.dialects.mix import GemmOp  # noqa: E402
from mixjit.ir.parser import parse_module  # noqa: E402
from mixjit.ir.printer import print_op  # noqa: E402
from mixjit.passes import build_dag as build_dag_module  # noqa: E402
from mixjit.passes.aliasing import alias_roots  # noqa: E402
from mixjit.passes.build_dag import (  # noqa: E402
    DEPS_ATTR,
    LOOP_DEPTH_ATTR,
    BuildDag,
    carried_edges,
    condensation,
    forward_dag,
    gemm_dag,
    to_dot,
    write_dot,
)
from mixjit.passes.detect_gemm import detect_gemms  # noqa: E402
from mixjit.passes.loops import analyze_loops  # noqa: E402


def dag_of(name):
    module = fresh_module(name)
    detect_gemms(module)
    return module, gemm_dag(module)


def edges(graph):
    """{(src, dst): (carried, via)}."""
    return {(u, v): (d["carried"], d["via"]) for u, v, d in graph.edges(data=True)}


def test_blocked_cholesky_has_the_memory_edge_through_the_view_of_L():
    _, graph = dag_of("cholesky_blocked")
    # site 0: L[e:, k:e] = L[e:, k:e] @ inv(Lkk).T   site 1: L[e:, e:] -= P @ P.T with P = L[e:, k:e]
    assert edges(graph) == {
        (0, 1): (False, ("memory",)),  # site 1 reads P, a view of L that site 0 just wrote
        (1, 0): (True, ("memory",)),  # the next panel (and Lkk) read what site 1 wrote into L
        (0, 0): (True, ("memory",)),  # regions are not told apart: any later read of L
        (1, 1): (True, ("memory",)),
    }
    assert [graph.nodes[s]["loop_depth"] for s in (0, 1)] == [1, 1]


def test_ssa_def_use_chains_alone_do_not_connect_the_cholesky_sites():
    module, _ = dag_of("cholesky_blocked")
    gemms = sorted((op for op in module.walk() if isinstance(op, GemmOp)), key=lambda op: op.site.value)
    # Site 0's result is only stored into L: no op chain leads from it to site 1's operands.
    reached, work = set(), [gemms[0].result]
    while work:
        value = work.pop()
        for user in value.users:
            if id(user) not in reached:
                reached.add(id(user))
                work.extend(user.results)
    assert id(gemms[1]) not in reached


def test_mlp_chain():
    _, graph = dag_of("mlp3")
    assert edges(graph) == {(0, 1): (False, ("value",)), (1, 2): (False, ("value",))}
    assert [graph.nodes[s]["loop_depth"] for s in range(3)] == [0, 0, 0]
    assert list(forward_dag(graph).edges) == list(graph.edges)
    cond = condensation(graph)
    assert [cond.nodes[c]["members"] for c in range(3)] == [{0}, {1}, {2}]


def test_kmeans_iteration():
    _, graph = dag_of("kmeans")
    # labels (from G, site 0) pick the one-hot entries of M that site 1 multiplies: same
    # iteration. The centroids C that site 1 updates feed both sites in the next iteration.
    assert edges(graph)[(0, 1)] == (False, ("memory",))
    assert carried_edges(graph) == [(0, 0), (1, 0), (1, 1)]
    assert list(forward_dag(graph).edges) == [(0, 1)]
    cond = condensation(graph)
    assert len(cond) == 1 and cond.nodes[0]["members"] == {0, 1}


def test_loop_nest_depth_and_carried_value_edge():
    _, graph = dag_of("power_nest")
    assert graph.nodes[0]["loop_depth"] == 2
    assert edges(graph) == {(0, 0): (True, ("value",))}  # X = A @ X through the loop's block argument


def test_prange_body_is_a_loop():
    _, graph = dag_of("blocks_prange")
    assert graph.nodes[0]["loop_depth"] == 1 and not graph.edges


def test_nodes_describe_their_sites():
    _, graph = dag_of("cholesky_blocked")
    node = graph.nodes[1]
    assert node["function"] == "cholesky_blocked" and node["fused"] and node["trans_b"]
    assert node["alpha"] == -1.0 and node["beta"] == 1.0 and node["dtype"] == "f64"
    assert set(node["stmts"]) == {"product", "trans_b", "load", "update", "store"}
    assert node["loc"].endswith(f":{node['line']}:1")


def test_views_alias_their_root():
    module, _ = dag_of("cholesky_blocked")
    fn = next(op for op in module.walk() if op.name == "func.func")
    roots = alias_roots(fn.body)
    (arg,) = [a for a in fn.entry_block.args if a.name_hint == "A"]
    (copy,) = [op for op in fn.walk() if op.name == "py.call" and op.attributes["py.callee"].value == "array.copy"]
    views = [op.result for op in fn.walk() if op.name == "py.getitem"]  # L[k:e, k:e], P, L[e:, e:], ...
    assert roots[arg] == {arg}
    assert roots[copy.result] == {copy.result}  # a copy is new memory
    assert len(views) == 4 and all(roots[v] == {copy.result} for v in views)  # subscripts do not add roots


NESTED = """
"func.func"() <{sym_name = "f", function_type = (i1) -> ()}> ({
^bb0(%c: i1):
  "cf.br"()[^bb1] : () -> ()
^bb1:
  "cf.cond_br"(%c)[^bb2, ^bb4] <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (i1) -> ()
^bb2:
  "cf.cond_br"(%c)[^bb2, ^bb3] <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (i1) -> ()
^bb3:
  "cf.br"()[^bb1] : () -> ()
^bb4:
  "func.return"() : () -> ()
}) : () -> ()
"""


def test_loop_analysis_of_a_nest():
    fn = parse_module(NESTED).block.ops[0]
    b = fn.body.blocks
    info = analyze_loops(fn.body)
    assert info.retreating == {(b[2], b[2]), (b[3], b[1])}
    assert [info.depth(x) for x in b] == [0, 1, 2, 1, 0]


def test_the_pass_annotates_sites_and_round_trips():
    module = fresh_module("kmeans")
    detect_gemms(module)
    BuildDag().apply(module)
    module.verify()
    text = print_op(module)
    assert print_op(parse_module(text)) == text
    site1 = next(op for op in module.walk() if isinstance(op, GemmOp) and op.site.value == 1)
    assert site1.attributes[LOOP_DEPTH_ATTR].value == 1
    assert str(site1.attributes[DEPS_ATTR]) == (
        '[{carried = false, site = 0 : i64, via = "memory"}, {carried = true, site = 1 : i64, via = "memory"}]'
    )


def test_dot_drawing():
    _, graph = dag_of("kmeans")
    dot = to_dot(graph)
    assert dot.startswith("digraph gemm_dag {") and dot.rstrip().endswith("}")
    assert '  s0 -> s1 [label="memory"];' in dot
    assert '  s1 -> s0 [label="memory (carried)", style=dashed];' in dot
    assert 's1 [label="site 1: A @ B\\nf64  depth 1\\nkmeans ' in dot


def test_write_dot_skips_png_without_graphviz(tmp_path, monkeypatch):
    _, graph = dag_of("mlp3")
    monkeypatch.setattr(build_dag_module.shutil, "which", lambda name: None)
    assert write_dot(graph, tmp_path / "g.dot") == [tmp_path / "g.dot"]
    assert (tmp_path / "g.dot").read_text() == to_dot(graph)
    assert not (tmp_path / "g.png").exists()


def test_mixopt_dag_dot(tmp_path):
    from corpus import CASES

    case = CASES["mlp3"]
    src = dump_ir(case.fn, tmp_path / "mlp.mix", *case.argtypes)
    out, err = io.StringIO(), io.StringIO()
    dot = tmp_path / "mlp.dot"
    code = mixopt.main([str(src), "-p", "detect-gemm,build-dag", "--dag-dot", str(dot)], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    text = dot.read_text()
    assert "s0 -> s1" in text and "s1 -> s2" in text and "s0 -> s2" not in text
    assert 'mix.deps = [{carried = false, site = 1 : i64, via = "value"}]' in out.getvalue()


def test_mixopt_dag_dot_refuses_split_input(tmp_path):
    err = io.StringIO()
    code = mixopt.main(["-", "--split-input-file", "--dag-dot", str(tmp_path / "x.dot")], stderr=err)
    assert code == 1 and "--split-input-file" in err.getvalue()


def test_duplicate_site_ids_are_diagnosed():
    module = fresh_module("mlp3")
    detect_gemms(module)
    for op in module.walk():
        if isinstance(op, GemmOp):
            op.properties["site"] = type(op.site)(0, op.site.type)
    with pytest.raises(Exception, match="site id 0 is used twice"):
        gemm_dag(module)
