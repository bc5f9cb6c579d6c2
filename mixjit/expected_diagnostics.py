"""``mixopt --verify-diagnostics``: check emitted diagnostics against annotations in the input.

Like ``mlir-opt -verify-diagnostics``, a test file states the diagnostics it expects in
comments::

    %0 = "test.op"() : () -> i64   // expected-error {{text of the message}}
    // expected-error@+1 {{...}}       the diagnostic is on the next line
    // expected-note@-2 {{...}}        ... two lines above
    // expected-warning@7 {{...}}      ... on line 7
    // expected-error@unknown {{...}}  ... at an unknown location or in another file

Severities: error, warning, note, remark. The text must occur in the message
(substring match). The check passes iff every diagnostic (notes included) is expected
and every expectation is produced: errors of the parser, verifier and failing passes,
and the remarks and warnings passes emit (``PassContext``), which usually point at
Python source (another file: ``@unknown``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mixjit.ir.diagnostics import Diagnostic, DiagnosticError, Severity
from mixjit.ir.location import Location

__all__ = ["Expectation", "parse_expectations", "check_expectations"]

_ANNOTATION = re.compile(
    r"expected-(?P<severity>error|warning|note|remark)"
    r"(?:@(?P<where>[+-]\d+|\d+|unknown))?\s*(?:\{\{(?P<text>.*?)\}\})?"
)


@dataclass
class Expectation:
    """One ``expected-<severity>`` annotation: what is expected and where it was written."""

    severity: Severity
    text: str
    line: int | None  # None: the diagnostic has an unknown location or one in another file
    annotation: Location
    matched: bool = False


def parse_expectations(text: str, filename: str, first_line: int = 1) -> list[Expectation]:
    """All annotations in ``text``, whose first line is line ``first_line`` of ``filename``.

    Raises DiagnosticError for a malformed annotation.
    """
    found: list[Expectation] = []
    problems: list[Diagnostic] = []
    lines = text.split("\n")
    last_line = first_line + len(lines) - 1
    for number, line in enumerate(lines, start=first_line):
        if "//" not in line:
            continue
        comment_start = line.index("//")
        for match in _ANNOTATION.finditer(line, comment_start):
            here = Location(filename, number, match.start() + 1)
            if match.group("text") is None:
                problems.append(
                    Diagnostic.error(
                        "expected '{{message text}}' after the diagnostic annotation", here
                    )
                )
                continue
            where = match.group("where")
            target: int | None
            if where is not None and len(where) > 12:  # far past any file (and past int()'s digit limit)
                problems.append(Diagnostic.error(f"annotation points at line {where[:12]}..., outside the file", here))
                continue
            if where is None:
                target = number
            elif where == "unknown":
                target = None
            elif where[0] in "+-":
                target = number + int(where)
            else:
                target = int(where)
            if target is not None and not first_line <= target <= last_line:
                problems.append(
                    Diagnostic.error(f"annotation points at line {target}, outside the file", here)
                )
                continue
            found.append(Expectation(Severity(match.group("severity")), match.group("text"), target, here))
    if problems:
        raise DiagnosticError(problems)
    return found


def _flatten(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    flat = []
    for diag in diagnostics:
        flat.append(diag)
        flat.extend(_flatten(diag.notes))
    return flat


def check_expectations(
    expectations: list[Expectation], diagnostics: Iterable[Diagnostic], filename: str
) -> list[Diagnostic]:
    """Match diagnostics (and their notes) to expectations; return the mismatches as errors.

    An empty result means the diagnostics are exactly the expected ones.
    """
    problems: list[Diagnostic] = []
    for diag in _flatten(diagnostics):
        in_file = diag.loc.is_known and diag.loc.file == filename
        line = diag.loc.line if in_file else None
        match = next(
            (
                e
                for e in expectations
                if not e.matched
                and e.severity is diag.severity
                and e.line == line
                and e.text in diag.message
            ),
            None,
        )
        if match is None:
            problems.append(
                Diagnostic.error(f"unexpected {diag.severity.value}: {diag.message}", diag.loc)
            )
        else:
            match.matched = True
    for e in expectations:
        if not e.matched:
            where = "at an unknown location" if e.line is None else f"on line {e.line}"
            problems.append(
                Diagnostic.error(
                    f'expected {e.severity.value} "{e.text}" {where} was not produced', e.annotation
                )
            )
    return problems
