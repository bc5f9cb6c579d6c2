"""``detect-gemm``: turn matrix products of imported Python code into ``mix.gemm`` sites.

Candidates are ``py.binop "@"`` and ``py.call`` ops whose ``py.callee`` is ``numpy.dot`` or
``numpy.matmul``, or the array method ``array.dot`` (``a.dot(b)``: A is the object of the
``py.getattr "dot"`` it calls; the importer records the callee, so this works on a ``.mix`` dump alone).
A candidate becomes a GEMM when both operands and the result are rank-2 arrays of one element
type, f32 or f64, and the call has exactly two arguments. Then:

* an operand that is ``x.T``, ``np.transpose(x)`` or ``x.transpose()`` of a rank-2 ``x`` is
  replaced by ``x`` with ``trans_a`` / ``trans_b`` set;
* the in-place update ``C[idx] -= A @ B`` (``+=``), which arrives as ``v = C[idx]``,
  ``p = A @ B``, ``r = v -= p``, ``C[idx] = r``, becomes one ``mix.gemm(A, B, v)`` with
  ``alpha = -1`` (``+1``) and ``beta = 1`` whose result is stored by the same setitem;
* the op gets the next free ``site`` id. New sites are numbered in order of function, source
  line and column, then op order, after the ids already in the module, so ids are the same on
  every compile and re-running the pass keeps existing ids;
* ``mix.stmts`` records the ``py.stmt`` ids of the statements the site replaces, by role:
  ``product`` (the ``@``/``np.dot``/``a.dot``), ``method`` (the ``a.dot`` getattr of a method
  call), ``trans_a``/``trans_b`` (the transposes), and for a fused
  update ``load`` (``C[idx]``), ``update`` (``-=``) and ``store`` (``C[idx] = ...``).

Other candidates (1-D dot products, matrix-vector products, integer, float16 or mixed dtypes,
object-mode values, ``out=`` arguments) are left to Numba and marked
``mix.not_gemm = {reason = "<code>", detail = "..."}``, and the pass emits a remark for each
(``matrix product left to numba: ... [<code>]``, at the Python source location, with the detail
as a note) through the pass manager's ``PassContext``, so ``mixopt`` prints them. Each remark is a
:class:`NotGemmRemark` that carries its :class:`Rejection`, so the ``@mixjit`` frontend reads the
rejections from the remark channel too.
:func:`detection_report` reads sites and rejections back from any module (a dump included);
:meth:`DetectionReport.diagnostics` gives them as located remarks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeGuard

from mixjit.ir.attributes import DictAttr, FloatAttr, IntegerAttr, StringAttr
from mixjit.ir.core import Operation, Value
from mixjit.ir.diagnostics import Diagnostic, Severity
from mixjit.ir.dialects import py
from mixjit.ir.dialects.func import FuncOp
from mixjit.ir.dialects.mix import GemmOp, LinalgOp, SiteOp
from mixjit.ir.location import Location
from mixjit.ir.types import ArrayType, ComplexType, IntegerType, OpaqueType, Type, f32, f64, i64
from mixjit.passes.pass_base import ModulePass, PassContext, option
from mixjit.passes.py_attrs import callee_of, stmt_of
from mixjit.passes.registry import register_pass

__all__ = [
    "DetectGemm",
    "GemmSite",
    "Rejection",
    "NotGemmRemark",
    "DetectionReport",
    "detect_gemms",
    "detection_report",
    "REASONS",
    "STMTS_ATTR",
    "NOT_GEMM_ATTR",
]

STMTS_ATTR = "mix.stmts"
"""Attribute of ``mix.gemm``: role -> ``py.stmt`` id of each statement the site replaces."""
NOT_GEMM_ATTR = "mix.not_gemm"
"""Attribute of a rejected candidate: ``{reason = "<code>", detail = "..."}``."""

GEMM_CALLEES = frozenset({"numpy.dot", "numpy.matmul"})
METHOD_CALLEES = frozenset({"array.dot"})
"""Bound-method callees that are matrix products: ``a.dot(b)``, with ``np.dot(a, b)``'s meaning."""
TRANSPOSE_CALLEES = frozenset({"numpy.transpose"})
GEMM_DTYPES = (f32, f64, ComplexType(f32), ComplexType(f64))
UPDATE_ALPHA = {"-=": -1.0, "+=": 1.0}

REASONS: dict[str, str] = {
    "object-mode": "an operand is a Python object (object-mode code)",
    "not-an-array": "an operand is not a typed NumPy array",
    "dot-1d": "1-D dot product",
    "matrix-vector": "matrix-vector product",
    "batched": "product of arrays that are not both 2-D",
    "integer-dtype": "integer element type",
    "mixed-dtype": "operands of different element types",
    "unsupported-dtype": "element type is not float32, float64, complex64 or complex128",
    "out-argument": "np.dot with an out argument or keywords",
    "linalg-dtype": "element type is not float32 or float64 (complex and integer calls stay with LAPACK)",
    "linalg-shape": "an operand does not have the ranks the call takes (A 2-D, B 1-D or 2-D)",
    "linalg-arguments": "arguments passed by keyword, or not the number the call takes",
    "linalg-lstsq": "the program uses more of np.linalg.lstsq than its solution [0] (the residuals, rank and "
                    "singular values only LAPACK's SVD computes)",
}
"""Reason code -> what it means, for every way a candidate can be rejected."""


@dataclass(frozen=True)
class GemmSite:
    """A site op of the module (``mix.gemm``, or ``mix.linalg`` in ``linalg_sites``), as the tuner
    and linker see it."""

    site: int
    op: GemmOp | LinalgOp
    function: str
    loc: Location
    stmts: dict[str, str]


@dataclass(frozen=True)
class Rejection:
    """A matrix-product candidate left to Numba, with the reason code and details."""

    op: Operation
    function: str
    reason: str
    detail: str
    loc: Location

    @property
    def what(self) -> str:
        """``matrix product`` or, for an ``np.linalg`` call, ``linalg call``."""
        return "linalg call" if (callee_of(self.op) or "").startswith("numpy.linalg.") else "matrix product"

    def diagnostic(self) -> NotGemmRemark:
        """A remark at the candidate: why it is not a site (carrying this rejection)."""
        message = f"{self.what} left to numba: {REASONS.get(self.reason, 'unknown reason')} [{self.reason}]"
        notes = (Diagnostic.note(self.detail, self.loc),) if self.detail else ()
        return NotGemmRemark(Severity.REMARK, message, self.loc, notes, rejection=self)

    def record(self) -> dict[str, Any]:
        """A JSON-friendly record: function, file, line, col, reason, detail."""
        return {"function": self.function, "file": self.loc.file, "line": self.loc.line,
                "col": self.loc.col, "reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class NotGemmRemark(Diagnostic):
    """The remark detect-gemm emits for a candidate left to numba; ``rejection`` holds the
    structured record (op, function, reason code, detail) behind the text."""

    rejection: Rejection | None = field(default=None, compare=False)


@dataclass
class DetectionReport:
    """The GEMM sites of a module (by site id) and the rejected candidates (in op order)."""

    sites: list[GemmSite]
    rejected: list[Rejection]
    linalg_sites: list[GemmSite] = field(default_factory=list)
    """The ``mix.linalg`` sites (detect-linalg), by site id."""

    def diagnostics(self) -> list[Diagnostic]:
        """One remark per site taken and per candidate rejected, in source order."""
        taken = [
            Diagnostic(Severity.REMARK, f"GEMM site {s.site}: {_describe(s.op)}", s.loc)
            for s in self.sites if isinstance(s.op, GemmOp)
        ]
        out = taken + [r.diagnostic() for r in self.rejected]
        return sorted(out, key=lambda d: (d.loc.file, d.loc.line, d.loc.col))


def _loc(op: Operation) -> Location:
    return op.loc if op.loc.is_known or op.text_loc is None else op.text_loc


def _describe(op: GemmOp) -> str:
    """``f64 A @ B^T`` or, with C, ``f64 C = -1*A @ B^T + 1*C``."""
    product = f"{'A^T' if op.trans_a.value else 'A'} @ {'B^T' if op.trans_b.value else 'B'}"
    if op.c is None:
        return f"{op.dtype.value} {product}"
    return f"{op.dtype.value} C = {op.alpha.value:g}*{product} + {op.beta.value:g}*C"


def _is_matrix(t: Type) -> TypeGuard[ArrayType]:
    return isinstance(t, ArrayType) and t.rank == 2


# -- candidates and why they are rejected ------------------------------------------------------
def _bound_dot(op: Operation) -> py.GetAttrOp | None:
    """The ``a.dot`` getattr that ``op``, a call of the bound method ``a.dot``, calls; else None."""
    if not isinstance(op, py.CallOp) or callee_of(op) not in METHOD_CALLEES:
        return None
    bound = op.func.defining_op
    return bound if isinstance(bound, py.GetAttrOp) and bound.attr.value == "dot" else None


def _candidate_operands(op: Operation) -> tuple[Value, Value] | None | str:
    """(A, B) of a matrix-product candidate; "out-argument" for np.dot(a, b, out) or
    a.dot(b, out); None if ``op`` is not a candidate."""
    if isinstance(op, py.BinOp) and op.op.value == "@":
        return op.lhs, op.rhs
    if isinstance(op, py.CallOp) and callee_of(op) in GEMM_CALLEES:
        if len(op.args) != 2 or op.kwnames:
            return "out-argument"
        return op.args[0], op.args[1]
    bound = _bound_dot(op)
    if bound is not None:
        assert isinstance(op, py.CallOp)
        if len(op.args) != 1 or op.kwnames:
            return "out-argument"
        return bound.obj, op.args[0]
    return None


def _rejection(a: Value, b: Value, out: Type) -> tuple[str, str] | None:
    """(reason, detail) when ``A @ B`` is not a GEMM site, else None."""
    labelled = (("A", a.type), ("B", b.type), ("the result", out))
    for label, t in labelled:
        if isinstance(t, OpaqueType) and "pyobject" in t.text:
            return "object-mode", f"{label} is {t}"
    for label, t in labelled[:2]:
        if not isinstance(t, ArrayType):
            return "not-an-array", f"{label} is {t}"
    ta, tb = a.type, b.type
    assert isinstance(ta, ArrayType) and isinstance(tb, ArrayType)
    shapes = f"A is {ta.rank}-D, B is {tb.rank}-D"
    if ta.rank == 1 and tb.rank == 1:
        return "dot-1d", shapes
    if {ta.rank, tb.rank} == {1, 2}:
        return "matrix-vector", shapes
    if ta.rank != 2 or tb.rank != 2 or not _is_matrix(out):
        return "batched", shapes
    if ta.dtype != tb.dtype:
        return "mixed-dtype", f"A has {ta.dtype}, B has {tb.dtype}"
    dtype = ta.dtype
    if isinstance(dtype, IntegerType):
        return "integer-dtype", f"element type {dtype}"
    if dtype not in GEMM_DTYPES or not isinstance(out, ArrayType) or out.dtype != dtype:
        return "unsupported-dtype", f"element type {dtype}, result {out}"
    return None


# -- matching ------------------------------------------------------------------------------------
def _strip_transpose(value: Value) -> tuple[Value, bool, str | None]:
    """(x, True, stmt) if ``value`` is a transpose of a rank-2 ``x``, else (value, False, None)."""
    op = value.defining_op
    base: Value | None = None
    if isinstance(op, py.GetAttrOp) and op.attr.value == "T":
        base = op.obj
    elif isinstance(op, py.CallOp) and not op.kwnames:
        callee = callee_of(op)
        if callee in TRANSPOSE_CALLEES and len(op.args) == 1:
            base = op.args[0]
        elif callee == "array.transpose" and not op.args:
            bound = op.func.defining_op
            if isinstance(bound, py.GetAttrOp) and bound.attr.value == "transpose":
                base = bound.obj
    if (op is not None and base is not None and _is_matrix(base.type) and isinstance(value.type, ArrayType)
            and base.type.dtype == value.type.dtype):
        return base, True, stmt_of(op)
    return value, False, None


def _single_user(value: Value) -> Operation | None:
    uses = value.uses
    return uses[0].operation if len(uses) == 1 else None


@dataclass
class _Update:
    """The ops of a fusable ``C[idx] op= product``."""

    load: Operation
    update: py.InplaceBinOp
    store: Operation
    alpha: float


def _same_subscript(load: Operation, store: Operation) -> bool:
    if isinstance(load, py.GetItemOp) and isinstance(store, py.SetItemOp):
        return load.obj is store.target and load.index is store.index
    if isinstance(load, py.StaticGetItemOp) and isinstance(store, py.StaticSetItemOp):
        return load.obj is store.target and load.index == store.index
    return False


def _fusable_update(product: Operation) -> _Update | None:
    update = _single_user(product.result)
    if update is None or not isinstance(update, py.InplaceBinOp) or update.rhs is not product.result:
        return None
    alpha = UPDATE_ALPHA.get(update.op.value)
    view = update.lhs
    load = view.defining_op
    if alpha is None or load is None or _single_user(view) is not update:
        return None
    if view.type != update.result.type or not _is_matrix(view.type):
        return None
    if view.type.dtype != product.result.type.dtype:
        return None
    store = _single_user(update.result)
    if store is None or not _same_subscript(load, store):
        return None
    stored = store.value if isinstance(store, (py.SetItemOp, py.StaticSetItemOp)) else None
    if stored is not update.result:
        return None
    return _Update(load, update, store, alpha)


def _rewrite(product: Operation, a: Value, b: Value, fuse: bool) -> GemmOp:
    """Replace ``product`` (and a fusable update) by a ``mix.gemm`` with site id -1 (numbered later)."""
    stmts: dict[str, str | None] = {"product": stmt_of(product)}
    bound = _bound_dot(product)
    if bound is not None:
        stmts["method"] = stmt_of(bound)  # the linker reads A from the ``a.dot`` getattr
    a, trans_a, stmts["trans_a"] = _strip_transpose(a)
    b, trans_b, stmts["trans_b"] = _strip_transpose(b)
    out = product.result.type
    assert isinstance(out, ArrayType)  # _rejection accepted the product: its result is an array
    dtype = out.dtype
    update = _fusable_update(product) if fuse else None
    common = dict(a=a, b=b, trans_a=trans_a, trans_b=trans_b, site=IntegerAttr(0, i64), dtype=dtype)
    if update is None:
        gemm = GemmOp.build(c=None, out=product.result.type, loc=product.loc, **common)
        anchor, replaced, erased = product, product.result, [product]
    else:
        stmts.update(load=stmt_of(update.load), update=stmt_of(update.update), store=stmt_of(update.store))
        gemm = GemmOp.build(
            c=update.update.lhs, out=update.update.result.type, alpha=FloatAttr(update.alpha, f64),
            beta=FloatAttr(1.0, f64), loc=product.loc, **common,
        )
        anchor, replaced, erased = update.update, update.update.result, [update.update, product]
    gemm.text_loc = product.text_loc
    gemm.attributes[STMTS_ATTR] = DictAttr({k: StringAttr(v) for k, v in stmts.items() if v is not None})
    block = anchor.parent
    assert block is not None  # a walked op is in a block
    block.insert_op_before(gemm, anchor)
    gemm.result.name_hint = replaced.name_hint
    replaced.replace_all_uses_with(gemm.result)
    for op in erased:
        op.erase()
    return gemm


def _functions(module: Operation) -> list[tuple[str, Operation]]:
    funcs: list[tuple[str, Operation]] = [(op.sym_name.value, op) for op in module.walk() if isinstance(op, FuncOp)]
    return funcs or [("", module)]


def detect_gemms(module: Operation, fuse_updates: bool = True) -> DetectionReport:
    """Rewrite GEMM candidates of ``module`` into ``mix.gemm`` sites and mark the rejected ones
    (see the module docstring); returns the report of the whole module."""
    used = [op.site.value for op in module.walk() if isinstance(op, SiteOp)]
    next_site = max(used, default=-1) + 1
    new_sites: list[tuple[tuple, GemmOp]] = []
    for findex, (_, fn) in enumerate(_functions(module)):
        for position, op in enumerate(list(fn.walk())):
            if op.erased or NOT_GEMM_ATTR in op.attributes:
                continue
            operands = _candidate_operands(op)
            if operands is None:
                continue
            if isinstance(operands, str):  # "out-argument": only a call has one
                assert isinstance(op, py.CallOp)
                rejected: tuple[str, str] | None = (operands, f"{len(op.args)} arguments")
            else:
                a, b = operands
                rejected = _rejection(a, b, op.result.type)
            if rejected is not None:
                reason, detail = rejected
                mark = {"reason": StringAttr(reason), "detail": StringAttr(detail)}
                op.attributes[NOT_GEMM_ATTR] = DictAttr(mark)
                continue
            loc = _loc(op)
            gemm = _rewrite(op, a, b, fuse_updates)
            new_sites.append(((findex, loc.file, loc.line, loc.col, position), gemm))
    for _, gemm in sorted(new_sites, key=lambda item: item[0]):
        gemm.properties["site"] = IntegerAttr(next_site, i64)
        next_site += 1
    return detection_report(module)


def detection_report(module: Operation) -> DetectionReport:
    """The sites (``mix.gemm`` ops, by site id) and the rejections (``mix.not_gemm``) of a module
    that ``detect-gemm`` has processed, read from the IR alone."""
    sites: list[GemmSite] = []
    linalg: list[GemmSite] = []
    rejected: list[Rejection] = []
    for name, fn in _functions(module):
        for op in fn.walk():
            if isinstance(op, (GemmOp, LinalgOp)):
                stmts = op.attributes.get(STMTS_ATTR)
                entries = stmts.value if isinstance(stmts, DictAttr) else ()
                roles = {k: v.value for k, v in entries if isinstance(v, StringAttr)}
                (sites if isinstance(op, GemmOp) else linalg).append(GemmSite(op.site.value, op, name, _loc(op), roles))
            mark = op.attributes.get(NOT_GEMM_ATTR)
            if isinstance(mark, DictAttr):
                fields = mark.as_dict()
                reason, detail = fields.get("reason"), fields.get("detail")
                rejected.append(Rejection(
                    op, name, reason.value if isinstance(reason, StringAttr) else "?",
                    detail.value if isinstance(detail, StringAttr) else "", _loc(op),
                ))
    return DetectionReport(sorted(sites, key=lambda s: s.site), rejected, sorted(linalg, key=lambda s: s.site))


@register_pass
@dataclass(frozen=True)
class DetectGemm(ModulePass):
    """Turn 2-D float32/float64 matrix products into mix.gemm sites; mark the ones left to numba."""

    name = "detect-gemm"
    fuse_updates: bool = option(True, "fuse C[idx] -= A @ B (and +=) into one GEMM with alpha/beta")

    def apply(self, module: Operation) -> None:
        detect_gemms(module, self.fuse_updates)

    def run(self, module: Operation, context: PassContext) -> None:
        """Detect, then emit a remark for every candidate left to numba, in op order."""
        for rejection in detect_gemms(module, self.fuse_updates).rejected:
            context.emit(rejection.diagnostic())
