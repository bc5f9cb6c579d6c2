"""The verifier: every check has a failing case, located at the offending op."""

from __future__ import annotations

from pathlib import Path

import pytest

from mixjit.ir.core import Block, Region
from mixjit.ir.diagnostics import DiagnosticError
from mixjit.ir.dialects.builtin import ModuleOp
from mixjit.ir.dialects.test import GenericOp
from mixjit.ir.location import Location
from mixjit.ir.parser import parse_module
from mixjit.ir.types import i64
from mixjit.ir.verifier import verify, verify_diagnostics

SAMPLES = sorted((Path(__file__).parent / "samples").glob("*.mix"))
ARR = "!py.array<f32, 2, C>"


def errors_of(text: str) -> list[str]:
    """Rendered diagnostics (``line:col: message``) of verifying ``text``."""
    module = parse_module(text, "v.mix", verify=False)
    return [f"{d.loc.line}:{d.loc.col}: {d.message}" for d in verify_diagnostics(module)]


def func(body: str, signature: str = "() -> ()", args: str = "") -> str:
    head = f"^bb0({args}):\n" if args else ""
    return f'"func.func"() <{{function_type = {signature}, sym_name = "f"}}> ({{\n{head}{body}}}) : () -> ()\n'


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_samples_verify(path: Path) -> None:
    verify(parse_module(path.read_text(), verify=False))


CASES = [
    pytest.param(
        '%a = "test.op"() : () -> i64\n%s = "arith.addi"(%a) : (i64) -> i64\n',
        ["2:1: 'arith.addi' op expects 2 operands, got 1"],
        id="operand-count",
    ),
    pytest.param(
        '%a = "test.op"() : () -> i64\n%r = "mix.gemm"(%a, %a) <{dtype = f32, site = 0 : i64}> : (i64, i64) -> i64\n',
        [
            "2:1: 'mix.gemm' op operand #0 ('a') must be !py.array, got 'i64'",
            "2:1: 'mix.gemm' op operand #1 ('b') must be !py.array, got 'i64'",
            "2:1: 'mix.gemm' op result #0 ('out') must be !py.array, got 'i64'",
        ],
        id="operand-and-result-types",
    ),
    pytest.param(
        '%c = "arith.constant"() : () -> i64\n',
        ["1:1: 'arith.constant' op missing required property 'value' (integer attribute or float attribute or bool attribute)"],
        id="missing-property",
    ),
    pytest.param(
        '%c = "arith.constant"() <{value = 1 : i64, extra = unit}> : () -> i64\n',
        ["1:1: 'arith.constant' op unknown property 'extra' (known: value)"],
        id="unknown-property",
    ),
    pytest.param(
        '%c = "arith.constant"() <{value = "one"}> : () -> i64\n',
        ['1:1: \'arith.constant\' op property \'value\' must be integer attribute or float attribute or bool attribute, got "one"'],
        id="property-kind",
    ),
    pytest.param(
        '%c = "test.op"() : () -> i1\n"test.op"() ({\n  "cf.cond_br"(%c)[^bb1, ^bb1] <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i1) -> ()\n^bb1:\n  "test.terminator"() : () -> ()\n}) : () -> ()\n',
        ["3:3: 'cf.cond_br' op operandSegmentSizes adds up to 2 but the op has 1 operands"],
        id="segment-sizes",
    ),
    pytest.param(
        '"test.op"() ({\n  "test.op"(%b) : (i64) -> ()\n  %b = "test.op"() : () -> i64\n}) : () -> ()\n',
        ["2:3: 'test.op' op operand #0 does not dominate this use (it is defined later in the block)"],
        id="dominance-in-block",
    ),
    pytest.param(
        '%c = "test.op"() : () -> i1\n"test.op"() ({\n  "cf.cond_br"(%c)[^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 0, 0>}> : (i1) -> ()\n'
        '^bb1:\n  %v = "test.op"() : () -> i64\n  "cf.br"()[^bb2] : () -> ()\n^bb2:\n  "test.op"(%v) : (i64) -> ()\n}) : () -> ()\n',
        ["8:3: 'test.op' op operand #0 does not dominate this use (block ^bb1 does not dominate ^bb2)"],
        id="dominance-across-blocks",
    ),
    pytest.param(
        '%x = "test.op"() ({\n  "test.op"(%x) : (i64) -> ()\n}) : () -> i64\n',
        ["2:3: 'test.op' op operand #0 is a result of the op itself (or of its enclosing op)"],
        id="own-result-in-region",
    ),
    pytest.param(
        func('  "func.return"(%x) : (i32) -> ()\n', "(i64) -> ()", "%x: i32"),
        [
            "1:1: 'func.func' op entry block arguments (i32) do not match the function inputs (i64)",
            "3:3: 'func.return' op returns (i32) but the function returns ()",
        ],
        id="func-hooks",
    ),
    pytest.param(
        func('  %v = "test.op"() : () -> i64\n'),
        ["2:3: 'test.op' op is the last op of block ^bb0 but is not a terminator"],
        id="missing-terminator",
    ),
    pytest.param(
        func("^bb0:\n"),
        ["1:1: 'func.func' op block ^bb0 in region #0 is empty (it needs a terminator)"],
        id="empty-block",
    ),
    pytest.param(
        func('  "func.return"() : () -> ()\n  "func.return"() : () -> ()\n'),
        ["2:3: 'func.return' op is a terminator and must be the last op of its block"],
        id="terminator-not-last",
    ),
    pytest.param(
        func('  "func.call"()[^bb1] <{callee = @f}> : () -> ()\n  "func.return"() : () -> ()\n^bb1:\n  "func.return"() : () -> ()\n'),
        ["2:3: 'func.call' op expects 0 successors, got 1", "2:3: 'func.call' op has successors but is not a terminator"],
        id="successors-on-non-terminator",
    ),
    pytest.param(
        func('  "cf.br"()[^bb1] : () -> ()\n^bb1(%a: i64, %b: f32):\n  "func.return"() : () -> ()\n'),
        ["2:3: 'cf.br' op branch to ^bb1 passes 0 operand(s) but the block has 2 argument(s)"],
        id="successor-arity",
    ),
    pytest.param(
        func('  "cf.br"(%x)[^bb1] : (i64) -> ()\n^bb1(%a: f32):\n  "func.return"() : () -> ()\n', "(i64) -> ()", "%x: i64"),
        ["3:3: 'cf.br' op branch operand #0 to ^bb1 has type 'i64' but the block argument has 'f32'"],
        id="successor-types",
    ),
    pytest.param(
        func('^bb0:\n  "cf.br"()[^bb1] : () -> ()\n^bb1:\n  "cf.br"()[^bb0] : () -> ()\n'),
        ["5:3: 'cf.br' op branches to the entry block of region #0 of 'func.func'"],
        id="entry-block-target",
    ),
    pytest.param(
        '"builtin.module"() ({\n  "test.op"() : () -> ()\n^bb1:\n  "test.op"() : () -> ()\n}) : () -> ()\n',
        ["1:1: 'builtin.module' op region #0 must have at most one block, has 2",
         "1:1: 'builtin.module' op must have one block in its body, has 2"],
        id="single-block",
    ),
    pytest.param(
        func('  "func.return"() : () -> ()\n') + func('  "func.return"() : () -> ()\n'),
        ["4:1: 'builtin.module' op redefinition of symbol '@f'"],
        id="duplicate-symbol",
    ),
    pytest.param(
        func('  %r = "func.call"() <{callee = @g}> : () -> i64\n  "func.return"() : () -> ()\n')
        + func('  %r = "func.call"() <{callee = @f}> : () -> i64\n  "func.return"() : () -> ()\n').replace('"f"', '"h"'),
        ["2:3: 'func.call' op '@g' does not name a function in the enclosing module",
         "6:3: 'func.call' op call signature () -> i64 does not match '@f' of type () -> ()"],
        id="call-hooks",
    ),
    pytest.param(
        f'%a = "test.op"() : () -> !py.array<f32, 3, C>\n%b = "test.op"() : () -> {ARR}\n'
        f'%r = "mix.gemm"(%a, %b) <{{dtype = f32, site = 0 : i64}}> : (!py.array<f32, 3, C>, {ARR}) -> {ARR}\n'
        f'%s = "mix.gemm"(%b, %b) <{{dtype = f64, site = 1 : i64}}> : ({ARR}, {ARR}) -> {ARR}\n'
        f'%t = "mix.gemm"(%b, %b) <{{beta = 1.0 : f64, dtype = f32, site = 2 : i64}}> : ({ARR}, {ARR}) -> {ARR}\n'
        f'%u = "mix.gemm"(%b, %b) <{{dtype = f32, site = -1 : i64}}> : ({ARR}, {ARR}) -> {ARR}\n'
        f'%v = "mix.gemm"(%b, %b) <{{alpha = 1.0 : f32, dtype = f32, site = 3 : i64}}> : ({ARR}, {ARR}) -> {ARR}\n',
        ["3:1: 'mix.gemm' op A must be a rank-2 array, got '!py.array<f32, 3, C>'",
         "4:1: 'mix.gemm' op A has element type 'f32' but dtype is 'f64'",
         "5:1: 'mix.gemm' op beta is 1.0 but there is no C operand",
         "6:1: 'mix.gemm' op site must be a non-negative i64, got -1 : i64",
         "7:1: 'mix.gemm' op alpha must be an f64 attribute, got 1.0 : f32"],
        id="gemm-hook",
    ),
    pytest.param(
        '%a = "test.op"() : () -> i64\n%b = "py.binop"(%a, %a) <{op = "<>"}> : (i64, i64) -> i64\n'
        '%c = "py.build_slice"(%a) : (i64) -> i64\n%d = "arith.constant"() <{value = 1.5 : f32}> : () -> f64\n',
        ["2:1: 'py.binop' op unknown operator '<>' (expected one of: != % & * ** + - / // < << <= == > >= >> @ ^ in is is not not in |)",
         "3:1: 'py.build_slice' op takes 2 or 3 operands (start, stop[, step]), got 1",
         "4:1: 'arith.constant' op value 1.5 : f32 does not have the result type 'f64'"],
        id="other-hooks",
    ),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_verifier_reports(text: str, expected: list[str]) -> None:
    assert errors_of(text) == expected


def test_unreachable_blocks_and_unregistered_ops_are_accepted() -> None:
    text = func(
        '  "func.return"() : () -> ()\n^bb1:\n  %v = "test.op"() : () -> i64\n  "cf.br"()[^bb2] : () -> ()\n'
        '^bb2:\n  "test.op"(%v) : (i64) -> ()\n  "any.thing"() : () -> ()\n'
    )
    module = parse_module(text, allow_unregistered=True)
    assert verify_diagnostics(module) == []


def test_parse_verifies_by_default_and_raises_all_errors() -> None:
    text = '%c = "arith.constant"() : () -> i64\n%d = "arith.constant"() : () -> i64\n'
    with pytest.raises(DiagnosticError) as err:
        parse_module(text, "v.mix")
    assert [d.loc.line for d in err.value.diagnostics] == [1, 2]


def test_built_ir_is_reported_at_its_source_location() -> None:
    user_block = Block()
    value = GenericOp.build(outs=[i64])
    user = GenericOp.build(args=[value.result], loc=Location("app.py", 7, 3))
    user_block.add_op(user)
    module = ModuleOp.from_ops([GenericOp.build(bodies=[Region([user_block])])])
    diags = verify_diagnostics(module)
    assert [str(d) for d in diags] == [
        "app.py:7:3: error: 'test.op' op operand #0 uses a value that is not defined in any region "
        "(its op was detached or erased)"
    ]


def test_isolated_from_above_is_enforced_on_built_ir() -> None:
    # The parser cannot even name an outer value inside func.func; built IR can.
    from mixjit.ir.dialects.func import FuncOp, ReturnOp

    outer = GenericOp.build(outs=[i64])
    f = FuncOp.define("f", [], [])
    entry = f.entry_block
    assert entry is not None
    entry.add_op(GenericOp.build(args=[outer.result], loc=Location("a.py", 2, 1)))
    entry.add_op(ReturnOp.build())
    module = ModuleOp.from_ops([outer, f])
    assert [str(d) for d in verify_diagnostics(module)] == [
        "a.py:2:1: error: 'test.op' op operand #0 uses a value defined outside the isolated region of 'func.func'"
    ]
