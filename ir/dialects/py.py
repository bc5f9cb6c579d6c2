"""py dialect: Numba-level (untyped or typed) Python operations, as the frontend imports them.

Each op mirrors a Numba IR expression or statement. Results have whatever type the frontend
knows (``!py.opaque<...>`` when the IR does not model it).

Memory effects (``traits.MemoryEffects``; raising on bad input does not count, as in MLIR):

* Pure: the op only reads its operand *values* and makes an immutable value or a view;
* READ: it reads mutable memory (an array element, a list item, an object field);
* ALLOC: its result is a fresh mutable object (a new array, list, set or iterator);
* UNKNOWN: it mutates, calls arbitrary code, prints or advances an iterator.

Subscripts, attributes and operators depend on their types, so those ops compute their effects
(``memory_effects``): a basic subscript of an array that gives an array is a view (Pure), an
element load is READ, a fancy-index copy or an array operator is READ | ALLOC.

Python ``None`` constants are ``py.const`` with ``value = unit``.
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

from mixjit.ir.attributes import ArrayAttr, Attribute, IntegerAttr, StringAttr, TypeAttr
from mixjit.ir.core import IRError, Operation, Value
from mixjit.ir.location import Location
from mixjit.ir.opdef import operand, opt_operand, opt_prop, prop, result, var_operand, var_result
from mixjit.ir.rewriting import register_constant_materializer
from mixjit.ir.traits import ConstantLike, IsTerminator, MemAlloc, MemoryEffects, Pure
from mixjit.ir.types import (
    ArrayType,
    ComplexType,
    FloatType,
    IndexType,
    IntegerType,
    NoneType,
    OpaqueType,
    TupleType,
    Type,
)
from mixjit.ir.verifier import VerifyError

_Op = TypeVar("_Op", bound=Operation)

BINARY_OPERATORS = frozenset(
    "+ - * / // % ** @ << >> & | ^ == != < <= > >= is in".split() + ["is not", "not in"]
)
INPLACE_OPERATORS = frozenset(f"{o}=" for o in "+ - * / // % ** @ << >> & | ^".split())
UNARY_OPERATORS = frozenset(["-", "+", "~", "not"])


def _check_operator(op: StringAttr, allowed: frozenset[str]) -> None:
    if op.value not in allowed:
        raise VerifyError(f"unknown operator '{op.value}' (expected one of: {' '.join(sorted(allowed))})")


def _typed_effects(method: Callable[[_Op], MemoryEffects]) -> Callable[[_Op], MemoryEffects]:
    """Wrap a ``memory_effects`` override that reads operand types: a malformed op (unverified
    input, ``--no-verify``) whose operands are missing may do anything."""

    @functools.wraps(method)
    def effects(self: _Op) -> MemoryEffects:
        try:
            return method(self)
        except IRError:
            return MemoryEffects.UNKNOWN

    return effects


def is_value_type(t: Type) -> bool:
    """Numbers, None, and tuples of them: immutable values that refer to no mutable memory."""
    if isinstance(t, TupleType):
        return all(is_value_type(e) for e in t.elements)
    return isinstance(t, (IntegerType, FloatType, ComplexType, IndexType, NoneType))


def is_basic_index(t: Type) -> bool:
    """An index with which NumPy returns a view: an integer (not a bool), a slice, None, or a
    tuple of these. Anything else (an array, a list, a bool) may copy."""
    if isinstance(t, TupleType):
        return all(is_basic_index(e) for e in t.elements)
    if isinstance(t, IntegerType):
        return t.width > 1
    return isinstance(t, (IndexType, NoneType)) or (isinstance(t, OpaqueType) and t.text.startswith("slice<"))


def subscript_effects(obj: Type, basic_index: bool, out: Type) -> MemoryEffects:
    """Effects of ``obj[index]``: a tuple item or a view of an array reads no memory; an element
    (a value type) is a load; anything else may be a copy (fancy index, list slice)."""
    if isinstance(obj, TupleType):
        return MemoryEffects.NONE
    if isinstance(obj, ArrayType) and isinstance(out, ArrayType) and basic_index:
        return MemoryEffects.NONE
    if is_value_type(out):
        return MemoryEffects.READ
    return MemoryEffects.READ | MemoryEffects.ALLOC


def _operator_effects(op: Operation) -> MemoryEffects:
    """Operators on values are Pure; on arrays (or objects) they read them and make a new one."""
    if all(is_value_type(v.type) for v in (*op.operands, *op.results)):
        return MemoryEffects.NONE
    return MemoryEffects.READ | MemoryEffects.ALLOC


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

    @_typed_effects
    def memory_effects(self) -> MemoryEffects:
        """Attributes of values, arrays (views and metadata), tuples and modules read no mutable
        memory; ``a.flat`` is a fresh iterator; fields of other objects are loads."""
        t = self.obj.type
        if isinstance(t, ArrayType) and self.attr.value == "flat":
            return MemoryEffects.ALLOC
        if is_value_type(t) or isinstance(t, (ArrayType, TupleType)):
            return MemoryEffects.NONE
        if isinstance(t, OpaqueType) and t.text.startswith("Module("):
            return MemoryEffects.NONE
        return MemoryEffects.READ


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

    @_typed_effects
    def memory_effects(self) -> MemoryEffects:
        return subscript_effects(self.obj.type, is_basic_index(self.index.type), self.out.type)


class StaticGetItemOp(Operation):
    """``obj[index]`` with a compile-time index (an integer, string or array attribute)."""

    name = "py.static_getitem"
    obj = operand()
    index = prop()
    out = result()

    @_typed_effects
    def memory_effects(self) -> MemoryEffects:
        # static indices are integers, slices, strings (record fields) or tuples of these
        return subscript_effects(self.obj.type, True, self.out.type)


class TypedGetItemOp(Operation):
    """``obj[index]`` whose result type ``dtype`` Numba fixed."""

    name = "py.typed_getitem"
    obj = operand()
    index = operand()
    dtype = prop(TypeAttr)
    out = result()

    @_typed_effects
    def memory_effects(self) -> MemoryEffects:
        return subscript_effects(self.obj.type, is_basic_index(self.index.type), self.out.type)


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

    @_typed_effects
    def memory_effects(self) -> MemoryEffects:
        return _operator_effects(self)

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

    @_typed_effects
    def memory_effects(self) -> MemoryEffects:
        return _operator_effects(self)

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
    traits = (MemAlloc,)


class BuildSetOp(Operation):
    name = "py.build_set"
    items = var_operand()
    out = result()
    traits = (MemAlloc,)


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
    traits = (MemAlloc,)


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

    @_typed_effects
    def memory_effects(self) -> MemoryEffects:
        """Unpacking a tuple reads nothing; unpacking a list or an array reads its items."""
        return MemoryEffects.NONE if isinstance(self.value.type, TupleType) else MemoryEffects.READ


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


class UnknownOp(Operation):
    """A Numba statement the frontend has no op for (a dict literal, ``f(*args)``, a dynamic
    raise's exception, ``with objmode``): ``text`` is Numba's text of the statement, ``args``
    every variable it reads, and its result (none or one) the variable it assigns. It may read
    and write the memory of every operand and return anything (``UNKNOWN``), so analyses stay
    sound around it."""

    name = "py.unknown"
    args = var_operand()
    text = prop(StringAttr)
    outs = var_result()

    def verify_(self) -> None:
        if len(self.results) > 1:
            raise VerifyError(f"has {len(self.results)} results; a Numba statement assigns at most one")
