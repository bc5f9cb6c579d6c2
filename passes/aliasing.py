"""Which arrays a value may refer to, and which ops write array memory (for ``build-dag``).

Every value that can hold an array reference (anything but scalars and tuples of scalars) has
a set of *roots*: the values that created the memory it may point into. A function argument,
a constant or global, a fresh result (``np.zeros``, ``A + B``, ``mix.gemm``, a call in
:data:`FRESH_CALLEES` or a NumPy ufunc) is its own root; a view (``x[i:j]``, ``x.T``,
``np.transpose(x)``, ``x.reshape(...)``, a tuple holding ``x``, an in-place ``x -= y``) has the
roots of what it views; a block argument has the roots of every value passed to it.

Calls are conservative by default: a call not known to return fresh memory (``np.flipud``,
``np.split``, ``np.broadcast_to``, ``as_strided``, ... and any callee not listed) may return
views of every array it is given, and elements of a list or tuple it returns too (subscripting
the list is a view of it). Calls the analysis does not know to be read-only (``@njit`` helpers,
:data:`WRITING_CALLEES`, ``out=``) may also write every array they are given. Distinct function
arguments are assumed not to alias each other. Subscripts are not analysed: a view aliases its
whole root, so two disjoint slices of one array are not told apart.
"""

from __future__ import annotations

import enum

import numpy as np

from mixjit.ir.core import Operation, Region, Value
from mixjit.ir.dialects import cf, func, py
from mixjit.ir.dialects.mix import GemmOp
from mixjit.ir.traits import Pure
from mixjit.ir.types import ComplexType, FloatType, IndexType, IntegerType, NoneType, TupleType, Type
from mixjit.passes.py_attrs import callee_of

__all__ = [
    "Kind", "op_kind", "returns_fresh", "viewed_operands", "written_values", "holds_references", "alias_roots",
    "successor_values", "function_bodies", "FRESH_CALLEES", "ALLOC_CALLEES",
]

METADATA_ATTRS = frozenset({"shape", "size", "ndim", "dtype", "strides", "itemsize", "nbytes"})
VIEW_CALLEES = frozenset({
    "numpy.transpose", "numpy.reshape", "numpy.ravel", "numpy.asarray", "numpy.ascontiguousarray",
    "numpy.asfortranarray", "numpy.atleast_1d", "numpy.atleast_2d", "numpy.squeeze",
    "numpy.expand_dims", "numpy.swapaxes", "numpy.diagonal",
    "array.transpose", "array.reshape", "array.ravel", "array.view", "array.squeeze", "array.swapaxes",
})
WRITING_CALLEES = frozenset({
    "numpy.copyto", "numpy.put", "numpy.place", "numpy.putmask", "numpy.fill_diagonal",
    "numpy.random.shuffle", "array.fill", "array.sort", "array.resize", "array.itemset", "array.put",
    "array.partition",
})
"""Known callees that write an argument (every other ``numpy.*``, ``array.*`` and ``builtins.*``
callee only reads them)."""
READ_ONLY_PREFIXES = ("numpy.", "array.", "builtins.", "numba.misc.special.")
ALLOC_CALLEES = frozenset({
    "numpy.empty", "numpy.zeros", "numpy.ones", "numpy.empty_like", "numpy.zeros_like", "numpy.ones_like",
})
"""Allocations whose contents depend on no argument's contents (only on shapes and dtypes)."""
FRESH_CALLEES = ALLOC_CALLEES | frozenset({
    "numpy.full", "numpy.full_like", "numpy.eye", "numpy.identity", "numpy.arange", "numpy.linspace",
    # copies and new arrays computed from the arguments
    "numpy.copy", "numpy.array", "numpy.concatenate", "numpy.stack", "numpy.hstack", "numpy.vstack",
    "numpy.column_stack", "numpy.where", "numpy.outer", "numpy.kron", "numpy.dot", "numpy.matmul", "numpy.vdot",
    "numpy.inner", "numpy.cumsum", "numpy.cumprod", "numpy.sort", "numpy.argsort", "numpy.argwhere",
    "numpy.nonzero", "numpy.unique", "numpy.tril", "numpy.triu", "numpy.round", "numpy.clip",
    # reductions
    "numpy.sum", "numpy.prod", "numpy.mean", "numpy.std", "numpy.var", "numpy.median", "numpy.min", "numpy.max",
    "numpy.amin", "numpy.amax", "numpy.argmin", "numpy.argmax", "numpy.all", "numpy.any", "numpy.trace",
    "numpy.linalg.norm", "numpy.linalg.det",
    # linear algebra: always new arrays
    "numpy.linalg.inv", "numpy.linalg.solve", "numpy.linalg.cholesky", "numpy.linalg.qr", "numpy.linalg.svd",
    "numpy.linalg.eig", "numpy.linalg.eigh", "numpy.linalg.eigvals", "numpy.linalg.eigvalsh", "numpy.linalg.lstsq",
    "numpy.linalg.pinv", "numpy.linalg.matrix_power",
    # array methods that copy or reduce
    "array.copy", "array.astype", "array.flatten", "array.sum", "array.prod", "array.mean", "array.std",
    "array.var", "array.min", "array.max", "array.argmin", "array.argmax", "array.all", "array.any",
    "array.cumsum", "array.cumprod", "array.dot", "array.argsort", "array.nonzero", "array.take", "array.repeat",
    # builtins and number classes: scalars, ranges, new containers
    "builtins.range", "builtins.len", "builtins.abs", "builtins.min", "builtins.max", "builtins.float",
    "builtins.int", "builtins.bool", "builtins.round", "builtins.list", "numba.misc.special.prange",
})
"""Callees whose array results are new memory (when they write nothing: no ``out=``). Every
other call may return views of its arguments."""


class Kind(enum.Enum):
    """How an op's result relates to its operands."""

    VIEW = "view"  # refers to (part of) its operands' memory; its contents are read later
    METADATA = "metadata"  # shape/size/...: depends on no array contents
    COMPUTE = "compute"  # a new value computed from the operands' contents (new memory)
    ALLOC = "alloc"  # new memory whose contents depend on no operand's contents (np.zeros)
    SOURCE = "source"  # a new value that depends on nothing (constants, globals, arguments)
    UNKNOWN = "unknown"  # may alias and may read any operand


def holds_references(t: Type) -> bool:
    """False for scalars and tuples of scalars, which cannot refer to array memory."""
    if isinstance(t, (IntegerType, FloatType, ComplexType, IndexType, NoneType)):
        return False
    if isinstance(t, TupleType):
        return any(holds_references(e) for e in t.elements)
    return True


def _callee(op: Operation) -> str:
    return callee_of(op) or ""


def _ufunc(callee: str) -> np.ufunc | None:
    """The NumPy ufunc that ``callee`` (``"numpy.sqrt"``) names, if any."""
    if not callee.startswith("numpy.") or callee.count(".") != 1:
        return None
    found = getattr(np, callee[len("numpy."):], None)
    return found if isinstance(found, np.ufunc) else None


def _call_writes(op: py.CallOp) -> bool:
    callee = _callee(op)
    if callee in WRITING_CALLEES or not callee.startswith(READ_ONLY_PREFIXES):
        return True
    kwnames = [k.value for k in op.kwnames] if op.kwnames else []
    ufunc = _ufunc(callee)
    positional = len(op.args) - len(kwnames)
    return (
        "out" in kwnames
        or (callee in ("numpy.dot", "numpy.matmul") and len(op.args) > 2)
        or (ufunc is not None and positional > ufunc.nin)  # np.add(a, b, out)
    )


def returns_fresh(callee: str) -> bool:
    """Whether a (non-writing) call of ``callee`` returns new memory, never a view of an argument:
    a callee in :data:`FRESH_CALLEES` or a NumPy ufunc."""
    return callee in FRESH_CALLEES or _ufunc(callee) is not None


def op_kind(op: Operation) -> Kind:
    """The :class:`Kind` of ``op``'s results."""
    if isinstance(op, (py.ConstOp, py.GlobalOp, py.FreeVarOp, py.ArgOp)):
        return Kind.SOURCE
    if isinstance(op, GemmOp):
        return Kind.COMPUTE
    if isinstance(op, py.GetAttrOp):
        return Kind.METADATA if op.attr.value in METADATA_ATTRS else Kind.VIEW
    if isinstance(op, (py.GetItemOp, py.StaticGetItemOp, py.TypedGetItemOp, py.InplaceBinOp)):
        return Kind.VIEW if holds_references(op.result.type) else Kind.COMPUTE
    if isinstance(op, (py.CastOp, py.BuildTupleOp, py.BuildListOp, py.BuildSetOp, py.GetIterOp,
                       py.IterNextOp, py.PairFirstOp, py.PairSecondOp, py.ExhaustIterOp)):
        return Kind.VIEW
    if isinstance(op, (py.BinOp, py.UnaryOp)):
        return Kind.COMPUTE
    if isinstance(op, py.CallOp):
        if _call_writes(op):
            return Kind.UNKNOWN
        if _callee(op) in VIEW_CALLEES:
            return Kind.VIEW
        if _callee(op) in ALLOC_CALLEES:
            return Kind.ALLOC
        return Kind.COMPUTE if returns_fresh(_callee(op)) else Kind.UNKNOWN
    return Kind.UNKNOWN


def viewed_operands(op: Operation) -> tuple[Value, ...]:
    """The operands whose memory a VIEW result of ``op`` may refer to: a subscript views its
    object, not its index; an in-place operator its left operand; anything else all operands."""
    if isinstance(op, (py.GetItemOp, py.StaticGetItemOp, py.TypedGetItemOp)):
        return (op.obj,)
    if isinstance(op, py.InplaceBinOp):
        return (op.lhs,)
    return op.operands


def written_values(op: Operation) -> list[Value]:
    """The operands whose memory ``op`` may write."""
    if isinstance(op, (py.SetItemOp, py.StaticSetItemOp, py.SetAttrOp)):
        return [op.target]
    if isinstance(op, py.InplaceBinOp):
        return [op.lhs] if holds_references(op.lhs.type) else []
    if isinstance(op, py.CallOp):
        return [v for v in op.operands if holds_references(v.type)] if _call_writes(op) else []
    if isinstance(op, py.UnknownOp):  # a statement the importer could not model: may write anything
        return [v for v in op.operands if holds_references(v.type)]
    if op.has_trait(Pure) or op.name.startswith(("py.", "cf.", "func.", "mix.")):
        return []
    return [v for v in op.operands if holds_references(v.type)]


def successor_values(op: Operation, index: int) -> tuple[Value, ...]:
    """The values a terminator passes to successor ``index``'s block arguments."""
    if isinstance(op, (cf.BranchOp, cf.CondBranchOp)):
        return op.successor_operands(index)
    passed = op.successor_operands(index)
    return passed if passed is not None else ()


def alias_roots(body: Region) -> dict[Value, frozenset[Value]]:
    """The roots of every reference-holding value of a function body (see the module docstring)."""
    roots: dict[Value, frozenset[Value]] = {}
    entry = body.entry
    if entry is None:
        return roots
    for arg in entry.args:
        if holds_references(arg.type):
            roots[arg] = frozenset([arg])

    def of(value: Value) -> frozenset[Value]:
        return roots.get(value, frozenset())

    def merge(value: Value, new: frozenset[Value]) -> bool:
        if not holds_references(value.type) or new <= of(value):
            return False
        roots[value] = of(value) | new
        return True

    changed = True
    while changed:
        changed = False
        for block in body.blocks:
            for op in block.ops:
                kind = op_kind(op)
                operand_roots = frozenset().union(*(of(v) for v in viewed_operands(op)))
                for r in op.results:
                    if kind is Kind.VIEW:
                        new = operand_roots
                    elif kind is Kind.METADATA:
                        new = frozenset()
                    elif kind is Kind.UNKNOWN:
                        new = operand_roots | {r}
                    else:
                        new = frozenset([r])
                    changed |= merge(r, new)
                for i, succ in enumerate(op.successors):
                    for arg, value in zip(succ.args, successor_values(op, i)):
                        changed |= merge(arg, of(value))
    return roots


def function_bodies(module: Operation) -> list[tuple[str, Region]]:
    """(name, body) of every ``func.func`` with a body in ``module``."""
    return [(op.sym_name.value, op.body) for op in module.walk() if isinstance(op, func.FuncOp) and op.body.blocks]
