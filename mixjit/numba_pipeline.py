"""The Numba compiler pipeline that mixjit compiles user functions with.

``make_pipeline(hook, untyped_hook)`` returns a ``CompilerBase`` subclass for
``numba.njit(pipeline_class=...)``. It is Numba's own nopython pipeline plus
three passes:

* ``CanonicalizeMatmul`` (untyped, right before type inference) rewrites
  ``np.matmul(a, b)`` into the binop ``a @ b``: Numba 0.68 has no typing for
  ``np.matmul`` and would reject the function, while ``@`` on 2-D arrays is
  typed like ``np.dot``. ``matmul_targets(state)`` names the variables it
  rewrote, so reports can still say ``np.matmul``.
* ``UntypedIRHook`` (next, right before type inference, after Numba's own
  inlining) calls the pipeline's untyped hook with the compiler state; the
  frontend uses it to swap the ``@njit`` callees of a function for their mixjit
  versions before they are typed.
* ``TypedIRHook`` (right after ``NopythonTypeInference``) calls the pipeline's
  hook with the compiler state, whose ``func_ir``, ``typemap``, ``calltypes``,
  ``typingctx``, ``args`` and ``return_type`` are then final. The mixjit
  frontend imports the typed IR there, finds the GEMM sites and links them
  (``mixjit.linking``) before Numba's rewrites, parfor conversion and lowering.

Passes are placed by class (``PassManager.add_pass_after``), never by name:
``PassRegistry.find_by_name`` is broken in Numba 0.68.

A failure inside one of mixjit's own stages is raised as ``StageError`` (``stage(name)``
converts any other exception), so the frontend can tell it from an error in the user's
code and compile the function as plain Numba instead.
"""

from __future__ import annotations

import operator
from contextlib import contextmanager
from typing import Callable, Iterator

import numpy as np
from numba.core import errors, ir
from numba.core.compiler import CompilerBase, DefaultPassBuilder, StateDict
from numba.core.compiler_machinery import FunctionPass, PassManager, register_pass
from numba.core.typed_passes import NopythonTypeInference

TypedHook = Callable[[StateDict], bool]
"""Called with the compiler state after type inference; returns True when it
changed the IR (Numba re-runs its analyses after a mutating pass)."""

UntypedHook = Callable[[StateDict], bool]
"""Called with the compiler state right before type inference; returns True
when it changed the IR."""



class StageError(Exception):
    """One of mixjit's own stages (``canonicalize-matmul``, ``callees``, ``import``,
    ``detect-gemm``, ``plan``, ``link``, ``lowering``) failed on a function: mixjit's failure,
    not an error in the user's code. ``error`` is the original exception."""

    def __init__(self, stage: str, error: BaseException) -> None:
        super().__init__(f"{stage}: {type(error).__name__}: {error}")
        self.stage = stage
        self.error = error


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Run a block as mixjit stage ``name``: any exception it raises (other than a StageError,
    which already names its stage) becomes ``StageError(name, exception)``."""
    try:
        yield
    except StageError:
        raise
    except Exception as e:
        raise StageError(name, e) from e


_HOOK_KEY = "mixjit_typed_hook"
_MATMUL_KEY = "mixjit_matmul_targets"
_UNTYPED_HOOK_KEY = "mixjit_untyped_hook"


def canonicalize_matmul(func_ir: ir.FunctionIR, targets: set[str] | None = None) -> int:
    """Rewrite every ``np.matmul(a, b)`` call in untyped IR into ``a @ b``.

    Returns the number of calls rewritten; ``targets`` receives the names of the variables they
    assign (so reports can still say ``np.matmul``). A definition of ``np.matmul`` left
    without uses is removed, since Numba cannot type it. Calls with keyword
    arguments (``out=``, ``axes=`` …) are left alone and still fail to type.
    """
    rewritten = 0
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)):
                continue
            expr = stmt.value
            if expr.op != "call" or len(expr.args) != 2 or expr.kws or expr.vararg:
                continue
            try:
                callee = func_ir.infer_constant(expr.func)
            except errors.ConstantInferenceError:
                continue
            if callee is not np.matmul:
                continue
            new = ir.Expr.binop(operator.matmul, expr.args[0], expr.args[1], expr.loc)
            _replace_definition(func_ir, stmt.target.name, expr, new)
            stmt.value = new
            rewritten += 1
            if targets is not None:
                targets.add(stmt.target.name)
    if rewritten:
        _remove_unused_matmul_defs(func_ir)
    return rewritten


def _replace_definition(func_ir: ir.FunctionIR, name: str, old: ir.Expr, new: ir.Expr) -> None:
    defs = func_ir._definitions[name]
    defs[:] = [new if d is old else d for d in defs]


def _remove_unused_matmul_defs(func_ir: ir.FunctionIR) -> None:
    used = {
        v.name
        for block in func_ir.blocks.values()
        for stmt in block.body
        for v in stmt.list_vars()
        if not (isinstance(stmt, ir.Assign) and v is stmt.target)
    }
    for block in func_ir.blocks.values():
        keep = []
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and stmt.target.name not in used and _is_matmul_ref(func_ir, stmt.value):
                func_ir._definitions[stmt.target.name].remove(stmt.value)
                continue
            keep.append(stmt)
        block.body = keep


def _is_matmul_ref(func_ir: ir.FunctionIR, value: ir.Inst) -> bool:
    if isinstance(value, (ir.Global, ir.FreeVar)):
        return value.value is np.matmul
    if isinstance(value, ir.Expr) and value.op == "getattr" and value.attr == "matmul":
        try:
            return func_ir.infer_constant(value.value) is np
        except errors.ConstantInferenceError:
            return False
    return False


@register_pass(mutates_CFG=False, analysis_only=False)
class CanonicalizeMatmul(FunctionPass):
    """Untyped-IR pass: ``np.matmul(a, b)`` becomes ``a @ b`` (see canonicalize_matmul)."""

    _name = "mixjit_canonicalize_matmul"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        targets: set[str] = set()
        with stage("canonicalize-matmul"):
            rewritten = canonicalize_matmul(state.func_ir, targets)
        state[_MATMUL_KEY] = frozenset(targets)
        return rewritten > 0


def matmul_targets(state: StateDict) -> frozenset[str]:
    """The variables of ``state``'s IR assigned from ``np.matmul`` calls that CanonicalizeMatmul
    rewrote to ``@``."""
    return state.get(_MATMUL_KEY) or frozenset()


def _run_hook(state: StateDict, key: str) -> bool:
    hook = state.get(key)
    if hook is None:
        return False
    mutated = hook(state)
    if mutated not in (True, False):
        raise TypeError(f"mixjit IR hook {hook!r} must return True or False, got {mutated!r}")
    return mutated


@register_pass(mutates_CFG=False, analysis_only=False)
class UntypedIRHook(FunctionPass):
    """Untyped-IR pass that hands the compiler state to the pipeline's untyped hook."""

    _name = "mixjit_untyped_ir_hook"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        return _run_hook(state, _UNTYPED_HOOK_KEY)


@register_pass(mutates_CFG=False, analysis_only=False)
class TypedIRHook(FunctionPass):
    """Typed-IR pass that hands the compiler state to the pipeline's hook."""

    _name = "mixjit_typed_ir_hook"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        return _run_hook(state, _HOOK_KEY)


def _insert_before(pm: PassManager, pass_cls: type, location: type, description: str) -> None:
    """Insert ``pass_cls`` right before the first ``location`` pass of ``pm``.

    Numba has ``add_pass_after`` only; the pass right before type inference
    differs with flags, so anchor on type inference itself."""
    for idx, (existing, _) in enumerate(pm.passes):
        if existing is location:
            pm.passes.insert(idx, (pass_cls, description))
            return
    raise ValueError(f"mixjit: pass {location.__name__} is not in Numba's {pm.pipeline_name!r} pipeline")


class MixjitCompiler(CompilerBase):
    """Numba's nopython pipeline plus CanonicalizeMatmul (unless ``canonicalize`` is False),
    UntypedIRHook and TypedIRHook.

    Use a subclass from ``make_pipeline``; this base class has no hooks."""

    typed_hook: TypedHook | None = None
    untyped_hook: UntypedHook | None = None
    canonicalize: bool = True

    def define_pipelines(self) -> list[PassManager]:
        self.state[_HOOK_KEY] = type(self).typed_hook
        self.state[_UNTYPED_HOOK_KEY] = type(self).untyped_hook
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        if type(self).canonicalize:
            _insert_before(pm, CanonicalizeMatmul, NopythonTypeInference, "mixjit: np.matmul -> @")
        _insert_before(pm, UntypedIRHook, NopythonTypeInference, "mixjit: untyped-IR hook")
        pm.add_pass_after(TypedIRHook, NopythonTypeInference)
        pm.finalize()
        return [pm]


def make_pipeline(
    hook: TypedHook | None = None,
    untyped_hook: UntypedHook | None = None,
    canonicalize: bool = True,
) -> type[MixjitCompiler]:
    """A pipeline class for ``numba.njit(pipeline_class=...)`` that calls
    ``untyped_hook`` and ``hook`` on every compilation (once per new
    argument-type signature). A hook may end the compilation early by raising
    Numba's ``_EarlyPipelineCompletion`` (how the importer types without lowering).
    ``canonicalize=False`` leaves ``np.matmul`` to Numba (which cannot type it)."""
    attrs = {
        "typed_hook": staticmethod(hook) if hook else None,
        "untyped_hook": staticmethod(untyped_hook) if untyped_hook else None,
        "canonicalize": canonicalize,
    }
    return type("MixjitCompiler", (MixjitCompiler,), attrs)
