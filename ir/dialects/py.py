"""py dialect: Numba-level (untyped or typed) Python operations, as the frontend imports them.

Each op mirrors a Numba IR expression or statement. Results have whatever type the frontend
knows (``!py.opaque<...>`` when the IR does not model it). Purity rule: an op is Pure when it only
reads its operands and makes a new value; raising on bad input does not count as an effect (as in
MLIR). Ops that mutate, call arbitrary code, print or advance an iterator are not Pure.

Python ``None`` constants are ``py.const`` with ``value = unit``.
"""

from __future__ import annotations

from mixjit.ir.attributes import ArrayAttr, Attribute, IntegerAttr, StringAttr, TypeAttr
from mixjit.ir.core import Operation, Value
from mixjit.ir.location import Location
from mixjit.ir.opdef import operand, opt_operand, opt_prop, prop, result, var_operand
from mixjit.ir.rewriting import register_constant_materializer
from mixjit.ir.traits import ConstantLike, IsTerminator, Pure
from mixjit.ir.types import TupleType, Type
from mixjit.ir.verifier import VerifyError

BINARY_OPERATORS = frozenset(
    "+ - * / // % ** @ << >> & | ^ == != < <= > >= is in".split() + ["is not", "not in"]
)
INPLACE_OPERATORS = frozenset(f"{o}=" for o in "+ - * / // % ** @ << >> & | ^".split())
UNARY_OPERATORS = frozenset(["-", "+", "~", "not"])


def _check_operator(op: StringAttr, allowed: frozenset[str]) -> None:
    if op.value not in allowed:
        raise VerifyError(f"unknown operator '{op.value}' (expected one of: {' '.join(sorted(allowed))})")


class ConstOp(Operation):
    """A Python constant (numbers, strings, bools; None is ``unit``)."""

    name = "py.const"
    value = prop()
    out = result()
    traits = (ConstantLike, Pure)

    def fold(self) -> list[Attribute | Value]:
        return [self.value]


def _materialize(attr: Attribute, type: Type, loc: Location) -> Operation:
    return ConstOp.build(value=attr, out=type, loc=loc)


register_constant_materializer("py", _materialize)


class GlobalOp(Operation):
    """A module-level global (``name``); ``value`` optionally records a simple constant value."""

    name = "py.global"
    global_name = prop(StringAttr)
    value = opt_prop()
    out = result()
    traits = (Pure,)


class FreeVarOp(Operation):
    """A closure variable (``name``); ``value`` optionally records a simple constant value."""

    name = "py.freevar"
    var_name = prop(StringAttr)
    value = opt_prop()
    out = result()
    traits = (Pure,)


class ArgOp(Operation):
    """Function argument ``index`` (named ``arg_name``) as Numba's ``ir.Arg``."""

    name = "py.arg"
    index = prop(IntegerAttr)
    arg_name = prop(StringAttr)
    out = result()
    traits = (Pure,)


class CallOp(Operation):
    """Call ``func`` with ``args``; the last ``len(kwnames)`` args are passed by keyword."""

    name = "py.call"
    func = operand()
    args = var_operand()
    kwnames = opt_prop(ArrayAttr)
    out = result()

    def verify_(self) -> None:
        if self.kwnames is None:
            return
        if not all(isinstance(k, StringAttr) for k in self.kwnames):
            raise VerifyError(f"kwnames must be an array of strings, got {self.kwnames}")
        if len(self.kwnames) > len(self.args):
            raise VerifyError(f"{len(self.kwnames)} keyword names for {len(self.args)} arguments")


class GetAttrOp(Operation):
    name = "py.getattr"
    obj = operand()
    attr = prop(StringAttr)
    out = result()
    traits = (Pure,)


class SetAttrOp(Operation):
    name = "py.setattr"
    target = operand()
    value = operand()
    attr = prop(StringAttr)


class GetItemOp(Operation):
    """``obj[index]``."""

    name = "py.getitem"
    obj = operand()
    index = operand()
    out = result()
    traits = (Pure,)


class StaticGetItemOp(Operation):
    """``obj[index]`` with a compile-time index (an integer, string or array attribute)."""

    name = "py.static_getitem"
    obj = operand()
    index = prop()
    out = result()
    traits = (Pure,)


class TypedGetItemOp(Operation):
    """``obj[index]`` whose result type ``dtype`` Numba fixed."""

    name = "py.typed_getitem"
    obj = operand()
    index = operand()
    dtype = prop(TypeAttr)
    out = result()
    traits = (Pure,)


class SetItemOp(Operation):
    """``target[index] = value``."""

    name = "py.setitem"
    target = operand()
    index = operand()
    value = operand()


class StaticSetItemOp(Operation):
    """``target[index] = value`` with a compile-time index."""

    name = "py.static_setitem"
    target = operand()
    value = operand()
    index = prop()


class BinOp(Operation):
    """``lhs <op> rhs`` for a Python binary or comparison operator (``op = "+"``)."""

    name = "py.binop"
    lhs = operand()
    rhs = operand()
    op = prop(StringAttr)
    out = result()
    traits = (Pure,)

    def verify_(self) -> None:
        _check_operator(self.op, BINARY_OPERATORS)


class InplaceBinOp(Operation):
    """``lhs <op>= rhs`` (``op = "+="``); may mutate ``lhs`` (arrays)."""

    name = "py.inplace_binop"
    lhs = operand()
    rhs = operand()
    op = prop(StringAttr)
    out = result()

    def verify_(self) -> None:
        _check_operator(self.op, INPLACE_OPERATORS)


class UnaryOp(Operation):
    name = "py.unary"
    value = operand()
    op = prop(StringAttr)
    out = result()
    traits = (Pure,)

    def verify_(self) -> None:
        _check_operator(self.op, UNARY_OPERATORS)


class BuildTupleOp(Operation):
    name = "py.build_tuple"
    items = var_operand()
    out = result()
    traits = (Pure,)

    def verify_(self) -> None:
        t = self.out.type
        if isinstance(t, TupleType) and t.elements != tuple(v.type for v in self.items):
            raise VerifyError(f"result type '{t}' does not match the item types")


class BuildListOp(Operation):
    name = "py.build_list"
    items = var_operand()
    out = result()
    traits = (Pure,)


class BuildSetOp(Operation):
    name = "py.build_set"
    items = var_operand()
    out = result()
    traits = (Pure,)


class BuildSliceOp(Operation):
    """``slice(start, stop[, step])``."""

    name = "py.build_slice"
    args = var_operand()
    out = result()
    traits = (Pure,)

    def verify_(self) -> None:
        if len(self.args) not in (2, 3):
            raise VerifyError(f"takes 2 or 3 operands (start, stop[, step]), got {len(self.args)}")


class GetIterOp(Operation):
    name = "py.getiter"
    value = operand()
    out = result()
    traits = (Pure,)


class IterNextOp(Operation):
    """Advance an iterator; the result is a (value, is_valid) pair (see pair_first/pair_second)."""

    name = "py.iternext"
    iterator = operand()
    out = result()


class PairFirstOp(Operation):
    name = "py.pair_first"
    pair = operand()
    out = result()
    traits = (Pure,)


class PairSecondOp(Operation):
    name = "py.pair_second"
    pair = operand()
    out = result()
    traits = (Pure,)


class ExhaustIterOp(Operation):
    """Unpack exactly ``count`` items from an iterable (raises otherwise)."""

    name = "py.exhaust_iter"
    value = operand()
    count = prop(IntegerAttr)
    out = result()
    traits = (Pure,)


class CastOp(Operation):
    """Convert ``value`` to the result type (Numba's return-value cast)."""

    name = "py.cast"
    value = operand()
    out = result()
    traits = (Pure,)


class DelOp(Operation):
    """End of a variable's lifetime (Numba's ``ir.Del``)."""

    name = "py.del"
    value = operand()


class PrintOp(Operation):
    name = "py.print"
    args = var_operand()


class RaiseOp(Operation):
    """Raise ``exception`` (a value) or, statically, ``exc_class(*exc_args)``; ends the block."""

    name = "py.raise"
    exception = opt_operand()
    exc_class = opt_prop(StringAttr)
    exc_args = opt_prop(ArrayAttr)
    traits = (IsTerminator,)
