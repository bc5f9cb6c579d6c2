"""Canonicalization patterns for the cf dialect's branches, used by ``canonicalize``.

* ``cf.cond_br`` on a constant condition becomes a ``cf.br`` to the taken successor.
* A ``cf.br`` to a block whose only predecessor it is merges that block into the
  branching one (the block's arguments are replaced by the branch operands).

These belong with the op classes (``canonicalization_patterns()`` of
mixjit.ir.dialects.cf); they live here until the cf dialect provides them.
"""

from __future__ import annotations

from mixjit.ir.attributes import BoolAttr, IntegerAttr
from mixjit.ir.core import Operation, constant_value
from mixjit.ir.dialects.cf import BranchOp, CondBranchOp
from mixjit.ir.rewriting import PatternRewriter, RewritePattern

__all__ = ["FoldConstantCondBranch", "MergeBlockIntoSinglePredecessor", "CF_PATTERNS"]


def _constant_bool(op: Operation) -> bool | None:
    value = constant_value(op.operands[0])
    if isinstance(value, BoolAttr):
        return value.value
    if isinstance(value, IntegerAttr):
        return value.value != 0
    return None


class FoldConstantCondBranch(RewritePattern):
    """``cf.cond_br %true, ^a(x), ^b(y)`` -> ``cf.br ^a(x)``."""

    root_name = "cf.cond_br"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        assert isinstance(op, CondBranchOp)
        taken = _constant_bool(op)
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
        if (
            block is None
            or dest is block
            or dest.parent is not block.parent
            or dest is dest.parent.entry
            or len(dest.predecessors) != 1
        ):
            return False
        for arg, value in zip(dest.args, op.args):
            rewriter.replace_all_uses_with(arg, value)
        rewriter.erase_op(op)
        for moved in dest.ops:
            rewriter.modify_op(moved, lambda moved=moved: block.add_op(moved.detach()))
        dest.erase()
        return True


CF_PATTERNS: tuple[RewritePattern, ...] = (FoldConstantCondBranch(), MergeBlockIntoSinglePredecessor())
