"""Numba types and Python constants as mix IR types and attributes (used by the importer).

The mapping (docs/frontend.md has the table):

* ``Boolean`` -> ``i1``; signed ``Integer`` -> signless ``iN`` (Python ints are signed);
  unsigned -> ``uiN``; ``Float`` -> ``f16``/``f32``/``f64``; ``Complex`` -> ``complex<f32|f64>``;
  literal types map like their base type (``Literal[int](0)`` -> ``i64``).
* ``Array(dtype, ndim, layout)`` -> ``!py.array<dtype, ndim, layout>`` when the dtype maps to a
  scalar type; readonly and unaligned arrays map the same way (the IR does not model either).
* ``none`` -> ``none``; ``Tuple``/``UniTuple`` of mapped types -> ``tuple<...>``.
* Anything else -> ``!py.opaque<"numba type text">``, with object addresses (`` at 0x...``)
  removed so that the text is the same on every compile.

:func:`callee_name` names what a call calls (``numpy.dot``, ``array.transpose``, a dispatcher's
``module.qualname``), so passes recognise callees on a ``.mix`` dump without numba.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from numba.core import types
from numba.core.dispatcher import LiftedCode

from mixjit.ir.attributes import (
    ArrayAttr,
    Attribute,
    BoolAttr,
    DictAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
)
from mixjit.ir.types import (
    ArrayType,
    ComplexType,
    FloatType,
    IntegerType,
    OpaqueType,
    TupleType,
    Type,
    f64,
    i1,
    i64,
    none,
)

__all__ = [
    "to_ir_type", "opaque_text", "stable_text", "qualified_name", "callee_name", "const_attr", "static_index_attr",
]

_FLOATS = {16: FloatType("f16"), 32: FloatType("f32"), 64: FloatType("f64")}
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def stable_text(obj: Any) -> str:
    """``str(obj)`` without object addresses (`` at 0x...``): the same on every compile."""
    return _ADDRESS.sub("", str(obj))


def opaque_text(numba_type: Any) -> str:
    """The text of ``!py.opaque<...>`` for a Numba type: its ``str`` without object addresses."""
    if isinstance(numba_type, types.Module):
        return f"Module({numba_type.pymod.__name__})"
    return stable_text(numba_type)


def _scalar(numba_type: Any) -> Type | None:
    if isinstance(numba_type, types.Boolean):
        return i1
    if isinstance(numba_type, types.Integer):
        return IntegerType(numba_type.bitwidth, "signless" if numba_type.signed else "unsigned")
    if isinstance(numba_type, types.Float):
        return _FLOATS.get(numba_type.bitwidth)
    if isinstance(numba_type, types.Complex):
        element = _FLOATS.get(numba_type.bitwidth // 2)
        return ComplexType(element) if element is not None else None
    return None


def to_ir_type(numba_type: Any) -> Type:
    """The mix IR type of a Numba type (``!py.opaque`` for types the IR does not model)."""
    scalar = _scalar(numba_type)
    if scalar is not None:
        return scalar
    if isinstance(numba_type, types.Array):
        dtype = _scalar(numba_type.dtype)
        if dtype is not None:
            return ArrayType(dtype, numba_type.ndim, numba_type.layout)
    elif isinstance(numba_type, types.NoneType):
        return none
    elif isinstance(numba_type, types.BaseTuple) and not isinstance(numba_type, types.BaseNamedTuple):
        elements = [to_ir_type(t) for t in numba_type.types]
        return TupleType(elements)
    return OpaqueType(opaque_text(numba_type))


def qualified_name(obj: Any) -> str:
    """``module.qualname`` of a function, class or ufunc (``numpy.dot``, ``builtins.range``)."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, np.ufunc):
        return f"numpy.{obj.__name__}"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    if not isinstance(name, str):  # no name, or a descriptor/object standing in for one
        return _ADDRESS.sub("", repr(obj))
    return f"{module}.{name}" if isinstance(module, str) and module else name


def callee_name(numba_type: Any) -> str | None:
    """What a value of this Numba type calls, by name, or None if it is not a known callable.

    ``Function`` types give their typing key's qualified name (``numpy.dot``); bound methods their
    typing key (``array.transpose``; ``array.dot`` for the method Numba keys ``(Array, "dot")``); ``@njit`` dispatchers the Python function's qualified name
    (a lifted ``with objmode`` block: ``numba.objmode``);
    number classes ``numpy.<type>`` (``numpy.float32``)."""
    if isinstance(numba_type, types.Dispatcher):
        if isinstance(numba_type.dispatcher, LiftedCode):
            return "numba.objmode"  # a `with objmode` block, lifted into object-mode code
        return qualified_name(numba_type.dispatcher.py_func)
    if isinstance(numba_type, types.NumberClass):
        return f"numpy.{numba_type.instance_type}"
    if isinstance(numba_type, (types.Function, types.BoundFunction)):
        key = numba_type.typing_key
        if (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], type)
                and issubclass(key[0], types.Array) and isinstance(key[1], str)):
            return f"array.{key[1]}"  # an @overload_method of arrays (``a.dot``): keyed (Array, "dot")
        return qualified_name(key)
    return None


def const_attr(value: Any, ir_type: Type) -> Attribute | None:
    """The attribute for a Python constant (``ir.Const.value``) of IR type ``ir_type``, or None
    when the IR cannot represent it exactly.

    ``None`` is ``unit``; integers and floats take ``ir_type`` when it is an integer / float type
    (``i64`` / ``f64`` otherwise); tuples become arrays of their items."""
    if value is None:
        return UnitAttr()
    if isinstance(value, (bool, np.bool_)):
        return BoolAttr(bool(value))
    if isinstance(value, (int, np.integer)):
        attr_type = ir_type if isinstance(ir_type, IntegerType) else i64
        try:
            return IntegerAttr(int(value), attr_type)
        except ValueError:
            return None
    if isinstance(value, (float, np.floating)):
        return FloatAttr(float(value), ir_type if isinstance(ir_type, FloatType) else f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, tuple):
        items = [const_attr(v, i64 if isinstance(v, int) else f64) for v in value]
        return None if any(a is None for a in items) else ArrayAttr(items)
    return None


def static_index_attr(index: Any) -> Attribute | None:
    """A compile-time subscript as an attribute: an integer, a string (record field), a slice as a
    dictionary with its non-None ``start``/``stop``/``step``, or a tuple of these as an array.
    None when some part is not representable."""
    if isinstance(index, slice):
        parts = {k: getattr(index, k) for k in ("start", "stop", "step") if getattr(index, k) is not None}
        if not all(isinstance(v, (int, np.integer)) for v in parts.values()):
            return None
        return DictAttr({k: IntegerAttr(int(v)) for k, v in parts.items()})
    if isinstance(index, tuple):
        items = [static_index_attr(i) for i in index]
        return None if any(a is None for a in items) else ArrayAttr(items)
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
        return IntegerAttr(int(index))
    if isinstance(index, str):
        return StringAttr(index)
    return None
