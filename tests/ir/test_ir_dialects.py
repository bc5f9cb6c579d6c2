"""Dialect ops built through the API: they verify, print and parse back."""

from __future__ import annotations

from mixjit.ir.attributes import FloatAttr, StringAttr, TypeAttr
from mixjit.ir.builder import Builder
from mixjit.ir.core import Block, registered_ops
from mixjit.ir.dialects import cf, func, mix, py
from mixjit.ir.dialects.builtin import ModuleOp
from mixjit.ir.dialects.test import GenericOp
from mixjit.ir.location import Location
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.ir.traits import Pure
from mixjit.ir.types import ArrayType, OpaqueType, f32, f64, i1, i64
from mixjit.ir.verifier import verify, verify_diagnostics


def round_trips(module: ModuleOp) -> str:
    verify(module)
    text = print_op(module)
    assert print_op(parse_module(text)) == text
    return text


def test_gemm_function_built_with_the_builder() -> None:
    arr = ArrayType(f32, 2, "C")
    f = func.FuncOp.define("k", [arr, arr], [arr], arg_names=["A", "B"], loc=Location("k.py", 1, 1))
    entry = f.entry_block
    assert entry is not None
    b = Builder.at_end(entry, loc=Location("k.py", 3, 9))
    a_arg, b_arg = entry.args
    g = b.create(mix.GemmOp, a=a_arg, b=b_arg, out=arr, site=0, dtype=TypeAttr(f32), trans_b=True)
    g2 = b.create(mix.GemmOp, a=g.out, b=b_arg, c=a_arg, out=arr, site=1, dtype=f32, beta=FloatAttr(1.0))
    b.create(func.ReturnOp, values=[g2.out])
    text = round_trips(ModuleOp.from_ops([f]))
    assert '%0 = "mix.gemm"(%A, %B) <{dtype = f32, site = 0 : i64, trans_b = true}>' in text
    assert 'loc("k.py":3:9)' in text


def test_conditional_branch_built_with_segments() -> None:
    f = func.FuncOp.define("f", [i1, i64], [i64], arg_names=["c", "x"])
    entry = f.entry_block
    assert entry is not None
    left, right = Block(arg_types=[i64]), Block()
    f.body.add_block(left)
    f.body.add_block(right)
    c, x = entry.args
    entry.add_op(cf.CondBranchOp.build(condition=c, true_args=[x], true_dest=left, false_dest=right))
    left.add_op(func.ReturnOp.build(values=[left.args[0]]))
    right.add_op(cf.BranchOp.build(args=[x], dest=left))
    text = round_trips(ModuleOp.from_ops([f]))
    assert '"cf.cond_br"(%c, %x)[^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 1, 0>}>' in text


def test_py_ops_build_and_verify() -> None:
    obj = OpaqueType("Module(numpy)")
    f = func.FuncOp.define("f", [f64], [f64], arg_names=["x"])
    entry = f.entry_block
    assert entry is not None
    b = Builder.at_end(entry)
    (x,) = entry.args
    np_ = b.create(py.GlobalOp, global_name="np", out=obj)
    sqrt = b.create(py.GetAttrOp, obj=np_.out, attr="sqrt", out=obj)
    call = b.create(py.CallOp, func=sqrt.out, args=[x], out=f64)
    s = b.create(py.BinOp, lhs=call.out, rhs=x, op="+", out=f64)
    b.create(py.PrintOp, args=[s.out])
    b.create(func.ReturnOp, values=[s.out])
    round_trips(ModuleOp.from_ops([f]))
    bad = py.CallOp.build(func=sqrt.out, args=[x], kwnames=[StringAttr("a"), StringAttr("b")], out=f64)
    entry.insert_op_before(bad, entry.last_op)  # type: ignore[arg-type]
    assert [d.message for d in verify_diagnostics(f)] == ["'py.call' op 2 keyword names for 1 arguments"]


def test_purity_follows_the_documented_rule() -> None:
    """Pure: reads operands and makes a value. Not Pure: mutates, calls code, prints, advances
    iterators, ends blocks."""
    py_ops = {name: cls for name, cls in registered_ops().items() if name.startswith("py.")}
    impure = {name for name, cls in py_ops.items() if not cls.has_trait(Pure)}
    assert impure == {
        "py.call", "py.setattr", "py.setitem", "py.static_setitem", "py.inplace_binop", "py.iternext",
        "py.del", "py.print", "py.raise",
    }
    assert mix.GemmOp.has_trait(Pure)


def test_generic_test_ops_accept_anything() -> None:
    op = GenericOp.build(args=[], outs=[i64, f32])
    op.properties["anything"] = StringAttr("goes")
    module = ModuleOp.from_ops([op])
    assert verify_diagnostics(module) == []
