"""Parse errors: exact messages, located with a caret under the offending column."""

from __future__ import annotations

import pytest

from mixjit.ir.diagnostics import DiagnosticError
from mixjit.ir.parser import MAX_NESTING, parse_module


def rendered_error(text: str) -> str:
    with pytest.raises(DiagnosticError) as err:
        parse_module(text, "f.mix")
    return err.value.render({"f.mix": text})


CASES = [
    pytest.param(
        '%a = "test.op"() : () -> i64\n%b = "test.op"(%a, %a : (i64) -> i64',
        "f.mix:2:23: error: expected ',' or ')' in operand list, got ':'\n"
        '%b = "test.op"(%a, %a : (i64) -> i64\n'
        "                      ^",
        id="operand-list",
    ),
    pytest.param(
        '%a = "foo.bar"() : () -> i64',
        "f.mix:1:6: error: unknown operation 'foo.bar'\n"
        '%a = "foo.bar"() : () -> i64\n'
        "     ^",
        id="unknown-op",
    ),
    pytest.param(
        '"test.op"(%zz) : (i64) -> ()',
        "f.mix:1:11: error: use of undeclared SSA value name '%zz'\n"
        '"test.op"(%zz) : (i64) -> ()\n'
        "          ^",
        id="undeclared-value",
    ),
    pytest.param(
        '"test.op"() : () -> (i64',
        "f.mix:1:25: error: expected ',' or ')' in function type results, got end of input\n"
        '"test.op"() : () -> (i64\n'
        "                        ^",
        id="truncated-at-eof-points-after-last-token",
    ),
    pytest.param(
        '%a = "test.op"() : () -> i64\n%a = "test.op"() : () -> i64',
        "f.mix:2:1: error: redefinition of SSA value '%a'\n"
        '%a = "test.op"() : () -> i64\n'
        "^\n"
        "f.mix:1:1: note: previously defined here\n"
        '%a = "test.op"() : () -> i64\n'
        "^",
        id="redefinition-with-note",
    ),
    pytest.param(
        '%a = "test.op"() : () -> i64\n"test.op"(%a) : (i32) -> ()',
        "f.mix:2:11: error: use of value '%a' expects different type than prior uses: 'i32' vs 'i64'\n"
        '"test.op"(%a) : (i32) -> ()\n'
        "          ^",
        id="type-mismatch",
    ),
    pytest.param(
        '"test.op"() ({\n  "test.terminator"()[^bb7] : () -> ()\n}) : () -> ()',
        "f.mix:2:23: error: reference to an undefined block '^bb7'\n"
        '  "test.terminator"()[^bb7] : () -> ()\n'
        "                      ^",
        id="undefined-block",
    ),
    pytest.param(
        '"test.op"() : (i64) -> ()',
        "f.mix:1:15: error: expected 0 operand types but had 1\n"
        '"test.op"() : (i64) -> ()\n'
        "              ^",
        id="operand-count",
    ),
    pytest.param(
        '"test.op"() <{a = 300 : i8}> : () -> ()',
        "f.mix:1:19: error: integer 300 does not fit in i8 (range [-128, 127])\n"
        '"test.op"() <{a = 300 : i8}> : () -> ()\n'
        "                  ^",
        id="integer-range",
    ),
    pytest.param(
        '"test.op"() : () -> !py.array<f32, 2, Q>',
        "f.mix:1:39: error: array layout must be one of C, F, A, got 'Q'\n"
        '"test.op"() : () -> !py.array<f32, 2, Q>\n'
        "                                      ^",
        id="array-layout",
    ),
    pytest.param(
        '"test.op"() : () -> ()\n\t"test.op"() # : () -> ()',
        "f.mix:2:14: error: unexpected character '#'\n"
        '\t"test.op"() # : () -> ()\n'
        "\t            ^",
        id="tab-kept-in-caret-line",
    ),
    pytest.param(
        '"test.op"() \x01 : () -> ()',
        "f.mix:1:13: error: unexpected character U+0001\n"
        '"test.op"() \x01 : () -> ()\n'
        "            ^",
        id="control-character-named-by-code-point",
    ),
    pytest.param(
        '"test.op"() <{a = "\\q"}> : () -> ()',
        "f.mix:1:20: error: invalid escape in string literal (use \\\\, \\\", \\n, \\t or \\XX hex)\n"
        '"test.op"() <{a = "\\q"}> : () -> ()\n'
        "                   ^",
        id="bad-escape",
    ),
    pytest.param(
        '"test.op"() ({\n  "test.op"(%y) : (i32) -> ()\n  %y = "test.op"() : () -> i64\n}) : () -> ()',
        "f.mix:3:3: error: definition of SSA value '%y' has type 'i64' but prior uses expect 'i32'\n"
        '  %y = "test.op"() : () -> i64\n'
        "  ^\n"
        "f.mix:2:13: note: first used here\n"
        '  "test.op"(%y) : (i32) -> ()\n'
        "            ^",
        id="forward-reference-type",
    ),
    pytest.param(
        'test.op() : () -> ()',
        "f.mix:1:1: error: expected an operation name in quotes (generic syntax, e.g. \"test.op\"(...)), got 'test.op'\n"
        "test.op() : () -> ()\n"
        "^",
        id="custom-syntax",
    ),
    pytest.param(
        '"test.op"() <{a = 1 : f32}> : () -> ()',
        "f.mix:1:19: error: expected a float literal (1.0) or a hex bit pattern for type 'f32'\n"
        '"test.op"() <{a = 1 : f32}> : () -> ()\n'
        "                  ^",
        id="int-literal-float-type",
    ),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_parse_error_rendering(text: str, expected: str) -> None:
    assert rendered_error(text) == expected


def test_error_without_source_text_has_no_caret() -> None:
    with pytest.raises(DiagnosticError) as err:
        parse_module('"test.op"(', "f.mix")
    assert str(err.value) == "f.mix:1:11: error: expected an operand, got end of input"


def test_verifier_errors_of_parsed_ops_point_into_the_text() -> None:
    text = '"func.func"() <{function_type = () -> (), sym_name = "f"}> ({\n  %x = "arith.constant"() <{value = 1 : i64}> : () -> i32\n  "func.return"() : () -> ()\n}) : () -> ()'
    assert rendered_error(text) == (
        "f.mix:2:3: error: 'arith.constant' op value 1 : i64 does not have the result type 'i32'\n"
        '  %x = "arith.constant"() <{value = 1 : i64}> : () -> i32\n'
        "  ^"
    )


@pytest.mark.parametrize(
    "head, opener, closer, tail",
    [
        ("", '"test.op"() ({\n', "}) : () -> ()\n", ""),
        ('"test.op"() <{a = ', "[", "]", "}> : () -> ()"),
        ('"test.op"() <{a = ', "{b = ", "}", "}> : () -> ()"),
        ('"test.op"() : () -> ', "tuple<", ">", ""),
        ('"test.op"() : () -> ', "(", ") -> ()", ""),
    ],
    ids=["regions", "arrays", "dicts", "tuples", "functions"],
)
def test_deep_nesting_is_a_diagnostic(head: str, opener: str, closer: str, tail: str) -> None:
    depth = 5000
    text = head + opener * depth + closer * depth + tail
    with pytest.raises(DiagnosticError, match=f"nesting too deep \\(more than {MAX_NESTING} levels"):
        parse_module(text)


def test_nesting_just_under_the_limit_parses_and_prints() -> None:
    depth = MAX_NESTING - 1
    text = '"test.op"() ({\n' * depth + '"test.op"() : () -> ()\n' + "}) : () -> ()\n" * depth
    from mixjit.ir.printer import print_op

    printed = print_op(parse_module(text))
    assert print_op(parse_module(printed)) == printed and printed.count("test.op") == depth + 1
