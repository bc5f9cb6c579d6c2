"""``detect-linalg``: turn ``np.linalg`` calls of imported Python code into ``mix.linalg`` sites.

Candidates are ``py.call`` ops whose ``py.callee`` is ``numpy.linalg.cholesky``,
``numpy.linalg.solve``, ``numpy.linalg.inv``, ``numpy.linalg.lstsq``, ``numpy.linalg.det`` or
``numpy.linalg.slogdet``. A candidate becomes a site when A is a rank-2 float32 or float64 array,
B (``solve``, ``lstsq``) a rank-1 or rank-2 array of the same element type, the result an array
of it (``det``: f64, ``slogdet``: ``tuple<f64, f64>``, as Numba types them), and the call passes
its arguments by position (``lstsq``'s ``rcond`` left to its default). Then the call is replaced by a
``mix.linalg`` op (``fn``: the function) with the next free ``site`` id, numbered after the ids
already in the module (so after detect-gemm's sites), in order of function, source line and
column; ``mix.stmts`` records the ``py.stmt`` id of the call (role ``call``).

``lstsq`` returns ``(x, residuals, rank, s)``; its site is the solution ``x`` alone, so the call
is a site only where the program uses nothing else: its tuple is read by ``[0]`` (directly, or
unpacked with the other items unused). The site then replaces the ``[0]``, and the call, the
unpacking and the unused items go; ``mix.stmts`` adds the ``[0]`` statement (role ``solution``)
and the removed ones (role ``drop``, ids separated by ``,``), which linking removes too.

Other candidates (complex or integer operands, batched arrays, keywords, an ``lstsq`` whose
residuals, rank or singular values are used) are left to Numba,
marked ``mix.not_gemm = {reason = "<code>", detail = "..."}`` like detect-gemm's, with a remark
(``linalg call left to numba: ...``; the reason codes are in detect-gemm's ``REASONS``), so
``f.sites`` and ``mixopt`` say why.
"""

from __future__ import annotations

from dataclasses import dataclass

from mixjit.ir.attributes import DictAttr, IntegerAttr, StringAttr, TypeAttr
from mixjit.ir.core import Operation
from mixjit.ir.dialects import py
from mixjit.ir.dialects.mix import SCALAR_RESULTS, LinalgOp, SiteOp
from mixjit.ir.types import ArrayType, Type, f32, f64, i64
from mixjit.passes.detect_gemm import NOT_GEMM_ATTR, STMTS_ATTR, Rejection, _functions, _loc
from mixjit.passes.pass_base import ModulePass, PassContext
from mixjit.passes.py_attrs import callee_of, stmt_of
from mixjit.passes.registry import register_pass

__all__ = ["DetectLinalg", "detect_linalg", "LINALG_CALLEES", "describe_linalg"]

LINALG_CALLEES = {"numpy.linalg.cholesky": "cholesky", "numpy.linalg.solve": "solve", "numpy.linalg.inv": "inv",
                  "numpy.linalg.lstsq": "lstsq", "numpy.linalg.det": "det", "numpy.linalg.slogdet": "slogdet"}
"""The ``py.callee`` of each ``np.linalg`` function that can be a site -> its ``fn``."""

LINALG_DTYPES = (f32, f64)


def describe_linalg(op: LinalgOp) -> str:
    """``f64 solve(A, B)``, ``f32 cholesky(A)``."""
    return f"{op.dtype.value} {op.fn.value}({'A, B' if op.b is not None else 'A'})"


_TWO_OPERANDS = ("solve", "lstsq")


def _lstsq_solution(op: py.CallOp) -> tuple[py.StaticGetItemOp, list[Operation]] | str:
    """The ``[0]`` of an ``lstsq`` call's tuple and the ops that go with the call (the unpacking,
    the unused items), or why the call is not a site (the program uses more than ``x``)."""
    holder, dropped = op.out, []
    users = holder.users
    if len(users) == 1 and isinstance(users[0], py.ExhaustIterOp):
        dropped.append(users[0])
        holder = users[0].out
        users = holder.users
    if not all(isinstance(u, py.StaticGetItemOp) and isinstance(u.index, IntegerAttr) for u in users):
        return "the program uses the result tuple itself, not only its solution [0]"
    solutions = [u for u in users if u.index.value == 0]
    others = [u for u in users if u.index.value != 0]
    if len(solutions) != 1:
        return "the program reads the solution [0] more than once, or not at all"
    if any(u.out.has_uses for u in others):
        return "the program uses the residuals, rank or singular values, which only LAPACK's SVD (gelsd) computes"
    return solutions[0], dropped + others


def _rejection(fn: str, op: py.CallOp,
               solution: tuple[py.StaticGetItemOp, list[Operation]] | str | None) -> tuple[str, str] | None:
    """(reason, detail) when the call ``op`` of ``np.linalg.<fn>`` is not a site, else None;
    ``solution``: what :func:`_lstsq_solution` gave for an ``lstsq`` call (None for the others)."""
    wanted = 2 if fn in _TWO_OPERANDS else 1
    if op.kwnames or len(op.args) != wanted:
        return "linalg-arguments", f"np.linalg.{fn} takes {wanted} positional argument(s), got {len(op.args)}"
    labelled: list[tuple[str, Type, tuple[int, ...]]] = [("A", op.args[0].type, (2,))]
    if fn in _TWO_OPERANDS:
        labelled.append(("B", op.args[1].type, (1, 2)))
    if isinstance(solution, str):
        return "linalg-lstsq", solution
    if solution is not None:
        labelled.append(("the solution", solution[0].out.type, (1, 2)))
    elif fn not in SCALAR_RESULTS:
        labelled.append(("the result", op.out.type, (1, 2)))
    elif op.out.type != SCALAR_RESULTS[fn]:
        return "linalg-dtype", f"np.linalg.{fn} gives {op.out.type}, not {SCALAR_RESULTS[fn]}"
    for label, t, _ in labelled:
        if not isinstance(t, ArrayType):
            return "not-an-array", f"{label} is {t}"
    dtypes = {t.dtype for _, t, _ in labelled if isinstance(t, ArrayType)}
    if len(dtypes) != 1 or next(iter(dtypes)) not in LINALG_DTYPES:
        return "linalg-dtype", "element types " + ", ".join(sorted(str(d) for d in dtypes))
    for label, t, ranks in labelled:
        assert isinstance(t, ArrayType)
        if t.rank not in ranks:
            return "linalg-shape", f"{label} is {t.rank}-D"
    return None


def _roles(call: py.CallOp, solution: Operation, dropped: list[Operation]) -> dict[str, StringAttr]:
    """``mix.stmts`` of a site: the call's statement, and for ``lstsq`` the solution's and the
    dropped ones'."""
    roles = {"call": stmt_of(call)}
    if solution is not call:
        roles["solution"] = stmt_of(solution)
        roles["drop"] = ",".join(filter(None, (stmt_of(o) for o in dropped)))
    return {k: StringAttr(v) for k, v in roles.items() if v}


def detect_linalg(module: Operation) -> list[Rejection]:
    """Rewrite the ``np.linalg`` candidates of ``module`` into ``mix.linalg`` sites (see the module
    docstring); returns the candidates left to Numba, in op order."""
    used = [op.site.value for op in module.walk() if isinstance(op, SiteOp)]
    next_site = max(used, default=-1) + 1
    found: list[tuple[tuple, LinalgOp]] = []
    rejected: list[Rejection] = []
    for findex, (name, fn_op) in enumerate(_functions(module)):
        for position, op in enumerate(list(fn_op.walk())):
            callee = (callee_of(op) or "") if isinstance(op, py.CallOp) else ""
            fn = LINALG_CALLEES.get(callee)
            if fn is None or op.erased or NOT_GEMM_ATTR in op.attributes:
                continue
            assert isinstance(op, py.CallOp)
            solution = _lstsq_solution(op) if fn == "lstsq" else None
            why = _rejection(fn, op, solution)
            loc = _loc(op)
            if why is not None:
                op.attributes[NOT_GEMM_ATTR] = DictAttr({"reason": StringAttr(why[0]), "detail": StringAttr(why[1])})
                rejected.append(Rejection(op, name, why[0], why[1], loc))
                continue
            assert fn is not None  # _rejection refused everything else
            replaced: py.CallOp | py.StaticGetItemOp = op
            dropped: list[Operation] = []
            if solution is not None:
                assert not isinstance(solution, str)  # _rejection refused it
                replaced, dropped = solution
            a_type = op.args[0].type
            assert isinstance(a_type, ArrayType)
            site = LinalgOp.build(a=op.args[0], b=op.args[1] if fn in _TWO_OPERANDS else None, out=replaced.out.type,
                                  fn=StringAttr(fn), site=IntegerAttr(0, i64), dtype=TypeAttr(a_type.dtype),
                                  loc=op.loc)
            site.text_loc = op.text_loc
            site.attributes[STMTS_ATTR] = DictAttr(_roles(op, replaced, dropped))
            block = op.parent
            assert block is not None
            block.insert_op_before(site, op)
            site.result.name_hint = replaced.result.name_hint
            replaced.result.replace_all_uses_with(site.result)
            for gone in [replaced, *reversed(dropped)] if replaced is not op else []:
                gone.erase()
            op.erase()
            found.append(((findex, loc.file, loc.line, loc.col, position), site))
    for _, site in sorted(found, key=lambda item: item[0]):
        site.properties["site"] = IntegerAttr(next_site, i64)
        next_site += 1
    return rejected


@register_pass
@dataclass(frozen=True)
class DetectLinalg(ModulePass):
    """Turn np.linalg cholesky/solve/inv/lstsq/det/slogdet calls on float32/float64 arrays into mix.linalg sites."""

    name = "detect-linalg"

    def apply(self, module: Operation) -> None:
        detect_linalg(module)

    def run(self, module: Operation, context: PassContext) -> None:
        """Detect, then emit a remark for every call left to numba, in op order."""
        for rejection in detect_linalg(module):
            context.emit(rejection.diagnostic())
