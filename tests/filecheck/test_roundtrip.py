"""print(parse(x)) == print(parse(print(parse(x)))) for every valid .mix file of the repo.

Covered: tests/filecheck/*.mix and examples/**/*.mix. A golden file is skipped when it
is intentionally invalid: one of its RUN lines expects mixopt to fail (``not mixopt``)
or checks diagnostics (``--verify-diagnostics``). Files run with
``--split-input-file`` are checked chunk by chunk, and ``--allow-unregistered-dialect``
is honoured.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mixjit.ir.parser import parse_module, split_input_file
from mixjit.ir.printer import print_op

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(Path(__file__).parent.glob("*.mix")) + sorted((ROOT / "examples").glob("**/*.mix"))
RUN_LINE = re.compile(r"^\s*//\s*RUN:(.*)$", re.M)


def _skip_reason(runs: list[str]) -> str | None:
    for run in runs:
        if re.search(r"(^|\|)\s*not\s+mixopt\b", run):
            return "intentionally invalid input (RUN: not mixopt)"
        if "--verify-diagnostics" in run:
            return "intentionally invalid input (--verify-diagnostics)"
    return None


def _round_trip(text: str, name: str, first_line: int, allow_unregistered: bool) -> None:
    once = print_op(parse_module(text, name, first_line=first_line, allow_unregistered=allow_unregistered))
    twice = print_op(parse_module(once, name, allow_unregistered=allow_unregistered))
    assert twice == once


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_print_parse_print_is_stable(path: Path):
    text = path.read_text()
    runs = RUN_LINE.findall(text)
    reason = _skip_reason(runs)
    if reason:
        pytest.skip(reason)
    split = any("--split-input-file" in run for run in runs)
    allow = any("--allow-unregistered-dialect" in run for run in runs)
    chunks = split_input_file(text) if split else [(text, 1)]
    for chunk, first_line in chunks:
        _round_trip(chunk, str(path), first_line, allow)


def test_skip_rule_recognises_invalid_inputs():
    assert _skip_reason([" not mixopt %s 2>&1 | filecheck %s"])
    assert _skip_reason([" mixopt %s --verify-diagnostics"])
    assert _skip_reason([" mixopt %s -p dce | filecheck %s"]) is None
    assert _skip_reason([" mixopt --list-passes | not filecheck %s"]) is None
