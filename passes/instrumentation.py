"""Standard pass instrumentations: verify-each, IR dumps after passes, timing.

Each is a ``PassInstrumentation`` (see ``manager.py``); ``mixopt`` flags only decide
which of these objects are added to the pass manager.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TextIO

from mixjit.passes.manager import PassInstrumentation
from mixjit.passes.pass_base import ModulePass

__all__ = [
    "VerifyInstrumentation",
    "PrintIRInstrumentation",
    "TimingInstrumentation",
    "dump_header",
]


def dump_header(pass_: ModulePass, failed: bool = False) -> str:
    """``// -----// IR Dump After DeadCodeElimination (dce) //----- //`` (a comment line).

    The header is an IR comment, so a dump of one module still parses.
    """
    what = f"{type(pass_).__name__} Failed" if failed else type(pass_).__name__
    return f"// -----// IR Dump After {what} ({pass_.name}) //----- //"


class VerifyInstrumentation(PassInstrumentation):
    """Verifies the module after every pass; a verifier error fails that pass."""

    def __init__(self, verify: Callable[[Any], None]) -> None:
        self.verify = verify

    def after_pass(self, pass_: ModulePass, module: Any) -> None:
        self.verify(module)


class PrintIRInstrumentation(PassInstrumentation):
    """Prints the module after every pass (or only after passes that changed it).

    The IR is also printed after a failing pass (header ``... Failed``), so the state
    that made it fail is visible.
    """

    def __init__(
        self,
        stream: TextIO,
        only_on_change: bool = False,
        print_ir: Callable[[Any], str] = str,
    ) -> None:
        self.stream = stream
        self.only_on_change = only_on_change
        self.print_ir = print_ir
        self._before: str | None = None

    def before_pass(self, pass_: ModulePass, module: Any) -> None:
        if self.only_on_change:
            self._before = self.print_ir(module)

    def after_pass(self, pass_: ModulePass, module: Any) -> None:
        text = self.print_ir(module)
        if self.only_on_change and text == self._before:
            return
        self._dump(dump_header(pass_), text)

    def after_failure(self, pass_: ModulePass, module: Any, error: BaseException) -> None:
        self._dump(dump_header(pass_, failed=True), self.print_ir(module))

    def _dump(self, header: str, text: str) -> None:
        self.stream.write(f"{header}\n{text.rstrip()}\n\n")
        self.stream.flush()


class TimingInstrumentation(PassInstrumentation):
    """Measures the wall time of each pass for ``--timing``.

    Times are kept per pass object, in pipeline order; running the same pipeline
    again (``--split-input-file``) adds to them.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self._times: dict[int, tuple[str, float]] = {}
        self._start: float | None = None

    def before_pass(self, pass_: ModulePass, module: Any) -> None:
        self._start = self.clock()

    def after_pass(self, pass_: ModulePass, module: Any) -> None:
        self._stop(pass_)

    def after_failure(self, pass_: ModulePass, module: Any, error: BaseException) -> None:
        self._stop(pass_)

    def _stop(self, pass_: ModulePass) -> None:
        if self._start is None:  # already stopped by after_pass (a later hook failed)
            return
        elapsed = self.clock() - self._start
        self._start = None
        name, seconds = self._times.get(id(pass_), (pass_.pipeline_spec(), 0.0))
        self._times[id(pass_)] = (name, seconds + elapsed)

    @property
    def times(self) -> list[tuple[str, float]]:
        """(pass spec, seconds) for every pass that ran, in pipeline order."""
        return list(self._times.values())

    def report(self) -> str:
        """An MLIR-style table: wall time and share of every pass, then the total."""
        total = sum(seconds for _, seconds in self.times)
        rule = "===" + "-" * 73 + "==="
        lines = [
            rule,
            "... Pass execution timing report ...".center(len(rule)).rstrip(),
            rule,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for name, seconds in self.times + [("Total", total)]:
            share = 100.0 * seconds / total if total > 0 else 0.0
            lines.append(f"  {seconds:8.4f} ({share:5.1f}%)  {name}")
        return "\n".join(lines) + "\n"
