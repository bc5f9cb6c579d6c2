"""print(parse(x)) == print(parse(print(parse(x)))) for every .mix file of the repo.

Covered: tests/filecheck/*.mix and examples/**/*.mix. Files run with
``--split-input-file`` are checked chunk by chunk, and ``--allow-unregistered-dialect``
is honoured. A file that is intentionally invalid (one of its RUN lines expects mixopt
to fail, ``not mixopt``, or checks diagnostics, ``--verify-diagnostics``) may contain
chunks that do not parse or verify: only those chunks are skipped, every valid chunk of
such a file is still round-tripped. In any other file every chunk must be valid.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mixjit.ir.diagnostics import DiagnosticError
from mixjit.ir.parser import parse_module, split_input_file
from mixjit.ir.printer import print_op

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(Path(__file__).parent.glob("*.mix")) + sorted((ROOT / "examples").glob("**/*.mix"))
RUN_LINE = re.compile(r"^\s*//\s*RUN:(.*)$", re.M)


def _expects_invalid_input(runs: list[str]) -> bool:
    """True if a RUN line expects mixopt to fail or checks diagnostics."""
    return any(re.search(r"(^|\|)\s*not\s+mixopt\b", run) or "--verify-diagnostics" in run for run in runs)


def _round_trip(text: str, name: str, first_line: int, allow_unregistered: bool) -> None:
    once = print_op(parse_module(text, name, first_line=first_line, allow_unregistered=allow_unregistered))
    twice = print_op(parse_module(once, name, allow_unregistered=allow_unregistered))
    assert twice == once


def round_trip_file(text: str, name: str) -> tuple[int, int]:
    """Round-trip every chunk of a golden file; returns (chunks checked, invalid chunks skipped).

    Invalid chunks are skipped only in files whose RUN lines say they are invalid input;
    elsewhere the DiagnosticError propagates and fails the test.
    """
    runs = RUN_LINE.findall(text)
    may_be_invalid = _expects_invalid_input(runs)
    split = any("--split-input-file" in run for run in runs)
    allow = any("--allow-unregistered-dialect" in run for run in runs)
    checked = skipped = 0
    for chunk, first_line in split_input_file(text) if split else [(text, 1)]:
        try:
            parse_module(chunk, name, first_line=first_line, allow_unregistered=allow)
        except DiagnosticError:
            if not may_be_invalid:
                raise
            skipped += 1
            continue
        _round_trip(chunk, name, first_line, allow)
        checked += 1
    return checked, skipped


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_print_parse_print_is_stable(path: Path):
    checked, skipped = round_trip_file(path.read_text(), str(path))
    if not checked:
        pytest.skip(f"all {skipped} chunk(s) are intentionally invalid input")


def test_invalid_file_still_checks_its_valid_chunks():
    valid = '"test.op"() : () -> ()'
    invalid = '"test.op"( : () -> ()'
    text = f"// RUN: not mixopt %s --split-input-file\n{valid}\n// -----\n{invalid}\n// -----\n{valid}\n"
    assert round_trip_file(text, "t.mix") == (2, 1)


def test_invalid_chunk_in_a_valid_file_fails():
    text = '// RUN: mixopt %s --split-input-file\n"test.op"() : () -> ()\n// -----\n"test.op"( : () -> ()\n'
    with pytest.raises(DiagnosticError):
        round_trip_file(text, "t.mix")


def test_invalid_input_rule():
    assert _expects_invalid_input([" not mixopt %s 2>&1 | filecheck %s"])
    assert _expects_invalid_input([" mixopt %s --verify-diagnostics"])
    assert not _expects_invalid_input([" mixopt %s -p dce | filecheck %s"])
    assert not _expects_invalid_input([" mixopt --list-passes | not filecheck %s"])
