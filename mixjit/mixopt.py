"""``mixopt``: run a pass pipeline over a ``.mix`` IR file, like ``mlir-opt``.

    mixopt in.mix -p "dce,canonicalize" -o out.mix
    mixopt in.mix -p canonicalize --print-ir-after-all --timing
    mixopt --list-passes

Exit status: 0 on success, 1 on a diagnosed error (unreadable input, malformed or
invalid IR, a bad pipeline, a failing pass, mismatched ``--verify-diagnostics``),
2 for a command-line usage error. Errors are printed to stderr as
``file:line:col: error: message`` with the source line and a caret; never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from mixjit.expected_diagnostics import check_expectations, parse_expectations
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError, SourceManager
from mixjit.ir.parser import parse_module, split_input_file
from mixjit.ir.printer import print_op
from mixjit.ir.verifier import verify
from mixjit.passes.instrumentation import (
    PrintIRInstrumentation,
    TimingInstrumentation,
    VerifyInstrumentation,
)
from mixjit.passes.manager import PassFailure, PassManager
from mixjit.passes.pass_base import ModulePass
from mixjit.passes.pipeline import PipelineError, build_pipeline
from mixjit.passes.registry import all_passes

__all__ = ["main", "build_arg_parser", "list_passes_text"]

SPLIT_MARKER = "// -----"


def build_arg_parser() -> argparse.ArgumentParser:
    """The ``mixopt`` command line (also used to generate docs/passes.md's usage text)."""
    parser = argparse.ArgumentParser(
        prog="mixopt",
        description="Run a pass pipeline over mix IR (.mix text) and print the result.",
        epilog="Pipeline syntax: 'a,b{opt=1,flag=true,list=1,2},c'. "
        "With no -p the input is parsed, verified and printed.",
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mix file, or - for stdin (default)")
    parser.add_argument("-p", "--pipeline", default="", metavar="PIPELINE", help="passes to run, e.g. 'dce,canonicalize'")
    parser.add_argument("-o", "--output", default="-", metavar="OUT", help="output file, or - for stdout (default)")
    parser.add_argument("--print-ir-after-all", action="store_true", help="print the IR to stderr after every pass")
    parser.add_argument("--print-ir-after-change", action="store_true", help="print the IR to stderr after every pass that changed it")
    parser.add_argument("--timing", action="store_true", help="print a per-pass wall-time report to stderr")
    parser.add_argument(
        "--verify-each", dest="verify", action="store_true", default=True,
        help="verify the input and the IR after every pass (default)",
    )
    parser.add_argument("--no-verify", dest="verify", action="store_false", help="do not run the verifier at all")
    parser.add_argument(
        "--split-input-file", action="store_true",
        help=f"process each '{SPLIT_MARKER}'-separated chunk on its own; join the outputs with '{SPLIT_MARKER}'",
    )
    parser.add_argument("--list-passes", action="store_true", help="list the registered passes and their options, then exit")
    parser.add_argument(
        "--verify-diagnostics", action="store_true",
        help="check diagnostics against '// expected-error {{...}}' annotations in the input; exit 0 iff they match",
    )
    parser.add_argument("--allow-unregistered-dialect", action="store_true", help="accept ops that no dialect declares (as generic ops)")
    return parser


def list_passes_text(passes: dict[str, type[ModulePass]] | None = None) -> str:
    """``--list-passes`` output: every pass with its summary, then its options."""
    passes = all_passes() if passes is None else passes
    width = max((len(name) for name in passes), default=0)
    lines = ["Available passes:"]
    for name, cls in passes.items():
        lines.append(f"  {name.ljust(width)}  {cls.summary()}")
        for info in cls.options():
            default = "required" if info.required else f"default {info.format_value(info.default)}"
            help_text = f": {info.help}" if info.help else ""
            lines.append(f"  {''.ljust(width)}    {info.name}={info.type_name} ({default}){help_text}")
    return "\n".join(lines) + "\n"


@dataclass
class _Chunk:
    """One unit of work and its outcome."""

    text: str
    first_line: int  # line numbers in diagnostics are those of the whole file
    output: str | None = None  # the printed module, when everything succeeded
    diagnostics: list[Diagnostic] = field(default_factory=list)
    failed_pass: str | None = None  # "pass 'x' failed (passes run before it: ...)"
    crash: str | None = None  # a pass raised something other than a DiagnosticError


class _Driver:
    def __init__(self, args: argparse.Namespace, passes: list[ModulePass], filename: str, stderr: TextIO):
        self.args = args
        self.filename = filename
        self.stderr = stderr
        self.timing = TimingInstrumentation() if args.timing else None
        instrumentations = []
        if args.verify:
            instrumentations.append(VerifyInstrumentation(verify))
        if args.print_ir_after_all or args.print_ir_after_change:
            instrumentations.append(
                PrintIRInstrumentation(
                    stderr, only_on_change=not args.print_ir_after_all, print_ir=print_op
                )
            )
        if self.timing is not None:
            instrumentations.append(self.timing)  # last: its hooks wrap the pass most tightly
        self.manager = PassManager(passes, instrumentations)

    def process(self, chunk: _Chunk) -> None:
        try:
            module = parse_module(
                chunk.text,
                self.filename,
                first_line=chunk.first_line,
                allow_unregistered=self.args.allow_unregistered_dialect,
                verify=self.args.verify,
            )
            self.manager.run(module)
            chunk.output = print_op(module)
        except DiagnosticError as err:
            chunk.diagnostics.extend(err.diagnostics)
        except PassFailure as failure:
            chunk.failed_pass = failure.summary()
            if isinstance(failure.cause, DiagnosticError):
                chunk.diagnostics.extend(failure.cause.diagnostics)
            else:
                chunk.crash = f"{type(failure.cause).__name__}: {failure.cause}"


def _read_input(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    with open(path, encoding="utf-8") as handle:
        return handle.read(), path


def _report(
    chunk: _Chunk, verify_diagnostics: bool, filename: str, sources: SourceManager, stderr: TextIO
) -> bool:
    """Print a chunk's diagnostics (or, with --verify-diagnostics, the mismatches); True if ok."""
    diagnostics = chunk.diagnostics
    if verify_diagnostics:
        try:
            expectations = parse_expectations(chunk.text, filename, chunk.first_line)
        except DiagnosticError as err:
            diagnostics = list(err.diagnostics)
        else:
            diagnostics = check_expectations(expectations, chunk.diagnostics, filename)
    for diag in diagnostics:
        stderr.write(sources.render(diag) + "\n")
    failed_pass = chunk.failed_pass if diagnostics or chunk.crash else None
    if failed_pass is not None:
        stderr.write(f"mixopt: error: {failed_pass}" + (f": {chunk.crash}" if chunk.crash else "") + "\n")
    return not diagnostics and chunk.crash is None


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``mixopt`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    args = build_arg_parser().parse_args(argv)

    def fail(message: str) -> int:
        stderr.write(f"mixopt: error: {message}\n")
        return 1

    if args.list_passes:
        stdout.write(list_passes_text())
        return 0
    try:
        passes = build_pipeline(args.pipeline)
    except PipelineError as err:
        return fail(err.render())
    try:
        text, filename = _read_input(args.input)
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        return fail(f"cannot read '{args.input}': {reason}")

    driver = _Driver(args, passes, filename, stderr)
    sources = SourceManager({filename: text})
    ok = True
    outputs = []
    pieces = split_input_file(text) if args.split_input_file else [(text, 1)]
    for chunk_text, first_line in pieces:
        chunk = _Chunk(chunk_text, first_line)
        driver.process(chunk)
        ok = _report(chunk, args.verify_diagnostics, filename, sources, stderr) and ok
        if chunk.output is not None:
            outputs.append(chunk.output.rstrip("\n") + "\n")
    if driver.timing is not None:
        stderr.write(driver.timing.report())

    result = f"{SPLIT_MARKER}\n".join(outputs)
    if args.output == "-":
        stdout.write(result)
    elif ok:  # like mlir-opt, an output file is only written when everything succeeded
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(result)
        except OSError as err:
            return fail(f"cannot write '{args.output}': {err.strerror or err}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
