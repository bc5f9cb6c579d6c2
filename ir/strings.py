"""Quoting of string literals in the text format (MLIR rules: ``\\"``, ``\\\\``, ``\\n``, ``\\t``, ``\\XX``)."""

from __future__ import annotations

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}


def quote(text: str) -> str:
    """``text`` as a double-quoted literal; bytes outside printable ASCII become ``\\XX`` (UTF-8)."""
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return '"' + "".join(out) + '"'
