"""Statements the importer has no op for become ``py.unknown``: the rest of the function, its
GEMMs included, is still imported, and the text parses back to the same module."""

from __future__ import annotations

import numpy as np
import pytest
from numba import objmode

from mixjit.importer import import_function
from mixjit.ir.dialects import py
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.passes.detect_gemm import detect_gemms


def dynamic_raise(a, b, n):
    c = a @ b
    if n > 3:
        raise ValueError("too big", n)
    return c


def dict_literal(a, b):
    d = {1: 2.0}
    return a @ b, d[1]


def star_args(a, b):
    t = (a, b)
    return np.dot(*t) + a @ b


def objmode_block(a, b):
    c = a @ b
    with objmode(d="float64[:, :]"):
        d = np.dot(a, b)
    return c + d


A = np.ones((2, 2))
CASES = {
    dynamic_raise: ((A, A, 1), "<dynamic> raise <class 'ValueError'>('too big', Var(n"),
    dict_literal: ((A, A), "d = build_map("),
    star_args: ((A, A), "vararg=t"),
    objmode_block: ((A, A), "const(ObjModeLiftedWith, ObjModeLiftedWith(<function objmode_block>))"),
}


@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_unknown_statement_keeps_the_other_gemms(fn):
    args, text = CASES[fn]
    imported = import_function(fn, *args)
    unknown = [op for op in imported.module.walk() if isinstance(op, py.UnknownOp)]
    assert len(unknown) == 1 and text in unknown[0].text.value
    assert " at 0x" not in imported.text()  # addresses removed: the same text on every compile
    report = detect_gemms(imported.module)
    assert len(report.sites) == 1  # the a @ b next to the construct
    assert print_op(parse_module(imported.text())) == imported.text()


def test_dynamic_raise_raises_the_exception_the_unknown_op_builds():
    imported = import_function(dynamic_raise, A, A, 1)
    (raise_op,) = [op for op in imported.module.walk() if isinstance(op, py.RaiseOp)]
    made = raise_op.exception.owner
    assert isinstance(made, py.UnknownOp) and [v.name_hint for v in made.args] == ["n"]


def test_objmode_call_is_named_and_not_imported_as_a_helper():
    imported = import_function(objmode_block, A, A)
    assert [f.qualname for f in imported.functions] == ["objmode_block"]
    callees = {op.attributes["py.callee"].value for op in imported.module.walk()
               if isinstance(op, py.CallOp) and "py.callee" in op.attributes}
    assert "numba.objmode" in callees
