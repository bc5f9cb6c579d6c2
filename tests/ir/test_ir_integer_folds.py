"""Integer folds of arith.addi/subi/muli wrap modulo 2**width for every width and signedness,
checked against Python's modular arithmetic (issue 7, item 11)."""

from __future__ import annotations

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixjit.ir.core import constant_value
from mixjit.ir.parser import parse_module
from mixjit.ir.rewriting import apply_patterns_greedily
from mixjit.ir.types import IntegerType

OPS = {"arith.addi": operator.add, "arith.subi": operator.sub, "arith.muli": operator.mul}
PREFIX = {"signless": "i", "signed": "si", "unsigned": "ui"}


def expected(exact: int, width: int, signedness: str) -> int:
    """The stored value of ``exact`` wrapped to the type, computed independently of the IR code:
    the residue modulo 2**width, read as two's complement for signed and signless types (except
    i1, which holds 0 or 1)."""
    residue = exact % (1 << width)
    as_unsigned = signedness == "unsigned" or (signedness == "signless" and width == 1)
    if not as_unsigned and residue >= 1 << (width - 1):
        residue -= 1 << width
    return residue


def fold(op_name: str, a: int, b: int, type_text: str) -> int:
    text = (
        f'%a = "arith.constant"() <{{value = {a} : {type_text}}}> : () -> {type_text}\n'
        f'%b = "arith.constant"() <{{value = {b} : {type_text}}}> : () -> {type_text}\n'
        f'%r = "{op_name}"(%a, %b) : ({type_text}, {type_text}) -> {type_text}\n'
        f'"test.op"(%r) : ({type_text}) -> ()'
    )
    module = parse_module(text)
    apply_patterns_greedily(module, ())
    module.verify()
    ops = list(module.regions[0].blocks[0].ops)
    assert [o.name for o in ops] == ["arith.constant", "test.op"], "the fold did not happen"
    value = constant_value(ops[-1].operands[0])
    assert value is not None
    return value.value


def test_the_reported_case_folds_without_error() -> None:
    assert fold("arith.addi", -3, -3, "si8") == -6
    assert fold("arith.addi", 100, 100, "si8") == -56
    assert fold("arith.subi", 3, 5, "ui8") == 254
    assert fold("arith.muli", 1, 1, "i1") == 1


@st.composite
def fold_cases(draw: st.DrawFn) -> tuple[str, int, int, int, str]:
    width = draw(st.sampled_from([1, 2, 7, 8, 16, 31, 32, 33, 63, 64, 65, 128]) | st.integers(1, 200))
    signedness = draw(st.sampled_from(sorted(PREFIX)))
    lo, hi = IntegerType(width, signedness).value_range()
    a = draw(st.integers(lo, hi))
    b = draw(st.integers(lo, hi))
    return draw(st.sampled_from(sorted(OPS))), a, b, width, signedness


@settings(max_examples=300, deadline=None)
@given(fold_cases())
def test_integer_folds_match_modular_arithmetic(case: tuple[str, int, int, int, str]) -> None:
    op_name, a, b, width, signedness = case
    got = fold(op_name, a, b, f"{PREFIX[signedness]}{width}")
    assert got == expected(OPS[op_name](a, b), width, signedness)


@pytest.mark.parametrize("signedness", sorted(PREFIX))
@given(value=st.integers(-(1 << 300), 1 << 300), width=st.integers(1, 256))
def test_wrap_is_the_residue_in_the_type_range(signedness: str, value: int, width: int) -> None:
    t = IntegerType(width, signedness)
    lo, hi = t.value_range()
    wrapped = t.wrap(value)
    assert lo <= wrapped <= hi
    assert (wrapped - value) % (1 << width) == 0
    assert wrapped == expected(value, width, signedness)
