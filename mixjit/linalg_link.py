"""Link ``mix.linalg`` sites (``np.linalg.cholesky``, ``solve``, ``inv``, ``lstsq(...)[0]``, ``det``,
``slogdet``) of a Numba function to their plans.

A linked call ``x = np.linalg.solve(a, b)`` becomes ``x = <wrapper>(a, b, $site)``, where the
wrapper is compiled code (``@njit``) that counts the call (the site counter and call limit the
GEMM entry keeps, so tuning's run limits hold), logs its shape when profiling (``(m, nrhs, n)``,
A being m x n: the cost model's size), reads word 0 of the site's plan row and then

* ``native`` (``EXEC_NATIVE``, every site's plan before tuning): calls the same
  ``np.linalg`` function Numba compiles, in compiled code: bit for bit what ``@njit`` gives,
  Numba's exceptions included;
* a blocked candidate (``EXEC_LINALG``, scheme ``linalg``: runtime/linalg, config
  ``block=64,gemm=mixpert[level=IV],refine=on``): runs it with the GIL held, in a
  ``with objmode`` block, through :func:`run_planned` (mixjit.runtime.linalg.solve.run_linalg:
  Python loops over panels, compiled panel steps, the products by the scheme's executor, the
  LAPACK fallback). The trip into Python costs tens of microseconds per call, small beside the
  factorization of a matrix large enough for a blocked candidate to pay.

In a ``prange`` body a blocked candidate runs too, its Python part one call at a time (the GIL).
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, objmode, types
from numba.core import ir

from mixjit.entry import EXEC_LINALG, EXEC_NATIVE
from mixjit.entry.tables import _count_call, _limit_load, _plan_word, _profile_load, _record_shape
from mixjit.linking import LinkError, TypedState, _typed_call, replace_value, require_symbol, site_var_stmts
from mixjit.plan import LINALG_SCHEME

__all__ = ["LinalgCall", "resolve_linalg", "link_linalg_call", "linalg_wrapper", "run_planned", "linalg_stats",
           "LINALG_SCHEME"]



@dataclass(frozen=True, eq=False)
class LinalgCall:
    """A ``mix.linalg`` site resolved to typed Numba IR: the call statement ``stmt`` (``x =
    np.linalg.<fn>(args)``) in block ``block``; for ``lstsq``, ``result`` is the statement that
    takes its solution (``x = $t[0]``) and ``dropped`` the call's other statements (the call, the
    unpacking, the unused items), which linking removes; otherwise ``result`` is ``stmt``."""

    block: int
    stmt: ir.Assign
    fn: str
    args: tuple[ir.Var, ...]
    dtype: types.Float
    result: ir.Assign
    dropped: tuple[ir.Stmt, ...] = ()

    @property
    def loc(self) -> ir.Loc:
        return self.stmt.loc

    @property
    def form(self) -> str:
        """The call as the source wrote it: ``np.linalg.solve(a, b)``, ``np.linalg.lstsq(a, b)[0]``."""
        return f"np.linalg.{self.fn}({', '.join('ab'[:len(self.args)])}){'[0]' if self.fn == 'lstsq' else ''}"


def resolve_linalg(state: TypedState, stmts: dict[str, ir.Stmt], site: Any) -> LinalgCall:
    """The LinalgCall of a detect-linalg site, from its ``mix.stmts`` roles ``call`` (and, for
    ``lstsq``, ``solution`` and ``drop``)."""
    roles = site.stmts
    stmt = stmts.get(roles.get("call", ""))
    result = stmts.get(roles.get("solution", roles.get("call", "")))
    dropped = [stmts.get(i) for i in roles.get("drop", "").split(",") if i]
    ok = isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call"
    if not ok or not isinstance(result, ir.Assign) or any(d is None for d in dropped):
        raise LinkError(f"mixjit: linalg site {site.site} at {site.loc} names statements {roles} that the "
                        "imported function does not have (mix.stmts and py.stmt disagree: an importer bug)")
    assert isinstance(stmt, ir.Assign)
    extra = (stmt, *dropped) if result is not stmt else ()
    return LinalgCall(int(roles["call"].split(":")[0]), stmt, site.op.fn.value, tuple(stmt.value.args),
                      state.typemap[stmt.value.args[0].name].dtype, result, tuple(d for d in extra if d is not None))


@njit
def _enter(site, m, nrhs, n):
    """Count a call of ``site`` (its call limit applies), log its shape ``(m, nrhs, n)`` when
    profiling (A is m x n); word 0 of its plan row."""
    calls = _count_call(site)
    limit = _limit_load(site)
    if limit != 0 and calls >= limit:
        raise RuntimeError("mixjit linalg site passed its call limit (mixjit.entry.set_call_limits): a tuning "
                           "evaluation stopped a run making far more calls than its reference run")
    if _profile_load(0) != 0:
        _record_shape(site, m, nrhs, n)
    return _plan_word(site, 0)


@njit
def _lstsq_solution(a, b):
    return np.linalg.lstsq(a, b)[0]


@njit
def _no_plan():
    raise RuntimeError("mixjit linalg site has no plan; give it one with mixjit.plan.set_plan()")


@functools.cache
def linalg_wrapper(fn: str, out_type: types.Type):
    """The compiled wrapper of ``np.linalg.<fn>`` sites whose result has Numba type ``out_type``:
    ``(a[, b], site) -> result`` (see the module docstring)."""
    layout = getattr(out_type, "layout", "")  # det, slogdet: a float64 or a tuple of two
    if fn in ("solve", "lstsq"):
        native2 = np.linalg.solve if fn == "solve" else _lstsq_solution

        @njit
        def two_operand_site(a, b, site):
            code = _enter(site, a.shape[0], b.size // max(b.shape[0], 1), a.shape[1])
            if code == EXEC_NATIVE:
                return native2(a, b)
            if code != EXEC_LINALG:
                _no_plan()
            with objmode(x=out_type):
                x = run_planned(fn, a, b, site, layout)
            return x

        return two_operand_site
    natives = {"cholesky": np.linalg.cholesky, "inv": np.linalg.inv, "det": np.linalg.det, "slogdet": np.linalg.slogdet}
    if fn not in natives:
        raise ValueError(f"mixjit: no linalg wrapper for np.linalg.{fn}")
    native = natives[fn]
    square_rhs = fn == "inv"  # inv solves for n right-hand sides (the identity)

    @njit
    def one_operand_site(a, site):
        code = _enter(site, a.shape[0], a.shape[0] if square_rhs else 0, a.shape[0])
        if code == EXEC_NATIVE:
            return native(a)
        if code != EXEC_LINALG:
            _no_plan()
        with objmode(x=out_type):
            x = run_planned(fn, a, None, site, layout)
        return x

    return one_operand_site


_stats_lock = threading.Lock()
_stats: dict[int, Counter] = {}


def linalg_stats(site: int) -> dict[str, int]:
    """What the blocked candidates of ``site`` did in this process: ``calls``, ``fallbacks`` (LAPACK
    recomputed the call), ``gemm_calls``, ``gemm_fallbacks`` and ``refine_steps``."""
    with _stats_lock:
        return dict(_stats.get(site, Counter()))


def _count(site: int, stats: Any) -> None:
    """Add one blocked call's statistics to ``site``'s (:func:`linalg_stats`)."""
    with _stats_lock:
        count = _stats.setdefault(site, Counter())
        count.update(calls=1, fallbacks=stats.fallbacks, gemm_calls=stats.extra.get("gemm_calls", 0),
                     gemm_fallbacks=stats.extra.get("gemm_fallbacks", 0),
                     refine_steps=stats.extra.get("refine_steps", 0))


def run_planned(fn: str, a: np.ndarray, b: np.ndarray | None, site: int, layout: str) -> Any:
    """Run ``np.linalg.<fn>(a[, b])`` under ``site``'s blocked plan (the object-mode half of the
    wrapper), in memory layout ``layout`` (``C`` or ``F``, the layout Numba's function returns)."""
    from mixjit.plan import get_plan
    from mixjit.runtime.linalg.solve import run_linalg

    plan = get_plan(site)
    if plan is None or plan.scheme != LINALG_SCHEME:
        raise RuntimeError(f"mixjit: linalg site {site} runs a blocked plan but its plan is {plan}; "
                           "set it with mixjit.plan.set_plan()")
    result, stats = run_linalg(fn, a, b, plan.config)
    _count(site, stats)
    if not isinstance(result, np.ndarray):  # det: a float, slogdet: (sign, logdet)
        return result
    return np.asfortranarray(result) if layout == "F" and result.ndim == 2 else np.ascontiguousarray(result)


def link_linalg_call(state: TypedState, call: LinalgCall, block_symbol: str, local: int) -> None:
    """Replace ``call`` in the typed IR by its wrapper's call for site ``local`` of the site block
    ``block_symbol`` (see the module docstring). LinkError when the block is not registered or the
    wrapper would change the result type."""
    require_symbol(block_symbol)
    block = state.func_ir.blocks[call.block]
    if not any(s is call.stmt for s in block.body):
        raise LinkError(f"mixjit: the linalg call at {call.loc.short()} was already linked or rewritten since "
                        "it was found; link each LinalgCall once, right after finding it")
    if not all(any(s is d for s in block.body) for d in (call.result, *call.dropped)):
        raise LinkError(f"mixjit: the np.linalg.{call.fn} call at {call.loc.short()} and the statements taking its "
                        "solution are not in one block (a linking bug)")
    loc, scope = call.stmt.loc, block.scope
    new_stmts, site_var = site_var_stmts(state, scope, loc, block_symbol, local)
    out_type = state.typemap[call.result.target.name]
    wrapper = linalg_wrapper(call.fn, out_type)
    fn_defs, new, sig = _typed_call(state, scope, loc, wrapper, [*call.args, site_var], f"linalg_{call.fn}")
    if sig.return_type != out_type:
        raise LinkError(f"mixjit: cannot link the np.linalg.{call.fn} call at {call.loc.short()}: the wrapper "
                        f"gives {sig.return_type}, the program expects {out_type}")
    replace_value(state, call.result, new)
    for gone in call.dropped:  # lstsq: the call and its unused items
        assert isinstance(gone, ir.Assign)
        state.calltypes.pop(gone.value, None)
        state.func_ir._definitions[gone.target.name].remove(gone.value)
        block.body.remove(gone)
    idx = next(i for i, s in enumerate(block.body) if s is call.result)
    block.body[idx:idx] = new_stmts + fn_defs
