"""Tokens of the mix IR text format. Lazy: the parser pulls one token at a time, so the first
problem in reading order is the one reported. ``//`` comments are skipped."""

from __future__ import annotations

import bisect
import enum
import re
from typing import NamedTuple

from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.location import Location


class Kind(enum.Enum):
    BARE_ID = "identifier"
    PERCENT_ID = "value name"
    CARET_ID = "block name"
    AT_ID = "symbol"
    EXCL_ID = "dialect type"
    INTEGER = "integer"
    FLOAT = "float"
    STRING = "string"
    PUNCT = "punctuation"
    EOF = "end of input"


class Token(NamedTuple):
    kind: Kind
    text: str  # the source text (punctuation: the symbol itself)
    value: str  # identifiers: the name without sigil; strings: decoded contents; else == text
    start: int
    end: int

    def is_punct(self, symbol: str) -> bool:
        return self.kind is Kind.PUNCT and self.text == symbol

    def describe(self) -> str:
        if self.kind is Kind.EOF:
            return "end of input"
        shown = self.text if len(self.text) <= 40 else self.text[:37] + "..."
        return f"'{shown}'"


_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
_SUFFIX = re.compile(r"[0-9]+|[A-Za-z_$.\-][A-Za-z0-9_$.\-]*")
_NUMBER = re.compile(r"0x[0-9A-Fa-f]+|[0-9]+(\.[0-9]*([eE][+-]?[0-9]+)?)?")
_TRIVIA = re.compile(r"(?:[ \t\r\n]+|//[^\n]*)*")
_SINGLE_PUNCT = frozenset("()[]{}<>,=?*+")
_DOUBLE_PUNCT = {"-": "->", ":": "::"}
_ESCAPES = {'"': ord('"'), "\\": ord("\\"), "n": ord("\n"), "t": ord("\t")}
_HEX = "0123456789abcdefABCDEF"

# The common tokens in one regex, so a token costs one match (the lexer's hot path on dumps
# of many thousand ops). Anything it does not cover (end of input, strings with escapes,
# quoted symbols, errors) takes the general path in ``Lexer._next_general``, which gives the
# same tokens and reports the errors.
_FAST_TOKEN = re.compile(
    r"(?>(?:[ \t\r\n]+|//[^\n]*)*)"  # atomic: never backtrack into a comment to find a token
    r"(?:(?P<punct>->|::|[()\[\]{}<>,=?*+:\-])"
    r"|(?P<sigil>[%^](?:[0-9]+|[A-Za-z_$.\-][A-Za-z0-9_$.\-]*)|[@!][A-Za-z_][A-Za-z0-9_$.]*)"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_$.]*)"
    r"|(?P<number>0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*(?:[eE][+-]?[0-9]+)?)?)"
    r'|(?P<string>"[^"\\\n]*"))'
)
_SIGIL_KINDS = {"%": Kind.PERCENT_ID, "^": Kind.CARET_ID, "@": Kind.AT_ID, "!": Kind.EXCL_ID}


class Lexer:
    def __init__(self, text: str, filename: str, first_line: int = 1) -> None:
        self.text = text
        self.filename = filename
        self.first_line = first_line
        self.pos = 0
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def location(self, offset: int) -> Location:
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return Location(self.filename, line + self.first_line, offset - self._line_starts[line] + 1)

    def error(self, message: str, offset: int) -> DiagnosticError:
        return DiagnosticError(Diagnostic.error(message, self.location(offset)))

    def next(self) -> Token:
        m = _FAST_TOKEN.match(self.text, self.pos)
        if m is None:
            return self._next_general()
        group = m.lastgroup
        assert group is not None  # every alternative of _FAST_TOKEN is a named group
        start, end = m.start(group), m.end()  # the token group ends the match
        tok_text = m[group]
        self.pos = end
        if group == "punct" or group == "bare":
            return Token(Kind.PUNCT if group == "punct" else Kind.BARE_ID, tok_text, tok_text, start, end)
        if group == "sigil":
            return Token(_SIGIL_KINDS[tok_text[0]], tok_text, tok_text[1:], start, end)
        if group == "number":
            kind = Kind.FLOAT if "." in tok_text and not tok_text.startswith("0x") else Kind.INTEGER
            return Token(kind, tok_text, tok_text, start, end)
        return Token(Kind.STRING, tok_text, tok_text[1:-1], start, end)

    def _next_general(self) -> Token:
        text = self.text
        start = self.pos = _TRIVIA.match(text, self.pos).end()  # type: ignore[union-attr]
        if start >= len(text):
            return Token(Kind.EOF, "", "", start, start)
        ch = text[start]
        if ch in _SINGLE_PUNCT:
            return self._token(Kind.PUNCT, start + 1, ch)
        if ch in _DOUBLE_PUNCT:
            pair = _DOUBLE_PUNCT[ch]
            if text.startswith(pair, start):
                return self._token(Kind.PUNCT, start + 2, pair)
            return self._token(Kind.PUNCT, start + 1, ch)
        if ch == '"':
            return self._string(start, Kind.STRING, start)
        if ch in "%^@!":
            return self._sigil_id(start, ch)
        if ch.isascii() and (ch.isalpha() or ch == "_"):
            m = _BARE.match(text, start)
            assert m is not None
            return self._token(Kind.BARE_ID, m.end(), m.group())
        if ch.isascii() and ch.isdigit():
            m = _NUMBER.match(text, start)
            assert m is not None
            kind = Kind.FLOAT if "." in m.group() and not m.group().startswith("0x") else Kind.INTEGER
            return self._token(kind, m.end(), m.group())
        shown = f"'{ch}'" if ch.isprintable() else f"U+{ord(ch):04X}"
        raise self.error(f"unexpected character {shown}", start)

    def _token(self, kind: Kind, end: int, value: str) -> Token:
        tok = Token(kind, self.text[self.pos : end], value, self.pos, end)
        self.pos = end
        return tok

    def _sigil_id(self, start: int, sigil: str) -> Token:
        text = self.text
        if sigil == "@" and text.startswith('"', start + 1):
            return self._string(start + 1, Kind.AT_ID, start)
        pattern = _BARE if sigil in "@!" else _SUFFIX
        m = pattern.match(text, start + 1)
        if m is None:
            what = {"%": "value name", "^": "block name", "@": "symbol name", "!": "dialect type name"}[sigil]
            raise self.error(f"expected {what} after '{sigil}'", start)
        kind = {"%": Kind.PERCENT_ID, "^": Kind.CARET_ID, "@": Kind.AT_ID, "!": Kind.EXCL_ID}[sigil]
        return self._token(kind, m.end(), m.group())

    def _string(self, quote_pos: int, kind: Kind, start: int) -> Token:
        """A double-quoted literal starting at ``quote_pos``; the token starts at ``start``."""
        text, i, out = self.text, quote_pos + 1, bytearray()
        while True:
            if i >= len(text) or text[i] == "\n":
                raise self.error("unterminated string literal (missing '\"')", quote_pos)
            ch = text[i]
            if ch == '"':
                break
            if ch == "\\":
                nxt = text[i + 1 : i + 2]
                if nxt in _ESCAPES:
                    out.append(_ESCAPES[nxt])
                    i += 2
                    continue
                pair = text[i + 1 : i + 3]
                if len(pair) == 2 and all(c in _HEX for c in pair):
                    out.append(int(pair, 16))
                    i += 3
                    continue
                raise self.error("invalid escape in string literal (use \\\\, \\\", \\n, \\t or \\XX hex)", i)
            out.extend(ch.encode("utf-8", "surrogatepass"))
            i += 1
        try:
            value = out.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise self.error("string literal is not valid UTF-8", quote_pos) from None
        tok = Token(kind, text[start : i + 1], value, start, i + 1)
        self.pos = i + 1
        return tok
