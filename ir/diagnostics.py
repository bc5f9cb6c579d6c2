"""Located diagnostics and their rendering: ``file:line:col: error: message``, the source line, a caret.

Everything that rejects IR (parser, verifier, passes) raises :class:`DiagnosticError`
carrying one or more :class:`Diagnostic`; a :class:`SourceManager` knows the text of the
files so that rendering can show the offending line.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from mixjit.ir.location import Location, UnknownLoc


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"
    REMARK = "remark"


@dataclass(frozen=True)
class Diagnostic:
    """One message at one location, with optional attached notes (themselves diagnostics)."""

    severity: Severity
    message: str
    loc: Location = UnknownLoc
    notes: tuple["Diagnostic", ...] = field(default=())

    @staticmethod
    def error(message: str, loc: Location = UnknownLoc, notes: Iterable["Diagnostic"] = ()) -> "Diagnostic":
        return Diagnostic(Severity.ERROR, message, loc, tuple(notes))

    @staticmethod
    def note(message: str, loc: Location = UnknownLoc) -> "Diagnostic":
        return Diagnostic(Severity.NOTE, message, loc)

    def __str__(self) -> str:
        return render(self)


class DiagnosticError(Exception):
    """Raised with one or more diagnostics; ``str(err)`` renders them without source lines."""

    def __init__(self, diagnostics: "Diagnostic | Iterable[Diagnostic]") -> None:
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)
        if not self.diagnostics:
            raise ValueError("DiagnosticError needs at least one diagnostic")
        super().__init__("\n".join(render(d) for d in self.diagnostics))

    def render(self, sources: "SourceManager | Mapping[str, str] | None" = None) -> str:
        """All diagnostics, with source lines and carets for files whose text is known."""
        manager = sources if isinstance(sources, SourceManager) else SourceManager(sources or {})
        return "\n".join(manager.render(d) for d in self.diagnostics)


def _source_line(source_text: str, line: int) -> str | None:
    lines = source_text.split("\n")
    if 1 <= line <= len(lines):
        return lines[line - 1].rstrip("\r")
    return None


def render(diag: Diagnostic, source_text: str | None = None) -> str:
    """``file:line:col: severity: message`` and, if ``source_text`` (the text of ``diag.loc.file``)
    is given, the source line and a caret under the column. Notes follow, rendered the same way
    (with the same source text only when they point into the same file)."""
    loc = diag.loc
    head = f"{loc}: " if loc.is_known else ""
    out = [f"{head}{diag.severity.value}: {diag.message}"]
    if loc.is_known and source_text is not None:
        text = _source_line(source_text, loc.line)
        if text is not None:
            prefix = "".join("\t" if ch == "\t" else " " for ch in text[: max(loc.col - 1, 0)])
            prefix += " " * max(loc.col - 1 - len(text), 0)
            out.append(text)
            out.append(prefix + "^")
    for note in diag.notes:
        same_file = note.loc.is_known and loc.is_known and note.loc.file == loc.file
        out.append(render(note, source_text if same_file else None))
    return "\n".join(out)


class SourceManager:
    """Maps file names to their text, so diagnostics render with source lines and carets.

    A diagnostic in a file it was not given (the Python source that an op's ``loc`` names) is
    rendered with that file's text only when the file lies under one of ``source_dirs`` (after
    resolving symbolic links and ``..``): a relative name is looked up under each of them, an
    absolute one must point inside one. Locations in a dump are untrusted input, so any other
    file (``/etc/passwd``, a private key) is never opened, and its diagnostics render without
    source line. A file that cannot be read as UTF-8 text renders without them too.
    """

    def __init__(self, files: Mapping[str, str] | None = None, source_dirs: Iterable[str] = ()) -> None:
        self.files: dict[str, str] = dict(files or {})
        self.source_dirs = tuple(os.path.realpath(d) for d in source_dirs)
        self._unreadable: set[str] = set()

    def add(self, filename: str, text: str) -> None:
        self.files[filename] = text

    def _allowed(self, path: str) -> bool:
        """Whether ``path`` (already resolved) is a regular file under one of ``source_dirs``."""
        if not os.path.isfile(path):
            return False
        return any(os.path.commonpath([path, d]) == d for d in self.source_dirs)

    def text(self, filename: str) -> str | None:
        """The text of ``filename``: given, or read from under ``source_dirs``; else None."""
        if filename in self.files:
            return self.files[filename]
        if not self.source_dirs or not filename or filename in self._unreadable:
            return None
        try:
            candidates = [filename] if os.path.isabs(filename) else [os.path.join(d, filename) for d in self.source_dirs]
            for path in (os.path.realpath(c) for c in candidates):
                if not self._allowed(path):
                    continue
                try:
                    with open(path, encoding="utf-8") as handle:
                        self.files[filename] = handle.read()
                    return self.files[filename]
                except (OSError, UnicodeDecodeError):
                    continue
        except ValueError:  # a name with a NUL byte, or paths on different drives
            pass
        self._unreadable.add(filename)
        return None

    def render(self, diag: Diagnostic) -> str:
        """``diag`` and its notes, each with its source line and caret where the text is known."""
        source = self.text(diag.loc.file) if diag.loc.is_known else None
        out = [render(Diagnostic(diag.severity, diag.message, diag.loc), source)]
        out.extend(self.render(note) for note in diag.notes)
        return "\n".join(out)
