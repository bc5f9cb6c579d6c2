"""Types and attributes: construction checks, text round trips, bit-exact floats."""

from __future__ import annotations

import math
import random
import struct

import ml_dtypes
import numpy as np
import pytest

from mixjit.ir.attributes import (
    ArrayAttr,
    Attribute,
    BoolAttr,
    DenseArrayAttr,
    DictAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
    to_attr,
)
from mixjit.ir.core import Operation
from mixjit.ir.floatformat import FORMATS, from_bits, to_bits
from mixjit.ir.location import Location, UnknownLoc
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.ir.types import (
    ArrayType,
    ComplexType,
    FloatType,
    FunctionType,
    IndexType,
    IntegerType,
    NoneType,
    OpaqueType,
    TupleType,
    Type,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i64,
)

TYPES: list[Type] = [
    i1, i8, IntegerType(32), i64, IntegerType(7, "signed"), IntegerType(64, "unsigned"), f16, bf16, f32, f64,
    IndexType(), NoneType(), ComplexType(f64), TupleType([]), TupleType([i64, TupleType([f32])]),
    FunctionType([], []), FunctionType([i64, f32], [i64]), FunctionType([i64], [i64, f32]),
    FunctionType([], [FunctionType([f32], [f32])]), ArrayType(f32, 2, "C"), ArrayType(i64, 0, "A"),
    ArrayType(bf16, 3, "F"), OpaqueType("reflected list(int64)"), OpaqueType('quote " and \\ and é'),
]


def roundtrip_attr(attr: Attribute) -> Attribute:
    """Put ``attr`` on an op, print, parse, return the parsed attribute."""
    text = print_op(Operation("test.op", properties={"a": attr}))
    module = parse_module(text)
    op = module.regions[0].blocks[0].ops[0]
    assert str(module) == text
    return op.properties["a"]


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_type_text_round_trip(t: Type) -> None:
    assert roundtrip_attr(TypeAttr(t)) == TypeAttr(t)
    assert hash(t) == hash(roundtrip_attr(TypeAttr(t)).value)  # type: ignore[attr-defined]


def test_type_spellings() -> None:
    assert [str(t) for t in (i1, IntegerType(8, "signed"), IntegerType(16, "unsigned"), bf16, IndexType(), NoneType())] == [
        "i1", "si8", "ui16", "bf16", "index", "none"
    ]
    assert str(FunctionType([i64], [FunctionType([], [])])) == "(i64) -> (() -> ())"
    assert str(ArrayType(f32, 2, "F")) == "!py.array<f32, 2, F>"
    assert str(OpaqueType("a\nb")) == '!py.opaque<"a\\nb">'


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: IntegerType(0), "width must be in"),
        (lambda: IntegerType(8, "weird"), "signedness"),
        (lambda: FloatType("f8"), "float kind"),
        (lambda: ArrayType(f32, -1), "rank"),
        (lambda: ArrayType(f32, 2, "X"), "layout"),
        (lambda: ArrayType(ArrayType(f32, 1), 1), "scalar"),
        (lambda: ComplexType(i64), "float type"),  # type: ignore[arg-type]
        (lambda: TupleType([1]), "must be Types"),  # type: ignore[list-item]
    ],
)
def test_invalid_types_are_refused(make, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=message):
        make()


ATTRS: list[Attribute] = [
    IntegerAttr(0, i1), IntegerAttr(1, i1), IntegerAttr(-128, i8), IntegerAttr(2**64 - 1, IntegerType(64, "unsigned")),
    IntegerAttr(-(2**63), i64), IntegerAttr(5, IndexType()), IntegerAttr(3, IntegerType(128)),
    FloatAttr(1.5), FloatAttr(0.1, f32), FloatAttr(-2.0, bf16), FloatAttr(1e16), FloatAttr(1e-300),
    StringAttr(""), StringAttr('a "b" \\ \t\n é \x00 \x7f 中'), BoolAttr(True), BoolAttr(False), UnitAttr(),
    ArrayAttr([]), ArrayAttr([IntegerAttr(1), ArrayAttr([StringAttr("x")])]),
    DictAttr({}), DictAttr({"b": UnitAttr(), "a": IntegerAttr(1), "with space": BoolAttr(True), "x.y$": StringAttr("")}),
    SymbolRefAttr("f"), SymbolRefAttr("outer", ("inner", "most")), SymbolRefAttr("odd name"),
    TypeAttr(f32), DenseArrayAttr(IntegerType(32), [1, -2, 3]), DenseArrayAttr(i8, []),
]


@pytest.mark.parametrize("attr", ATTRS, ids=repr)
def test_attribute_text_round_trip(attr: Attribute) -> None:
    back = roundtrip_attr(attr)
    assert back == attr and hash(back) == hash(attr) and type(back) is type(attr)


SPECIAL_F64 = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
               2.225073858507201e-308, 1.7976931348623157e308, 0.1, 1 / 3]
NAN_PAYLOADS = {"f64": [0x7FF8000000000000, 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF, 0x7FF4000000000abc],
                "f32": [0x7FC00000, 0x7F800001, 0xFFC00123, 0x7FBFFFFF],
                "f16": [0x7E00, 0x7C01, 0xFE55], "bf16": [0x7FC0, 0x7F81, 0xFFC1]}


@pytest.mark.parametrize("kind", list(FORMATS))
def test_float_attr_round_trip_is_bit_exact(kind: str) -> None:
    t = FloatType(kind)
    fmt = FORMATS[kind]
    values = [FloatAttr(v, t) for v in SPECIAL_F64]
    # every subnormal edge, the smallest/largest normals and NaN payloads, by bit pattern
    mant = fmt.mant_bits
    patterns = [1, 2, (1 << mant) - 1, 1 << mant, ((1 << fmt.exp_bits) - 2) << mant | ((1 << mant) - 1)]
    patterns += [p | 1 << (fmt.width - 1) for p in patterns] + NAN_PAYLOADS[kind]
    values += [FloatAttr.from_bits(p, t) for p in patterns]
    for attr in values:
        back = roundtrip_attr(attr)
        assert isinstance(back, FloatAttr) and back.bits == attr.bits, (attr, back)
    negzero = roundtrip_attr(FloatAttr(-0.0, t))
    assert math.copysign(1.0, negzero.value) == -1.0  # type: ignore[attr-defined]
    assert FloatAttr(-0.0, t) != FloatAttr(0.0, t) and FloatAttr(math.nan, t) == FloatAttr(math.nan, t)


def test_float_attr_spelling() -> None:
    assert str(FloatAttr(1e16)) == "1.0e+16 : f64"
    assert str(FloatAttr(math.inf, f32)) == "0x7F800000 : f32"
    assert str(FloatAttr(-math.inf, f16)) == "0xFC00 : f16"
    assert str(FloatAttr(math.nan)) == "0x7FF8000000000000 : f64"
    assert str(FloatAttr(0.1, f32)) == "0.10000000149011612 : f32"  # rounded to f32 on construction
    assert str(FloatAttr(-0.0)) == "-0.0 : f64"


def _reference_bits(x: float, kind: str) -> int:
    dtype = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[kind]
    with np.errstate(all="ignore"):
        arr = np.array([x], dtype=np.float64).astype(dtype)
    return int(arr.view(np.uint32 if kind == "f32" else np.uint16)[0])


@pytest.mark.parametrize("kind", ["f32", "f16", "bf16"])
def test_rounding_matches_numpy(kind: str) -> None:
    """Round-to-nearest-even, subnormals and overflow as numpy/ml_dtypes do. ml_dtypes converts
    f64 to bf16 through f32 (double rounding), so bf16 is compared on f32-representable inputs."""
    rng = random.Random(1234)
    fmt = FORMATS[kind]
    for _ in range(3000):
        r = rng.random()
        if r < 0.4:
            x = rng.choice([-1, 1]) * 2.0 ** rng.uniform(-150, 130)
        elif r < 0.7:
            x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        else:  # exact ties, halfway between two neighbours (exact in f64)
            bits = rng.getrandbits(fmt.width - 1)
            lo, hi = from_bits(bits, fmt), from_bits(bits + 1, fmt)
            if not (math.isfinite(lo) and math.isfinite(hi)):
                continue
            x = (lo + hi) / 2
        if math.isnan(x):
            continue
        if kind == "bf16" and math.isfinite(x) and abs(x) < 3.0e38:
            x = float(np.float32(x))
        assert to_bits(x, fmt) == _reference_bits(x, kind), x
    for bits in range(0, 1 << 16, 97) if fmt.width == 16 else (rng.getrandbits(32) for _ in range(3000)):
        assert to_bits(from_bits(bits, fmt), fmt) == bits


def test_integer_attr_normalization_and_range() -> None:
    assert IntegerAttr(255, i8) == IntegerAttr(-1, i8) and str(IntegerAttr(255, i8)) == "-1 : i8"
    assert IntegerAttr(1, i1).value == 1
    with pytest.raises(ValueError, match=r"does not fit in i8 \(range \[-128, 127\]\)"):
        IntegerAttr(256, i8)
    with pytest.raises(ValueError, match="does not fit in ui8"):
        IntegerAttr(-1, IntegerType(8, "unsigned"))
    with pytest.raises(ValueError, match="does not fit in si8"):
        IntegerAttr(128, IntegerType(8, "signed"))
    with pytest.raises(TypeError, match="integer or index type"):
        IntegerAttr(1, f32)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be an int"):
        IntegerAttr(True, i1)


def test_to_attr_and_collections() -> None:
    assert to_attr(True) == BoolAttr(True) and to_attr(3) == IntegerAttr(3, i64) and to_attr(2.0) == FloatAttr(2.0)
    assert to_attr([1, "a"]) == ArrayAttr([IntegerAttr(1), StringAttr("a")])
    assert to_attr({"z": f32}) == DictAttr({"z": TypeAttr(f32)})
    d = DictAttr({"b": UnitAttr(), "a": IntegerAttr(1)})
    assert str(d) == "{a = 1 : i64, b}" and "a" in d and d["a"] == IntegerAttr(1) and len(d) == 2
    with pytest.raises(TypeError, match="cannot make an attribute"):
        to_attr(object())


def test_locations() -> None:
    loc = Location("k.py", 3, 5)
    assert str(loc) == "k.py:3:5" and loc.is_known and not UnknownLoc.is_known
    assert loc == Location("k.py", 3, 5) and hash(loc) == hash(Location("k.py", 3, 5))
    assert UnknownLoc != Location("<unknown>", 0, 0)
