"""detect-gemm on the imported corpus (real Numba functions) and on hand-written IR."""

from __future__ import annotations

import inspect
import json
import operator
import sys
from pathlib import Path

import pytest
from numba.core import ir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from corpus import CASES, fresh_module, imported  # noqa: E402

from mixjit.importer import import_function  # noqa: E402
from mixjit.ir.diagnostics import Severity  # noqa: E402
from mixjit.ir.dialects import py  # noqa: E402
from mixjit.ir.dialects.mix import GemmOp  # noqa: E402
from mixjit.ir.parser import parse_module  # noqa: E402
from mixjit.ir.printer import print_op  # noqa: E402
from mixjit.passes.detect_gemm import (  # noqa: E402
    NOT_GEMM_ATTR,
    REASONS,
    DetectGemm,
    detect_gemms,
    detection_report,
)


def detected(name, fuse=True):
    module = fresh_module(name)
    report = detect_gemms(module, fuse)
    module.verify()
    return module, report


@pytest.mark.parametrize("name", CASES)
def test_finds_exactly_the_expected_sites(name):
    case = CASES[name]
    _, report = detected(name)
    assert [s.site for s in report.sites] == list(range(len(case.sites)))
    got = [
        (str(s.op.dtype.value), s.op.trans_a.value, s.op.trans_b.value, s.op.alpha.value, s.op.beta.value,
         s.op.c is not None)
        for s in report.sites
    ]
    want = [(s.dtype, s.trans_a, s.trans_b, s.alpha, s.beta, s.fused) for s in case.sites]
    assert got == want
    assert [r.reason for r in report.rejected] == list(case.rejected)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.rejected])
def test_rejections_are_located_remarks_and_records(name):
    _, report = detected(name)
    source = inspect.getsourcefile(CASES[name].fn)
    for rejection in report.rejected:
        diag = rejection.diagnostic()
        assert diag.severity is Severity.REMARK
        assert diag.loc.file == source and diag.loc.line > 0
        assert f"[{rejection.reason}]" in diag.message and REASONS[rejection.reason] in diag.message
        assert diag.notes and diag.notes[0].message == rejection.detail
        record = json.loads(json.dumps(rejection.record()))
        assert record["reason"] == rejection.reason and record["line"] == diag.loc.line


def test_rejection_details_name_the_shapes():
    _, report = detected("matvec")
    assert [r.detail for r in report.rejected] == ["A is 2-D, B is 1-D", "A is 1-D, B is 2-D"]


def test_sites_and_rejections_are_remarked_in_source_order():
    _, report = detected("kmeans")
    messages = [(d.loc.line, d.message) for d in report.diagnostics()]
    assert [m for _, m in messages] == [
        "GEMM site 0: f64 A @ B^T",
        "matrix product left to numba: 1-D dot product [dot-1d]",
        "GEMM site 1: f64 A @ B",
    ]
    assert [line for line, _ in messages] == sorted(line for line, _ in messages)


def test_the_report_survives_a_dump():
    module, report = detected("matvec")
    again = detection_report(parse_module(print_op(module)))
    assert [(r.reason, r.detail, r.loc) for r in again.rejected] == [
        (r.reason, r.detail, r.loc) for r in report.rejected
    ]


def gemm_roles(name):
    module, report = detected(name)
    (fn,) = [f for f in imported(name).functions if f.qualname == report.sites[-1].function]
    return report.sites[-1], {role: fn.stmts[sid] for role, sid in report.sites[-1].stmts.items()}


def test_fused_update_records_the_four_statements_it_replaces():
    site, stmts = gemm_roles("cholesky_blocked")
    assert set(stmts) == {"product", "trans_b", "load", "update", "store"}
    assert stmts["product"].value.op == "binop" and stmts["product"].value.fn is operator.matmul
    assert stmts["trans_b"].value.op == "getattr" and stmts["trans_b"].value.attr == "T"
    assert stmts["update"].value.op == "inplace_binop" and stmts["update"].value.fn is operator.isub
    load, store = stmts["load"], stmts["store"]
    assert load.value.op == "getitem" and isinstance(store, ir.SetItem)
    assert store.target.name == load.value.value.name == "L"
    assert store.index.name == load.value.index.name
    assert store.value.name == stmts["update"].target.name
    # The GEMM's C operand is the view C[idx] the store writes back.
    assert site.op.c.defining_op.name == "py.getitem"
    assert [type(u) for u in site.op.result.users] == [py.SetItemOp]


def test_static_subscript_updates_fuse_too():
    site, stmts = gemm_roles("update_add_static")
    assert isinstance(stmts["store"], ir.StaticSetItem)
    assert stmts["load"].value.op == "static_getitem"
    assert site.op.c.defining_op.name == "py.static_getitem"


def test_transposes_record_their_statements():
    _, report = detected("mm_transposes")
    fn = imported("mm_transposes").functions[0]
    roles = [{r: fn.stmts[s] for r, s in site.stmts.items()} for site in report.sites]
    assert roles[0]["trans_a"].value.attr == "T"
    assert roles[1]["trans_b"].value.op == "call"  # np.transpose(B)
    assert {"trans_a", "trans_b"} <= set(roles[2])
    # The GEMM reads the arrays themselves, not their transposes.
    assert all(site.op.a.name_hint in ("A", "B") and site.op.b.name_hint in ("A", "B") for site in report.sites)


def test_without_fusion_the_update_stays():
    module, report = detected("update_sub", fuse=False)
    (site,) = report.sites
    assert site.op.c is None and site.op.alpha.value == 1.0
    assert any(isinstance(op, py.InplaceBinOp) for op in module.walk())


def test_site_ids_are_stable_across_compiles_and_reruns():
    module, report = detected("mm_transposes")
    lines = [s.loc.line for s in report.sites]
    assert lines == sorted(lines)
    again = detect_gemms(module)
    assert [(s.site, s.loc) for s in again.sites] == [(s.site, s.loc) for s in report.sites]
    recompiled = import_function(CASES["mm_transposes"].fn, *CASES["mm_transposes"].argtypes).module
    detect_gemms(recompiled)
    assert print_op(recompiled) == print_op(module)


def test_helper_callee_sites_are_found_in_the_helper():
    _, report = detected("uses_helper")
    (site,) = report.sites
    assert site.function == "_helper_product"


HAND_WRITTEN = """
"func.func"() <{sym_name = "f", function_type = (!py.array<i64, 2, C>, !py.array<f32, 2, C>, !py.array<f64, 2, C>, !py.opaque<"pyobject">) -> ()}> ({
^bb0(%i: !py.array<i64, 2, C>, %s: !py.array<f32, 2, C>, %d: !py.array<f64, 2, C>, %o: !py.opaque<"pyobject">):
  %a = "py.binop"(%i, %i) <{op = "@"}> : (!py.array<i64, 2, C>, !py.array<i64, 2, C>) -> !py.array<i64, 2, C> loc("k.py":3:5)
  %b = "py.binop"(%s, %d) <{op = "@"}> : (!py.array<f32, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C> loc("k.py":4:5)
  %c = "py.binop"(%o, %o) <{op = "@"}> : (!py.opaque<"pyobject">, !py.opaque<"pyobject">) -> !py.opaque<"pyobject"> loc("k.py":5:5)
  %e = "py.binop"(%d, %d) <{op = "@"}> : (!py.array<f64, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C> loc("k.py":6:5)
  "func.return"() : () -> ()
}) : () -> ()
"""


def test_integer_mixed_and_object_mode_products_are_left_alone():
    module = parse_module(HAND_WRITTEN, "k.mix")
    report = detect_gemms(module)
    assert [(r.reason, r.loc.line) for r in report.rejected] == [
        ("integer-dtype", 3), ("mixed-dtype", 4), ("object-mode", 5),
    ]
    assert [s.loc.line for s in report.sites] == [6]
    marked = [op for op in module.walk() if NOT_GEMM_ATTR in op.attributes]
    assert all(isinstance(op, py.BinOp) for op in marked) and len(marked) == 3


def test_the_pass_is_registered_with_its_option():
    module = parse_module(HAND_WRITTEN, "k.mix")
    DetectGemm.from_options({"fuse-updates": ["false"]}).apply(module)
    assert len([op for op in module.walk() if isinstance(op, GemmOp)]) == 1


def test_the_pass_emits_each_rejection_as_a_remark_through_the_pass_manager():
    from mixjit.passes.manager import PassManager

    module = fresh_module("matvec")
    emitted = PassManager([DetectGemm()]).run(module)
    rejected = detection_report(module).rejected
    assert len(rejected) == 2
    assert emitted == [r.diagnostic() for r in rejected]


def test_mixopt_prints_the_remarks_at_the_python_source_line(tmp_path):
    import io

    from mixjit import mixopt

    path = tmp_path / "matvec.mix"
    path.write_text(print_op(fresh_module("matvec")))
    out, err = io.StringIO(), io.StringIO()
    source = inspect.getsourcefile(CASES["matvec"].fn)
    # source lines are shown only for files under a --source-dir (loc()s in a dump are untrusted)
    args = [str(path), "-p", "detect-gemm", "--source-dir", str(Path(source).parent)]
    assert mixopt.main(args, stdout=out, stderr=err) == 0
    lines = err.getvalue().splitlines()
    source_lines = Path(source).read_text().splitlines()
    remarks = [i for i, line in enumerate(lines) if ": remark: " in line]
    assert len(remarks) == 2
    for i in remarks:
        head = lines[i]
        assert head.startswith(f"{source}:") and "matrix-vector product [matrix-vector]" in head
        line_no = int(head[len(source) + 1:].split(":")[0])
        assert lines[i + 1] == source_lines[line_no - 1]  # the source line, then a caret
        assert lines[i + 2] == "^"
        assert lines[i + 3].startswith(f"{source}:{line_no}:1: note: A is ")
