"""Types of mix IR values. Immutable, hashable, compared by value; ``str(t)`` is the text syntax.

Syntax (see docs/ir.md): ``i1 i8 i32 i64`` (signless), ``si32``/``ui8`` (signed/unsigned),
``f16 bf16 f32 f64``, ``index``, ``none``, ``complex<f64>``, ``tuple<i64, f32>``,
``(i64, f32) -> i64`` / ``(i64) -> (i64, i64)``, ``!py.array<f32, 2, C>`` and
``!py.opaque<"reflected list(int64)">`` for Numba types the IR does not model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from mixjit.ir.floatformat import FORMATS, BinaryFormat


class Type:
    """Base of all types. Subclasses are frozen dataclasses whose ``__str__`` is their syntax."""

    #: Name used in constraint messages ("must be <constraint_name>").
    constraint_name = "type"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


_SIGNEDNESS_PREFIX = {"signless": "i", "signed": "si", "unsigned": "ui"}
MAX_INT_WIDTH = 1 << 16


@dataclass(frozen=True, repr=False)
class IntegerType(Type):
    """``iN`` (signless, the default), ``siN`` or ``uiN``; 1 <= N <= 65536."""

    width: int
    signedness: str = "signless"
    constraint_name = "integer"

    def __post_init__(self) -> None:
        if not isinstance(self.width, int) or not 1 <= self.width <= MAX_INT_WIDTH:
            raise ValueError(f"integer width must be in [1, {MAX_INT_WIDTH}], got {self.width!r}")
        if self.signedness not in _SIGNEDNESS_PREFIX:
            raise ValueError(f"signedness must be one of {sorted(_SIGNEDNESS_PREFIX)}, got {self.signedness!r}")

    def value_range(self) -> tuple[int, int]:
        """Inclusive range of the canonical stored value (signless: signed, except i1 in {0, 1})."""
        if self.signedness == "unsigned" or self.width == 1 and self.signedness == "signless":
            return 0, (1 << self.width) - 1
        return -(1 << (self.width - 1)), (1 << (self.width - 1)) - 1

    def wrap(self, value: int) -> int:
        """``value`` reduced modulo 2**width into :meth:`value_range` (two's-complement wrap-around,
        as hardware integer arithmetic of this width and signedness gives)."""
        lo, _ = self.value_range()
        return (value - lo) % (1 << self.width) + lo

    def __str__(self) -> str:
        return f"{_SIGNEDNESS_PREFIX[self.signedness]}{self.width}"


@dataclass(frozen=True, repr=False)
class FloatType(Type):
    """``f16``, ``bf16``, ``f32`` or ``f64``."""

    kind: str
    constraint_name = "float"

    def __post_init__(self) -> None:
        if self.kind not in FORMATS:
            raise ValueError(f"float kind must be one of {list(FORMATS)}, got {self.kind!r}")

    @property
    def format(self) -> BinaryFormat:
        return FORMATS[self.kind]

    @property
    def width(self) -> int:
        return self.format.width

    def __str__(self) -> str:
        return self.kind


@dataclass(frozen=True, repr=False)
class IndexType(Type):
    """``index``: a machine-sized integer for sizes and subscripts."""

    constraint_name = "index"

    def __str__(self) -> str:
        return "index"


@dataclass(frozen=True, repr=False)
class NoneType(Type):
    """``none``: Python's None (the type of functions returning nothing)."""

    constraint_name = "none"

    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True, repr=False)
class ComplexType(Type):
    """``complex<f64>``."""

    element: FloatType
    constraint_name = "complex"

    def __post_init__(self) -> None:
        if not isinstance(self.element, FloatType):
            raise ValueError(f"complex element type must be a float type, got {self.element}")

    def __str__(self) -> str:
        return f"complex<{self.element}>"


def _type_tuple(items: Iterable[Type], what: str) -> tuple[Type, ...]:
    items = tuple(items)
    for t in items:
        if not isinstance(t, Type):
            raise TypeError(f"{what} must be Types, got {t!r}")
    return items


@dataclass(frozen=True, repr=False)
class TupleType(Type):
    """``tuple<i64, f32>`` (heterogeneous; ``tuple<>`` is the empty tuple)."""

    elements: tuple[Type, ...]
    constraint_name = "tuple"

    def __init__(self, elements: Iterable[Type]) -> None:
        object.__setattr__(self, "elements", _type_tuple(elements, "tuple elements"))

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.elements))}>"


@dataclass(frozen=True, repr=False)
class FunctionType(Type):
    """``(inputs) -> result`` or ``(inputs) -> (results)``."""

    inputs: tuple[Type, ...]
    outputs: tuple[Type, ...]
    constraint_name = "function type"

    def __init__(self, inputs: Iterable[Type], outputs: Iterable[Type]) -> None:
        object.__setattr__(self, "inputs", _type_tuple(inputs, "function inputs"))
        object.__setattr__(self, "outputs", _type_tuple(outputs, "function outputs"))

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        if len(self.outputs) == 1 and not isinstance(self.outputs[0], FunctionType):
            return f"({ins}) -> {self.outputs[0]}"
        return f"({ins}) -> ({', '.join(map(str, self.outputs))})"


ARRAY_LAYOUTS = ("C", "F", "A")


@dataclass(frozen=True, repr=False)
class ArrayType(Type):
    """``!py.array<dtype, rank, layout>``: a NumPy array as Numba types it (layout C, F or A)."""

    dtype: Type
    rank: int
    layout: str = "C"
    constraint_name = "!py.array"

    def __post_init__(self) -> None:
        if not isinstance(self.dtype, Type) or isinstance(self.dtype, (ArrayType, FunctionType)):
            raise ValueError(f"array dtype must be a scalar type, got '{self.dtype}'")
        if not isinstance(self.rank, int) or isinstance(self.rank, bool) or not 0 <= self.rank <= 64:
            raise ValueError(f"array rank must be an integer in [0, 64], got {self.rank!r}")
        if self.layout not in ARRAY_LAYOUTS:
            raise ValueError(f"array layout must be one of C, F, A, got {self.layout!r}")

    def __str__(self) -> str:
        return f"!py.array<{self.dtype}, {self.rank}, {self.layout}>"


@dataclass(frozen=True, repr=False)
class OpaqueType(Type):
    """``!py.opaque<"numba type text">``: a Numba type the IR carries but does not model."""

    text: str
    constraint_name = "!py.opaque"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"opaque type text must be a str, got {self.text!r}")

    def __str__(self) -> str:
        from mixjit.ir.strings import quote

        return f"!py.opaque<{quote(self.text)}>"


i1 = IntegerType(1)
i8 = IntegerType(8)
i16 = IntegerType(16)
i32 = IntegerType(32)
i64 = IntegerType(64)
f16 = FloatType("f16")
bf16 = FloatType("bf16")
f32 = FloatType("f32")
f64 = FloatType("f64")
index = IndexType()
none = NoneType()
