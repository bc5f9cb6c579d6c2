"""Printer and parser: round trips, value names, the module rule, forward references, splitting."""

from __future__ import annotations

from pathlib import Path

import pytest

from mixjit.ir.attributes import IntegerAttr
from mixjit.ir.core import Block, Operation, Region
from mixjit.ir.dialects.builtin import ModuleOp
from mixjit.ir.dialects.func import FuncOp, ReturnOp
from mixjit.ir.dialects.test import GenericOp
from mixjit.ir.location import Location
from mixjit.ir.parser import parse_module, split_input_file
from mixjit.ir.printer import print_op
from mixjit.ir.types import f32, i1, i64

SAMPLES = sorted((Path(__file__).parent / "samples").glob("*.mix"))


def body(module: Operation) -> tuple[Operation, ...]:
    return module.regions[0].blocks[0].ops


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_print_parse_print_is_identical(path: Path) -> None:
    first = print_op(parse_module(path.read_text(), str(path)))
    assert print_op(parse_module(first)) == first
    # Comments are dropped; every op of the source survives.
    source_ops = [line for line in path.read_text().splitlines() if '"' in line and not line.lstrip().startswith("//")]
    assert first.count('"(') >= len([s for s in source_ops if '"(' in s])


def test_canonical_input_is_printed_unchanged() -> None:
    text = (
        '%a, %b = "test.op"() : () -> (i64, f32)\n'
        '%0 = "test.pure"(%a, %b) {k = 1 : i64} : (i64, f32) -> i1 loc("x.py":1:2)\n'
        '"test.effect"(%0) ({\n'
        '^bb0(%arg: i1):\n'
        '  "test.terminator"(%arg)[^bb1] : (i1) -> ()\n'
        "^bb1:\n"
        '  "test.terminator"() : () -> ()\n'
        "}, {\n"
        "}) : (i1) -> ()"
    )
    assert print_op(parse_module(text)) == text


def test_parsed_names_survive_and_numbers_are_reassigned() -> None:
    text = '%x = "test.op"() : () -> i64\n%7 = "test.op"(%x) : (i64) -> i64\n%3 = "test.op"(%7) : (i64) -> i64'
    module = parse_module(text)
    ops = body(module)
    assert ops[0].result.name_hint == "x" and ops[1].result.name_hint is None
    assert print_op(module) == '%x = "test.op"() : () -> i64\n%0 = "test.op"(%x) : (i64) -> i64\n%1 = "test.op"(%0) : (i64) -> i64'


def test_clashing_hints_are_uniquified_deterministically() -> None:
    ops = [GenericOp.build(outs=[i64]) for _ in range(4)]
    for op, hint in zip(ops, ["a", "a", "a_1", None]):
        op.result.name_hint = hint
    user = GenericOp.build(args=[op.result for op in ops])
    module = ModuleOp.from_ops([*ops, user])
    text = print_op(module)
    assert [line.split(" = ")[0] for line in text.splitlines()[:4]] == ["%a", "%a_1", "%a_1_1", "%0"]
    assert text.splitlines()[4].startswith('"test.op"(%a, %a_1, %a_1_1, %0)')
    assert print_op(parse_module(text)) == text and print_op(module) == text


def test_name_hints_are_sanitized() -> None:
    op = GenericOp.build(outs=[i64, i64, i64, i64])
    for r, hint in zip(op.results, ["$const0.1", "a b", "9lives", "42"]):
        r.name_hint = hint
    text = print_op(ModuleOp.from_ops([op]))
    assert text.startswith("%$const0.1, %a_b, %_9lives, %0 = ")
    assert print_op(parse_module(text)) == text


def test_numbering_restarts_in_isolated_ops() -> None:
    funcs = []
    for name in ("f", "g"):
        f = FuncOp.define(name, [i64], [i64])
        entry = f.entry_block
        assert entry is not None
        op = entry.add_op(GenericOp.build(args=[entry.args[0]], outs=[i64]))
        entry.add_op(ReturnOp.build(values=[op.result]))
        funcs.append(f)
    text = print_op(ModuleOp.from_ops(funcs))
    assert text.count("^bb0(%0: i64):") == 2 and text.count('%1 = "test.op"(%0)') == 2


def test_bare_module_rule() -> None:
    text = '"test.op"() : () -> ()'
    module = parse_module(text)
    assert isinstance(module, ModuleOp) and len(body(module)) == 1
    explicit = '"builtin.module"() <{sym_name = "m"}> ({\n  "test.op"() : () -> ()\n}) : () -> ()'
    parsed = parse_module(explicit)
    assert isinstance(parsed, ModuleOp) and parsed.sym_name.value == "m" and print_op(parsed) == explicit
    # A lone plain module nested in a module keeps its nesting through the round trip.
    nested = ModuleOp.from_ops([ModuleOp.from_ops([GenericOp.build()])])
    once = print_op(nested)
    assert once.startswith('"builtin.module"() ({') and print_op(parse_module(once)) == once
    assert len(body(parse_module(once))) == 1 and isinstance(body(parse_module(once))[0], ModuleOp)
    # The empty module prints explicitly (an empty text would lose its block).
    empty = print_op(parse_module(""))
    assert empty == '"builtin.module"() ({\n^bb0:\n}) : () -> ()' and print_op(parse_module(empty)) == empty


def test_forward_references_across_blocks_and_into_nested_regions() -> None:
    text = (
        '"test.op"() ({\n'
        '  "test.terminator"()[^bb2] : () -> ()\n'
        "^bb1:\n"
        '  "test.op"(%late) ({\n'
        '    "test.op"(%late, %later) : (i64, f32) -> ()\n'
        "  }) : (i64) -> ()\n"
        '  "test.terminator"() : () -> ()\n'
        "^bb2:\n"
        '  %late = "test.op"() : () -> i64\n'
        '  %later = "test.op"() : () -> f32\n'
        '  "test.terminator"()[^bb1] : () -> ()\n'
        "}) : () -> ()"
    )
    module = parse_module(text)
    region = body(module)[0].regions[0]
    late = region.blocks[2].ops[0].result
    inner = region.blocks[1].ops[0].regions[0].blocks[0].ops[0]
    assert inner.operands[0] is late and region.blocks[1].ops[0].operands[0] is late
    assert len(late.uses) == 2 and print_op(module) == text


def test_locations_and_properties_print() -> None:
    op = Operation(
        "test.op",
        result_types=[f32],
        properties={"z": IntegerAttr(1), "a": IntegerAttr(2)},
        attributes={"note": IntegerAttr(3)},
        loc=Location('dir/my "file".py', 12, 4),
    )
    assert print_op(op) == '%0 = "test.op"() <{a = 2 : i64, z = 1 : i64}> {note = 3 : i64} : () -> f32 loc("dir/my \\"file\\".py":12:4)'
    assert print_op(op, print_locations=False).endswith(": () -> f32")
    parsed = body(parse_module(print_op(op)))[0]
    assert parsed.loc == op.loc and parsed.text_loc == Location("<stdin>", 1, 1)


def test_explicit_unknown_location_and_comments() -> None:
    text = '// header\n"test.op"() : () -> () loc(unknown) // trailing\n// -- not a separator\n'
    assert print_op(parse_module(text)) == '"test.op"() : () -> ()'


def test_printing_detached_ops_names_outside_values() -> None:
    block = Block(arg_types=[i64, i1])
    user = block.add_op(GenericOp.build(args=list(block.args), outs=[i64]))
    assert print_op(user) == '%0 = "test.op"(%1, %2) : (i64, i1) -> i64'
    region = Region([Block(), Block()])
    branch = region.blocks[0].add_op(GenericOp.build())
    term = Operation("test.terminator", successors=[region.blocks[1]])
    region.blocks[0].add_op(term)
    assert print_op(term) == '"test.terminator"()[^ext0] : () -> ()'
    assert branch.parent is region.blocks[0]


def test_split_input_file() -> None:
    text = 'a\n// -----\nb\nc\n  // -----  \n\nd'
    assert split_input_file(text) == [("a", 1), ("b\nc", 3), ("\nd", 6)]
    assert split_input_file("x") == [("x", 1)]


def test_first_line_offsets_diagnostics() -> None:
    from mixjit.ir.diagnostics import DiagnosticError

    chunks = split_input_file('"test.op"() : () -> ()\n// -----\n\n"test.op"(%zz) : (i64) -> ()\n')
    with pytest.raises(DiagnosticError) as err:
        parse_module(chunks[1][0], "f.mix", first_line=chunks[1][1])
    assert str(err.value) == "f.mix:4:11: error: use of undeclared SSA value name '%zz'"


def test_unregistered_ops_need_permission() -> None:
    from mixjit.ir.diagnostics import DiagnosticError

    text = '%0 = "foo.bar"() ({\n  "foo.baz"() : () -> ()\n}) : () -> i64'
    with pytest.raises(DiagnosticError, match="unknown operation 'foo.bar'"):
        parse_module(text)
    module = parse_module(text, allow_unregistered=True)
    op = body(module)[0]
    assert type(op) is Operation and op.name == "foo.bar" and print_op(module) == text
