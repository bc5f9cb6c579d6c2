"""cf dialect: unconditional and conditional branches between the blocks of a region. Values flow
into the target blocks' arguments (no phi nodes)."""

from __future__ import annotations

from mixjit.ir.core import Operation, Value
from mixjit.ir.opdef import operand, successor, var_operand
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
