"""detect-linalg on imported Numba functions: sites, numbering after the GEMM sites, rejections
as remarks through the pass manager, and mix.linalg's verifier."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mixjit.importer import import_function
from mixjit.ir.dialects.mix import GemmOp, LinalgOp
from mixjit.ir.parser import parse_module
from mixjit.ir.verifier import verify_diagnostics
from mixjit.passes.detect_gemm import DetectGemm, detection_report
from mixjit.passes.detect_linalg import DetectLinalg
from mixjit.passes.manager import PassManager


def _module(fn, *args):
    return parse_module(import_function(njit(fn), *args).text(), "linalg.mix")


def _mixed(a, b, z):
    x = np.linalg.solve(a, b)
    c = a @ x
    return np.linalg.inv(z), c, np.linalg.cholesky(a)


def test_linalg_calls_become_sites_after_the_gemm_sites_and_complex_ones_are_remarked():
    a, b, z = np.eye(3), np.ones((3, 2)), np.eye(3, dtype=np.complex128)
    module = _module(_mixed, a, b, z)
    emitted = PassManager([DetectGemm(), DetectLinalg()]).run(module)
    report = detection_report(module)
    assert [(s.site, type(s.op)) for s in report.sites] == [(0, GemmOp)]
    assert [(s.site, s.op.fn.value) for s in report.linalg_sites] == [(1, "solve"), (2, "cholesky")]
    assert all(s.stmts.keys() == {"call"} for s in report.linalg_sites)
    linalg_rejections = [r for r in report.rejected if r.reason == "linalg-dtype"]
    assert len(linalg_rejections) == 1 and linalg_rejections[0].what == "linalg call"
    assert [d.message for d in emitted] == [
        "linalg call left to numba: element type is not float32 or float64 (complex and integer calls stay "
        "with LAPACK) [linalg-dtype]"]
    assert not any(isinstance(op, LinalgOp) and op.fn.value == "inv" for op in module.walk())


def test_rerunning_detect_linalg_keeps_the_ids():
    module = _module(_mixed, np.eye(3), np.ones((3, 2)), np.eye(3, dtype=np.complex128))
    PassManager([DetectGemm(), DetectLinalg()]).run(module)
    before = [(s.site, s.op.fn.value) for s in detection_report(module).linalg_sites]
    PassManager([DetectLinalg()]).run(module)
    assert [(s.site, s.op.fn.value) for s in detection_report(module).linalg_sites] == before


@pytest.mark.parametrize("fn, operands, message", [
    ("qr", "%a", "fn must be one of cholesky, solve, inv, lstsq"),
    ("lstsq", "%a", "lstsq takes A and B"),
    ("det", "%a", "det's result must be 'f64'"),
    ("solve", "%a", "solve takes A and B"),
    ("inv", "%a, %a", "inv takes A only"),
])
def test_the_verifier_rejects_malformed_linalg_ops(fn, operands, message):
    types = ", ".join(["!py.array<f64, 2, C>"] * (operands.count(",") + 1))
    text = f'''"func.func"() <{{sym_name = "f", function_type = (!py.array<f64, 2, C>) -> ()}}> ({{
^bb0(%a: !py.array<f64, 2, C>):
  %x = "mix.linalg"({operands}) <{{dtype = f64, fn = "{fn}", site = 0 : i64}}> : ({types}) -> !py.array<f64, 2, C>
  "func.return"() : () -> ()
}}) : () -> ()'''
    module = parse_module(text, verify=False)
    assert any(message in d.message for d in verify_diagnostics(module))


def _left(a, b):
    x, res, rank, sv = np.linalg.lstsq(a, b)
    return x, rank, np.linalg.det(a), np.linalg.slogdet(a), np.linalg.lstsq(a, b, -1.0)[0]


def test_lstsq_using_more_than_its_solution_stays_with_lapack_and_says_why_det_and_slogdet_are_sites():
    module = _module(_left, np.eye(3), np.ones((3, 2)))
    emitted = PassManager([DetectGemm(), DetectLinalg()]).run(module)
    report = detection_report(module)
    assert [(s.op.fn.value, str(s.op.out.type)) for s in report.linalg_sites] == [("det", "f64"),
                                                                                  ("slogdet", "tuple<f64, f64>")]
    assert sorted(r.reason for r in report.rejected) == ["linalg-arguments", "linalg-lstsq"]
    assert all(d.message.startswith("linalg call left to numba: ") for d in emitted)
    assert any("residuals, rank and singular values" in d.message for d in emitted)


def _solutions(a, b):
    x = np.linalg.lstsq(a, b)[0]
    y, res, rank, sv = np.linalg.lstsq(a, b)
    return x + y


def test_lstsq_whose_solution_alone_is_used_becomes_a_site_and_its_tuple_goes():
    module = _module(_solutions, np.ones((5, 3)), np.ones(5))
    PassManager([DetectGemm(), DetectLinalg()]).run(module)
    report = detection_report(module)
    assert [(s.site, s.op.fn.value) for s in report.linalg_sites] == [(0, "lstsq"), (1, "lstsq")]
    indexed, unpacked = (s.stmts for s in report.linalg_sites)
    assert indexed.keys() == {"call", "solution"}  # x = lstsq(a, b)[0]: nothing else to drop
    assert unpacked.keys() == {"call", "solution", "drop"} and len(unpacked["drop"].split(",")) == 4
    names = {op.name for op in module.walk()}
    assert "py.static_getitem" not in names and "py.exhaust_iter" not in names
    assert not any(op.name == "py.call" and "lstsq" in str(op.attributes) for op in module.walk())
    site = report.linalg_sites[0].op
    assert str(site.out.type) == "!py.array<f64, 1, C>" and str(site.a.type) == "!py.array<f64, 2, C>"
