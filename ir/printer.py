"""Print IR in MLIR's generic op syntax (see docs/ir.md)::

    %r = "mix.gemm"(%a, %b) <{site = 0 : i64}> : (!py.array<f32, 2, C>, !py.array<f32, 2, C>) -> !py.array<f32, 2, C> loc("k.py":4:9)

Value names: a value's ``name_hint`` when it is free (``%a``), ``%a_1``, ``%a_2``... when taken,
numbers (``%0``, ``%1``...) for values without a hint. Names are unique within each op that is
IsolatedFromAbove (numbering restarts there). Blocks are ``^bb0``, ``^bb1``... per region. A
``builtin.module`` without properties, attributes or location prints as its bare body (the parser
wraps a bare sequence of ops back into a module). Printing is deterministic.
"""

from __future__ import annotations

import re

from mixjit.ir.attributes import format_entries
from mixjit.ir.core import Block, Operation, Region, Value
from mixjit.ir.location import Location
from mixjit.ir.strings import quote
from mixjit.ir.traits import IsolatedFromAbove
from mixjit.ir.types import FunctionType, Type

_VALID_NAME = re.compile(r"[A-Za-z_$.\-][A-Za-z0-9_$.\-]*\Z")
_INVALID_CHAR = re.compile(r"[^A-Za-z0-9_$.\-]")
INDENT = "  "


def sanitize_name(hint: str) -> str | None:
    """A name hint as a legal, non-numeric value name (None if nothing usable is left)."""
    name = _INVALID_CHAR.sub("_", hint)
    if not name or name.isdigit():
        return None
    if not _VALID_NAME.match(name):
        name = "_" + name
    return name


def format_location(loc: Location) -> str:
    if not loc.is_known:
        return "loc(unknown)"
    return f"loc({quote(loc.file)}:{loc.line}:{loc.col})"


def format_signature(inputs: "tuple[Type, ...]", outputs: "tuple[Type, ...]") -> str:
    return str(FunctionType(inputs, outputs))


class _Namespace:
    """Value names of one IsolatedFromAbove scope."""

    def __init__(self) -> None:
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.next_number = 0
        #: per hint, the suffix to try next: names are never freed, so every smaller suffix is
        #: taken, and thousands of values hinted ``%x`` cost one probe each, not one per earlier ``%x``
        self.next_suffix: dict[str, int] = {}

    def assign(self, value: Value) -> str:
        name = self.names.get(value)
        if name is not None:
            return name
        base = sanitize_name(value.name_hint) if value.name_hint else None
        if base is None:
            while str(self.next_number) in self.used:
                self.next_number += 1
            name = str(self.next_number)
            self.next_number += 1
        else:
            name, k = base, self.next_suffix.get(base, 1)
            if name in self.used:
                name = f"{base}_{k}"
                while name in self.used:
                    k += 1
                    name = f"{base}_{k}"
                self.next_suffix[base] = k + 1
        self.used.add(name)
        self.names[value] = name
        return name


class Printer:
    """Prints operations; one instance prints one top-level op (its names are consistent)."""

    def __init__(self, print_locations: bool = True) -> None:
        self.print_locations = print_locations
        self._lines: list[str] = []
        self._scopes: list[_Namespace] = []
        self._block_names: dict[Block, str] = {}
        self._external_blocks = 0

    # -- naming -----------------------------------------------------------------------------------
    def _name_values_in(self, op: Operation, scope: _Namespace) -> None:
        """Assign names in definition (print) order to everything defined inside ``op``'s regions,
        not descending into IsolatedFromAbove ops (they get their own namespace when printed)."""
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    scope.assign(arg)
                for inner in block.ops:
                    for r in inner.results:
                        scope.assign(r)
                    if not inner.has_trait(IsolatedFromAbove):
                        self._name_values_in(inner, scope)

    def value_name(self, value: Value) -> str:
        return "%" + self._scopes[-1].assign(value)

    def block_name(self, block: Block) -> str:
        name = self._block_names.get(block)
        if name is None:  # a block outside what is being printed
            name = f"^ext{self._external_blocks}"
            self._external_blocks += 1
            self._block_names[block] = name
        return name

    # -- printing ---------------------------------------------------------------------------------
    def print(self, op: Operation) -> str:
        """The text of ``op`` (no trailing newline)."""
        self._lines = []
        self._scopes = [_Namespace()]
        for r in op.results:
            self._scopes[-1].assign(r)
        if _is_bare_module(op):
            self._name_values_in(op, self._scopes[-1])
            for inner in op.regions[0].blocks[0].ops:
                self._print_op(inner, 0)
        else:
            if not op.has_trait(IsolatedFromAbove):
                self._name_values_in(op, self._scopes[-1])
            self._print_op(op, 0)
        return "\n".join(self._lines)

    def _emit(self, indent: int, text: str) -> None:
        self._lines.append(INDENT * indent + text)

    def _print_op(self, op: Operation, indent: int) -> None:
        head = ""
        if op.results:
            head = ", ".join(self.value_name(r) for r in op.results) + " = "
        head += quote(op.name) + "(" + ", ".join(self.value_name(v) for v in op.operands) + ")"
        if op.successors:
            head += "[" + ", ".join(self.block_name(b) for b in op.successors) + "]"
        if op.properties:
            head += " <{" + format_entries(sorted(op.properties.items())) + "}>"
        tail = ""
        if op.attributes:
            tail += " {" + format_entries(sorted(op.attributes.items())) + "}"
        tail += " : " + format_signature(tuple(v.type for v in op.operands), op.result_types)
        if self.print_locations and op.loc.is_known:
            tail += " " + format_location(op.loc)
        if not op.regions:
            self._emit(indent, head + tail)
            return
        isolated = op.has_trait(IsolatedFromAbove)
        if isolated:
            scope = _Namespace()
            self._scopes.append(scope)
            self._name_values_in(op, scope)
        for i, region in enumerate(op.regions):
            if i == 0:
                self._emit(indent, head + " ({")
            else:
                self._lines[-1] += ", {"
            self._print_region_body(region, indent)
            self._emit(indent, "}")
        self._lines[-1] += ")" + tail
        if isolated:
            self._scopes.pop()

    def _print_region_body(self, region: Region, indent: int) -> None:
        blocks = region.blocks
        for i, block in enumerate(blocks):
            self._block_names[block] = f"^bb{i}"
        for i, block in enumerate(blocks):
            if i > 0 or block.args or not block.ops:
                label = f"^bb{i}"
                if block.args:
                    label += "(" + ", ".join(f"{self.value_name(a)}: {a.type}" for a in block.args) + ")"
                self._emit(indent, label + ":")
            for inner in block.ops:
                self._print_op(inner, indent + 1)


def _is_bare_module(op: Operation) -> bool:
    """A module printed as its bare body: nothing but one block of ops, and not a lone nested module
    (which the parser would take for the module itself)."""
    if op.name != "builtin.module" or op.properties or op.attributes or op.loc.is_known or op.results:
        return False
    if op.operands or op.successors or len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        return False
    block = op.regions[0].blocks[0]
    if block.args or not block.ops:
        return False
    return not (len(block.ops) == 1 and block.ops[0].name == "builtin.module")


def print_op(op: Operation, print_locations: bool = True) -> str:
    """``op`` in the text format (a plain module prints as its bare list of ops)."""
    return Printer(print_locations).print(op)
