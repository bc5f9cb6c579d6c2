"""Use-def chains and structure editing in the IR core."""

from __future__ import annotations

import pytest

from mixjit.ir.attributes import IntegerAttr, StringAttr
from mixjit.ir.builder import Builder
from mixjit.ir.core import Block, BlockArgument, IRError, Operation, Region, Use, constant_value, get_op_class
from mixjit.ir.dialects.arith import AddIOp, ConstantOp
from mixjit.ir.dialects.builtin import ModuleOp, lookup_symbol
from mixjit.ir.dialects.cf import BranchOp, CondBranchOp
from mixjit.ir.dialects.func import FuncOp, ReturnOp
from mixjit.ir.dialects.mix import GemmOp
from mixjit.ir.dialects.test import GenericOp
from mixjit.ir.opdef import attr
from mixjit.ir.printer import print_op
from mixjit.ir.traits import Commutative, ConstantLike, IsTerminator, Pure
from mixjit.ir.types import ArrayType, f32, i1, i32, i64


def const(value: int, block: Block | None = None) -> ConstantOp:
    op = ConstantOp.build(value=IntegerAttr(value, i64), out=i64)
    if block is not None:
        block.add_op(op)
    return op


def test_operands_register_uses_in_order() -> None:
    block = Block()
    a, b = const(1, block), const(2, block)
    add = block.add_op(AddIOp.build(lhs=a.result, rhs=b.result, out=i64))
    twice = block.add_op(AddIOp.build(lhs=a.result, rhs=a.result, out=i64))
    assert a.result.uses == [Use(add, 0), Use(twice, 0), Use(twice, 1)]
    assert a.result.users == [add, twice]
    assert b.result.uses == [Use(add, 1)]
    assert not add.result.has_uses


def test_set_operand_moves_the_use() -> None:
    block = Block()
    a, b = const(1, block), const(2, block)
    add = block.add_op(AddIOp.build(lhs=a.result, rhs=a.result, out=i64))
    add.set_operand(1, b.result)
    assert add.operands == (a.result, b.result)
    assert a.result.uses == [Use(add, 0)]
    assert b.result.uses == [Use(add, 1)]


def test_replace_all_uses_with() -> None:
    block = Block()
    a, b = const(1, block), const(2, block)
    users = [block.add_op(AddIOp.build(lhs=a.result, rhs=a.result, out=i64)) for _ in range(3)]
    a.result.replace_all_uses_with(b.result)
    assert not a.result.has_uses
    assert len(b.result.uses) == 6
    assert all(u.operands == (b.result, b.result) for u in users)
    b.result.replace_all_uses_with(b.result)  # no-op, must not loop or drop uses
    assert len(b.result.uses) == 6


def test_erase_refused_while_used_then_allowed() -> None:
    block = Block()
    a = const(1, block)
    add = block.add_op(AddIOp.build(lhs=a.result, rhs=a.result, out=i64))
    with pytest.raises(IRError, match=r"cannot erase 'arith.constant': result #0 still has 2 use\(s\), first by 'arith.addi'"):
        a.erase()
    assert a.parent is block and not a.erased
    add.erase()
    assert add.erased and add.parent is None
    assert not a.result.has_uses  # the erased op's uses were dropped
    a.erase()
    assert block.ops == ()
    with pytest.raises(IRError, match="already erased"):
        a.erase()
    with pytest.raises(IRError, match="was erased"):
        block.add_op(a)


def test_erase_op_with_region_drops_nested_uses_and_checks_nested_results() -> None:
    block = Block()
    outer = const(7, block)
    inner_block = Block()
    holder = block.add_op(GenericOp.build(bodies=[Region([inner_block])]))
    nested = inner_block.add_op(AddIOp.build(lhs=outer.result, rhs=outer.result, out=i64))
    user = block.add_op(GenericOp.build(args=[nested.result]))
    with pytest.raises(IRError, match="of nested 'arith.addi'"):
        holder.erase()
    user.erase()
    holder.erase()
    assert nested.erased and not outer.result.has_uses


def test_detach_keeps_uses_and_allows_reinsertion() -> None:
    block = Block()
    a, b = const(1, block), const(2, block)
    add = block.add_op(AddIOp.build(lhs=a.result, rhs=b.result, out=i64))
    add.detach()
    assert add.parent is None and len(a.result.uses) == 1
    block.insert_op_before(add, b)
    assert block.ops == (a, add, b)
    with pytest.raises(IRError, match="already in a block"):
        block.add_op(add)


def test_block_positions_and_insertion() -> None:
    block = Block()
    a, c = const(1, block), const(3, block)
    b = block.insert_op_after(const(2), a)
    d = block.insert_op_at_start(const(0))
    assert [op.properties["value"].value for op in block.ops] == [0, 1, 2, 3]
    assert (a.next_op, a.prev_op, d.prev_op, c.next_op) == (b, d, None, None)
    assert (block.first_op, block.last_op, len(block)) == (d, c, 4)


def test_block_arguments_insert_erase_renumber() -> None:
    block = Block(arg_types=[i64, i32], arg_names=["x", None])
    x, y = block.args
    z = block.insert_arg(1, f32, "z")
    assert [a.index for a in block.args] == [0, 1, 2] and block.args == (x, z, y)
    user = block.add_op(GenericOp.build(args=[z]))
    with pytest.raises(IRError, match="block argument #1: it still has 1 use"):
        block.erase_arg(z)
    user.erase()
    block.erase_arg(z)
    assert block.args == (x, y) and y.index == 1
    assert isinstance(x, BlockArgument) and x.block is block and x.name_hint == "x"


def test_successors_track_predecessors() -> None:
    region = Region([Block(), Block(), Block(arg_types=[i64])])
    entry, left, right = region.blocks
    flag = entry.add_op(GenericOp.build(outs=[i1]))
    br = entry.add_op(CondBranchOp.build(condition=flag.result, true_dest=left, false_dest=right, false_args=[]))
    assert left.predecessors == [br] and right.predecessors == [br]
    assert entry.successors == (left, right)
    br.set_successor(1, left)
    assert right.predecessors == [] and left.predecessors == [br]
    with pytest.raises(IRError, match="still the successor"):
        left.erase()
    right.erase()
    assert region.blocks == (entry, left)


def test_block_erase_refuses_values_used_outside() -> None:
    region = Region([Block(), Block()])
    first, second = region.blocks
    produced = const(1, first)
    second.add_op(GenericOp.build(args=[produced.result]))
    with pytest.raises(IRError, match="still used by 'test.op'"):
        first.erase()


def test_drop_all_references_breaks_use_cycles_between_blocks() -> None:
    # ^a and ^b branch to each other and use each other's values: neither erases first.
    region = Region([Block(), Block(arg_types=[i64]), Block(arg_types=[i64])])
    entry, a, b = region.blocks
    entry.add_op(ReturnOp.build())
    in_a = a.add_op(AddIOp.build(lhs=a.args[0], rhs=a.args[0], out=i64))
    in_b = b.add_op(AddIOp.build(lhs=b.args[0], rhs=b.args[0], out=i64))
    a.add_op(BranchOp.build(args=[in_a.result], dest=b))
    b.add_op(BranchOp.build(args=[in_b.result], dest=a))
    with pytest.raises(IRError):
        a.erase()
    a.drop_all_references()
    assert a.predecessors and not b.predecessors  # ^b still branches to ^a
    assert in_a.operands == () and a.last_op.successors == () and not a.args[0].has_uses
    with pytest.raises(IRError, match="still the successor"):
        a.erase()
    region.drop_all_references()
    a.erase()
    b.erase()
    assert region.blocks == (entry,)


def test_walk_pre_and_post_order() -> None:
    module = ModuleOp.from_ops([GenericOp.build(bodies=[Region([Block([const(1), const(2)])])]), const(3)])
    names = lambda ops: [op.name if op.name != "arith.constant" else str(op.properties["value"].value) for op in ops]
    assert names(module.walk()) == ["builtin.module", "test.op", "1", "2", "3"]
    assert names(module.walk(post_order=True)) == ["1", "2", "test.op", "3", "builtin.module"]


def test_walk_tolerates_erasing_the_current_op() -> None:
    block = Block([const(i) for i in range(5)])
    module = ModuleOp.from_ops([])
    module.block.add_ops([op.detach() for op in block.ops])
    for op in module.walk():
        if op.name == "arith.constant":
            op.erase()
    assert module.block.ops == ()


def test_clone_deep_copies_regions_and_remaps_internal_values() -> None:
    outside = const(5)
    func = FuncOp.define("f", [i64], [i64], arg_names=["n"])
    entry = func.entry_block
    assert entry is not None
    later = Block(arg_types=[i64], arg_names=["v"])
    func.body.add_block(later)
    add = entry.add_op(AddIOp.build(lhs=entry.args[0], rhs=outside.result, out=i64))
    add.result.name_hint = "sum"
    entry.add_op(BranchOp.build(args=[add.result], dest=later))
    later.add_op(ReturnOp.build(values=[later.args[0]]))
    mapping: dict = {}
    copy = func.clone(mapping)
    assert print_op(copy) == print_op(func)
    copy_entry, copy_later = copy.regions[0].blocks
    copy_add = copy_entry.ops[0]
    assert copy_add is not add and copy_add.operands[0] is copy_entry.args[0]
    assert copy_add.operands[1] is outside.result  # defined outside: shared
    assert copy_entry.ops[1].successors == (copy_later,)
    assert mapping[add.result] is copy_add.result and copy_add.result.name_hint == "sum"
    assert len(outside.result.uses) == 2
    assert copy.parent is None


def test_clone_handles_uses_before_definition_in_block_order() -> None:
    # ^bb0 -> ^bb2 -> ^bb1: ^bb1 (printed earlier) uses a value defined in ^bb2.
    region = Region([Block(), Block(), Block()])
    b0, b1, b2 = region.blocks
    b0.add_op(BranchOp.build(dest=b2))
    value = b2.add_op(GenericOp.build(outs=[i64]))
    b2.add_op(BranchOp.build(dest=b1))
    user = b1.add_op(GenericOp.build(args=[value.result]))
    b1.add_op(ReturnOp.build())
    holder = GenericOp.build(bodies=[region])
    copy = holder.clone()
    c0, c1, c2 = copy.regions[0].blocks
    assert c1.ops[0].operands[0] is c2.ops[0].result
    assert user.operands[0] is value.result


def test_builder_insertion_points_keep_order() -> None:
    block = Block()
    last = const(9, block)
    builder = Builder.before(last)
    one = builder.create(ConstantOp, value=1, out=i64)
    two = builder.create(ConstantOp, value=2, out=i64)
    Builder.at_end(block).create(AddIOp, lhs=one.result, rhs=two.result, out=i64)
    Builder.after(one).insert(const(15))
    Builder.at_start(block).insert(const(0))
    values = [op.properties["value"].value if op.name == "arith.constant" else "add" for op in block.ops]
    assert values == [0, 1, 15, 2, 9, "add"]


def test_builder_applies_its_location_and_rejects_stale_anchor() -> None:
    from mixjit.ir.location import Location

    block = Block()
    anchor = const(0, block)
    builder = Builder.before(anchor, loc=Location("a.py", 3, 1))
    op = builder.create(ConstantOp, value=1, out=i64)
    assert op.loc == Location("a.py", 3, 1)
    anchor.erase()
    with pytest.raises(IRError, match="moved or erased"):
        builder.insert(const(2))


def test_build_checks_keywords() -> None:
    a = const(1)
    with pytest.raises(TypeError, match=r"needs rhs= \(a Value\)"):
        AddIOp.build(lhs=a.result, out=i64)
    with pytest.raises(TypeError, match="unexpected keyword"):
        AddIOp.build(lhs=a.result, rhs=a.result, out=i64, bogus=1)
    with pytest.raises(TypeError, match="must be a Value"):
        AddIOp.build(lhs=1, rhs=a.result, out=i64)
    with pytest.raises(TypeError, match=r"needs site="):
        arr = GenericOp.build(outs=[ArrayType(f32, 2)]).result
        GemmOp.build(a=arr, b=arr, out=arr.type, dtype=f32)


def test_declared_accessors_and_defaults() -> None:
    arr = ArrayType(f32, 2)
    src = GenericOp.build(outs=[arr, arr, arr])
    a, b, c = src.results
    gemm = GemmOp.build(a=a, b=b, out=arr, site=3, dtype=f32)
    assert (gemm.a, gemm.b, gemm.c) == (a, b, None)
    assert gemm.trans_a.value is False and gemm.alpha.value == 1.0 and gemm.site == IntegerAttr(3, i64)
    assert "trans_a" not in gemm.properties  # defaults are not stored
    with_c = GemmOp.build(a=a, b=b, c=c, out=arr, site=4, dtype=f32, trans_b=True)
    assert with_c.c is c and with_c.trans_b.value is True
    with_c.trans_b = None
    assert "trans_b" not in with_c.properties and with_c.trans_b.value is False
    flag = GenericOp.build(outs=[i1]).result
    region = Region([Block(), Block(), Block(arg_types=[i64, i64])])
    x = GenericOp.build(outs=[i64]).result
    br = CondBranchOp.build(
        condition=flag, true_args=[], false_args=[x, x], true_dest=region.blocks[1], false_dest=region.blocks[2]
    )
    assert br.properties["operandSegmentSizes"].value == (1, 0, 2)
    assert br.false_args == (x, x) and br.true_args == () and br.successor_operands(1) == (x, x)


def test_result_accessor_and_generic_operation() -> None:
    op = Operation("x.y", result_types=[i64, i32], properties={"k": StringAttr("v")})
    assert op.name == "x.y" and op.result_types == (i64, i32)
    with pytest.raises(IRError, match="has 2 results; use .results"):
        _ = op.result
    with pytest.raises(IRError, match="needs a name"):
        Operation()
    with pytest.raises(IRError, match="cannot be created as 'y.z'"):
        AddIOp("y.z")


def test_registry_and_traits() -> None:
    assert get_op_class("mix.gemm") is GemmOp and get_op_class("no.such") is None
    assert ConstantOp.has_trait(ConstantLike) and ConstantOp.has_trait(Pure)
    assert AddIOp.has_trait(Commutative) and not GemmOp.has_trait(IsTerminator)
    assert ReturnOp.has_trait(IsTerminator) and not Operation("x.y").has_trait(Pure)


def test_constant_value_and_symbol_lookup() -> None:
    c = const(4)
    assert constant_value(c.result) == IntegerAttr(4, i64)
    assert constant_value(GenericOp.build(outs=[i64]).result) is None
    f = FuncOp.define("f", [], [])
    g = FuncOp.define("g", [], [])
    module = ModuleOp.from_ops([f, g])
    inner = f.entry_block.add_op(GenericOp.build())  # type: ignore[union-attr]
    assert lookup_symbol(inner, "g") is g and lookup_symbol(module, "f") is f
    assert lookup_symbol(inner, "h") is None


class TaggedOp(Operation):
    """A test-local op with a declared discardable attribute."""

    name = "coretest.tagged"
    tag = attr(StringAttr)


def test_declared_discardable_attribute() -> None:
    from mixjit.ir.verifier import verify_diagnostics

    op = TaggedOp.build(tag="hot")
    assert op.attributes == {"tag": StringAttr("hot")} and op.properties == {} and op.tag == StringAttr("hot")
    assert TaggedOp.build().tag is None
    op.attributes["tag"] = IntegerAttr(1, i64)
    assert [d.message for d in verify_diagnostics(op)] == [
        "'coretest.tagged' op attribute 'tag' must be string attribute, got 1 : i64"
    ]
