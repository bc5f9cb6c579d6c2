"""Link GEMM sites of a Numba function to the mixjit run-time entry point.

Design note (Numba 0.68 / llvmlite 0.50)
-----------------------------------------
Mechanism. The run-time entry (``mixjit.entry``) is a Numba ``@cfunc`` with a
plain C ABI. ``ensure_entry_linked`` compiles it once per process and registers
its address under ``ENTRY_SYMBOL`` with ``llvmlite.binding.add_symbol``, then
reads it back with ``address_of_symbol``. A GEMM site is linked on the *typed*
Numba IR, in the pipeline's typed-IR hook (``mixjit.numba_pipeline``), before
Numba's rewrites, parfor conversion and lowering::

    $c = call np.dot(a, b)          $sf = global(site_of: intrinsic)
    $c = a @ b                 ->   $l  = const(int, 0)          # local index
                                    $s  = call $sf($l)            # base + local
                                    $fn = global(gemm_alloc: CPUDispatcher)
                                    $c  = call $fn(a, b, $s)
    $x = C[idx]                     $x = C[idx]
    $t = a @ b                 ->   (removed)
    $r = inplace_binop(-=, $x, $t)  $r = call gemm_update(a, b, $x, -1.0, 1.0, $s)
    C[idx] = $r                     C[idx] = $r

``gemm_alloc`` / ``gemm_update`` are ordinary ``@njit``
wrappers: they check the shapes, allocate the result (or take ``out`` / the
view) and call the ``_call_entry`` intrinsic, which emits a direct LLVM ``call
@mixjit_gemm_entry(site, dtype, m, n, k, alpha, beta, a, a_s0, a_s1, b, ...,
c, ...)`` with data pointers and byte strides. The rewrite types the new calls
itself: ``typemap`` gets the callees' types and the constants' ``intp`` /
``float64``; ``calltypes`` gets the signatures ``typingctx.resolve_function_type``
returns (this compiles the wrappers); old ``calltypes`` entries and
``func_ir._definitions`` are updated. The wrappers' code is linked into the
caller's library, so ``inspect_llvm()`` of the user function shows ``call ...
@mixjit_gemm_entry`` and no ``numba_xxgemm``. Lowering emits calls to symbols
that do not exist in the module; MCJIT resolves them through the ``add_symbol``
table when the code is finalized.

Site ids. Compiled code never contains a site id: a site is ``base + local``,
where ``base`` is loaded from a per-compilation *site block* symbol
(``mixjit.entry.register_site_block``) and ``local`` numbers the sites of that
compilation. A block is registered under a name derived from what was compiled
(and, for cached code, again when the cache is loaded, by a ``reload_init``
hook: see ``mixjit.cache``), so cached object code gets fresh site ids, plans
and counters in every process.

Why this shape, and what not to repeat:

* A missing symbol is not a Python error: when the module is finalized, LLVM
  fails to resolve it and the process dies (a segfault with llvmlite 0.50, an
  "LLVM ERROR" abort with others). So every codegen that names an external
  symbol checks ``address_of_symbol`` first (``require_symbol``) and raises
  ``LinkError``.
* The entry must be compiled code. A ctypes/cffi callback costs ~20 µs and
  takes the GIL, and GEMM sites sit in hot loops and ``prange`` bodies.
* The entry's BLAS call goes straight to Numba's ``numba_xxgemm`` helper with
  transposition flags and leading dimensions. Calling ``np.dot`` on views built
  for each operand layout (C, F, strided) took 6-7 s to compile (one ``np.dot``
  instantiation per layout and dtype), and Numba's slice assignment
  (``c[:, :] = t``) alone cost ~3 s; the entry uses element loops instead.
  Compiled from scratch the entry takes about a minute (the MixPert executor
  included); it is cached to disk (``cfunc(cache=True)``) and loads in under a
  second afterwards.
* No process address may be baked into cached code. The user function only
  names symbols (entry, site block); the entry reaches counters and plans
  through ``COUNTERS_SYMBOL`` / ``PLANS_SYMBOL``. Anything that loads cached
  code calling the entry must call ``ensure_entry_linked()`` first (the cache's
  reload hook does).
* The fused update keeps ``C[idx] = $r``: for a slice ``$x`` is a view and the
  store copies it onto itself; for a fancy index ``$x`` is a copy and the store
  is what writes the result back. Either way the semantics are Numba's.
* ``PassRegistry.find_by_name`` is broken in Numba 0.68: passes are placed by
  class.
* ``np.matmul`` is not typed by Numba 0.68; ``numba_pipeline`` rewrites it to
  ``@`` before typing, so only ``np.dot`` and ``@`` reach this module.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as llir
from numba import njit, types
from numba.core import cgutils, ir
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from mixjit.entry import DTYPE_CODES, ENTRY_SYMBOL, entry_cfunc
from mixjit.numba_pipeline import StageError, stage


class LinkError(RuntimeError):
    """A GEMM site could not be linked to a run-time entry point."""


def require_symbol(name: str) -> int:
    """Address of ``name`` in llvmlite's symbol table; LinkError if it is missing.

    Call this before emitting a call to an external symbol: an unresolved
    symbol aborts the whole process when LLVM finalizes the module."""
    addr = llvm.address_of_symbol(name)
    if not addr:
        raise LinkError(
            f"mixjit: symbol {name!r} is not registered with llvmlite, so compiled code "
            "cannot call it; register it first (mixjit.linking.ensure_entry_linked() for "
            "the GEMM entry, mixjit.entry.register_site_block() for site blocks, or "
            "llvmlite.binding.add_symbol)"
        )
    return addr


_link_lock = threading.Lock()


def ensure_entry_linked() -> int:
    """Compile the GEMM entry (once per process) and register it under
    ``ENTRY_SYMBOL``; returns its address."""
    with _link_lock:
        addr = llvm.address_of_symbol(ENTRY_SYMBOL)
        if not addr:
            llvm.add_symbol(ENTRY_SYMBOL, entry_cfunc().address)
            addr = require_symbol(ENTRY_SYMBOL)
        return addr


_GEMM_DTYPES = (types.float64, types.float32, types.complex128, types.complex64)


def _is_gemm_operand(ty: types.Type) -> bool:
    return isinstance(ty, types.Array) and ty.ndim == 2 and ty.dtype in _GEMM_DTYPES


@intrinsic
def _call_entry(typingctx, site, a, b, c, alpha, beta):
    """Call ``ENTRY_SYMBOL`` for ``c = alpha * a @ b + beta * c`` (2-D arrays of
    one float or complex dtype); returns the entry's int32 status."""
    if not all(_is_gemm_operand(t) for t in (a, b, c)) or len({a.dtype, b.dtype, c.dtype}) != 1:
        return None
    sig = types.int32(types.intp, a, b, c, types.float64, types.float64)

    def codegen(context, builder, sig, args):
        require_symbol(ENTRY_SYMBOL)
        site_v = args[0]
        i64 = llir.IntType(64)
        voidp = llir.IntType(8).as_pointer()
        ops = []
        for ty, val in zip(sig.args[1:4], args[1:4]):
            ary = make_array(ty)(context, builder, val)
            ops.append((builder.bitcast(ary.data, voidp), cgutils.unpack_tuple(builder, ary.shape),
                        cgutils.unpack_tuple(builder, ary.strides)))
        (pa, (m, k), sa), (pb, (_, n), sb), (pc, _, sc) = ops
        dtype_code = i64(DTYPE_CODES[np.dtype(sig.args[1].dtype.name)])
        f64 = llir.DoubleType()
        fnty = llir.FunctionType(llir.IntType(32), [i64] * 5 + [f64, f64] + [voidp, i64, i64] * 3)
        fn = cgutils.get_or_insert_function(builder.module, fnty, ENTRY_SYMBOL)
        return builder.call(fn, [site_v, dtype_code, m, n, k, args[4], args[5],
                                 pa, *sa, pb, *sb, pc, *sc])

    return sig, codegen


@functools.cache
def site_of(symbol: str):
    """An intrinsic ``site_of(local) -> intp``: the site id ``base + local`` where
    ``base`` is read from the site block ``symbol`` (mixjit.entry.register_site_block)."""

    @intrinsic
    def _site_of(typingctx, local):
        sig = types.intp(types.intp)

        def codegen(context, builder, sig, args):
            require_symbol(symbol)
            i64 = llir.IntType(64)
            cell = builder.module.globals.get(symbol)
            if cell is None:
                cell = llir.GlobalVariable(builder.module, i64, symbol)
                cell.linkage = "external"
            return builder.add(builder.load(cell), args[0])

        return sig, codegen

    return _site_of


@njit
def _check_status(status):
    if status != 0:
        raise RuntimeError(
            "mixjit GEMM entry failed; look the code up in mixjit.entry.ENTRY_ERRORS", status
        )


@njit
def _check_inner(a, b):
    if b.shape[0] != a.shape[1]:
        raise ValueError("mixjit GEMM: inner dimensions differ (a is m x k, b must be k x n)")


@njit
def gemm_alloc(a, b, site):
    """``a @ b`` through the entry for ``site``, into a new C-ordered array."""
    _check_inner(a, b)
    c = np.empty((a.shape[0], b.shape[1]), a.dtype)
    _check_status(_call_entry(site, a, b, c, 1.0, 0.0))
    return c


@njit
def gemm_update(a, b, c, alpha, beta, site):
    """``c = alpha * a @ b + beta * c`` in place through the entry for ``site``
    (``c -= a @ b`` is alpha = -1, beta = 1); returns ``c``.

    A product that only broadcasts to ``c`` (a single row or column, as Numba's
    ``-=`` allows) is computed into a temporary and combined element by element."""
    _check_inner(a, b)
    m, n = a.shape[0], b.shape[1]
    if c.shape[0] == m and c.shape[1] == n:
        _check_status(_call_entry(site, a, b, c, alpha, beta))
        return c
    if (m != 1 and m != c.shape[0]) or (n != 1 and n != c.shape[1]):
        raise ValueError("mixjit GEMM: a @ b does not broadcast to the shape of the updated array")
    t = np.empty((m, n), a.dtype)
    _check_status(_call_entry(site, a, b, t, 1.0, 0.0))
    av, bv = c.dtype.type(alpha), c.dtype.type(beta)
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            c[i, j] = av * t[i if m > 1 else 0, j if n > 1 else 0] + bv * c[i, j]
    return c


@dataclass(frozen=True, eq=False)
class GemmCall:
    """A GEMM site resolved to typed Numba IR: the statement ``stmt``
    (``$p = a @ b`` or ``np.dot(a, b)``) in block ``block`` and, for a fused
    update (``C[idx] -= a @ b``), the statement ``update`` (``$r =
    inplace_binop($x, $p)``) it replaces with ``$x = alpha * a @ b + beta * $x``."""

    block: int
    stmt: ir.Assign
    expr: ir.Expr
    a: ir.Var
    b: ir.Var
    dtype: types.Float
    update: ir.Assign | None = None
    alpha: float = 1.0
    beta: float = 0.0
    load: ir.Assign | None = None
    store: ir.Stmt | None = None

    @property
    def loc(self) -> ir.Loc:
        return self.stmt.loc


class TypedState(Protocol):
    """What linking needs from Numba's compiler state (a ``StateDict`` fits)."""

    func_ir: ir.FunctionIR
    typemap: dict
    calltypes: dict
    typingctx: object


@dataclass
class FoundSites:
    """The GEMM sites of one compilation: ``calls`` in site order (the index is
    the site's local id), the ``pipeline`` run that found them (module, remarks,
    analyses: ``pipeline.dag`` is the cached GEMM DAG) and the ``imported`` function."""

    calls: list[GemmCall]
    pipeline: Any
    imported: Any

    @property
    def sites(self) -> list[Any]:
        """The detect-gemm sites (``GemmSite``), in the order of ``calls``."""
        return self.pipeline.sites

    @property
    def rejected(self) -> list[Any]:
        """The candidates left to Numba (``Rejection``), from detect-gemm's remarks."""
        return self.pipeline.rejections

    @property
    def report(self) -> Any:
        """``sites`` and ``rejected`` as a ``DetectionReport``."""
        from mixjit.passes.detect_gemm import DetectionReport

        return DetectionReport(self.sites, self.rejected)


def find_sites(state: TypedState) -> FoundSites:
    """Import the typed IR of ``state`` into mix IR, run the frontend pass pipeline
    (``mixjit.frontend_pipeline``: detect-gemm, build-dag, through the pass manager
    with verify-each) on it and resolve every ``mix.gemm`` to the Numba statements
    its ``mix.stmts`` name. Does not modify the Numba IR.

    Raises ``StageError`` naming the stage that failed: ``import`` (e.g. a
    ``mixjit.importer.FrontendError`` for IR the importer cannot represent), the
    failing pass (``detect-gemm``, ``build-dag (after detect-gemm)``), ``pass-pipeline``
    (the pipeline could not be built) or ``resolve``."""
    from mixjit import importer
    from mixjit.frontend_pipeline import failure_stage, run_frontend_pipeline
    from mixjit.ir.dialects.builtin import ModuleOp
    from mixjit.passes.manager import PassFailure

    with stage("import"):
        imported = importer.import_typed_ir(state)
    try:
        result = run_frontend_pipeline(ModuleOp.from_ops([imported.func]))
    except PassFailure as failure:
        raise StageError(failure_stage(failure), failure.cause) from failure
    except Exception as error:  # the pipeline could not be built (a registry problem)
        raise StageError("pass-pipeline", error) from error
    with stage("resolve"):
        calls = [_resolve(state, imported.stmts, site) for site in result.sites]
    return FoundSites(calls, result, imported)


def _resolve(state: TypedState, stmts: dict[str, ir.Stmt], site: Any) -> GemmCall:
    """The GemmCall of a detect-gemm site, from its ``mix.stmts`` roles."""
    ids = site.stmts
    product = stmts.get(ids.get("product", ""))
    update = stmts.get(ids["update"]) if "update" in ids else None
    load = stmts.get(ids["load"]) if "load" in ids else None
    store = stmts.get(ids["store"]) if "store" in ids else None
    method = stmts.get(ids["method"]) if "method" in ids else None
    if (product is None or ("update" in ids and None in (update, load, store))
            or ("method" in ids and method is None)):
        raise LinkError(
            f"mixjit: GEMM site {site.site} at {site.loc} names statements {ids} that the "
            "imported function does not have (mix.stmts and py.stmt disagree: an importer bug)"
        )
    expr = product.value
    if expr.op == "binop":
        a, b = expr.lhs, expr.rhs
    elif method is not None:  # a.dot(b): A is the object of the bound method's getattr
        a, b = method.value.value, expr.args[0]
    else:
        a, b = expr.args
    return GemmCall(
        block=int(ids["product"].split(":")[0]), stmt=product, expr=expr, a=a, b=b,
        dtype=state.typemap[product.target.name].dtype, update=update,
        alpha=float(site.op.alpha.value), beta=float(site.op.beta.value), load=load, store=store,
    )


def _typed_call(state: TypedState, scope: ir.Scope, loc: ir.Loc, callee: object, args: list[ir.Var],
                name: str) -> tuple[list[ir.Assign], ir.Expr, object]:
    """Statements defining ``callee`` as a global, the call expression of it on
    ``args`` (already typed) and the call's resolved signature."""
    fn_var = scope.redefine(f"$mixjit_{name}", loc)
    fn_value = ir.Global(getattr(callee, "__name__", name), callee, loc)
    fnty = state.typingctx.resolve_value_type(callee)
    sig = state.typingctx.resolve_function_type(fnty, tuple(state.typemap[v.name] for v in args), {})
    if sig is None:
        raise LinkError(f"mixjit: cannot type the call of {name} on "
                        f"{[str(state.typemap[v.name]) for v in args]} at {loc.short()}")
    state.typemap[fn_var.name] = fnty
    state.func_ir._definitions[fn_var.name] = [fn_value]
    call = ir.Expr.call(fn_var, args, (), loc)
    state.calltypes[call] = sig
    return [ir.Assign(fn_value, fn_var, loc)], call, sig


def _const(state: TypedState, scope: ir.Scope, loc: ir.Loc, value: object, ty: types.Type,
           name: str) -> tuple[ir.Assign, ir.Var]:
    var = scope.redefine(f"$mixjit_{name}", loc)
    const = ir.Const(value, loc)
    state.typemap[var.name] = ty
    state.func_ir._definitions[var.name] = [const]
    return ir.Assign(const, var, loc), var


def _basic_index(ty: types.Type) -> bool:
    """Is an index of Numba type ``ty`` basic indexing (slices, integers, ellipsis, None),
    which gives a view of the array, never a copy?"""
    if isinstance(ty, types.BaseTuple):
        return all(_basic_index(t) for t in ty.types)
    return isinstance(ty, (types.SliceType, types.Integer, types.EllipsisType, types.NoneType))


def _store_copies_view_onto_itself(state: TypedState, call: GemmCall) -> bool:
    """Does the fused update's store (``C[idx] = r``) copy the view ``C[idx]``, which
    ``gemm_update`` updated in place and returns, onto itself? Then it changes no bit, and
    dropping it spares a copy per call and the compile of Numba's slice assignment
    (seconds: its shape-mismatch message). True only for an array ``C`` and basic indexing."""
    load, store = call.load, call.store
    if load is None or store is None or not isinstance(state.typemap.get(load.value.value.name), types.Array):
        return False
    index = load.value.index if load.value.op == "getitem" else load.value.index_var
    return index is not None and _basic_index(state.typemap[index.name])


def _remove_stmt(state: TypedState, stmt: ir.Stmt) -> None:
    """Remove ``stmt`` (a statement without a target, such as a setitem) from its block."""
    for block in state.func_ir.blocks.values():
        if any(s is stmt for s in block.body):
            block.body[:] = [s for s in block.body if s is not stmt]
            state.calltypes.pop(stmt, None)
            return
    raise LinkError(f"mixjit: the statement {stmt} at {stmt.loc.short()} is in no block (a linking bug)")


def site_var_stmts(state: TypedState, scope: ir.Scope, loc: ir.Loc, block_symbol: str,
                   local: int) -> tuple[list[ir.Assign], ir.Var]:
    """Typed statements computing the site id ``base + local`` of site block ``block_symbol`` into
    a new variable, and that variable (what a linked call passes as its site)."""
    local_def, local_var = _const(state, scope, loc, local, types.intp, "site_local")
    site_fn = site_of(block_symbol)
    state.typingctx.refresh()  # a new site_of intrinsic registers its typing on creation
    site_defs, site_call, site_sig = _typed_call(state, scope, loc, site_fn, [local_var], "site_of")
    site_var = scope.redefine("$mixjit_site", loc)
    state.typemap[site_var.name] = site_sig.return_type
    state.func_ir._definitions[site_var.name] = [site_call]
    return [local_def, *site_defs, ir.Assign(site_call, site_var, loc)], site_var


def replace_value(state: TypedState, target: ir.Assign, new: ir.Expr) -> None:
    """Make ``target`` assign ``new`` instead of its old value, keeping ``calltypes`` and
    ``func_ir._definitions`` consistent."""
    old = target.value
    state.calltypes.pop(old, None)
    defs = state.func_ir._definitions[target.target.name]
    defs[:] = [new if d is old else d for d in defs]
    target.value = new


def link_gemm_call(state: TypedState, call: GemmCall, block_symbol: str, local: int) -> None:
    """Replace ``call`` in the typed IR by a call of the entry for site
    ``local`` of the site block ``block_symbol``.

    Keeps ``typemap``, ``calltypes`` and ``func_ir._definitions`` consistent,
    so Numba's later passes and lowering accept the IR. Raises LinkError if the
    entry or the block is not registered, or the replacement would change the
    result type."""
    ensure_entry_linked()
    require_symbol(block_symbol)
    func_ir = state.func_ir
    block = func_ir.blocks[call.block]
    idx = next((i for i, s in enumerate(block.body) if s is call.stmt), None)
    if idx is None or call.stmt.value is not call.expr:
        raise LinkError(
            f"mixjit: the GEMM at {call.loc.short()} was already linked or rewritten since "
            "it was found; link each GemmCall once, right after finding it"
        )
    loc, scope = call.stmt.loc, block.scope
    new_stmts, site_var = site_var_stmts(state, scope, loc, block_symbol, local)

    if call.update is None:
        target = call.stmt
        wrapper, args = gemm_alloc, [call.a, call.b]
    else:
        target = call.update
        alpha_def, alpha_var = _const(state, scope, loc, call.alpha, types.float64, "alpha")
        beta_def, beta_var = _const(state, scope, loc, call.beta, types.float64, "beta")
        new_stmts += [alpha_def, beta_def]
        wrapper, args = gemm_update, [call.a, call.b, call.update.value.lhs, alpha_var, beta_var]
    fn_defs, new, sig = _typed_call(state, scope, loc, wrapper, args + [site_var], "gemm_fn")
    target_ty = state.typemap[target.target.name]
    if sig.return_type != target_ty:
        raise LinkError(
            f"mixjit: cannot link the GEMM at {call.loc.short()}: the entry wrapper gives "
            f"{sig.return_type}, the program expects {target_ty}"
        )
    new_stmts += fn_defs

    replace_value(state, target, new)
    if call.update is not None:  # the product's own statement goes away
        state.calltypes.pop(call.expr, None)
        func_ir._definitions[call.stmt.target.name].remove(call.expr)
        block.body.remove(call.stmt)
        if _store_copies_view_onto_itself(state, call):
            _remove_stmt(state, call.store)
    tidx = next(i for i, s in enumerate(block.body) if s is target)
    block.body[tidx:tidx] = new_stmts
