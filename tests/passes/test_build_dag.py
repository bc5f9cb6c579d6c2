"""build-dag: dependence edges (values and memory), loop-carried edges, loop depths, export."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import njit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from corpus import F64, INT, fresh_module  # noqa: E402

from mixjit import mixopt  # noqa: E402
from mixjit.importer import dump_ir, import_function  # noqa: E402
from mixjit.ir.dialects.mix import GemmOp  # noqa: E402
from mixjit.ir.parser import parse_module  # noqa: E402
from mixjit.ir.printer import print_op  # noqa: E402
from mixjit.passes import build_dag as build_dag_module  # noqa: E402
from mixjit.passes.aliasing import Kind, alias_roots, op_kind, written_values  # noqa: E402
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
from mixjit.passes.loops import analyze_loops, immediate_post_dominators  # noqa: E402


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


# -- views made by calls, control dependence, helper callees -------------------------------------
def dag_of_function(fn, *argtypes):
    """Import ``fn`` (and its @njit helpers), detect its sites and build the DAG."""
    module = parse_module(import_function(fn, *argtypes).text())
    detect_gemms(module)
    return gemm_dag(module)


def view_by_flipud(A, X, Y):
    F = np.flipud(A)
    A[:, :] = X @ Y
    return F @ Y


def view_by_split(A, X, Y):
    parts = np.split(A, 2)
    parts[0][:, :] = X @ Y
    return A @ Y


def fresh_by_copy(A, X, Y):
    F = np.copy(A)
    A[:, :] = X @ Y
    return F @ Y


@pytest.mark.parametrize("fn", [view_by_flipud, view_by_split])
def test_views_made_by_calls_not_on_a_list_alias_their_argument(fn):
    # An unknown call's array results may alias its array arguments (elements of a returned
    # list too), so the write into A through one name reaches the read through the other.
    graph = dag_of_function(fn, F64, F64, F64)
    assert edges(graph) == {(0, 1): (False, ("memory",))}


def test_a_copy_is_fresh_memory():
    assert edges(dag_of_function(fresh_by_copy, F64, F64, F64)) == {}


@pytest.mark.parametrize(("callee", "kind"), [
    ("numpy.flipud", Kind.UNKNOWN), ("numpy.broadcast_to", Kind.UNKNOWN),
    ("numpy.lib.stride_tricks.as_strided", Kind.UNKNOWN), ("numpy.zeros", Kind.ALLOC),
    ("numpy.sqrt", Kind.COMPUTE), ("array.copy", Kind.COMPUTE), ("array.reshape", Kind.VIEW),
])
def test_calls_may_alias_unless_known_fresh(callee, kind):
    text = f'''
"func.func"() <{{sym_name = "f", function_type = (!py.array<f64, 2, C>) -> ()}}> ({{
^bb0(%a: !py.array<f64, 2, C>):
  %f = "py.global"() <{{global_name = "f"}}> : () -> !py.opaque<"f">
  %r = "py.call"(%f, %a) {{py.callee = "{callee}"}} : (!py.opaque<"f">, !py.array<f64, 2, C>) -> !py.array<f64, 2, A>
  "func.return"() : () -> ()
}}) : () -> ()
'''
    fn = parse_module(text).block.ops[0]
    call = next(op for op in fn.walk() if op.name == "py.call")
    (arg,) = fn.entry_block.args
    assert op_kind(call) is kind
    assert (arg in alias_roots(fn.body)[call.result]) is (kind in (Kind.UNKNOWN, Kind.VIEW))


def test_a_ufunc_with_a_positional_out_writes_it():
    text = '''
"func.func"() <{sym_name = "f", function_type = (!py.array<f64, 2, C>, !py.array<f64, 2, C>) -> ()}> ({
^bb0(%a: !py.array<f64, 2, C>, %o: !py.array<f64, 2, C>):
  %f = "py.global"() <{global_name = "sqrt"}> : () -> !py.opaque<"f">
  %r = "py.call"(%f, %a, %o) {py.callee = "numpy.sqrt"} : (!py.opaque<"f">, !py.array<f64, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C>
  "func.return"() : () -> ()
}) : () -> ()
'''
    call = next(op for op in parse_module(text).walk() if op.name == "py.call")
    assert op_kind(call) is Kind.UNKNOWN and call.operands[2] in written_values(call)


def chosen_by_branch(A, B, C):
    G = A @ B
    out = np.zeros_like(C)
    if G[0, 0] > 0.0:
        out = C
    return out @ B


def written_under_branch(A, B, C):
    G = A @ B
    out = np.zeros_like(C)
    for i in range(C.shape[0]):
        if G[i, 0] > 0.0:
            out[i, 0] = 1.0
    return out @ B


def test_control_dependence_on_a_branch():
    # Which array reaches site 1 is decided by a branch on site 0's result: no value or
    # memory of site 0 flows into it, only the decision.
    assert edges(dag_of_function(chosen_by_branch, F64, F64, F64)) == {(0, 1): (False, ("control",))}
    # A store made under such a branch: the stored constant carries the decision.
    assert edges(dag_of_function(written_under_branch, F64, F64, F64)) == {(0, 1): (False, ("memory",))}


def test_post_dominators():
    fn = parse_module(NESTED).block.ops[0]
    b = fn.body.blocks
    ipdom = immediate_post_dominators(analyze_loops(fn.body), fn.body)
    assert ipdom == {b[0]: b[1], b[1]: b[4], b[2]: b[3], b[3]: b[1], b[4]: None}


def test_example_kmeans_labels_decide_the_next_distances():
    # examples/kmeans.py: G (site 0) picks each label through `if dist < best`, the labels pick
    # which sums and counts make C, and C feeds G in the next iteration.
    from mixjit.demo import load_example

    graph = dag_of_function(load_example("kmeans").kmeans.py_func, F64, F64, INT)
    assert edges(graph) == {(0, 0): (True, ("memory",))}


@njit
def _chain_inner(A, B):
    return A @ B


@njit
def _chain_middle(A, B, out):
    out[:, :] = _chain_inner(A, B)


def helper_chain(X, Y, W):
    P = X @ Y
    out = np.empty_like(P)
    _chain_middle(P, W, out)  # runs the inner site on P and writes its result into out
    return out @ W


def helper_in_loop(X, W, n):
    out = np.empty_like(X)
    for _ in range(n):
        _chain_middle(X, W, out)
        X = out @ W
    return X


def test_edges_through_a_two_level_helper_chain():
    graph = dag_of_function(helper_chain, F64, F64, F64)
    assert len(graph) == 3
    inner = next(s for s in graph.nodes if "_chain_inner" in graph.nodes[s]["function"])
    first, last = sorted(s for s in graph.nodes if s != inner)
    assert edges(graph) == {
        (first, inner): (False, ("value",)),  # P is the inner site's operand
        (inner, last): (False, ("memory",)),  # the helper writes its result into out
        (first, last): (False, ("memory",)),  # conservatively: the helper may store P into out
    }


def test_a_helper_site_in_a_callers_loop_gets_carried_edges():
    graph = dag_of_function(helper_in_loop, F64, F64, INT)
    inner = next(s for s in graph.nodes if "_chain_inner" in graph.nodes[s]["function"])
    (outer,) = [s for s in graph.nodes if s != inner]
    # The helper may store what it gets (X) into out, which the caller's site reads.
    assert edges(graph) == {
        (inner, outer): (False, ("memory",)),  # the helper writes its product into out
        (outer, inner): (True, ("memory", "value")),  # X = out @ W is the next call's argument
        (inner, inner): (True, ("memory",)),
        (outer, outer): (True, ("memory",)),
    }
    assert forward_dag(graph).number_of_edges() == 1


ARR = "!py.array<f64, 2, C>"
ALTERNATING_CALLS = f'''
"func.func"() <{{sym_name = "main", function_type = ({ARR}) -> ()}}> ({{
^bb0(%a: {ARR}):
  %f = "py.global"() <{{global_name = "f"}}> : () -> !py.opaque<"f">
  %g = "py.global"() <{{global_name = "g"}}> : () -> !py.opaque<"g">
  %r1 = "py.call"(%f, %a) {{py.target = @f}} : (!py.opaque<"f">, {ARR}) -> none
  %r2 = "py.call"(%g, %a) {{py.target = @g}} : (!py.opaque<"g">, {ARR}) -> none
  %r3 = "py.call"(%f, %a) {{py.target = @f}} : (!py.opaque<"f">, {ARR}) -> none
  "func.return"() : () -> ()
}}) : () -> ()
"func.func"() <{{sym_name = "f", function_type = ({ARR}) -> ()}}> ({{
^bb0(%x: {ARR}):
  %p = "mix.gemm"(%x, %x) <{{dtype = f64, site = 0 : i64}}> : ({ARR}, {ARR}) -> {ARR}
  "func.return"() : () -> ()
}}) : () -> ()
"func.func"() <{{sym_name = "g", function_type = ({ARR}) -> ()}}> ({{
^bb0(%x: {ARR}):
  %p = "mix.gemm"(%x, %x) <{{dtype = f64, site = 1 : i64}}> : ({ARR}, {ARR}) -> {ARR}
  "func.return"() : () -> ()
}}) : () -> ()
'''


def test_repeated_helper_calls_close_cycles_that_are_marked_carried():
    # f, then g, then f again on the same array (each call may write it): f -> g, g -> f and
    # f -> f with no loop. The self edge spans two calls of f; the cycle f -> g -> f is broken
    # by marking its edges carried, so the forward part stays acyclic.
    graph = gemm_dag(parse_module(ALTERNATING_CALLS))
    assert edges(graph) == {
        (0, 1): (True, ("memory",)), (1, 0): (True, ("memory",)), (0, 0): (True, ("memory",)),
    }
    assert not forward_dag(graph).edges


UNKNOWN_WRITE = f'''
"func.func"() <{{sym_name = "f", function_type = ({ARR}, {ARR}) -> {ARR}}}> ({{
^bb0(%a: {ARR}, %x: {ARR}):
  %p = "mix.gemm"(%a, %a) <{{dtype = f64, site = 0 : i64}}> : ({ARR}, {ARR}) -> {ARR}
  "py.unknown"(%x, %p) <{{text = "copy_into(x, p)"}}> : ({ARR}, {ARR}) -> ()
  %q = "mix.gemm"(%x, %a) <{{dtype = f64, site = 1 : i64}}> : ({ARR}, {ARR}) -> {ARR}
  "func.return"(%q) : ({ARR}) -> ()
}}) : () -> ()
'''


def test_an_unknown_statement_may_write_its_array_operands():
    # py.unknown stands for a Numba statement the importer has no op for: it may write the
    # memory of every operand, so site 0's result may reach site 1 through x.
    graph = gemm_dag(parse_module(UNKNOWN_WRITE))
    assert edges(graph) == {(0, 1): (False, ("memory",))}
