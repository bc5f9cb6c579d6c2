"""Greedy pattern rewriting, folding and constant materialization."""

from __future__ import annotations

import pytest

from mixjit.ir.core import IRError, Operation, constant_value
from mixjit.ir.dialects.arith import AddIOp, ConstantOp
from mixjit.ir.opdef import operand, result
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.ir.rewriting import PatternRewriter, RewritePattern, apply_patterns_greedily
from mixjit.ir.traits import Pure


def run(text: str, patterns: list[RewritePattern] = [], **kw: object) -> tuple[bool, str]:  # noqa: B006
    module = parse_module(text)
    changed = apply_patterns_greedily(module, patterns, **kw)  # type: ignore[arg-type]
    module.verify()
    return changed, print_op(module)


FOLDABLE = (
    '%a = "arith.constant"() <{value = 2 : i8}> : () -> i8\n'
    '%b = "arith.constant"() <{value = 127 : i8}> : () -> i8\n'
    '%s = "arith.addi"(%a, %b) : (i8, i8) -> i8\n'
    '%z = "arith.constant"() <{value = 0 : i8}> : () -> i8\n'
    '%x = "test.op"() : () -> i8\n'
    '%y = "arith.addi"(%x, %z) : (i8, i8) -> i8\n'
    '"test.op"(%s, %y) : (i8, i8) -> ()'
)


def test_folding_materializes_constants_and_erases_dead_ops() -> None:
    changed, text = run(FOLDABLE)
    assert changed
    assert text == (
        '%s = "arith.constant"() <{value = -127 : i8}> : () -> i8\n'  # 2 + 127 wraps in i8; keeps %s
        '%x = "test.op"() : () -> i8\n'
        '"test.op"(%s, %x) : (i8, i8) -> ()'
    )


def test_nothing_to_do_reports_no_change() -> None:
    text = '%x = "test.op"() : () -> i8\n"test.op"(%x) : (i8) -> ()'
    assert run(text) == (False, text)


def test_fold_and_dead_code_can_be_switched_off() -> None:
    changed, text = run(FOLDABLE, fold=False, erase_dead=False)
    assert not changed and text == print_op(parse_module(FOLDABLE))


def test_float_folds_round_to_the_type() -> None:
    text = (
        '%a = "arith.constant"() <{value = 0.1 : f32}> : () -> f32\n'
        '%b = "arith.constant"() <{value = 0.2 : f32}> : () -> f32\n'
        '%s = "arith.addf"(%a, %b) : (f32, f32) -> f32\n'
        '"test.op"(%s) : (f32) -> ()'
    )
    _, out = run(text)
    # f32(0.1) + f32(0.2) rounded to f32 (not the f64 sum 0.30000000447034836).
    assert '<{value = 0.30000001192092896 : f32}>' in out


class MulByTwoToAdd(RewritePattern):
    root_name = "arith.muli"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        c = constant_value(op.operands[1])
        if c is None or c.value != 2:  # type: ignore[attr-defined]
            return False
        lhs = op.operands[0]
        add = rewriter.insert_op_before(AddIOp.build(lhs=lhs, rhs=lhs, out=lhs.type), op)
        rewriter.replace_op(op, add)
        return True


def test_pattern_rewrites_and_users_are_revisited() -> None:
    text = (
        '%x = "test.op"() : () -> i64\n'
        '%two = "arith.constant"() <{value = 2 : i64}> : () -> i64\n'
        '%m = "arith.muli"(%x, %two) : (i64, i64) -> i64\n'
        '%n = "arith.muli"(%m, %two) : (i64, i64) -> i64\n'
        '"test.op"(%n) : (i64) -> ()'
    )
    changed, out = run(text, [MulByTwoToAdd()])
    assert changed and out == (
        '%x = "test.op"() : () -> i64\n'
        '%0 = "arith.addi"(%x, %x) : (i64, i64) -> i64\n'
        '%1 = "arith.addi"(%0, %0) : (i64, i64) -> i64\n'
        '"test.op"(%1) : (i64) -> ()'
    )


class Flip(RewritePattern):
    """Swaps the operands of every commutative add: never settles."""

    root_name = "arith.addi"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        a, b = op.operands
        rewriter.modify_op(op, lambda: setattr(op, "operands", [b, a]))
        return True


def test_patterns_that_never_settle_are_reported() -> None:
    text = '%x, %y = "test.op"() : () -> (i64, i64)\n%s = "arith.addi"(%x, %y) : (i64, i64) -> i64\n"test.op"(%s) : (i64) -> ()'
    with pytest.raises(IRError, match="did not settle"):
        run(text, [Flip()], max_rewrites=50)


class Liar(RewritePattern):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        return op.name == "test.op"


def test_pattern_claiming_a_change_it_did_not_make_is_an_error() -> None:
    with pytest.raises(IRError, match="Liar reported a change but made none"):
        run('"test.op"() : () -> ()', [Liar()])


class DoubleOp(Operation):
    """An op local to this test whose class supplies a canonicalization pattern."""

    name = "rwtest.double"
    value = operand()
    out = result()
    traits = (Pure,)

    @classmethod
    def canonicalization_patterns(cls) -> list[RewritePattern]:
        return [ExpandDouble()]


class ExpandDouble(RewritePattern):
    root_name = "rwtest.double"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        v = op.operands[0]
        rewriter.replace_op(op, rewriter.insert_op_before(AddIOp.build(lhs=v, rhs=v, out=v.type), op))
        return True


def test_op_class_canonicalization_patterns_are_used() -> None:
    text = '%x = "test.op"() : () -> i64\n%d = "rwtest.double"(%x) : (i64) -> i64\n"test.op"(%d) : (i64) -> ()'
    _, out = run(text)
    assert '"arith.addi"(%x, %x)' in out and "rwtest.double" not in out


def test_rewriter_replace_op_checks_arity() -> None:
    module = parse_module('%x, %y = "test.op"() : () -> (i64, i64)')
    op = module.regions[0].blocks[0].ops[0]
    with pytest.raises(IRError, match="has 2 results, got 1 replacements"):
        PatternRewriter().replace_op(op, [op.results[0]])


def test_constant_ops_are_not_refolded_forever() -> None:
    text = '%c = "arith.constant"() <{value = 1 : i64}> : () -> i64\n"test.op"(%c) : (i64) -> ()'
    assert run(text) == (False, text)
    assert isinstance(parse_module(text).regions[0].blocks[0].ops[0], ConstantOp)


def test_too_few_iterations_is_reported_as_such() -> None:
    # Needs two sweeps (one changes, one confirms), so max_iterations=1 cannot converge; the
    # message must point at the limit rather than claim that patterns undo each other.
    with pytest.raises(IRError) as info:
        run(FOLDABLE, max_iterations=1)
    assert str(info.value) == (
        "pattern application did not converge within 1 iteration "
        "(raise max-iterations, or patterns may undo each other)"
    )
    assert run(FOLDABLE, max_iterations=2)[0]


def test_materialized_constant_keeps_the_folded_name() -> None:
    text = (
        '%a = "arith.constant"() <{value = 2 : i64}> : () -> i64\n'
        '%six = "arith.muli"(%a, %a) : (i64, i64) -> i64\n'
        '%b = "test.op"() : () -> i64\n'
        '"test.op"(%six, %b) : (i64, i64) -> ()'
    )
    _, out = run(text)
    assert out.splitlines()[0] == '%six = "arith.constant"() <{value = 4 : i64}> : () -> i64'


def test_constant_cond_br_is_canonicalized_by_the_cf_op_class() -> None:
    text = (
        '"func.func"() <{sym_name = "f", function_type = (i64) -> i64}> ({\n'
        "^bb0(%x: i64):\n"
        '  %t = "arith.constant"() <{value = true}> : () -> i1\n'
        '  "cf.cond_br"(%t, %x)[^bb1, ^bb2] <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (i1, i64) -> ()\n'
        "^bb1(%a: i64):\n"
        '  "func.return"(%a) : (i64) -> ()\n'
        "^bb2:\n"
        '  "func.return"(%x) : (i64) -> ()\n'
        "}) : () -> ()"
    )
    _, out = run(text)  # no patterns given: they come from CondBranchOp / BranchOp
    assert "cf.cond_br" not in out and "arith.constant" not in out
    assert '"cf.br"' not in out  # ^bb1 (now with one predecessor) was merged into the entry
