"""The sites of compiled ``@mixjit`` signatures, as the user and the IR see them.

What a site is as the source wrote it (``SiteRecord`` forms from Numba's IR: ``a @ b``,
``np.dot(a.T, b)``, ``c += ...``; products inside ``with objmode`` blocks, which are not taken),
the user's view of one site (``Site``: ``f.sites``), the record of a compilation that runs as
plain Numba (``NotLinked``), and the mapping between the site ids of an imported module and the
process site ids of compiled code (:func:`process_site_ids`, :func:`annotate_sites`: ``f.ir()``
shows the ids and plans of ``f.sites``). The plans themselves live in the plan table
(mixjit.plan); this module only reads them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numba.core import errors, ir
from numba.core.dispatcher import ObjModeLiftedWith

from mixjit import backends, entry
from mixjit.linking import FoundSites, GemmCall
from mixjit.numba_pipeline import matmul_targets
from mixjit.numba_types import callee_name
from mixjit.plan import SiteBlock, SitePlan, SiteRecord, get_plan

__all__ = ["Site", "NotLinked", "FALLBACK_REASON", "RUNS_ATTR", "CompiledSites", "annotate_sites",
           "process_site_ids", "statement_forms", "objmode_products", "signature_text", "source_loc"]


@dataclass(frozen=True)
class Site:
    """One GEMM site of a compiled signature, as ``f.sites`` lists it.

    ``id`` is the process's site id (``None`` when the site was not taken),
    ``plan`` what it runs, ``reason`` why a candidate was not taken."""

    id: int | None
    function: str
    signature: str
    loc: str
    dtype: str
    form: str
    alpha: float
    beta: float
    taken: bool
    plan: SitePlan | None
    reason: str = ""

    @property
    def calls(self) -> int:
        """How many times this site has run (0 for a site not taken)."""
        return entry.call_count(self.id) if self.id is not None else 0

    @property
    def backend(self) -> backends.BackendChoice | None:
        """What the site runs on (CPU executor or a device) and why (None for a site not taken)."""
        return backends.backend_of(self.id) if self.id is not None else None


def _operand_text(name: str, transpose: ir.Stmt | None, typemap: dict) -> str:
    """How the source wrote a GEMM operand: ``a``, or its transpose as ``a.T``,
    ``np.transpose(a)`` or ``a.transpose()``."""
    expr = transpose.value if isinstance(transpose, ir.Assign) else None
    if not isinstance(expr, ir.Expr):
        return name
    if expr.op == "getattr":
        return f"{name}.{expr.attr}"
    callee = callee_name(typemap.get(expr.func.name)) if expr.op == "call" else None
    if callee == "numpy.transpose":
        return f"np.transpose({name})"
    if callee == "array.transpose":
        return f"{name}.transpose()"
    return name


def _form(call: GemmCall, roles: dict[str, str], stmts: dict[str, ir.Stmt], state: Any) -> str:
    """The site's statement as the source wrote it, with operands ``a``, ``b`` (and ``c``)."""
    a, b = (_operand_text(n, stmts.get(roles.get(f"trans_{n}", "")), state.typemap) for n in "ab")
    if "method" in roles:
        product = f"{a}.dot({b})"
    elif call.expr.op != "binop":
        product = f"np.dot({a}, {b})"
    elif call.stmt.target.name in matmul_targets(state):
        product = f"np.matmul({a}, {b})"
    else:
        product = f"{a} @ {b}"
    if call.update is not None:
        return f"c {'-=' if call.alpha < 0 else '+='} {product}"
    return product


def objmode_products(qualname: str, func_ir: ir.FunctionIR) -> list[SiteRecord]:
    """The matrix products inside ``with objmode`` blocks of ``func_ir``: Numba lifts each block
    into object-mode code, which mixjit does not link; they are reported as not taken."""
    out = []
    for block in func_ir.blocks.values():
        for stmt in block.body:
            value = stmt.value if isinstance(stmt, ir.Assign) else None
            if isinstance(value, (ir.Const, ir.Global, ir.FreeVar)) and isinstance(value.value, ObjModeLiftedWith):
                out += _products_in(qualname, value.value.func_ir)
    return out


def _products_in(qualname: str, func_ir: ir.FunctionIR) -> list[SiteRecord]:
    found = []
    for block in func_ir.blocks.values():
        for stmt in block.body:
            expr = stmt.value if isinstance(stmt, ir.Assign) else None
            if not isinstance(expr, ir.Expr):
                continue
            if expr.op == "binop" and expr.fn is operator.matmul:
                form = "a @ b"
            elif expr.op == "call":
                try:
                    fn = func_ir.infer_constant(expr.func)
                except errors.ConstantInferenceError:
                    continue
                if fn is not np.dot and fn is not np.matmul:
                    continue
                form = f"np.{fn.__name__}(a, b)"
            else:
                continue
            found.append(SiteRecord(
                qualname, source_loc(stmt.loc), "", form,
                reason="object-mode: inside a `with objmode` block, which Numba runs as Python code"))
    return sorted(found, key=lambda r: (r.loc, r.form))


def statement_forms(found: FoundSites, state: Any) -> list[str]:
    stmts = found.imported.stmts
    return [_form(call, site.stmts, stmts, state) for call, site in zip(found.calls, found.sites)]


def signature_text(key: tuple) -> str:
    return ", ".join(map(str, key))


def source_loc(loc: ir.Loc) -> str:
    return f"{loc.filename}:{loc.line}"


@dataclass(frozen=True)
class NotLinked:
    """A compilation that runs as plain Numba because a mixjit stage failed on it: the
    candidates it had (or one record for the whole function) with the reason. Kept in Numba's
    ``reload_init`` like a ``SiteBlock``, so cached code still says why; calling it does nothing."""

    signature: str
    records: tuple[SiteRecord, ...]

    def __call__(self) -> None:
        """Nothing to register: the compiled code calls no mixjit symbol."""


FALLBACK_REASON = "mixjit-error"
"""The reason code of ``sites`` entries of a compilation that runs as plain Numba."""


RUNS_ATTR = "mix.runs"
"""On a ``mix.gemm`` of ``f.ir()``: the plan its compiled site runs now, ``{config, executor, scheme}``
(``Site.plan``). Not the tune pass's ``mix.plan``, which records a tuning choice with its error
and modeled time."""


def annotate_sites(imported: Any) -> None:
    """Give the ``mix.gemm`` ops of ``imported`` (after detect-gemm) the process site ids of
    their compiled code and a ``mix.runs`` attribute (their plan), when every function with
    sites is compiled and linked. Otherwise (not compiled yet, or run as plain Numba) the module's own ids stay,
    so that no two ops share an id."""
    from mixjit.ir.attributes import IntegerAttr, to_attr
    from mixjit.ir.dialects.mix import SiteOp
    from mixjit.ir.types import i64

    mappings = [(f, process_site_ids(f)) for f in imported.functions]
    if any(ids is None for _, ids in mappings):
        return
    every = {m: p for _, ids in mappings for m, p in ids.items()}
    for function, ids in mappings:
        for op in function.func.walk():
            if isinstance(op, SiteOp):
                sid = ids[op.site.value]
                op.site = IntegerAttr(sid, i64)
                _relabel_deps(op, every)
                plan = get_plan(sid)
                if plan is not None:
                    op.attributes[RUNS_ATTR] = to_attr(
                        {"scheme": plan.scheme, "config": plan.config, "executor": plan.executor})


def _relabel_deps(op: Any, ids: dict[int, int]) -> None:
    """Make the predecessors in build-dag's ``mix.deps`` name process site ids too, so that the
    dump stays consistent (``mixopt -p tune`` reads them)."""
    from mixjit.ir.attributes import ArrayAttr, DictAttr, IntegerAttr
    from mixjit.ir.types import i64
    from mixjit.passes.build_dag import DEPS_ATTR

    deps = op.attributes.get(DEPS_ATTR)
    if not isinstance(deps, ArrayAttr):
        return
    op.attributes[DEPS_ATTR] = ArrayAttr([
        DictAttr({**d.as_dict(), "site": IntegerAttr(ids[d["site"].value], i64)})
        if isinstance(d, DictAttr) and "site" in d and isinstance(d["site"], IntegerAttr) and d["site"].value in ids
        else d for d in deps])


def process_site_ids(function: Any) -> dict[int, int] | None:
    """Module site id -> process site id for the ``mix.gemm`` ops of one imported function: the
    k-th site of the function is the k-th record of the site block its compilation made (both
    number the sites in source order). None when that compilation linked no site (not compiled
    yet, or it runs as plain Numba); RuntimeError when the sites disagree."""
    from mixjit.ir.dialects.mix import SiteOp

    module_ids = sorted(op.site.value for op in function.func.walk() if isinstance(op, SiteOp))
    if not module_ids:
        return {}
    disp = function.source
    blocks = disp.site_blocks(tuple(function.argtypes)) if isinstance(disp, CompiledSites) else []
    signature = f"({signature_text(tuple(function.argtypes))})"
    own = next((b for b in blocks if isinstance(b, SiteBlock) and b.records
                and b.signature == signature and b.records[0].function == function.qualname), None)
    if own is None:
        return None
    if len(own.records) != len(module_ids) or any(r.function != function.qualname for r in own.records):
        raise RuntimeError(
            f"mixjit: the GEMM sites of {function.qualname}({signature_text(function.argtypes)}) in the "
            "IR do not match those of its compiled code (a mixjit bug; report it with the function)")
    return dict(zip(module_ids, own.site_ids()))


@runtime_checkable
class CompiledSites(Protocol):
    """What :func:`process_site_ids` asks of a function's dispatcher: the site blocks (and
    ``NotLinked`` records) of one compiled signature (mixjit.dispatcher.MixjitDispatcher)."""

    def site_blocks(self, key: tuple) -> list[SiteBlock | NotLinked]: ...
