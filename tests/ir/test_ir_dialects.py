"""Dialect ops built through the API: they verify, print and parse back."""

from __future__ import annotations

from mixjit.ir.attributes import FloatAttr, IntegerAttr, StringAttr, TypeAttr
from mixjit.ir.builder import Builder
from mixjit.ir.core import Block, Operation, registered_ops
from mixjit.ir.dialects import cf, func, mix, py
from mixjit.ir.dialects.builtin import ModuleOp
from mixjit.ir.dialects.test import GenericOp
from mixjit.ir.location import Location
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.ir.traits import MemAlloc, MemoryEffects, MemRead, Pure
from mixjit.ir.types import ArrayType, OpaqueType, TupleType, f32, f64, i1, i64
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


def test_memory_effects_follow_the_documented_rule() -> None:
    """Pure: reads operand values, makes a value or a view. Not Pure: mutates, calls code, prints,
    advances iterators, ends blocks (UNKNOWN); allocates (ALLOC); or depends on the types."""
    py_ops = {name: cls for name, cls in registered_ops().items() if name.startswith("py.")}
    by_trait = {name for name, cls in py_ops.items() if cls.has_trait(Pure)}
    assert by_trait == {
        "py.const", "py.global", "py.freevar", "py.arg", "py.build_tuple", "py.build_slice",
        "py.pair_first", "py.pair_second", "py.cast",
    }
    assert {n for n, c in py_ops.items() if c.has_trait(MemAlloc)} == {"py.build_list", "py.build_set", "py.getiter"}
    typed = {n for n, c in py_ops.items() if c.memory_effects is not Operation.memory_effects}
    assert typed == {
        "py.getattr", "py.getitem", "py.static_getitem", "py.typed_getitem", "py.binop", "py.unary",
        "py.exhaust_iter",
    }
    unknown = set(py_ops) - by_trait - typed - {"py.build_list", "py.build_set", "py.getiter"}
    assert unknown == {
        "py.call", "py.setattr", "py.setitem", "py.static_setitem", "py.inplace_binop", "py.iternext",
        "py.del", "py.print", "py.raise", "py.unknown",
    }
    assert not any(py_ops[n].has_trait(MemRead) for n in unknown)  # so their default is UNKNOWN
    assert Operation("x.y").memory_effects() == MemoryEffects.UNKNOWN
    assert mix.GemmOp.has_trait(MemRead) and mix.GemmOp.has_trait(MemAlloc) and not mix.GemmOp.has_trait(Pure)


def _effects(op_cls: type, operand_types: list, out, **props) -> MemoryEffects:
    block = Block(arg_types=operand_types)
    names = [d for d in ("obj", "index", "lhs", "rhs", "value") if d in op_cls.__dict__]
    op = op_cls.build(**dict(zip(names, block.args)), out=out, **props)
    return op.memory_effects()


def test_effects_of_subscripts_attributes_and_operators_depend_on_the_types() -> None:
    m2, v1, idx = ArrayType(f64, 2, "C"), ArrayType(f64, 1, "C"), ArrayType(i64, 1, "C")
    sl = OpaqueType("slice<a:b>")
    NONE, READ, ALLOC = MemoryEffects.NONE, MemoryEffects.READ, MemoryEffects.ALLOC
    assert _effects(py.GetItemOp, [m2, TupleType([i64, i64])], f64) == READ  # element load
    assert _effects(py.GetItemOp, [m2, i64], v1) == NONE  # row view
    assert _effects(py.GetItemOp, [m2, TupleType([sl, sl])], m2) == NONE  # a[1:3, :2] is a view
    assert _effects(py.GetItemOp, [m2, idx], m2) == READ | ALLOC  # fancy index: a copy
    assert _effects(py.GetItemOp, [m2, i1], m2) == READ | ALLOC  # a[True] is not a view
    assert _effects(py.GetItemOp, [TupleType([m2, m2]), i64], m2) == NONE  # tuples are immutable
    assert _effects(py.TypedGetItemOp, [v1, i64], f64, dtype=TypeAttr(f64)) == READ
    assert _effects(py.StaticGetItemOp, [m2], v1, index=IntegerAttr(0, i64)) == NONE
    assert _effects(py.StaticGetItemOp, [m2], f64, index=IntegerAttr(0, i64)) == READ
    lst = OpaqueType("reflected list(float64)")
    assert _effects(py.StaticGetItemOp, [lst], lst, index=IntegerAttr(0, i64)) == READ | ALLOC
    assert _effects(py.GetAttrOp, [m2], m2, attr="T") == NONE
    assert _effects(py.GetAttrOp, [m2], OpaqueType("array.flatiter"), attr="flat") == ALLOC
    assert _effects(py.GetAttrOp, [OpaqueType("Module(numpy)")], OpaqueType("f"), attr="dot") == NONE
    assert _effects(py.GetAttrOp, [OpaqueType("jitclass.Point")], f64, attr="x") == READ
    assert _effects(py.BinOp, [i64, i64], i64, op="+") == NONE
    assert _effects(py.BinOp, [m2, f64], m2, op="*") == READ | ALLOC
    assert _effects(py.UnaryOp, [m2], m2, op="-") == READ | ALLOC
    assert _effects(py.ExhaustIterOp, [TupleType([i64, i64])], TupleType([i64, i64]), count=2) == NONE
    assert _effects(py.ExhaustIterOp, [v1], TupleType([f64, f64]), count=2) == READ


def test_generic_test_ops_accept_anything() -> None:
    op = GenericOp.build(args=[], outs=[i64, f32])
    op.properties["anything"] = StringAttr("goes")
    module = ModuleOp.from_ops([op])
    assert verify_diagnostics(module) == []


def test_malformed_ops_from_unverified_input_are_assumed_to_do_anything() -> None:
    module = parse_module('%a = "py.getitem"() : () -> f64\n%b = "py.exhaust_iter"() <{count = 2}> : () -> f64\n', verify=False)
    ops = [op for op in module.walk() if op is not module]
    assert [op.memory_effects() for op in ops] == [MemoryEffects.UNKNOWN] * 2


def test_unknown_op_holds_a_statement_it_cannot_model() -> None:
    """py.unknown: any operands, at most one result, the statement's text; effects UNKNOWN."""
    block = Block(arg_types=[ArrayType(f64, 2, "C"), i64])
    op = py.UnknownOp.build(args=list(block.args), text="d = build_map(...)", outs=[OpaqueType("dict")])
    assert op.memory_effects() == MemoryEffects.UNKNOWN and op.text.value == "d = build_map(...)"
    one = py.UnknownOp.build(args=[], text="d = build_map(...)", outs=[OpaqueType("dict")])
    assert verify_diagnostics(one) == []
    two = py.UnknownOp.build(args=[], text="x", outs=[i64, i64])
    assert [d.message for d in verify_diagnostics(two)] == [
        "'py.unknown' op has 2 results; a Numba statement assigns at most one"]
