"""Source locations attached to operations: ``loc("file.py":3:5)`` or ``loc(unknown)``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A position in a source file; ``line`` and ``col`` are 1-based (col counts characters)."""

    file: str
    line: int
    col: int

    @property
    def is_known(self) -> bool:
        return True

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class _UnknownLoc(Location):
    """The location of IR that has no source position (built by hand, or synthesised)."""

    def __init__(self) -> None:
        object.__setattr__(self, "file", "<unknown>")
        object.__setattr__(self, "line", 0)
        object.__setattr__(self, "col", 0)

    @property
    def is_known(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UnknownLoc"

    def __str__(self) -> str:
        return "<unknown>"


UnknownLoc: Location = _UnknownLoc()
"""The single unknown location (compare with ``loc is UnknownLoc`` or ``not loc.is_known``)."""
