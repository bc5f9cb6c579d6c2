"""Pass pipeline strings: ``dce,tune{budget=1e-6,target=h100,sites=1,2},canonicalize``.

Grammar (whitespace is allowed around every token)::

    pipeline := [ pass ( "," pass )* ]
    pass     := NAME [ "{" [ option ( ("," | " ") option | "," value )* ] "}" ]
    option   := KEY "=" value
    value    := BARE | '"' chars '"'      (BARE: no whitespace , { } = ")

Inside braces a comma separates options *and* list elements: after a comma, ``k=v``
starts a new option, a plain value adds an element to the previous option's list
(``sites=1,2``). A string with spaces or commas is written in double quotes.

Every error is a ``PipelineError`` that knows its column; ``render()`` shows the
pipeline with a caret under the offending character.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from mixjit.passes.pass_base import ModulePass, OptionError
from mixjit.passes.registry import all_passes, unknown_pass_message

__all__ = ["PassSpec", "PipelineError", "parse_pipeline", "build_pipeline"]

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_BARE = re.compile(r"[^\s,{}=\"]+")
_KEY_AHEAD = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_\-]*)\s*=")


class PipelineError(ValueError):
    """A malformed pipeline string, an unknown pass, or a bad option; knows its column."""

    def __init__(self, message: str, pipeline: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pipeline = pipeline
        self.pos = pos

    def render(self) -> str:
        """``invalid pass pipeline: <message>`` plus the pipeline and a caret line."""
        return (
            f"invalid pass pipeline: {self.message}\n"
            f"  {self.pipeline}\n"
            f"  {' ' * self.pos}^"
        )


@dataclass
class OptionSpec:
    """One ``key=v1,v2`` option as written, with the columns of its key and values."""

    key: str
    key_pos: int
    values: list[str] = field(default_factory=list)
    value_pos: list[int] = field(default_factory=list)


@dataclass
class PassSpec:
    """One pass of a pipeline as written: its name, options and columns."""

    name: str
    pos: int
    options: list[OptionSpec] = field(default_factory=list)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str, pos: int | None = None) -> PipelineError:
        return PipelineError(message, self.text, self.pos if pos is None else pos)

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def describe_here(self) -> str:
        char = self.peek()
        return f"'{char}'" if char else "end of pipeline"

    def parse(self) -> list[PassSpec]:
        specs: list[PassSpec] = []
        self.skip_ws()
        if not self.peek():
            return specs
        while True:
            specs.append(self.parse_pass())
            self.skip_ws()
            if not self.peek():
                return specs
            if self.peek() != ",":
                raise self.error(f"expected ',' between passes, got {self.describe_here()}")
            self.pos += 1
            self.skip_ws()

    def parse_pass(self) -> PassSpec:
        match = _NAME.match(self.text, self.pos)
        if match is None:
            raise self.error(f"expected a pass name, got {self.describe_here()}")
        spec = PassSpec(match.group(), self.pos)
        self.pos = match.end()
        self.skip_ws()
        if self.peek() == "{":
            self.pos += 1
            self.parse_options(spec)
        return spec

    def parse_options(self, spec: PassSpec) -> None:
        self.skip_ws()
        if self.peek() == "}":
            self.pos += 1
            return
        spec.options.append(self.parse_option(spec))
        while True:
            self.skip_ws()
            char = self.peek()
            if char == "}":
                self.pos += 1
                return
            if char == ",":
                self.pos += 1
                self.skip_ws()
                if _KEY_AHEAD.match(self.text, self.pos):
                    spec.options.append(self.parse_option(spec))
                else:
                    self.parse_value(spec.options[-1])
            elif char and _KEY_AHEAD.match(self.text, self.pos):
                spec.options.append(self.parse_option(spec))
            elif not char:
                raise self.error(f"expected '}}' to close the options of pass '{spec.name}'")
            else:
                raise self.error(f"expected ',', another option or '}}', got {self.describe_here()}")

    def parse_option(self, spec: PassSpec) -> OptionSpec:
        match = _KEY_AHEAD.match(self.text, self.pos)
        if match is None:
            raise self.error(f"expected an option 'name=value', got {self.describe_here()}")
        key = match.group(1)
        if any(o.key == key for o in spec.options):
            raise self.error(f"option '{key}' of pass '{spec.name}' is given twice")
        option = OptionSpec(key, self.pos)
        self.pos = match.end()
        self.skip_ws()
        self.parse_value(option)
        return option

    def parse_value(self, option: OptionSpec) -> None:
        start = self.pos
        if self.peek() == '"':
            option.values.append(self.parse_quoted())
        else:
            match = _BARE.match(self.text, self.pos)
            if match is None:
                raise self.error(
                    f"expected a value for option '{option.key}', got {self.describe_here()}"
                )
            option.values.append(match.group())
            self.pos = match.end()
        option.value_pos.append(start)

    def parse_quoted(self) -> str:
        start = self.pos
        self.pos += 1
        chars: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == '"':
                self.pos += 1
                return "".join(chars)
            if char == "\\" and self.pos + 1 < len(self.text):
                self.pos += 1
                char = self.text[self.pos]
            chars.append(char)
            self.pos += 1
        raise self.error("unterminated string: add the closing '\"'", start)


def parse_pipeline(text: str) -> list[PassSpec]:
    """Parse pipeline text into pass specs (syntax only; passes are not looked up)."""
    return _Parser(text).parse()


def build_pipeline(
    text: str, registry: Mapping[str, type[ModulePass]] | None = None
) -> list[ModulePass]:
    """Parse pipeline text and build its passes from ``registry`` (default: all passes).

    Raises PipelineError (with the column of the problem) for malformed text, unknown
    passes, unknown or missing options and option values of the wrong type.
    """
    known = all_passes() if registry is None else registry
    passes = []
    for spec in parse_pipeline(text):
        cls = known.get(spec.name)
        if cls is None:
            raise PipelineError(unknown_pass_message(spec.name, known), text, spec.pos)
        values = {o.key: o.values for o in spec.options}
        try:
            passes.append(cls.from_options(values))
        except OptionError as err:
            raise PipelineError(str(err), text, _error_pos(spec, err)) from None
    return passes


def _error_pos(spec: PassSpec, err: OptionError) -> int:
    option = next((o for o in spec.options if o.key == err.option), None)
    if option is None:
        return spec.pos
    if err.value_index is None:
        return option.key_pos
    return option.value_pos[min(err.value_index, len(option.value_pos) - 1)]
