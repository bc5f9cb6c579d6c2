"""Parser robustness: mutated and random inputs only ever raise DiagnosticError, never hang, and
whatever parses prints back to text that parses to the same text.

Bounded (a few seconds): a deterministic mutation loop over the sample files plus a small
hypothesis run over random token sequences. ``FUZZ_ITERATIONS`` is the CI budget; the slow test
runs many more.
"""

from __future__ import annotations

import random
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixjit.ir.diagnostics import DiagnosticError
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op

SAMPLES = [p.read_text() for p in sorted((Path(__file__).parent / "samples").glob("*.mix"))]
FUZZ_ITERATIONS = 1500
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[%^@!]?[A-Za-z0-9_$.\-]+|->|::|\s+|.', re.S)
_SNIPPETS = ["(", ")", "{", "}", "[", "]", "<", ">", "<{", "}>", ",", ":", "=", "->", "-", '"', "%", "^", "@", "!",
             "^bb1", "%0", "%x", "i64", "f32", "loc(", "tuple<", "!py.array<", "0x7FC00000", "1.5e+3", "\\", "\n",
             "// -----\n", "array<i32: ", "::@", "unit", "true", "99999999999999999999999"]


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging CI) if the block runs longer than ``seconds``."""

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"fuzzing took longer than {seconds} s: the parser may hang")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def mutate(text: str, rng: random.Random) -> str:
    """One to three random edits on characters or tokens (delete, duplicate, swap, insert, truncate)."""
    for _ in range(rng.randint(1, 3)):
        if not text:
            return rng.choice(_SNIPPETS)
        kind = rng.randrange(9)
        if kind < 5:
            tokens = _TOKEN.findall(text)
            i, j = rng.randrange(len(tokens)), rng.randrange(len(tokens))
            if kind == 0:
                del tokens[i]
            elif kind == 1:
                tokens.insert(i, tokens[i])
            elif kind == 2:
                tokens[i], tokens[j] = tokens[j], tokens[i]
            elif kind == 3:
                tokens.insert(i, rng.choice(_SNIPPETS))
            else:
                tokens[i] = rng.choice(_SNIPPETS)
            text = "".join(tokens)
        else:
            i = rng.randrange(len(text))
            if kind == 5:
                text = text[:i] + text[i + 1 :]
            elif kind == 6:
                text = text[:i] + text[i] + text[i:]
            elif kind == 7 and i + 1 < len(text):
                text = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
            else:
                text = text[:i]
    return text


def check_one(text: str, allow_unregistered: bool) -> bool:
    """Parse ``text``; True if it parsed. Anything but DiagnosticError propagates (a bug). Parsed
    IR must print, and its text must parse and print identically."""
    try:
        module = parse_module(text, "fuzz.mix", allow_unregistered=allow_unregistered)
    except DiagnosticError as err:
        assert err.diagnostics and all(d.message for d in err.diagnostics)
        assert not any("internal error" in d.message for d in err.diagnostics), err
        err.render({"fuzz.mix": text})  # rendering must not fail either
        return False
    printed = print_op(module)
    assert print_op(parse_module(printed, allow_unregistered=allow_unregistered)) == printed
    return True


def run_mutations(iterations: int, seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    parsed = 0
    for n in range(iterations):
        text = mutate(SAMPLES[n % len(SAMPLES)], rng)
        parsed += check_one(text, allow_unregistered=bool(n & 1))
    return parsed, iterations


def test_mutated_samples_only_raise_diagnostics() -> None:
    with time_limit(60):
        parsed, total = run_mutations(FUZZ_ITERATIONS, seed=20240611)
    # The mix must exercise both outcomes, or the mutations are too weak or too strong to test anything.
    assert 0 < parsed < total


@pytest.mark.slow
def test_mutated_samples_long_run() -> None:
    with time_limit(600):
        for seed in range(10):
            run_mutations(3000, seed)


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.sampled_from(_SNIPPETS + ['"test.op"', '"cf.br"', " ", "%a = ", "^bb0(%x: i64):"]), max_size=40))
def test_random_token_soup_only_raises_diagnostics(tokens: list[str]) -> None:
    check_one("".join(tokens), allow_unregistered=True)


@settings(max_examples=100, deadline=None, database=None)
@given(st.text(max_size=60))
def test_random_text_only_raises_diagnostics(text: str) -> None:
    check_one(text, allow_unregistered=False)
