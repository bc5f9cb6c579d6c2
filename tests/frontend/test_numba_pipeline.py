"""mixjit.numba_pipeline: the typed-IR hook and the np.matmul canonicalization."""

import operator

import numpy as np
import pytest
from numba import njit, types
from numba.core import errors, ir
from numba.core.typed_passes import NopythonTypeInference

from mixjit.numba_pipeline import (
    CanonicalizeMatmul,
    MixjitCompiler,
    TypedIRHook,
    UntypedIRHook,
    make_pipeline,
)


class Recorder:
    """A hook that records what it sees; never mutates the IR."""

    def __init__(self):
        self.calls = []

    def __call__(self, state):
        exprs = [
            st.value
            for blk in state.func_ir.blocks.values()
            for st in blk.body
            if isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)
        ]
        self.calls.append(
            {
                "args": state.args,
                "arg_types": [state.typemap[name] for name in state.func_ir.arg_names],
                "matmuls": [state.calltypes[e] for e in exprs if e.op == "binop" and e.fn is operator.matmul],
                "calls": [state.calltypes[e] for e in exprs if e.op == "call"],
                "getattrs": [e.attr for e in exprs if e.op == "getattr"],
            }
        )
        return False


REC = Recorder()


@njit(pipeline_class=make_pipeline(REC))
def _matmul_fn(a, b):
    return np.matmul(a, b) + 1.0


def test_hook_sees_typemap_and_calltypes_once_per_signature():
    REC.calls.clear()
    x = np.arange(6.0).reshape(2, 3)
    y = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(_matmul_fn(x, y), x @ y + 1.0)
    _matmul_fn(x, y)  # same signature: no recompilation, no second hook call
    assert len(REC.calls) == 1
    seen = REC.calls[0]
    arr64 = types.Array(types.float64, 2, "C")
    assert seen["args"] == (arr64, arr64)
    assert seen["arg_types"] == [arr64, arr64]
    # The typed call signature of the matmul: typemap and calltypes are final.
    assert len(seen["matmuls"]) == 1
    sig = seen["matmuls"][0]
    assert sig.args == (arr64, arr64) and sig.return_type == arr64

    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    np.testing.assert_array_equal(_matmul_fn(x32, y32), x32 @ y32 + np.float32(1.0))
    assert len(REC.calls) == 2
    assert REC.calls[1]["matmuls"][0].return_type == types.Array(types.float32, 2, "C")


def test_np_matmul_is_rewritten_before_typing():
    REC.calls.clear()
    x = np.arange(4.0).reshape(2, 2) + 0.5
    _matmul_fn(x, x.T)  # new signature (F-ordered operand): recompiles
    seen = REC.calls[-1]
    # No trace of np.matmul is left for the typer: neither the call nor its getattr.
    assert "matmul" not in seen["getattrs"]
    assert seen["calls"] == []
    assert len(seen["matmuls"]) == 1
    assert seen["matmuls"][0].args[1] == types.Array(types.float64, 2, "F")


def test_plain_njit_rejects_np_matmul():
    # The reason for the rewrite: if Numba ever types np.matmul, the pass can go.
    @njit
    def f(a, b):
        return np.matmul(a, b)

    with pytest.raises(errors.TypingError, match="matmul"):
        f(np.ones((2, 2)), np.ones((2, 2)))


from numpy import matmul as imported_matmul  # noqa: E402


@njit(pipeline_class=make_pipeline())
def _imported_matmul_fn(a, b):
    m = np.matmul
    return imported_matmul(a, b) - m(b, a)


def test_matmul_as_global_and_alias():
    x = np.arange(9.0).reshape(3, 3)
    y = np.eye(3) * 2.0 + 1.0
    np.testing.assert_array_equal(_imported_matmul_fn(x, y), x @ y - y @ x)


def test_hook_must_return_bool():
    @njit(pipeline_class=make_pipeline(lambda state: None))
    def f(a):
        return a + 1

    with pytest.raises(TypeError, match="must return True or False"):
        f(1.0)


def test_untyped_hook_runs_before_typing_and_can_rewrite():
    seen = []

    def untyped(state):
        seen.append(state.typemap)  # not typed yet
        for blk in state.func_ir.blocks.values():
            for st in blk.body:
                if isinstance(st, ir.Assign) and isinstance(st.value, ir.Const) and st.value.value == 1:
                    st.value = ir.Const(2, st.value.loc)
        return True

    @njit(pipeline_class=make_pipeline(untyped_hook=untyped))
    def f(a):
        return a + 1

    assert f(1) == 3
    assert seen == [None]


def test_pipeline_places_passes_around_type_inference():
    from numba.core.compiler import DefaultPassBuilder, Flags, StateDict

    class Probe(make_pipeline()):
        def __init__(self):  # just enough state for define_pipelines
            self.state = StateDict()
            self.state.flags = Flags()
            self.state.func_ir = None

    (pm,) = Probe().define_pipelines()
    order = [p for p, _ in pm.passes]
    i = order.index(NopythonTypeInference)
    assert order[i - 2:i] == [CanonicalizeMatmul, UntypedIRHook]
    assert order[i + 1] is TypedIRHook
    # Everything else is Numba's own nopython pipeline, in Numba's order.
    default = [p for p, _ in DefaultPassBuilder.define_nopython_pipeline(Probe().state).passes]
    ours = (CanonicalizeMatmul, UntypedIRHook, TypedIRHook)
    assert [p for p in order if p not in ours] == default



def test_base_compiler_has_no_hook():
    assert MixjitCompiler.typed_hook is None and MixjitCompiler.untyped_hook is None
    assert make_pipeline().typed_hook is None and make_pipeline().untyped_hook is None
