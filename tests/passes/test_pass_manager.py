"""The pass manager's hook order, failure reporting and the standard instrumentations."""

from __future__ import annotations

import io
import re

import pytest
from fake_passes import Boom, Chatty, Count, FakeModule, Mark, Rude, Tune

from mixjit.ir.diagnostics import Diagnostic, Severity
from mixjit.ir.location import Location
from mixjit.passes.instrumentation import (
    PrintIRInstrumentation,
    TimingInstrumentation,
    VerifyInstrumentation,
    dump_header,
)
from mixjit.passes.manager import PassFailure, PassInstrumentation, PassManager
from mixjit.passes.pass_base import PassContext, PassResult


class Recorder(PassInstrumentation):
    def __init__(self, tag: str, events: list) -> None:
        self.tag, self.events = tag, events

    def before_pass(self, pass_, module):
        self.events.append((self.tag, "before", pass_.name))

    def after_pass(self, pass_, module):
        self.events.append((self.tag, "after", pass_.name))

    def after_failure(self, pass_, module, error):
        self.events.append((self.tag, "failure", pass_.name, str(error)))


def test_passes_run_in_order_with_hooks_nested():
    events: list = []
    module = FakeModule()
    pm = PassManager([Mark(text="a"), Mark(text="b")], [Recorder("1", events)])
    pm.add_instrumentation(Recorder("2", events))
    pm.run(module)
    assert module.log == ["a", "b"]
    assert events == [
        ("1", "before", "mark"), ("2", "before", "mark"),
        ("2", "after", "mark"), ("1", "after", "mark"),
    ] * 2


def test_failure_names_the_pass_and_what_ran_before():
    events: list = []
    module = FakeModule()
    pm = PassManager([Mark(), Tune(budget=0.5), Boom(), Mark(text="never")], [Recorder("r", events)])
    with pytest.raises(PassFailure) as info:
        pm.run(module)
    failure = info.value
    assert module.log == ["x", "tune", "boom"]
    assert failure.pass_ == Boom()
    assert isinstance(failure.cause, RuntimeError)
    assert str(failure) == "pass 'boom' failed (passes run before it: mark, tune{budget=0.5}): RuntimeError: kaboom"
    assert events[-1] == ("r", "failure", "boom", "kaboom")


def test_first_pass_failure_says_none_ran_before():
    with pytest.raises(PassFailure, match=r"pass 'boom' failed \(passes run before it: none\)"):
        PassManager([Boom()]).run(FakeModule())


def test_verify_each_failure_fails_that_pass():
    def verify(module):
        if "bad" in module.log:
            raise ValueError("invalid IR")

    events: list = []
    pm = PassManager(
        [Mark(), Mark(text="bad"), Mark(text="later")],
        [Recorder("r", events), VerifyInstrumentation(verify)],
    )
    module = FakeModule()
    with pytest.raises(PassFailure) as info:
        pm.run(module)
    assert info.value.pass_ == Mark(text="bad")
    assert info.value.previous == [Mark()]
    assert str(info.value.cause) == "invalid IR"
    assert module.log == ["x", "bad"]
    assert events[-1] == ("r", "failure", "mark", "invalid IR")


def test_print_ir_after_all_dumps_after_every_pass():
    out = io.StringIO()
    PassManager([Mark(text="a"), Tune()], [PrintIRInstrumentation(out)]).run(FakeModule())
    assert out.getvalue() == (
        "// -----// IR Dump After Mark (mark) //----- //\n// log: a\n\n"
        "// -----// IR Dump After Tune (tune) //----- //\n// log: a tune\n\n"
    )


def test_print_ir_after_change_skips_unchanged():
    class Nop(Mark):
        def apply(self, module):
            pass

    out = io.StringIO()
    PassManager([Nop(), Mark(text="a"), Nop()], [PrintIRInstrumentation(out, only_on_change=True)]).run(
        FakeModule()
    )
    assert out.getvalue() == "// -----// IR Dump After Mark (mark) //----- //\n// log: a\n\n"


def test_print_ir_after_failure():
    out = io.StringIO()
    with pytest.raises(PassFailure):
        PassManager([Boom()], [PrintIRInstrumentation(out)]).run(FakeModule())
    assert out.getvalue() == "// -----// IR Dump After Boom Failed (boom) //----- //\n// log: boom\n\n"


def test_dump_header_is_a_comment():
    assert dump_header(Mark()) == "// -----// IR Dump After Mark (mark) //----- //"


def fake_clock(step: float):
    now = [0.0]

    def clock():
        now[0] += step
        return now[0]

    return clock


def test_timing_records_each_pass_and_reports_a_table():
    timing = TimingInstrumentation(clock=fake_clock(0.25))
    pm = PassManager([Mark(), Tune(budget=0.5), Mark()], [timing])
    pm.run(FakeModule())
    pm.run(FakeModule())  # a second chunk adds to the same rows
    assert timing.times == [("mark", 0.5), ("tune{budget=0.5}", 0.5), ("mark", 0.5)]
    report = timing.report()
    assert "Total Execution Time: 1.5000 seconds" in report
    rows = re.findall(r"^\s+(\d+\.\d{4}) \(\s*(\d+\.\d)%\)  (.+)$", report, re.M)
    assert rows == [
        ("0.5000", "33.3", "mark"),
        ("0.5000", "33.3", "tune{budget=0.5}"),
        ("0.5000", "33.3", "mark"),
        ("1.5000", "100.0", "Total"),
    ]


def test_timing_counts_a_failing_pass_once():
    timing = TimingInstrumentation(clock=fake_clock(1.0))

    def verify(module):
        raise ValueError("bad")

    with pytest.raises(PassFailure):
        PassManager([Mark()], [VerifyInstrumentation(verify), timing]).run(FakeModule())
    assert timing.times == [("mark", 1.0)]


def test_remarks_and_warnings_come_back_in_emission_order():
    module = FakeModule()
    emitted = PassManager([Chatty(text="one"), Mark(), Chatty(text="two")]).run(module)
    assert module.log == ["chatty", "x", "chatty"]
    assert [(d.severity, d.message, str(d.loc)) for d in emitted] == [
        (Severity.REMARK, "remark one", "k.py:3:5"),
        (Severity.WARNING, "warning one", "k.py:4:1"),
        (Severity.REMARK, "remark two", "k.py:3:5"),
        (Severity.WARNING, "warning two", "k.py:4:1"),
    ]
    assert [n.message for n in emitted[0].notes] == ["a note"]
    assert PassManager([Mark()]).run(FakeModule()) == []  # each run collects its own


def test_a_failure_keeps_the_remarks_emitted_before_it():
    with pytest.raises(PassFailure) as info:
        PassManager([Chatty(), Boom(), Chatty(text="never")]).run(FakeModule())
    assert [d.message for d in info.value.emitted] == ["remark hi", "warning hi"]


def test_run_with_results_returns_one_pass_result_per_pass_in_order():
    module = FakeModule()
    first, second = Count(), Count()  # equal passes, told apart by identity
    passes = [first, Mark(), Count(grow=True), Chatty(), second]
    run = PassManager(passes).run_with_results(module)
    assert run.passes == passes
    assert run.results == [
        PassResult(modified=False, payload=0),
        PassResult(),  # Mark returned None: no payload, and it may have changed the module
        PassResult(modified=True, payload=2),
        PassResult(),
        PassResult(modified=False, payload=3),
    ]
    assert run.result_of(first).payload == 0 and run.result_of(second).payload == 3
    assert [d.message for d in run.diagnostics] == ["remark hi", "warning hi"]
    with pytest.raises(KeyError, match=r"pass 'count' is not one of the passes of this run"):
        run.result_of(Count())


def test_a_pass_returning_something_else_fails_naming_it():
    with pytest.raises(PassFailure) as info:
        PassManager([Mark(), Rude(), Mark(text="never")]).run_with_results(FakeModule())
    assert isinstance(info.value.cause, TypeError)
    assert "pass 'rude' returned a bool: run() and apply() return None or a PassResult" in str(info.value)


def test_the_pass_manager_takes_pass_instances_only():
    with pytest.raises(TypeError, match="pass 1 of the pipeline is a str, not a ModulePass instance"):
        PassManager([Mark(), "mark"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="pass 0 of the pipeline is a type, not a ModulePass instance"):
        PassManager([Mark])  # type: ignore[list-item]


def test_passes_cannot_emit_errors_they_raise_them():
    sink: list = []
    context = PassContext(sink.append)
    with pytest.raises(ValueError, match="raise DiagnosticError to fail the pass"):
        context.emit(Diagnostic.error("bad", Location("k.py", 1, 1)))
    with pytest.raises(ValueError, match="only remarks and warnings"):
        context.emit(Diagnostic.note("n"))
    assert sink == []


IDENTITY_FOLDS = """
"func.func"() <{sym_name = "f", function_type = (i64) -> (i64, i64, i64, i64)}> ({
^bb0(%x: i64):
  %zero = "arith.constant"() <{value = 0 : i64}> : () -> i64
  %one = "arith.constant"() <{value = 1 : i64}> : () -> i64
  %xm0 = "arith.subi"(%x, %zero) : (i64, i64) -> i64
  %zmx = "arith.subi"(%zero, %x) : (i64, i64) -> i64
  %omx = "arith.muli"(%one, %x) : (i64, i64) -> i64
  %zpx = "arith.addi"(%zero, %x) : (i64, i64) -> i64
  "func.return"(%xm0, %zmx, %omx, %zpx) : (i64, i64, i64, i64) -> ()
}) : () -> ()
"""


def test_identity_folds_respect_commutativity():
    # x - 0 -> x, 1 * x -> x, 0 + x -> x; but 0 - x is not x (subi is not commutative).
    from mixjit.ir.parser import parse_module
    from mixjit.passes.pipeline import build_pipeline

    module = parse_module(IDENTITY_FOLDS)
    PassManager(build_pipeline("canonicalize"), []).run(module)
    ret = next(op for op in module.walk() if op.name == "func.return")
    x = next(op for op in module.walk() if op.name == "func.func").body.entry.args[0]
    results = list(ret.operands)
    assert results[0] is x and results[2] is x and results[3] is x
    assert results[1] is not x and results[1].owner.name == "arith.subi"


class GcProbe(PassInstrumentation):
    """Records whether the cyclic collector runs while the pass itself runs."""

    def __init__(self) -> None:
        self.seen: list[bool] = []

    def before_pass(self, pass_, module):
        import gc

        self.seen.append(gc.isenabled())


def test_passes_run_with_the_collector_paused_and_it_is_restored_even_on_failure():
    import gc
    from dataclasses import dataclass

    from mixjit.passes.pass_base import ModulePass

    @dataclass(frozen=True)
    class Probe(ModulePass):
        name = "probe"

        def apply(self, module) -> None:
            module.log.append(gc.isenabled())

    assert gc.isenabled()
    module = FakeModule()
    probe = GcProbe()
    PassManager([Probe(), Probe()], [probe]).run(module)
    assert module.log == [False, False]  # paused inside each pass
    assert probe.seen == [True, True] and gc.isenabled()  # not around the hooks, and back on after
    with pytest.raises(PassFailure):
        PassManager([Boom()]).run(FakeModule())
    assert gc.isenabled()
    gc.disable()
    try:  # a caller that turned it off keeps it off
        PassManager([Probe()]).run(module)
        assert not gc.isenabled()
    finally:
        gc.enable()
