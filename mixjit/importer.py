"""Import typed Numba IR into mix IR: one ``func.func`` per compiled function.

Numba's typed IR (``func_ir`` + ``typemap`` + ``calltypes``, as the typed-IR hook of
:mod:`mixjit.numba_pipeline` sees it) becomes a function whose blocks mirror Numba's blocks:

* every statement becomes one ``py.*`` op (``cf.br`` / ``cf.cond_br`` / ``func.return`` for
  the terminators), its result typed by :func:`mixjit.numba_types.to_ir_type`, its ``loc``
  taken from ``ir.Loc`` (Numba 0.68 records no column: column 1);
* each op carries the discardable attribute ``py.stmt = "<block label>:<index>"``, the position
  of its statement in ``func_ir.blocks[label].body`` at import time; the linker finds the
  statements a GEMM site replaces through it (``ImportedFunction.stmts`` maps ids to the
  statement objects, so later edits of the Numba IR do not invalidate them);
* ``py.call`` ops carry ``py.callee``, the resolved callee (``"numpy.dot"``) from the typemap;
* ``x = arg(i)`` binds ``x`` to the entry block's argument ``i``; copies ``x = y`` bind ``x``
  to ``y``'s value (a ``py.cast`` when the types differ); SSA phis become block arguments, and
  each predecessor's branch passes the incoming values. A phi input that is undefined on some
  path is ``py.const unit`` with the attribute ``py.undefined``, in the entry block.

Blocks unreachable from the entry are not imported. See docs/frontend.md.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from numba import typeof
from numba.core import compiler, ir, sigutils, types
from numba.core.compiler import Flags, StateDict, _EarlyPipelineCompletion
from numba.core.dispatcher import LiftedCode
from numba.core.registry import cpu_target
from numba.core.typing import Signature
from numba.core.typing.typeof import Purpose

from mixjit.ir.attributes import ArrayAttr, Attribute, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr
from mixjit.ir.core import Block, Operation, Value
from mixjit.ir.dialects import cf, func, py
from mixjit.ir.dialects.builtin import ModuleOp
from mixjit.ir.location import Location, UnknownLoc
from mixjit.ir.printer import print_op
from mixjit.ir.types import OpaqueType, Type
from mixjit.numba_pipeline import make_pipeline
from mixjit.numba_types import callee_name, const_attr, qualified_name, stable_text, static_index_attr, to_ir_type
from mixjit.passes.py_attrs import CALLEE_ATTR, STMT_ATTR, TARGET_ATTR, UNDEFINED_ATTR

__all__ = [
    "FrontendError",
    "ImportedFunction",
    "ImportedModule",
    "STMT_ATTR",
    "CALLEE_ATTR",
    "TARGET_ATTR",
    "UNDEFINED_ATTR",
    "stmt_id",
    "import_typed_ir",
    "typed_state",
    "resolve_argtypes",
    "import_function",
    "ir_text",
    "dump_ir",
]


_BINOPS = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.eq: "==", operator.ne: "!=", operator.lt: "<", operator.le: "<=",
    operator.gt: ">", operator.ge: ">=", operator.is_: "is", operator.is_not: "is not",
    operator.contains: "in",
}
_INPLACE = {
    operator.iadd: "+=", operator.isub: "-=", operator.imul: "*=", operator.itruediv: "/=",
    operator.ifloordiv: "//=", operator.imod: "%=", operator.ipow: "**=", operator.imatmul: "@=",
    operator.ilshift: "<<=", operator.irshift: ">>=", operator.iand: "&=", operator.ior: "|=",
    operator.ixor: "^=",
}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not"}


def _operator_symbol(fn: Any, table: dict[Any, str]) -> str | None:
    """The mix IR spelling of a Numba operator field: Numba 0.68 stores the ``operator``
    function (``operator.neg``), older versions its text (``"-"``). None when it is neither."""
    if isinstance(fn, str):
        return fn if fn in table.values() else None
    try:
        return table.get(fn)
    except TypeError:  # an unhashable object
        return None


def _name_attr(name: Any) -> StringAttr:
    """A name Numba's IR holds (attribute, global, keyword) as a string attribute; Numba gives
    strings, and anything else is printed as its stable text rather than refused."""
    return StringAttr(name if isinstance(name, str) else stable_text(name))


class FrontendError(Exception):
    """The typed Numba IR holds something the importer cannot represent (the message says what,
    where, and what to do)."""


def stmt_id(label: int, index: int) -> str:
    """The ``py.stmt`` id of statement ``index`` of Numba block ``label``."""
    return f"{label}:{index}"


@dataclass
class ImportedFunction:
    """A ``func.func`` imported from typed Numba IR, and the Numba statements behind its ops."""

    func: func.FuncOp
    stmts: dict[str, ir.Stmt]
    """``py.stmt`` id -> the Numba statement object it was imported from."""
    func_ir: ir.FunctionIR
    """The Numba IR it was imported from (the compiler state's, not a copy)."""
    qualname: str
    argtypes: tuple[types.Type, ...]
    source: Any = None
    """What it was imported from (the function or dispatcher ``import_function`` was given or found)."""


@dataclass
class ImportedModule:
    """A ``builtin.module``: the imported function first, then the ``@njit`` helpers it calls."""

    module: ModuleOp
    functions: list[ImportedFunction] = field(default_factory=list)

    def text(self) -> str:
        """The ``.mix`` text (parses back to the same module; ``mixopt`` reads it)."""
        return print_op(self.module)


def _location(loc: ir.Loc | None) -> Location:
    if loc is None or loc.filename is None or loc.line is None:
        return UnknownLoc
    col = loc.col + 1 if isinstance(loc.col, int) else 1
    return Location(loc.filename, int(loc.line), col)


def _successor_labels(term: ir.Stmt) -> list[int]:
    if isinstance(term, ir.Jump):
        return [term.target]
    if isinstance(term, ir.Branch):
        return [term.truebr, term.falsebr]
    return []


def _reverse_postorder(blocks: dict[int, ir.Block], entry: int) -> list[int]:
    order: list[int] = []
    seen = {entry}
    stack: list[tuple[int, int]] = [(entry, 0)]
    while stack:
        label, i = stack.pop()
        succs = _successor_labels(blocks[label].terminator)
        if i < len(succs):
            stack.append((label, i + 1))
            if succs[i] not in seen:
                seen.add(succs[i])
                stack.append((succs[i], 0))
        else:
            order.append(label)
    return order[::-1]


class _FunctionImporter:
    """Imports one typed function; use :func:`import_typed_ir`."""

    def __init__(self, state: Any, sym_name: str, helper_symbol: Callable[[ir.Expr], str | None]) -> None:
        self.func_ir: ir.FunctionIR = state.func_ir
        self.typemap: dict = state.typemap
        self.calltypes: dict = state.calltypes
        self.argtypes = tuple(state.args)
        self.return_type = state.return_type
        self.sym_name = sym_name
        self.helper_symbol = helper_symbol
        self.env: dict[str, Value] = {}
        self.stmts: dict[str, ir.Stmt] = {}
        self.undefined: dict[Type, Value] = {}
        self.blocks: dict[int, Block] = {}
        self.phis: dict[int, list[ir.Assign]] = {}

    # -- helpers ----------------------------------------------------------------------------
    def type_of(self, name: str) -> Type:
        if name not in self.typemap:
            raise FrontendError(
                f"variable '{name}' has no type in the typemap; import typed IR (after Numba's "
                "type inference, e.g. from the mixjit.numba_pipeline hook)"
            )
        return to_ir_type(self.typemap[name])

    def use(self, name: str, loc: ir.Loc) -> Value:
        value = self.env.get(name)
        if value is None:
            raise FrontendError(
                f"{loc.short()}: variable '{name}' is used before any definition reaches it; the "
                "typed IR is not in SSA form (run Numba's ReconstructSSA first)"
            )
        return value

    def undefined_value(self, ty: Type) -> Value:
        value = self.undefined.get(ty)
        if value is None:
            entry = self.blocks[self.entry_label]
            op = py.ConstOp.build(value=UnitAttr(), out=ty, attributes={UNDEFINED_ATTR: UnitAttr()})
            anchor = entry.ops[len(self.undefined)] if len(entry.ops) > len(self.undefined) else None
            if anchor is None:
                entry.add_op(op)
            else:
                entry.insert_op_before(op, anchor)
            value = op.result
            value.name_hint = "undef"
            self.undefined[ty] = value
        return value

    def coerce(self, value: Value, ty: Type, block: Block, loc: Location, stmt: str | None) -> Value:
        """``value`` as type ``ty`` (a ``py.cast`` appended to ``block`` when the types differ)."""
        if value.type == ty:
            return value
        attrs = {STMT_ATTR: StringAttr(stmt)} if stmt is not None else {}
        op = py.CastOp.build(value=value, out=ty, loc=loc, attributes=attrs)
        block.add_op(op)
        return op.result

    def bind(self, target: ir.Var, value: Value) -> None:
        if target.name in self.env:
            raise FrontendError(
                f"{target.loc.short()}: variable '{target.name}' is assigned twice; the typed IR is "
                "not in SSA form (run Numba's ReconstructSSA first)"
            )
        # Prefer the user's variable name over Numba's temporaries ($12binary_subscr.3).
        if not target.name.startswith("$") and (value.name_hint is None or value.name_hint.startswith("$")):
            value.name_hint = target.name
        self.env[target.name] = value

    # -- the function --------------------------------------------------------------------------
    def run(self) -> func.FuncOp:
        blocks = self.func_ir.blocks
        self.entry_label = min(blocks)
        order = _reverse_postorder(blocks, self.entry_label)
        if any(self.entry_label in _successor_labels(blocks[label].terminator) for label in order):
            raise FrontendError(
                f"{blocks[self.entry_label].loc.short()}: Numba's entry block is a branch target; "
                "this CFG shape is not supported by the importer"
            )
        inputs = [to_ir_type(t) for t in self.argtypes]
        output = to_ir_type(self.return_type)
        fop = func.FuncOp.define(
            self.sym_name, inputs, [output], arg_names=list(self.func_ir.arg_names),
            loc=_location(self.func_ir.loc),
        )
        fop.attributes["py.signature"] = StringAttr(
            f"({', '.join(map(str, self.argtypes))}) -> {self.return_type}"
        )
        region = fop.body
        for label in sorted(order):
            if label == self.entry_label:
                block = region.entry
            else:
                phis = [
                    s for s in blocks[label].body
                    if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr) and s.value.op == "phi"
                ]
                self.phis[label] = phis
                block = Block(arg_types=[self.type_of(p.target.name) for p in phis])
                region.add_block(block)
            self.blocks[label] = block
        for label in order:
            for phi, arg in zip(self.phis.get(label, []), self.blocks[label].args):
                self.bind(phi.target, arg)
        for label in order:
            self.import_block(label)
        return fop

    def import_block(self, label: int) -> None:
        block = self.blocks[label]
        for index, stmt in enumerate(self.func_ir.blocks[label].body):
            sid = stmt_id(label, index)
            self.stmts[sid] = stmt
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "phi":
                continue
            self.import_stmt(stmt, sid, label, block)

    def successor_args(self, pred: int, succ: int, block: Block, loc: Location, sid: str) -> list[Value]:
        args = []
        for phi, arg in zip(self.phis.get(succ, []), self.blocks[succ].args):
            incoming = dict(zip(phi.value.incoming_blocks, phi.value.incoming_values))
            value = incoming.get(pred, ir.UNDEFINED)
            if isinstance(value, ir.Var):
                args.append(self.coerce(self.use(value.name, phi.loc), arg.type, block, loc, sid))
            else:
                args.append(self.undefined_value(arg.type))
        return args

    def import_stmt(self, stmt: ir.Stmt, sid: str, label: int, block: Block) -> None:
        loc = _location(stmt.loc)
        attrs: dict[str, Attribute] = {STMT_ATTR: StringAttr(sid)}

        def emit(op_cls: type[Operation], **kwargs: Any) -> Operation:
            extra = kwargs.pop("attributes", {})
            op = op_cls.build(loc=loc, attributes={**attrs, **extra}, **kwargs)
            block.add_op(op)
            return op

        def v(var: ir.Var) -> Value:
            return self.use(var.name, stmt.loc)

        if isinstance(stmt, ir.Assign):
            target, value = stmt.target, stmt.value
            if isinstance(value, ir.Arg):
                entry_arg = self.blocks[self.entry_label].args[value.index]
                self.bind(target, self.coerce(entry_arg, self.type_of(target.name), block, loc, sid))
                return
            if isinstance(value, ir.Var):
                self.bind(target, self.coerce(v(value), self.type_of(target.name), block, loc, sid))
                return
            result = self.import_value(value, self.type_of(target.name), emit, v, stmt)
            result.name_hint = target.name
            self.bind(target, result)
        elif isinstance(stmt, ir.SetItem):
            emit(py.SetItemOp, target=v(stmt.target), index=v(stmt.index), value=v(stmt.value))
        elif isinstance(stmt, ir.StaticSetItem):
            index = static_index_attr(stmt.index)
            if index is not None:
                emit(py.StaticSetItemOp, target=v(stmt.target), value=v(stmt.value), index=index)
            else:
                emit(py.SetItemOp, target=v(stmt.target), index=v(stmt.index_var), value=v(stmt.value))
        elif isinstance(stmt, ir.SetAttr):
            emit(py.SetAttrOp, target=v(stmt.target), value=v(stmt.value), attr=_name_attr(stmt.attr))
        elif isinstance(stmt, ir.Del):
            emit(py.DelOp, value=self.use(stmt.value, stmt.loc))
        elif isinstance(stmt, ir.Print) and stmt.vararg is None:
            emit(py.PrintOp, args=[v(a) for a in stmt.args])
        elif isinstance(stmt, ir.Jump):
            args = self.successor_args(label, stmt.target, block, loc, sid)
            emit(cf.BranchOp, args=args, dest=self.blocks[stmt.target])
        elif isinstance(stmt, ir.Branch):
            cond = v(stmt.cond)
            true_args = self.successor_args(label, stmt.truebr, block, loc, sid)
            false_args = self.successor_args(label, stmt.falsebr, block, loc, sid)
            emit(
                cf.CondBranchOp, condition=self.coerce(cond, to_ir_type(types.boolean), block, loc, sid),
                true_args=true_args, false_args=false_args,
                true_dest=self.blocks[stmt.truebr], false_dest=self.blocks[stmt.falsebr],
            )
        elif isinstance(stmt, ir.Return):
            value = self.coerce(v(stmt.value), to_ir_type(self.return_type), block, loc, sid)
            emit(func.ReturnOp, values=[value])
        elif isinstance(stmt, ir.StaticRaise):
            props: dict[str, Any] = {}
            if stmt.exc_class is not None:
                props["exc_class"] = StringAttr(qualified_name(stmt.exc_class))
            if stmt.exc_args is not None:
                attrs_ = [const_attr(a, to_ir_type(types.int64)) for a in stmt.exc_args]
                props["exc_args"] = ArrayAttr(
                    a if a is not None else StringAttr(stable_text(repr(x))) for a, x in zip(attrs_, stmt.exc_args)
                )
            emit(py.RaiseOp, exception=None, **props)
        elif isinstance(stmt, ir.Raise):
            emit(py.RaiseOp, exception=v(stmt.exception) if stmt.exception is not None else None)
        elif isinstance(stmt, ir.DynamicRaise):
            # The exception is built from run-time values: an opaque op makes it, py.raise ends the block.
            exc = self.unknown(stmt, OpaqueType("exception"), emit)
            emit(py.RaiseOp, exception=exc)
        elif stmt.is_terminator:
            raise FrontendError(
                f"{stmt.loc.short()}: the mix IR has no terminator for `{stmt}` "
                f"({type(stmt).__name__}); add one to mixjit.ir.dialects and map it in mixjit.importer"
            )
        else:
            self.unknown(stmt, None, emit)

    def import_value(self, value: Any, ty: Type, emit: Callable[..., Operation], v: Callable[[ir.Var], Value],
                     stmt: ir.Assign) -> Value:
        if isinstance(value, ir.Const):
            attr = const_attr(value.value, ty)
            if attr is None:
                return self.unknown(stmt, ty, emit)
            return emit(py.ConstOp, value=attr, out=ty).result
        if isinstance(value, ir.Global):
            name, simple = _name_attr(value.name), _simple_value(value.value)
            return emit(py.GlobalOp, global_name=name, value=simple, out=ty).result
        if isinstance(value, ir.FreeVar):
            name, simple = _name_attr(value.name), _simple_value(value.value)
            return emit(py.FreeVarOp, var_name=name, value=simple, out=ty).result
        if not isinstance(value, ir.Expr):
            return self.unknown(stmt, ty, emit)
        op = value.op
        if op == "binop":
            symbol = _operator_symbol(value.fn, _BINOPS)
            if symbol is None:
                return self.unknown(stmt, ty, emit)
            lhs, rhs = (value.rhs, value.lhs) if symbol == "in" else (value.lhs, value.rhs)
            return emit(py.BinOp, lhs=v(lhs), rhs=v(rhs), op=StringAttr(symbol), out=ty).result
        if op == "inplace_binop":
            symbol = _operator_symbol(value.fn, _INPLACE)
            if symbol is None:
                return self.unknown(stmt, ty, emit)
            return emit(py.InplaceBinOp, lhs=v(value.lhs), rhs=v(value.rhs), op=StringAttr(symbol), out=ty).result
        if op == "unary":
            symbol = _operator_symbol(value.fn, _UNARY)
            if symbol is None:
                return self.unknown(stmt, ty, emit)
            return emit(py.UnaryOp, value=v(value.value), op=StringAttr(symbol), out=ty).result
        if op == "call":
            return self.import_call(value, ty, emit, v, stmt)
        if op == "getattr":
            return emit(py.GetAttrOp, obj=v(value.value), attr=_name_attr(value.attr), out=ty).result
        if op == "getitem":
            return emit(py.GetItemOp, obj=v(value.value), index=v(value.index), out=ty).result
        if op == "static_getitem":
            index = static_index_attr(value.index)
            if index is not None:
                return emit(py.StaticGetItemOp, obj=v(value.value), index=index, out=ty).result
            if value.index_var is None:
                return self.unknown(stmt, ty, emit)
            return emit(py.GetItemOp, obj=v(value.value), index=v(value.index_var), out=ty).result
        if op == "typed_getitem":
            return emit(py.TypedGetItemOp, obj=v(value.value), index=v(value.index),
                        dtype=TypeAttr(to_ir_type(value.dtype)), out=ty).result
        if op in ("build_tuple", "build_list", "build_set"):
            cls = {"build_tuple": py.BuildTupleOp, "build_list": py.BuildListOp, "build_set": py.BuildSetOp}[op]
            return emit(cls, items=[v(i) for i in value.items], out=ty).result
        if op in ("getiter", "cast"):
            cls = py.GetIterOp if op == "getiter" else py.CastOp
            return emit(cls, value=v(value.value), out=ty).result
        if op == "iternext":
            return emit(py.IterNextOp, iterator=v(value.value), out=ty).result
        if op in ("pair_first", "pair_second"):
            cls = py.PairFirstOp if op == "pair_first" else py.PairSecondOp
            return emit(cls, pair=v(value.value), out=ty).result
        if op == "exhaust_iter":
            return emit(py.ExhaustIterOp, value=v(value.value), count=value.count, out=ty).result
        return self.unknown(stmt, ty, emit)

    def import_call(self, value: ir.Expr, ty: Type, emit: Callable[..., Operation],
                    v: Callable[[ir.Var], Value], stmt: ir.Assign) -> Value:
        if value.vararg is not None or getattr(value, "varkwarg", None) is not None:
            return self.unknown(stmt, ty, emit)
        kws = list(value.kws)
        args = [v(a) for a in value.args] + [v(val) for _, val in kws]
        attrs: dict[str, Attribute] = {}
        callee = callee_name(self.typemap.get(value.func.name))
        if callee is not None:
            attrs[CALLEE_ATTR] = StringAttr(callee)
        target = self.helper_symbol(value)
        if target is not None:
            attrs[TARGET_ATTR] = SymbolRefAttr(target)
        kwnames = ArrayAttr(_name_attr(k) for k, _ in kws) if kws else None
        return emit(py.CallOp, func=v(value.func), args=args, kwnames=kwnames, out=ty, attributes=attrs).result

    def unknown(self, stmt: ir.Stmt, ty: Type | None, emit: Callable[..., Operation]) -> Value | None:
        """Import ``stmt``, which has no op of its own, as ``py.unknown``: its text, every variable
        it reads, and a result of type ``ty`` (None: no result). Analyses treat it as reading and
        writing everything it is given, so the rest of the function is still imported."""
        value = stmt.value if isinstance(stmt, ir.Assign) else stmt
        names = list(dict.fromkeys(var.name for var in value.list_vars())) if hasattr(value, "list_vars") else []
        args = [self.use(name, stmt.loc) for name in names]
        op = emit(py.UnknownOp, args=args, text=StringAttr(stable_text(stmt)), outs=[ty] if ty is not None else [])
        return op.results[0] if ty is not None else None


def _simple_value(value: Any) -> Attribute | None:
    """The ``value`` attribute of a global or free variable: simple constants only (None for
    anything else, e.g. an int too large for any Numba type)."""
    if isinstance(value, (bool, int, float, str)):
        try:
            return const_attr(value, to_ir_type(typeof(value)))
        except ValueError:
            return None
    return None


def import_typed_ir(
    state: Any,
    sym_name: str | None = None,
    helper_symbol: Callable[[ir.Expr], str | None] | None = None,
) -> ImportedFunction:
    """Import the typed Numba IR of ``state`` (a compiler ``StateDict``, or anything with
    ``func_ir``, ``typemap``, ``calltypes``, ``args`` and ``return_type``) as a ``func.func``.

    ``sym_name`` defaults to the function's qualified name. ``helper_symbol(call_expr)`` may name
    the ``func.func`` that a call targets (recorded as ``py.target``). Raises FrontendError for
    IR the mix IR cannot represent. Does not modify the Numba IR."""
    qualname = state.func_ir.func_id.func_qualname
    importer = _FunctionImporter(state, sym_name or qualname, helper_symbol or (lambda expr: None))
    fop = importer.run()
    fop.attributes["py.module"] = _name_attr(state.func_ir.func_id.modname or "")
    return ImportedFunction(fop, importer.stmts, state.func_ir, qualname, importer.argtypes)


def typed_state(py_func: Callable, argtypes: Sequence[types.Type], return_type: types.Type | None = None,
                targetoptions: dict[str, Any] | None = None, locals: dict[str, Any] | None = None,
                untyped_hook: Callable[[StateDict], bool] | None = None) -> StateDict:
    """Run Numba's front end and type inference on ``py_func`` for ``argtypes`` (no lowering) and
    return the compiler state as the mixjit typed-IR hook sees it.

    ``targetoptions`` are ``@njit`` options (``{"parallel": True}``); ``nopython`` is implied.
    ``untyped_hook`` runs right before typing, as in ``make_pipeline`` (the ``@mixjit`` frontend
    swaps callees there). Raises Numba's TypingError when the function does not type."""

    def stop(state: StateDict) -> bool:
        raise _EarlyPipelineCompletion(state)

    flags = Flags()
    cpu_target.options.parse_as_flags(flags, {**(targetoptions or {}), "nopython": True})
    return compiler.compile_extra(
        cpu_target.typing_context, cpu_target.target_context, py_func, tuple(argtypes), return_type,
        flags, dict(locals or {}), pipeline_class=make_pipeline(stop, untyped_hook),
    )


def resolve_argtypes(spec: Sequence[Any]) -> tuple[tuple[types.Type, ...], types.Type | None]:
    """Argument types (and the return type, if given) from what ``f.ir(...)`` accepts: example
    argument values, Numba types, or one signature (``"float64[:, :](float64[:, :])"``,
    ``"(float64[:, :],)"`` or a ``numba.core.typing.Signature``)."""
    if len(spec) == 1 and isinstance(spec[0], (str, Signature)):
        sig = sigutils.normalize_signature(spec[0])
        return tuple(sig[0]), sig[1]
    if all(isinstance(s, types.Type) for s in spec):
        return tuple(spec), None
    return tuple(typeof(a, Purpose.argument) for a in spec), None


def _py_func_and_options(fn: Any) -> tuple[Callable, dict[str, Any], dict[str, Any]]:
    py_func = getattr(fn, "py_func", fn)
    options = {k: v for k, v in getattr(fn, "targetoptions", {}).items() if k != "nopython"}
    return py_func, options, dict(getattr(fn, "locals", {}) or {})


def import_function(fn: Any, *spec: Any, callees: bool = True,
                    untyped_hook: Callable[[StateDict], bool] | None = None) -> ImportedModule:
    """Compile ``fn`` (a Python function or an ``@njit`` dispatcher, whose options such as
    ``parallel`` are kept) for the argument types given by ``spec`` (see
    :func:`resolve_argtypes`) up to type inference, and import it into a new module.

    With ``callees``, every ``@njit`` function it calls is imported as well (recursively, once
    per signature), and its ``py.call`` ops get ``py.target = @helper``. ``untyped_hook`` runs
    before each function is typed (see :func:`typed_state`)."""
    argtypes, return_type = resolve_argtypes(spec)
    module = ModuleOp.from_ops([])
    imported = ImportedModule(module)
    symbols: dict[tuple[Any, tuple], str] = {}
    pending: list[tuple[Any, tuple, types.Type | None, str]] = []

    def symbol_for(dispatcher: Any, args: tuple) -> str:
        key = (dispatcher.py_func, args)
        if key not in symbols:
            base = dispatcher.py_func.__qualname__
            taken = set(symbols.values())
            name, n = base, 1
            while name in taken:
                name, n = f"{base}.{n}", n + 1
            symbols[key] = name
            pending.append((dispatcher, args, None, name))
        return symbols[key]

    def run(target: Any, args: tuple, ret: types.Type | None, name: str | None) -> None:
        py_func, options, local_types = _py_func_and_options(target)
        state = typed_state(py_func, args, ret, options, local_types, untyped_hook)

        def helper(expr: ir.Expr) -> str | None:
            fnty = state.typemap.get(expr.func.name)
            if not callees or not isinstance(fnty, types.Dispatcher) or isinstance(fnty.dispatcher, LiftedCode):
                return None  # a `with objmode` block is lifted into object-mode code: not imported
            return symbol_for(fnty.dispatcher, tuple(state.calltypes[expr].args))

        result = import_typed_ir(state, name, helper)
        result.source = target
        module.block.add_op(result.func)
        imported.functions.append(result)

    py_func = getattr(fn, "py_func", fn)
    symbols[(py_func, argtypes)] = py_func.__qualname__
    run(fn, argtypes, return_type, None)
    while pending:
        run(*pending.pop(0))
    module.verify()
    return imported


def ir_text(fn: Any, *spec: Any, untyped_hook: Callable[[StateDict], bool] | None = None) -> str:
    """The ``.mix`` text of ``fn`` imported for ``spec`` (what ``f.ir(*args, raw=True)`` returns)."""
    return import_function(fn, *spec, untyped_hook=untyped_hook).text()


def dump_ir(fn: Any, path: str | Path, *spec: Any, untyped_hook: Callable[[StateDict], bool] | None = None) -> Path:
    """Write ``fn``'s imported IR to ``path`` (a ``.mix`` file ``mixopt`` reads); returns the path."""
    path = Path(path)
    path.write_text(ir_text(fn, *spec, untyped_hook=untyped_hook), encoding="utf-8")
    return path
