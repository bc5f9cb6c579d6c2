"""Attributes: compile-time constant data attached to operations. Immutable, hashable, compared
by value; ``str(a)`` is the text syntax (see docs/ir.md).

``5 : i64``, ``1.0 : f32`` (non-finite floats print as their bit pattern ``0x7FC00000 : f32``),
``"text"``, ``true``/``false``, ``[a, b]``, ``{k = v, flag}``, ``@sym`` / ``@a::@b``,
a type (``f32``), ``unit``, ``array<i32: 1, 2>``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from mixjit.ir.floatformat import from_bits, to_bits
from mixjit.ir.strings import quote
from mixjit.ir.types import FloatType, IndexType, IntegerType, Type, f64, i64


class Attribute:
    """Base of all attributes."""

    constraint_name = "attribute"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


@dataclass(frozen=True, repr=False)
class IntegerAttr(Attribute):
    """An integer of an integer or index type. Signless values are stored signed (255 : i8 -> -1 : i8),
    except i1 which holds 0 or 1."""

    value: int
    type: Type = i64
    constraint_name = "integer attribute"

    def __post_init__(self) -> None:
        if not isinstance(self.value, int) or isinstance(self.value, bool):
            raise TypeError(f"IntegerAttr value must be an int, got {self.value!r}")
        if isinstance(self.type, IndexType):
            lo, hi = -(1 << 63), (1 << 63) - 1
        elif isinstance(self.type, IntegerType):
            lo, hi = self.type.value_range()
        else:
            raise TypeError(f"IntegerAttr type must be an integer or index type, got {self.type}")
        value = self.value
        if isinstance(self.type, IntegerType) and self.type.signedness == "signless":
            # Signless accepts either interpretation and stores the canonical one.
            if -(1 << (self.type.width - 1)) <= value < (1 << self.type.width):
                value = (value - lo) % (1 << self.type.width) + lo
        if not lo <= value <= hi:
            raise ValueError(f"integer {self.value} does not fit in {self.type} (range [{lo}, {hi}])")
        object.__setattr__(self, "value", value)

    def __str__(self) -> str:
        return f"{self.value} : {self.type}"


@dataclass(frozen=True, repr=False, eq=False)
class FloatAttr(Attribute):
    """A float of a float type, rounded to that type on construction. Equality is bitwise, so NaN
    equals the same NaN and -0.0 differs from 0.0."""

    value: float
    type: FloatType = f64
    constraint_name = "float attribute"

    def __post_init__(self) -> None:
        if not isinstance(self.type, FloatType):
            raise TypeError(f"FloatAttr type must be a float type, got {self.type}")
        if not isinstance(self.value, (int, float)) or isinstance(self.value, bool):
            raise TypeError(f"FloatAttr value must be a float, got {self.value!r}")
        object.__setattr__(self, "value", from_bits(to_bits(float(self.value), self.type.format), self.type.format))

    @staticmethod
    def from_bits(bits: int, type: FloatType) -> "FloatAttr":
        """The float whose bit pattern in ``type`` is ``bits``."""
        if not 0 <= bits < 1 << type.width:
            raise ValueError(f"bit pattern {bits:#x} does not fit in {type.width}-bit {type}")
        return FloatAttr(from_bits(bits, type.format), type)

    @property
    def bits(self) -> int:
        return to_bits(self.value, self.type.format)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FloatAttr) and self.type == other.type and self.bits == other.bits

    def __hash__(self) -> int:
        return hash((FloatAttr, self.type, self.bits))

    def __str__(self) -> str:
        if not math.isfinite(self.value):
            digits = (self.type.width + 3) // 4
            return f"0x{self.bits:0{digits}X} : {self.type}"
        text = repr(self.value)
        if "." not in text:  # "1e+16" -> "1.0e+16" so the lexer sees a float literal
            mant, _, exp = text.partition("e")
            text = f"{mant}.0" + (f"e{exp}" if exp else "")
        return f"{text} : {self.type}"


@dataclass(frozen=True, repr=False)
class StringAttr(Attribute):
    value: str
    constraint_name = "string attribute"

    def __post_init__(self) -> None:
        if not isinstance(self.value, str):
            raise TypeError(f"StringAttr value must be a str, got {self.value!r}")

    def __str__(self) -> str:
        return quote(self.value)


@dataclass(frozen=True, repr=False)
class BoolAttr(Attribute):
    value: bool
    constraint_name = "bool attribute"

    def __post_init__(self) -> None:
        if not isinstance(self.value, bool):
            raise TypeError(f"BoolAttr value must be a bool, got {self.value!r}")

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True, repr=False)
class UnitAttr(Attribute):
    """A flag whose presence is the information (``unit``; ``{flag}`` in a dictionary)."""

    constraint_name = "unit attribute"

    def __str__(self) -> str:
        return "unit"


def _attr_tuple(items: Iterable[Attribute], what: str) -> tuple[Attribute, ...]:
    items = tuple(items)
    for a in items:
        if not isinstance(a, Attribute):
            raise TypeError(f"{what} must be Attributes, got {a!r}")
    return items


@dataclass(frozen=True, repr=False)
class ArrayAttr(Attribute):
    """``[a, b, ...]``; iterable and indexable."""

    value: tuple[Attribute, ...]
    constraint_name = "array attribute"

    def __init__(self, value: Iterable[Attribute] = ()) -> None:
        object.__setattr__(self, "value", _attr_tuple(value, "array elements"))

    def __iter__(self) -> Iterator[Attribute]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __getitem__(self, i: int) -> Attribute:
        return self.value[i]

    def __str__(self) -> str:
        return f"[{', '.join(map(str, self.value))}]"


_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")


def format_key(key: str) -> str:
    """A dictionary key as printed: bare when it is an identifier, quoted otherwise."""
    return key if _BARE_KEY.match(key) else quote(key)


def format_entries(entries: Iterable[tuple[str, Attribute]]) -> str:
    """``k = v, flag`` (unit values print as the bare key), the body of ``{...}`` and ``<{...}>``."""
    return ", ".join(format_key(k) if isinstance(v, UnitAttr) else f"{format_key(k)} = {v}" for k, v in entries)


@dataclass(frozen=True, repr=False)
class DictAttr(Attribute):
    """``{k = v, ...}`` with keys kept sorted (the canonical order)."""

    value: tuple[tuple[str, Attribute], ...]
    constraint_name = "dictionary attribute"

    def __init__(self, value: Mapping[str, Attribute] | Iterable[tuple[str, Attribute]] = ()) -> None:
        items = dict(value.items() if isinstance(value, Mapping) else value)
        for k, v in items.items():
            if not isinstance(k, str) or not isinstance(v, Attribute):
                raise TypeError(f"dictionary entries must be str -> Attribute, got {k!r}: {v!r}")
        object.__setattr__(self, "value", tuple(sorted(items.items())))

    def as_dict(self) -> dict[str, Attribute]:
        return dict(self.value)

    def __getitem__(self, key: str) -> Attribute:
        return self.as_dict()[key]

    def __contains__(self, key: object) -> bool:
        return any(k == key for k, _ in self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __str__(self) -> str:
        return "{" + format_entries(self.value) + "}"


@dataclass(frozen=True, repr=False)
class SymbolRefAttr(Attribute):
    """``@root`` or ``@root::@nested``: a reference to a symbol (e.g. a ``func.func``'s sym_name)."""

    root: str
    nested: tuple[str, ...] = ()
    constraint_name = "symbol reference"

    def __post_init__(self) -> None:
        object.__setattr__(self, "nested", tuple(self.nested))
        for part in (self.root, *self.nested):
            if not isinstance(part, str) or not part:
                raise ValueError(f"symbol names must be non-empty strings, got {part!r}")

    def __str__(self) -> str:
        return "::".join(format_symbol(s) for s in (self.root, *self.nested))


def format_symbol(name: str) -> str:
    return "@" + format_key(name)


@dataclass(frozen=True, repr=False)
class TypeAttr(Attribute):
    """A type used as an attribute value (``function_type = (i64) -> i64``, ``dtype = f32``)."""

    value: Type
    constraint_name = "type attribute"

    def __post_init__(self) -> None:
        if not isinstance(self.value, Type):
            raise TypeError(f"TypeAttr value must be a Type, got {self.value!r}")

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, repr=False)
class DenseArrayAttr(Attribute):
    """``array<i32: 1, 2>``: integers of one integer type (used for operandSegmentSizes)."""

    element_type: IntegerType
    value: tuple[int, ...]
    constraint_name = "dense array attribute"

    def __init__(self, element_type: IntegerType, value: Iterable[int]) -> None:
        if not isinstance(element_type, IntegerType):
            raise TypeError(f"dense array element type must be an integer type, got {element_type}")
        object.__setattr__(self, "element_type", element_type)
        object.__setattr__(self, "value", tuple(IntegerAttr(v, element_type).value for v in value))

    def __str__(self) -> str:
        if not self.value:
            return f"array<{self.element_type}>"
        return f"array<{self.element_type}: {', '.join(map(str, self.value))}>"


def dict_attr(entries: Mapping[str, Any]) -> DictAttr:
    """``to_attr`` of a mapping, typed as the ``DictAttr`` it gives."""
    return DictAttr({k: to_attr(v) for k, v in entries.items()})


def to_attr(value: Any) -> Attribute:
    """Wrap a Python value: Attribute as is, bool, int (i64), float (f64), str, Type, list/tuple
    (array), dict (dictionary)."""
    if isinstance(value, Attribute):
        return value
    if isinstance(value, bool):
        return BoolAttr(value)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, Type):
        return TypeAttr(value)
    if isinstance(value, (list, tuple)):
        return ArrayAttr(to_attr(v) for v in value)
    if isinstance(value, dict):
        return dict_attr(value)
    raise TypeError(f"cannot make an attribute from {value!r} ({type(value).__name__}); build an Attribute")


__all__ = [
    "Attribute", "IntegerAttr", "FloatAttr", "StringAttr", "BoolAttr", "UnitAttr", "ArrayAttr", "DictAttr",
    "SymbolRefAttr", "TypeAttr", "DenseArrayAttr", "to_attr", "dict_attr", "format_key", "format_entries", "format_symbol",
]
