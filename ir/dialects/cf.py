"""cf dialect: unconditional and conditional branches between the blocks of a region. Values flow
into the target blocks' arguments (no phi nodes).

Canonicalization (``canonicalization_patterns()``, applied by the ``canonicalize`` pass):

* ``cf.cond_br`` on a constant condition becomes a ``cf.br`` to the taken successor.
* A ``cf.br`` to a block whose only predecessor it is merges that block into the branching
  one (the block's arguments are replaced by the branch operands).
"""

from __future__ import annotations

from functools import partial

from mixjit.ir.attributes import BoolAttr, IntegerAttr
from mixjit.ir.core import Block, Operation, Value, constant_value
from mixjit.ir.opdef import operand, successor, var_operand
from mixjit.ir.rewriting import PatternRewriter, RewritePattern
from mixjit.ir.traits import IsTerminator
from mixjit.ir.types import i1


class BranchOp(Operation):
    """``cf.br``: jump to ``dest`` passing all operands to its arguments."""

    name = "cf.br"
    args = var_operand()
    dest = successor()
    traits = (IsTerminator,)

    def successor_operands(self, index: int) -> tuple[Value, ...]:
        return self.operands

    @classmethod
    def canonicalization_patterns(cls) -> list[RewritePattern]:
        return [MergeBlockIntoSinglePredecessor()]


class CondBranchOp(Operation):
    """``cf.cond_br``: jump to ``true_dest`` (with ``true_args``) if ``condition`` else to
    ``false_dest`` (with ``false_args``). Group sizes live in ``operandSegmentSizes``."""

    name = "cf.cond_br"
    condition = operand(i1)
    true_args = var_operand()
    false_args = var_operand()
    true_dest = successor()
    false_dest = successor()
    traits = (IsTerminator,)

    def successor_operands(self, index: int) -> tuple[Value, ...]:
        return (self.true_args, self.false_args)[index]

    @classmethod
    def canonicalization_patterns(cls) -> list[RewritePattern]:
        return [FoldConstantCondBranch()]


def _constant_bool(value: Value) -> bool | None:
    attr = constant_value(value)
    if isinstance(attr, BoolAttr):
        return attr.value
    if isinstance(attr, IntegerAttr):
        return attr.value != 0
    return None


class FoldConstantCondBranch(RewritePattern):
    """``cf.cond_br %true, ^a(x), ^b(y)`` -> ``cf.br ^a(x)``."""

    root_name = "cf.cond_br"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        assert isinstance(op, CondBranchOp)
        taken = _constant_bool(op.condition)
        if taken is None:
            return False
        dest, args = (op.true_dest, op.true_args) if taken else (op.false_dest, op.false_args)
        rewriter.insert_op_before(BranchOp.build(args=list(args), dest=dest, loc=op.loc), op)
        rewriter.erase_op(op)
        return True


class MergeBlockIntoSinglePredecessor(RewritePattern):
    """``^a: ...; cf.br ^b(x)`` with ``^a`` the only predecessor of ``^b``: append ``^b`` to ``^a``."""

    root_name = "cf.br"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        assert isinstance(op, BranchOp)
        block, dest = op.parent, op.dest
        region = dest.parent
        if (
            block is None
            or region is None
            or dest is block
            or dest is region.entry
            or region is not block.parent
            or len(dest.predecessors) != 1
        ):
            return False
        for arg, value in zip(dest.args, op.args):
            rewriter.replace_all_uses_with(arg, value)
        rewriter.erase_op(op)
        for moved in dest.ops:
            rewriter.modify_op(moved, partial(_append, block, moved))
        dest.erase()
        return True


def _append(block: Block, op: Operation) -> None:
    """Move ``op`` to the end of ``block`` (a ``modify_op`` change: returns nothing)."""
    block.add_op(op.detach())
