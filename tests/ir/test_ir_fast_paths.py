"""The lexer's and parser's fast paths (one regex for a common token, a signature, an operand
list or a loc()) are shortcuts only: with them switched off, every input gives the same tokens,
the same IR and the same diagnostics."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ir_fuzz import SAMPLES, mutate
from test_ir_scale import bench

import mixjit.ir.lexer as lexer_module
import mixjit.ir.parser as parser_module
from mixjit.ir.diagnostics import DiagnosticError
from mixjit.ir.lexer import Kind, Lexer
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op

NEVER = re.compile(r"(?!)")
FAST_PATHS = [(lexer_module, "_FAST_TOKEN"), *((parser_module, n) for n in ("_SIMPLE_SIGNATURE", "_SIMPLE_OPERANDS", "_SIMPLE_LOCATION", "_SIMPLE_PROPERTIES"))]
ALPHABET = '%^@!"()[]{}<>,:=-+*?/\\ \n\tabcxyzi0123456789._$'


def outcome(text: str) -> str:
    """The printed IR, or the rendered diagnostics."""
    try:
        return print_op(parse_module(text, "t.mix", allow_unregistered=True))
    except DiagnosticError as err:
        return "error: " + err.render({"t.mix": text})


def outcome_without_fast_paths(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patch:
        for module, name in FAST_PATHS:
            patch.setattr(module, name, NEVER)
        return outcome(text)


def tokens(text: str, general_only: bool) -> list[object]:
    lexer = Lexer(text, "t.mix")
    step = lexer._next_general if general_only else lexer.next
    out: list[object] = []
    try:
        while True:
            tok = step()
            out.append(tuple(tok))
            if tok.kind is Kind.EOF:
                return out
    except DiagnosticError as err:
        return [*out, str(err)]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=60))
def test_the_fast_lexer_gives_the_general_lexers_tokens_and_errors(text: str) -> None:
    assert tokens(text, general_only=False) == tokens(text, general_only=True)


def test_comments_are_never_split_into_tokens() -> None:
    text = '// a comment ending in an identifier\n%x // -- and more\n'
    assert [t[0] for t in tokens(text, general_only=False)] == [Kind.PERCENT_ID, Kind.EOF]


def test_generated_functions_parse_the_same_without_fast_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    for make in bench.SHAPES.values():
        text = make(300)
        fast = outcome(text)
        assert not fast.startswith("error")
        assert fast == outcome_without_fast_paths(text, monkeypatch)


def test_samples_and_their_mutations_parse_the_same_without_fast_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    texts = list(SAMPLES)
    texts += [mutate(rng.choice(SAMPLES), rng) for _ in range(300)]
    texts += [  # near misses of each fast path
        '%a = "test.op"() : () -> i64\n"test.op"(%a, %a) : (i64, i64) -> () loc("f.py":1:2)',
        '%a = "test.op"() : () -> i64\n"test.op"( %a,%a ) : (i64,i64) -> () loc( "f.py" : 1 : 2 )',
        '%a = "test.op"() : () -> i64\n"test.op"(%a, %12b) : (i64, i64) -> ()',
        '"test.op"() : () -> () loc("f.py":0x1:2)',
        '"test.op"() : () -> () loc("f\\"py":1:2)',
        '"test.op"() : () -> () loc("f.py":1234567890123456789:2)',
        '"test.op"() : (i64 -> ()',
        '"test.op"() : (tuple<i64, f32>) -> (i64, i64)',
        '"test.op"() <{a = 1 : i64, b = array<i32: 1, 0>}> : () -> ()\n"test.op"() <{a = 1 : i64, b = array<i32: 1, 0>}> : () -> ()',
        '"test.op"() <{a = 1 : i64, a = 2 : i64}> : () -> ()',
        '"test.op"() <{a = 300 : i8}> : () -> ()',
        '"test.op"() <{a = 1 : i64 b = 2}> : () -> ()',
        '"test.op"() <{t = tuple<i64, complex<f64>>}> : () -> ()',
        '%x = "test.op"() : () -> !py.array<f64, 1, C>\n"test.op"(%x) : (!py.array<f64, 1, Q>) -> ()',
    ]
    for text in texts:
        assert outcome(text) == outcome_without_fast_paths(text, monkeypatch), text
