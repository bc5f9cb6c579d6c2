"""mixjit.importer: typed Numba IR -> mix IR, on the real functions of the corpus."""

from __future__ import annotations

import inspect
import io
import operator

import numpy as np
import pytest
from corpus import CASES, F64, fresh_module, imported
from numba import njit, types
from numba.core import ir

from mixjit import importer, mixopt
from mixjit.importer import (
    CALLEE_ATTR,
    STMT_ATTR,
    TARGET_ATTR,
    UNDEFINED_ATTR,
    FrontendError,
    dump_ir,
    import_function,
    import_typed_ir,
    ir_text,
    resolve_argtypes,
    typed_state,
)
from mixjit.ir.dialects import cf, func, py
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.ir.types import ArrayType, f64
from mixjit.numba_pipeline import make_pipeline
from mixjit.numba_types import callee_name, to_ir_type


def body_ops(name):
    """(ImportedFunction, op) for every op in the bodies of the case's functions."""
    for fn in imported(name).functions:
        for op in fn.func.walk():
            if op is not fn.func:
                yield fn, op


def line_of(fn, text):
    """The source line number of the first line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("name", CASES)
def test_imported_ir_verifies_and_round_trips(name):
    module = imported(name).module
    module.verify()
    text = print_op(module)
    again = print_op(parse_module(text, f"{name}.mix"))
    assert again == text


@pytest.mark.parametrize("name", CASES)
def test_every_statement_op_names_its_numba_statement(name):
    seen = set()
    for fn, op in body_ops(name):
        attr = op.attributes.get(STMT_ATTR)
        if UNDEFINED_ATTR in op.attributes:
            assert attr is None
            continue
        assert attr is not None, f"{op.name} has no {STMT_ATTR}"
        label, index = map(int, attr.value.split(":"))
        stmt = fn.func_ir.blocks[label].body[index]
        assert fn.stmts[attr.value] is stmt
        if not isinstance(op, py.CastOp):  # casts share the statement of a copy or branch
            assert (fn.qualname, attr.value) not in seen, "two ops claim one statement"
            seen.add((fn.qualname, attr.value))


def test_ops_mirror_numba_statements():
    fn = imported("update_sub").functions[0]
    kinds = {}
    for op in fn.func.walk():
        attr = op.attributes.get(STMT_ATTR)
        if attr is not None:
            kinds[op.name] = fn.stmts[attr.value]
    assert isinstance(kinds["py.setitem"], ir.SetItem)
    assert kinds["py.inplace_binop"].value.op == "inplace_binop"
    assert kinds["py.binop"].value.fn is operator.matmul
    assert isinstance(kinds["func.return"], ir.Return)


def test_function_signature_and_argument_names():
    fop = imported("update_sub").functions[0].func
    assert fop.sym_name.value == "update_sub"
    assert [str(t) for t in fop.type.inputs] == ["!py.array<f64, 2, C>"] * 3 + ["i64"]
    assert [str(t) for t in fop.type.outputs] == ["!py.array<f64, 2, C>"]
    assert [a.name_hint for a in fop.entry_block.args] == ["C", "A", "B", "k"]
    assert fop.attributes["py.module"].value == "corpus"


def test_locations_come_from_the_python_source():
    fop = imported("mm_transposes").functions[0].func
    matmuls = [op for op in fop.walk() if isinstance(op, py.BinOp) and op.op.value == "@"]
    assert [op.loc.line for op in matmuls] == [
        line_of(CASES["mm_transposes"].fn, "X = A.T @ B"),
        line_of(CASES["mm_transposes"].fn, "Z = A.transpose() @ B.T"),
    ]
    assert all(op.loc.file == inspect.getsourcefile(CASES["mm_transposes"].fn) for op in matmuls)


def test_callees_are_resolved_from_the_typemap():
    fop = imported("mm_transposes").functions[0].func
    callees = [op.attributes[CALLEE_ATTR].value for op in fop.walk() if isinstance(op, py.CallOp)]
    assert sorted(callees) == ["array.transpose", "numpy.dot", "numpy.transpose"]


def test_np_matmul_arrives_as_the_matmul_operator():
    fop = imported("mm_matmul").functions[0].func
    assert any(isinstance(op, py.BinOp) and op.op.value == "@" for op in fop.walk())
    assert not any(isinstance(op, py.CallOp) for op in fop.walk())


def test_phis_become_block_arguments_passed_by_the_branches():
    fop = imported("power_nest").functions[0].func
    headers = [b for b in fop.body.blocks[1:] if any(a.name_hint.startswith("X") for a in b.args)]
    assert len(headers) == 2  # the outer and the inner loop header each merge X
    for block in headers:
        arg = next(a for a in block.args if a.name_hint.startswith("X"))
        assert arg.type == ArrayType(f64, 2, "C")
        incoming = []
        for pred in block.predecessors:
            for i, succ in enumerate(pred.successors):
                if succ is block:
                    incoming.append(pred.successor_operands(i)[block.args.index(arg)])
        assert len(incoming) == 2 and incoming[0] is not incoming[1]


def test_undefined_phi_inputs_use_one_marked_constant():
    def last(n, x):
        for i in range(n):  # noqa: B007 (read after the loop: the undefined phi input under test)
            x = x * 2.0
        return i, x

    fop = import_function(last, types.int64, types.float64).functions[0].func
    fop.verify()
    undefined = [op for op in fop.walk() if UNDEFINED_ATTR in op.attributes]
    # `i` is undefined on the path that skips the loop; `x` never is.
    assert len(undefined) == 1
    (op,) = undefined
    assert isinstance(op, py.ConstOp) and op.parent is fop.entry_block and str(op.result.type) == "i64"
    (use,) = op.result.users
    assert isinstance(use, cf.BranchOp)


def test_parallel_options_are_kept_for_prange():
    fop = imported("blocks_prange").functions[0].func
    callees = {op.attributes[CALLEE_ATTR].value for op in fop.walk() if isinstance(op, py.CallOp)}
    assert "numba.misc.special.prange" in callees


def test_helper_callees_are_imported_into_the_module():
    mod = imported("uses_helper")
    assert [f.func.sym_name.value for f in mod.functions] == ["uses_helper", "_helper_product"]
    call = next(op for op in mod.functions[0].func.walk() if isinstance(op, py.CallOp))
    assert call.attributes[CALLEE_ATTR].value == "corpus._helper_product"
    assert call.attributes[TARGET_ATTR].root == "_helper_product"
    helper = mod.functions[1].func
    assert [str(t) for t in helper.type.inputs] == ["!py.array<f64, 2, C>"] * 2


def test_signature_forms_give_the_same_ir():
    by_types = imported("mm_at").text()
    assert ir_text(CASES["mm_at"].fn, "float64[:, ::1](float64[:, ::1], float64[:, ::1])") == by_types
    assert ir_text(CASES["mm_at"].fn, np.ones((2, 3)), np.ones((3, 2))) == by_types
    assert resolve_argtypes((F64(F64, F64),)) == ((F64, F64), F64)


def test_dump_is_read_by_mixopt(tmp_path):
    path = dump_ir(CASES["mm_dot"].fn, tmp_path / "mm_dot.mix", *CASES["mm_dot"].argtypes)
    out, err = io.StringIO(), io.StringIO()
    assert mixopt.main([str(path), "-p", "detect-gemm"], stdout=out, stderr=err) == 0, err.getvalue()
    assert '"mix.gemm"' in out.getvalue()


def test_import_from_the_typed_ir_hook_of_a_real_compile():
    seen = []

    def hook(state):
        seen.append(import_typed_ir(state))
        return False

    @njit(pipeline_class=make_pipeline(hook))
    def scaled(a):
        return a * 2.0

    np.testing.assert_array_equal(scaled(np.arange(3.0)), np.arange(3.0) * 2.0)
    (result,) = seen
    result.func.verify()
    assert result.func.sym_name.value.endswith("scaled")
    assert any(isinstance(op, py.BinOp) and op.op.value == "*" for op in result.func.walk())
    assert isinstance(result.func.entry_block.ops[-1], (cf.BranchOp, func.ReturnOp))


def test_unknown_terminator_is_a_frontend_error():
    """Statements without an op become py.unknown (test_importer_robustness.py); a block
    terminator the IR cannot express is refused, naming it and its line."""

    class Goto(ir.Stmt):
        is_terminator = True

        def __str__(self):
            return "goto somewhere"

    def straight(x):
        return x

    state = typed_state(straight, (types.float64,))
    (block,) = state.func_ir.blocks.values()
    block.body[-1] = Goto()
    block.body[-1].loc = block.loc
    with pytest.raises(FrontendError, match=r"test_importer.py:\d+: the mix IR has no terminator for `goto somewhere`"):
        import_typed_ir(state)


def test_fresh_module_is_an_independent_copy():
    a, b = fresh_module("mm_at"), fresh_module("mm_at")
    assert a is not b and print_op(a) == print_op(b) == imported("mm_at").text()


@pytest.mark.parametrize(
    "numba_type, text",
    [
        (types.boolean, "i1"),
        (types.int64, "i64"),
        (types.literal(3), "i64"),
        (types.uint8, "ui8"),
        (types.float32, "f32"),
        (types.complex128, "complex<f64>"),
        (types.Array(types.float32, 2, "F"), "!py.array<f32, 2, F>"),
        (types.Array(types.float64, 1, "A", readonly=True), "!py.array<f64, 1, A>"),
        (types.none, "none"),
        (types.UniTuple(types.int64, 2), "tuple<i64, i64>"),
        (types.Tuple((types.float64, types.Array(types.int32, 3, "C"))), "tuple<f64, !py.array<i32, 3, C>>"),
        (types.slice2_type, '!py.opaque<"slice<a:b>">'),
        (types.Array(types.NPDatetime("s"), 1, "C"), '!py.opaque<"array(datetime64[s], 1d, C)">'),
    ],
)
def test_numba_types_map_to_ir_types(numba_type, text):
    assert str(to_ir_type(numba_type)) == text


def test_opaque_types_and_callees_have_no_addresses():
    dispatcher = njit(lambda a: a)
    dispatcher_type = types.Dispatcher(dispatcher)
    assert " at 0x" in str(dispatcher_type)
    assert " at 0x" not in str(to_ir_type(dispatcher_type))
    assert callee_name(dispatcher_type) == "test_importer.test_opaque_types_and_callees_have_no_addresses.<locals>.<lambda>"
    assert str(to_ir_type(types.Module(np))) == '!py.opaque<"Module(numpy)">'
    assert callee_name(types.NumberClass(types.float32)) == "numpy.float32"
    assert callee_name(types.int64) is None


def test_unary_operators_import_with_their_python_spelling():
    ops = [op for op in imported("unary_ops").module.walk() if isinstance(op, py.UnaryOp)]
    assert sorted(op.op.value for op in ops) == sorted(["-", "-", "-", "-", "~", "not", "+"])


@pytest.mark.parametrize("fn, table, want", [
    (operator.neg, "_UNARY", "-"), (operator.not_, "_UNARY", "not"), ("~", "_UNARY", "~"),
    (operator.add, "_BINOPS", "+"), (operator.isub, "_INPLACE", "-="), ("-", "_BINOPS", "-"),
    (operator.neg, "_BINOPS", None), (abs, "_UNARY", None), ("neg", "_UNARY", None), ([1], "_UNARY", None),
])
def test_operator_fields_map_from_functions_or_text(fn, table, want):
    # Numba 0.68 stores operator functions (operator.neg); older versions their text ("-").
    # Anything else (unhashable, unknown) is no operator: the statement becomes py.unknown.
    assert importer._operator_symbol(fn, getattr(importer, table)) == want


def test_names_that_are_not_strings_become_stable_text():
    class Odd:
        def __str__(self):
            return "odd at 0x1234"

    assert importer._name_attr("x").value == "x"
    assert importer._name_attr(Odd()).value == "odd"


def test_qualified_name_is_always_a_string():
    from mixjit.numba_types import qualified_name

    class NoName:
        __module__ = None

        def __getattr__(self, name):  # answers __qualname__ / __name__ with a non-string
            return 42

    text = qualified_name(NoName())
    assert isinstance(text, str) and " at 0x" not in text
