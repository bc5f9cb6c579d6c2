"""arith dialect: constants and a few integer/float binary ops, with folds (used by the
canonicalizer and its tests)."""

from __future__ import annotations

import operator
from typing import Any, ClassVar

from mixjit.ir.attributes import Attribute, BoolAttr, FloatAttr, IntegerAttr
from mixjit.ir.core import Operation, Value, constant_value
from mixjit.ir.location import Location
from mixjit.ir.opdef import operand, prop, result
from mixjit.ir.rewriting import register_constant_materializer
from mixjit.ir.traits import Commutative, ConstantLike, Pure, Trait
from mixjit.ir.types import FloatType, IndexType, IntegerType, Type, i1
from mixjit.ir.verifier import VerifyError


def attr_type(attr: Attribute) -> Type | None:
    """The type a scalar constant attribute has (BoolAttr is i1)."""
    if isinstance(attr, (IntegerAttr, FloatAttr)):
        return attr.type
    if isinstance(attr, BoolAttr):
        return i1
    return None


class ConstantOp(Operation):
    """``arith.constant``: an integer, float or bool constant of the result's type."""

    name = "arith.constant"
    value = prop((IntegerAttr, FloatAttr, BoolAttr))
    out = result((IntegerType, IndexType, FloatType))
    traits = (ConstantLike, Pure)

    def verify_(self) -> None:
        if attr_type(self.value) != self.out.type:
            raise VerifyError(f"value {self.value} does not have the result type '{self.out.type}'")

    def fold(self) -> list[Attribute | Value]:
        return [self.value]


def _materialize(attr: Attribute, type: Type, loc: Location) -> Operation | None:
    if attr_type(attr) != type:
        return None
    return ConstantOp.build(value=attr, out=type, loc=loc)


register_constant_materializer("arith", _materialize)


class _Binary(Operation):
    """Two operands and a result, all of one type."""

    lhs = operand()
    rhs = operand()
    out = result()
    traits: ClassVar[tuple[type[Trait], ...]] = (Pure,)
    _types: ClassVar[tuple[type[Type], ...]] = ()
    _compute: ClassVar["staticmethod[[Any, Any], Any]"] = staticmethod(operator.add)
    #: integer identity element: ``x op identity`` folds to ``x`` (and ``identity op x``
    #: too when the op is Commutative); None for no identity fold
    _identity: int | None = None

    def fold(self) -> list[Attribute | Value] | None:
        folded = self._fold_constants()
        if folded is not None:
            return [folded]
        if self._identity is not None:
            if _is_int_constant(self.rhs, self._identity):
                return [self.lhs]
            if self.has_trait(Commutative) and _is_int_constant(self.lhs, self._identity):
                return [self.rhs]
        return None

    def verify_(self) -> None:
        t = self.out.type
        if not isinstance(t, self._types):
            raise VerifyError(f"works on {' or '.join(k.constraint_name for k in self._types)} types, got '{t}'")
        if self.lhs.type != t or self.rhs.type != t:
            raise VerifyError(f"operand types '{self.lhs.type}', '{self.rhs.type}' must equal the result type '{t}'")

    def _fold_constants(self) -> Attribute | None:
        a, b = constant_value(self.lhs), constant_value(self.rhs)
        t = self.out.type
        if isinstance(a, IntegerAttr) and isinstance(b, IntegerAttr) and a.type == b.type == t:
            # Wrap modulo 2**width into the type's range (si8: -3 + -3 -> -6, 100 + 100 -> -56;
            # ui8: 3 - 5 -> 254). Index folds are left to run time: its width is the target's.
            return IntegerAttr(t.wrap(self._compute(a.value, b.value)), t) if isinstance(t, IntegerType) else None
        if isinstance(a, FloatAttr) and isinstance(b, FloatAttr) and a.type == b.type == t:
            try:
                return FloatAttr(self._compute(a.value, b.value), t)
            except (ZeroDivisionError, OverflowError):
                return None  # IEEE results (inf/nan) are left to run time
        return None


def _is_int_constant(v: Value, number: int) -> bool:
    c = constant_value(v)
    return isinstance(c, IntegerAttr) and c.value == number


class AddIOp(_Binary):
    name = "arith.addi"
    traits = (Pure, Commutative)
    _types = (IntegerType, IndexType)
    _compute = staticmethod(operator.add)
    _identity = 0


class SubIOp(_Binary):
    name = "arith.subi"
    _types = (IntegerType, IndexType)
    _compute = staticmethod(operator.sub)
    _identity = 0


class MulIOp(_Binary):
    name = "arith.muli"
    traits = (Pure, Commutative)
    _types = (IntegerType, IndexType)
    _compute = staticmethod(operator.mul)
    _identity = 1


class _BinaryF(_Binary):
    # No identity folds for floats: x + 0.0 is not x for x = -0.0, and x * 1.0 quiets a
    # signalling NaN.
    _types = (FloatType,)


class AddFOp(_BinaryF):
    name = "arith.addf"
    traits = (Pure, Commutative)
    _compute = staticmethod(operator.add)


class SubFOp(_BinaryF):
    name = "arith.subf"
    _compute = staticmethod(operator.sub)


class MulFOp(_BinaryF):
    name = "arith.mulf"
    traits = (Pure, Commutative)
    _compute = staticmethod(operator.mul)


class DivFOp(_BinaryF):
    name = "arith.divf"
    _compute = staticmethod(operator.truediv)
