"""test dialect: ops with no semantics, for pass and IR tests independent of the real dialects.

``test.op`` (anything, side effects assumed; like all three, its blocks need no terminator), ``test.pure`` (anything, Pure), ``test.effect``
(anything, side effects), ``test.terminator`` (a terminator with any operands and successors),
``test.constant`` (ConstantLike: any ``value`` property). All accept any properties.
"""

from __future__ import annotations

from typing import ClassVar

from mixjit.ir.attributes import Attribute
from mixjit.ir.core import Operation, Value
from mixjit.ir.location import Location
from mixjit.ir.opdef import prop, result, var_operand, var_region, var_result, var_successor
from mixjit.ir.rewriting import register_constant_materializer
from mixjit.ir.traits import ConstantLike, IsTerminator, NoTerminator, Pure, Trait
from mixjit.ir.types import Type


class _AnyOp(Operation):
    """Any operands, results and regions; the regions' blocks need no terminator."""

    args = var_operand()
    outs = var_result()
    bodies = var_region()
    traits: ClassVar[tuple[type[Trait], ...]] = (NoTerminator,)
    open_properties = True


class GenericOp(_AnyOp):
    name = "test.op"


class PureOp(_AnyOp):
    name = "test.pure"
    traits = (Pure, NoTerminator)


class EffectOp(_AnyOp):
    name = "test.effect"


class TerminatorOp(Operation):
    name = "test.terminator"
    args = var_operand()
    dests = var_successor()
    traits = (IsTerminator,)
    open_properties = True


class ConstantOp(Operation):
    name = "test.constant"
    value = prop()
    out = result()
    traits = (ConstantLike, Pure)
    open_properties = True

    def fold(self) -> list[Attribute | Value]:
        return [self.value]


def _materialize(attr: Attribute, type: Type, loc: Location) -> Operation:
    return ConstantOp.build(value=attr, out=type, loc=loc)


register_constant_materializer("test", _materialize)
