"""Parse the mix IR text format (MLIR's generic op syntax; see docs/ir.md) into IR.

:func:`parse_module` returns a ``builtin.module``: the file's single top-level ``builtin.module`` op
if that is all it holds, otherwise a new module wrapping the top-level ops. Any malformed input
raises :class:`~mixjit.ir.diagnostics.DiagnosticError` with a located diagnostic, never another
exception; nesting (regions, attributes, types) deeper than :data:`MAX_NESTING` is reported as
"nesting too deep" instead of exhausting the Python stack.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from mixjit.ir.attributes import (
    ArrayAttr,
    Attribute,
    BoolAttr,
    DenseArrayAttr,
    DictAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    TypeAttr,
    UnitAttr,
)
from mixjit.ir.collector import paused_collector
from mixjit.ir.core import Block, Operation, Region, Value, get_op_class
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.lexer import Kind, Lexer, Token
from mixjit.ir.location import Location, UnknownLoc
from mixjit.ir.traits import IsolatedFromAbove
from mixjit.ir.types import (
    ArrayType,
    ComplexType,
    FloatType,
    FunctionType,
    IndexType,
    IntegerType,
    NoneType,
    OpaqueType,
    TupleType,
    Type,
    f64,
    i64,
)

#: Deepest nesting of regions, attributes and types accepted (each level costs a few stack frames).
MAX_NESTING = 100
#: Longest decimal integer literal accepted (Python refuses to convert much longer ones).
MAX_INT_DIGITS = 1000

_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\.[A-Za-z0-9_$.]+\Z")
_INT_TYPE = re.compile(r"(si|ui|i)([0-9]+)\Z")
_FLOAT_KINDS = ("f16", "bf16", "f32", "f64")
_SEPARATOR = re.compile(r"[ \t]*// -----[ \t\r]*\Z")
# Fast paths for the two most token-heavy parts of an op as the printer writes them. A match
# is only a shortcut: the signature cache holds texts the full parser has parsed to exactly
# that extent, and the location pattern accepts only what parse_location reads the same way.
_SIG_ATOM = r"[A-Za-z0-9_.!]+(?:<[^<>()\n\"/]*>)?"
_SIG_LIST = rf"\((?:{_SIG_ATOM}(?:, {_SIG_ATOM})*)?\)"
_SIMPLE_SIGNATURE = re.compile(rf"{_SIG_LIST} -> (?:{_SIG_ATOM}|{_SIG_LIST})")
_VALUE_NAME = r"%(?:[0-9]+|[A-Za-z_$.\-][A-Za-z0-9_$.\-]*)"  # the lexer's PERCENT_ID
_SIMPLE_OPERANDS = re.compile(rf"\((?:{_VALUE_NAME}(?:, {_VALUE_NAME})*)?\)")
_VALUE_NAME_RE = re.compile(_VALUE_NAME)
_SIMPLE_LOCATION = re.compile(r'loc\("([^"\\\n]*)":([0-9]{1,18}):([0-9]{1,18})\)')
#: extra nesting levels a signature matching _SIMPLE_SIGNATURE can take (function, <...>)
_SIGNATURE_NESTING = 2
# No strings, brackets, parentheses or comments, and <...> only one level deep (array<i32: 1, 0>)
_SIMPLE_PROPERTIES = re.compile(r'<\{[^{}<>()\[\]"\n/]*(?:<[^{}<>()\[\]"\n/]*>[^{}<>()\[\]"\n/]*)*\}>')
#: extra nesting levels such properties can take (the dictionary, one <...> type)
_PROPERTIES_NESTING = 2
#: bare-word types (i64, f32, index...) by spelling; types are immutable, so one object serves
_WORD_TYPES: dict[str, Type] = {}
T = TypeVar("T")


def split_input_file(text: str) -> list[tuple[str, int]]:
    """Split ``text`` on lines ``// -----`` into ``(chunk, first_line_number)`` pairs (1-based), for
    test files that hold several independent inputs."""
    chunks: list[tuple[str, int]] = []
    current: list[str] = []
    first = 1
    for number, line in enumerate(text.split("\n"), start=1):
        if _SEPARATOR.match(line):
            chunks.append(("\n".join(current), first))
            current, first = [], number + 1
        else:
            current.append(line)
    chunks.append(("\n".join(current), first))
    return chunks


class _Placeholder(Value):
    """A value used before its definition; replaced (RAUW) when the definition is parsed."""

    __slots__ = ()


class _Scope:
    """Names visible in one region being parsed."""

    def __init__(self, parent: "_Scope | None", isolated: bool) -> None:
        self.parent = parent
        self.isolated = isolated
        self.values: dict[str, tuple[Value, Token]] = {}
        self.forward: dict[str, tuple[_Placeholder, Token]] = {}
        self.blocks: dict[str, Block] = {}
        self.defined_blocks: set[str] = set()
        self.block_refs: dict[str, Token] = {}

    def visible(self) -> Iterator["_Scope"]:
        scope: _Scope | None = self
        while scope is not None:
            yield scope
            if scope.isolated:
                return
            scope = scope.parent


class Parser:
    """Recursive-descent parser over one text; use :func:`parse_module`."""

    def __init__(self, text: str, filename: str = "<stdin>", first_line: int = 1, allow_unregistered: bool = False):
        self.lexer = Lexer(text, filename, first_line)
        self.allow_unregistered = allow_unregistered
        self.prev: Token | None = None
        self.tok = self.lexer.next()
        self.depth = 0
        self.scope = _Scope(None, isolated=True)
        self._signatures: dict[str, Type] = {}  # see parse_signature
        self._op_classes: dict[str, type[Operation] | None] = {}  # op names already checked
        self._properties: dict[str, dict[str, Attribute]] = {}  # see parse_properties

    # -- token helpers ----------------------------------------------------------------------------
    def loc(self, tok: Token) -> Location:
        return self.lexer.location(tok.start)

    def error(self, message: str, tok: Token | None = None, notes: tuple[Diagnostic, ...] = ()) -> DiagnosticError:
        """A diagnostic at ``tok`` (default: the current token; at end of input, just after the
        previous token, where the missing text belongs)."""
        tok = tok or self.tok
        if tok.kind is Kind.EOF and self.prev is not None:
            where = self.lexer.location(self.prev.end)
        else:
            where = self.loc(tok)
        return DiagnosticError(Diagnostic.error(message, where, notes))

    def advance(self) -> Token:
        tok = self.tok
        self.prev = tok
        self.tok = self.lexer.next()
        return tok

    def skip_to(self, end: int) -> None:
        """Continue after offset ``end``: the text from the current token up to there was read
        by a fast path instead of token by token."""
        start = self.tok.start
        self.prev = Token(Kind.PUNCT, self.lexer.text[start:end], "", start, end)
        self.lexer.pos = end
        self.tok = self.lexer.next()

    def at(self, symbol: str) -> bool:
        # only a punctuation token's text is punctuation (strings keep their quotes, ids their sigil)
        return self.tok.text == symbol

    def accept(self, symbol: str) -> bool:
        if self.at(symbol):
            self.advance()
            return True
        return False

    def expect(self, symbol: str, context: str) -> Token:
        if not self.at(symbol):
            raise self.error(f"expected '{symbol}' {context}, got {self.tok.describe()}")
        return self.advance()

    def expect_kind(self, kind: Kind, what: str) -> Token:
        if self.tok.kind is not kind:
            raise self.error(f"expected {what}, got {self.tok.describe()}")
        return self.advance()

    @contextmanager
    def nested(self) -> Iterator[None]:
        if self.depth >= MAX_NESTING:
            raise self.error(f"nesting too deep (more than {MAX_NESTING} levels of regions, attributes or types)")
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def build(self, tok: Token, make: Callable[..., T], *args: Any) -> T:
        """Construct a type/attribute, turning its validation errors into a diagnostic at ``tok``."""
        try:
            return make(*args)
        except (ValueError, TypeError) as e:
            raise self.error(str(e), tok) from None

    def comma_list(self, close: str, item: Callable[[], T], context: str) -> list[T]:
        """``item (',' item)* close`` or just ``close``; the opening token is already consumed."""
        items: list[T] = []
        if self.accept(close):
            return items
        while True:
            items.append(item())
            if self.accept(close):
                return items
            if not self.accept(","):
                raise self.error(f"expected ',' or '{close}' {context}, got {self.tok.describe()}")

    # -- module and operations --------------------------------------------------------------------
    def parse_module(self) -> Operation:
        from mixjit.ir.dialects.builtin import ModuleOp

        block = Block()
        while self.tok.kind is not Kind.EOF:
            block.add_op(self.parse_op())
        self.close_scope(self.scope)
        ops = block.ops
        if len(ops) == 1 and isinstance(ops[0], ModuleOp):
            return ops[0].detach()
        module = ModuleOp(regions=[Region([block])])
        return module

    def parse_op(self) -> Operation:
        start = self.tok
        result_toks: list[Token] = []
        if self.tok.kind is Kind.PERCENT_ID:
            while True:
                result_toks.append(self.expect_kind(Kind.PERCENT_ID, "a result name"))
                if self.accept("="):
                    break
                if not self.accept(","):
                    raise self.error(f"expected ',' or '=' after result names, got {self.tok.describe()}")
        if self.tok.kind is Kind.BARE_ID:
            raise self.error(
                f"expected an operation name in quotes (generic syntax, e.g. \"{self.tok.value}\"(...)), "
                f"got {self.tok.describe()}"
            )
        name_tok = self.expect_kind(Kind.STRING, "an operation name in quotes")
        name = name_tok.value
        if name in self._op_classes:
            cls = self._op_classes[name]
        else:
            if not _OP_NAME.match(name):
                raise self.error(f"invalid operation name '{name}' (expected \"dialect.op\")", name_tok)
            cls = get_op_class(name)
            if cls is None and not self.allow_unregistered:
                raise self.error(f"unknown operation '{name}'", name_tok)
            self._op_classes[name] = cls
        operand_toks = self.parse_operand_list()
        successors: list[Block] = []
        if self.accept("["):
            successors = self.comma_list("]", self.parse_successor, "in successor list")
        properties: dict[str, Attribute] = {}
        if self.at("<"):
            properties = self.parse_properties()
        regions: list[Region] = []
        if self.accept("("):
            isolated = cls is not None and cls.has_trait(IsolatedFromAbove)
            regions = self.comma_list(")", lambda: self.parse_region(isolated), "in region list")
        attributes: dict[str, Attribute] = {}
        if self.accept("{"):
            with self.nested():
                attributes = self.parse_dict_body()
        self.expect(":", "before the operation's type signature")
        sig_tok = self.tok
        signature = self.parse_signature()
        if not isinstance(signature, FunctionType):
            raise self.error(f"expected a function type (inputs) -> results, got '{signature}'", sig_tok)
        loc = self.parse_location() if self.tok.kind is Kind.BARE_ID and self.tok.value == "loc" else UnknownLoc
        if len(signature.inputs) != len(operand_toks):
            raise self.error(f"expected {len(operand_toks)} operand types but had {len(signature.inputs)}", sig_tok)
        if result_toks and len(result_toks) != len(signature.outputs):
            raise self.error(
                f"operation defines {len(signature.outputs)} results but was provided {len(result_toks)} to bind",
                result_toks[0],
            )
        operands = [self.use_value(t, ty) for t, ty in zip(operand_toks, signature.inputs)]
        op = (cls or Operation)(
            name,
            operands=operands,
            result_types=signature.outputs,
            properties=properties,
            attributes=attributes,
            regions=regions,
            successors=successors,
            loc=loc,
        )
        op.text_loc = self.loc(start)
        for tok, value in zip(result_toks, op.results):
            self.define_value(tok, value)
        return op

    def parse_operand_list(self) -> list[Token]:
        """``(%a, %b)``: the operand name tokens. The printer's spelling is read in one match."""
        m = _SIMPLE_OPERANDS.match(self.lexer.text, self.tok.start) if self.at("(") else None
        if m is None:
            self.expect("(", "to start the operand list")
            return self.comma_list(")", lambda: self.expect_kind(Kind.PERCENT_ID, "an operand"), "in operand list")
        toks = [
            Token(Kind.PERCENT_ID, v.group(), v.group()[1:], v.start(), v.end())
            for v in _VALUE_NAME_RE.finditer(self.lexer.text, m.start(), m.end())
        ]
        self.skip_to(m.end())
        return toks

    def parse_properties(self) -> dict[str, Attribute]:
        """``<{k = v, ...}>``. Like signatures, property texts repeat (``value = 0 : i64``,
        segment sizes), so one already parsed in this input is looked up (and copied: each op
        owns its dictionary; the attributes themselves are immutable)."""
        m = _SIMPLE_PROPERTIES.match(self.lexer.text, self.tok.start)
        if m is not None:
            cached = self._properties.get(m.group())
            if cached is not None and self.depth + _PROPERTIES_NESTING <= MAX_NESTING:
                self.skip_to(m.end())
                return dict(cached)
        self.advance()
        self.expect("{", "to start the properties (<{...}>)")
        with self.nested():
            properties = self.parse_dict_body()
        self.expect(">", "to close the properties (<{...}>)")
        if m is not None and self.prev is not None and self.prev.end == m.end():
            self._properties[m.group()] = dict(properties)
        return properties

    def parse_signature(self) -> Type:
        """The type after an op's ``:``. Dumps repeat a few signatures thousands of times, so a
        signature text already parsed in this input is looked up instead of parsed again."""
        m = _SIMPLE_SIGNATURE.match(self.lexer.text, self.tok.start) if self.at("(") else None
        if m is None:
            return self.parse_type()
        cached = self._signatures.get(m.group())
        if cached is not None and self.depth + _SIGNATURE_NESTING <= MAX_NESTING:
            self.skip_to(m.end())
            return cached
        signature = self.parse_type()
        if self.prev is not None and self.prev.end == m.end():
            self._signatures[m.group()] = signature
        return signature

    def parse_location(self) -> Location:
        m = _SIMPLE_LOCATION.match(self.lexer.text, self.tok.start)
        if m is not None:
            self.skip_to(m.end())
            return Location(m.group(1), int(m.group(2)), int(m.group(3)))
        self.advance()  # 'loc'
        self.expect("(", "after 'loc'")
        if self.tok.kind is Kind.BARE_ID and self.tok.value == "unknown":
            self.advance()
            loc: Location = UnknownLoc
        else:
            file = self.expect_kind(Kind.STRING, "a file name string or 'unknown' in loc(...)").value
            self.expect(":", "after the file name in loc(...)")
            line = self.parse_small_int("a line number")
            self.expect(":", "after the line number in loc(...)")
            col = self.parse_small_int("a column number")
            loc = Location(file, line, col)
        self.expect(")", "to close loc(...)")
        return loc

    def parse_small_int(self, what: str) -> int:
        tok = self.expect_kind(Kind.INTEGER, what)
        if tok.text.startswith("0x") or len(tok.text) > 18:
            raise self.error(f"expected {what}, got {tok.describe()}", tok)
        return int(tok.text)

    # -- regions and blocks -----------------------------------------------------------------------
    def parse_region(self, isolated: bool) -> Region:
        self.expect("{", "to start a region")
        with self.nested():
            outer = self.scope
            self.scope = _Scope(outer, isolated)
            region = Region()
            if not self.at("}") and self.tok.kind is not Kind.CARET_ID:
                region.add_block(self.parse_block_ops(Block()))
            while self.tok.kind is Kind.CARET_ID:
                region.add_block(self.parse_block_ops(self.parse_block_label()))
            if not self.at("}"):
                raise self.error(f"expected an operation, a block label or '}}' in region, got {self.tok.describe()}")
            self.advance()
            scope, self.scope = self.scope, outer
            self.close_scope(scope)
        return region

    def parse_block_ops(self, block: Block) -> Block:
        while not self.at("}") and self.tok.kind not in (Kind.CARET_ID, Kind.EOF):
            block.add_op(self.parse_op())
        return block

    def parse_block_label(self) -> Block:
        tok = self.advance()
        name = tok.value
        if name in self.scope.defined_blocks:
            raise self.error(f"redefinition of block '^{name}'", tok)
        self.scope.defined_blocks.add(name)
        block = self.scope.blocks.setdefault(name, Block())
        if self.accept("("):

            def arg() -> None:
                arg_tok = self.expect_kind(Kind.PERCENT_ID, "a block argument name")
                self.expect(":", "after a block argument name")
                self.define_value(arg_tok, block.add_arg(self.parse_type()))

            self.comma_list(")", arg, "in block argument list")
        self.expect(":", "after a block label")
        return block

    def parse_successor(self) -> Block:
        tok = self.expect_kind(Kind.CARET_ID, "a block name (^bb1)")
        self.scope.block_refs.setdefault(tok.value, tok)
        return self.scope.blocks.setdefault(tok.value, Block())

    # -- value names --------------------------------------------------------------------------------
    def use_value(self, tok: Token, type: Type) -> Value:
        name = tok.value
        for scope in self.scope.visible():
            found = scope.values.get(name) or scope.forward.get(name)
            if found is not None:
                value = found[0]
                if value.type != type:
                    raise self.error(
                        f"use of value '%{name}' expects different type than prior uses: '{type}' vs '{value.type}'",
                        tok,
                    )
                return value
        placeholder = _Placeholder(type)
        self.scope.forward[name] = (placeholder, tok)
        return placeholder

    def define_value(self, tok: Token, value: Value) -> None:
        name = tok.value
        for scope in self.scope.visible():
            if name in scope.values:
                previous = scope.values[name][1]
                raise self.error(
                    f"redefinition of SSA value '%{name}'",
                    tok,
                    (Diagnostic.note("previously defined here", self.loc(previous)),),
                )
        pending = self.scope.forward.pop(name, None)
        if pending is not None:
            placeholder, use_tok = pending
            if placeholder.type != value.type:
                raise self.error(
                    f"definition of SSA value '%{name}' has type '{value.type}' but prior uses expect "
                    f"'{placeholder.type}'",
                    tok,
                    (Diagnostic.note("first used here", self.loc(use_tok)),),
                )
            placeholder.replace_all_uses_with(value)
        self.scope.values[name] = (value, tok)
        value.name_hint = None if name.isdigit() else name

    def close_scope(self, scope: _Scope) -> None:
        """End of a region: every referenced block must be defined; values still undefined are
        handed to the enclosing region (they may be defined later there) unless isolated."""
        for name, tok in scope.block_refs.items():
            if name not in scope.defined_blocks:
                raise self.error(f"reference to an undefined block '^{name}'", tok)
        parent = scope.parent
        for name, (placeholder, tok) in scope.forward.items():
            if scope.isolated or parent is None:
                raise self.error(f"use of undeclared SSA value name '%{name}'", tok)
            existing = parent.forward.get(name)
            if existing is None:
                parent.forward[name] = (placeholder, tok)
            elif existing[0].type != placeholder.type:
                raise self.error(
                    f"use of value '%{name}' expects different type than prior uses: "
                    f"'{placeholder.type}' vs '{existing[0].type}'",
                    tok,
                )
            else:
                placeholder.replace_all_uses_with(existing[0])

    # -- types --------------------------------------------------------------------------------------
    def parse_type(self) -> Type:
        tok = self.tok
        if tok.is_punct("("):
            with self.nested():
                return self.parse_function_type()
        if tok.kind is Kind.EXCL_ID:
            with self.nested():
                return self.parse_dialect_type()
        if tok.kind is not Kind.BARE_ID:
            raise self.error(f"expected a type, got {tok.describe()}")
        self.advance()
        word = tok.value
        known = _WORD_TYPES.get(word)
        if known is not None:
            return known
        m = _INT_TYPE.match(word)
        if m:
            if len(m.group(2)) > 6:
                raise self.error(f"integer type width too large in '{word}'", tok)
            signedness = {"i": "signless", "si": "signed", "ui": "unsigned"}[m.group(1)]
            return _WORD_TYPES.setdefault(word, self.build(tok, IntegerType, int(m.group(2)), signedness))
        if word in _FLOAT_KINDS:
            return _WORD_TYPES.setdefault(word, FloatType(word))
        if word == "index":
            return _WORD_TYPES.setdefault(word, IndexType())
        if word == "none":
            return _WORD_TYPES.setdefault(word, NoneType())
        if word in ("tuple", "complex"):
            self.expect("<", f"after '{word}'")
            with self.nested():
                if word == "complex":
                    elem_tok = self.tok
                    element = self.parse_type()
                    self.expect(">", "to close complex<...>")
                    return self.build(elem_tok, ComplexType, element)
                return TupleType(self.comma_list(">", self.parse_type, "in tuple type"))
        raise self.error(f"unknown type '{word}'", tok)

    def parse_function_type(self) -> FunctionType:
        self.advance()  # '('
        inputs = self.comma_list(")", self.parse_type, "in function type inputs")
        self.expect("->", "in function type")
        if self.accept("("):
            outputs = self.comma_list(")", self.parse_type, "in function type results")
        else:
            outputs = [self.parse_type()]
        return FunctionType(inputs, outputs)

    def parse_dialect_type(self) -> Type:
        tok = self.advance()
        if tok.value == "py.array":
            self.expect("<", "after '!py.array'")
            dtype_tok = self.tok
            dtype = self.parse_type()
            self.expect(",", "after the array dtype (!py.array<dtype, rank, layout>)")
            rank_tok = self.tok
            rank = self.parse_small_int("an array rank")
            self.expect(",", "after the array rank (!py.array<dtype, rank, layout>)")
            layout_tok = self.expect_kind(Kind.BARE_ID, "an array layout (C, F or A)")
            self.expect(">", "to close !py.array<...>")
            try:
                return ArrayType(dtype, rank, layout_tok.value)
            except ValueError as e:
                culprit = next(t for word, t in (("layout", layout_tok), ("rank", rank_tok), ("", dtype_tok)) if word in str(e))
                raise self.error(str(e), culprit) from None
        if tok.value == "py.opaque":
            self.expect("<", "after '!py.opaque'")
            text = self.expect_kind(Kind.STRING, 'the Numba type as a string (!py.opaque<"...">)').value
            self.expect(">", "to close !py.opaque<...>")
            return OpaqueType(text)
        raise self.error(f"unknown dialect type '!{tok.value}' (known: !py.array, !py.opaque)", tok)

    # -- attributes ---------------------------------------------------------------------------------
    def parse_dict_body(self) -> dict[str, Attribute]:
        """``k = v, flag ... }`` after the opening brace."""
        entries: dict[str, Attribute] = {}

        def entry() -> None:
            key_tok = self.tok
            if key_tok.kind not in (Kind.BARE_ID, Kind.STRING):
                raise self.error(f"expected an attribute name, got {key_tok.describe()}")
            self.advance()
            if key_tok.value in entries:
                raise self.error(f"duplicate key '{key_tok.value}' in dictionary", key_tok)
            entries[key_tok.value] = self.parse_attribute() if self.accept("=") else UnitAttr()

        self.comma_list("}", entry, "in attribute dictionary")
        return entries

    def parse_attribute(self) -> Attribute:
        tok = self.tok
        if tok.kind in (Kind.INTEGER, Kind.FLOAT) or tok.is_punct("-"):
            return self.parse_number_attr()
        if tok.kind is Kind.STRING:
            self.advance()
            return StringAttr(tok.value)
        if tok.kind is Kind.AT_ID:
            return self.parse_symbol_ref()
        if tok.is_punct("["):
            self.advance()
            with self.nested():
                return ArrayAttr(self.comma_list("]", self.parse_attribute, "in array attribute"))
        if tok.is_punct("{"):
            self.advance()
            with self.nested():
                return DictAttr(self.parse_dict_body())
        if tok.kind is Kind.BARE_ID:
            if tok.value in ("true", "false"):
                self.advance()
                return BoolAttr(tok.value == "true")
            if tok.value == "unit":
                self.advance()
                return UnitAttr()
            if tok.value == "array":
                return self.parse_dense_array()
            if _INT_TYPE.match(tok.value) or tok.value in (*_FLOAT_KINDS, "index", "none", "tuple", "complex"):
                return TypeAttr(self.parse_type())
        if tok.kind is Kind.EXCL_ID or tok.is_punct("("):
            return TypeAttr(self.parse_type())
        raise self.error(f"expected an attribute value, got {tok.describe()}")

    def parse_integer_literal(self, negative: bool) -> int:
        tok = self.advance()
        text = tok.text
        if text.startswith("0x"):
            value = int(text, 16)
        elif len(text) > MAX_INT_DIGITS:
            raise self.error(f"integer literal longer than {MAX_INT_DIGITS} digits", tok)
        else:
            value = int(text)
        return -value if negative else value

    def parse_number_attr(self) -> Attribute:
        start = self.tok
        negative = self.accept("-")
        tok = self.tok
        if tok.kind not in (Kind.INTEGER, Kind.FLOAT):
            raise self.error(f"expected a number after '-', got {tok.describe()}")
        type_tok: Token | None = None
        if tok.kind is Kind.FLOAT:
            self.advance()
            number: int | float = -float(tok.text) if negative else float(tok.text)
        else:
            number = self.parse_integer_literal(negative)
        type: Type = f64 if tok.kind is Kind.FLOAT else i64
        if self.accept(":"):
            type_tok = self.tok
            type = self.parse_type()
        if isinstance(type, FloatType):
            if tok.kind is Kind.FLOAT:
                return self.build(start, FloatAttr, number, type)
            if tok.text.startswith("0x") and not negative:
                return self.build(start, FloatAttr.from_bits, number, type)
            raise self.error(f"expected a float literal (1.0) or a hex bit pattern for type '{type}'", start)
        if isinstance(type, (IntegerType, IndexType)):
            if tok.kind is Kind.FLOAT:
                raise self.error(f"expected an integer literal for type '{type}'", start)
            return self.build(start, IntegerAttr, number, type)
        raise self.error(f"a number needs an integer, index or float type, got '{type}'", type_tok or start)

    def parse_symbol_ref(self) -> SymbolRefAttr:
        parts = [self.advance().value]
        while self.accept("::"):
            parts.append(self.expect_kind(Kind.AT_ID, "a symbol (@name) after '::'").value)
        return SymbolRefAttr(parts[0], tuple(parts[1:]))

    def parse_dense_array(self) -> DenseArrayAttr:
        start = self.advance()  # 'array'
        self.expect("<", "after 'array'")
        type_tok = self.tok
        elem = self.parse_type()
        if not isinstance(elem, IntegerType):
            raise self.error(f"dense array elements must have an integer type, got '{elem}'", type_tok)
        values: list[int] = []
        if self.accept(":"):
            while True:
                negative = self.accept("-")
                if self.tok.kind is not Kind.INTEGER:
                    raise self.error(f"expected an integer in array<...>, got {self.tok.describe()}")
                values.append(self.parse_integer_literal(negative))
                if not self.accept(","):
                    break
        self.expect(">", "to close array<...>")
        return self.build(start, DenseArrayAttr, elem, values)


def parse_module(
    text: str,
    filename: str = "<stdin>",
    *,
    first_line: int = 1,
    allow_unregistered: bool = False,
    verify: bool = True,
) -> Operation:
    """Parse a ``.mix`` text into a ``builtin.module`` (see the module docstring for the top-level
    rule). ``first_line`` numbers the first line (for chunks of :func:`split_input_file`); ops of
    unknown dialects are an error unless ``allow_unregistered``; ``verify`` runs the verifier on the
    result. Raises DiagnosticError only."""
    parser = Parser(text, filename, first_line, allow_unregistered)
    try:
        with paused_collector():  # everything the parser allocates stays alive (ir/collector.py)
            module = parser.parse_module()
    except RecursionError:  # last resort; MAX_NESTING should make this unreachable
        raise parser.error("nesting too deep for the parser") from None
    if verify:
        from mixjit.ir.verifier import verify as run_verifier

        run_verifier(module)
    return module
