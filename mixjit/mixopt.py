"""``mixopt``: run a pass pipeline over a ``.mix`` IR file, like ``mlir-opt``.

    mixopt in.mix -p "dce,canonicalize" -o out.mix
    mixopt in.mix -p canonicalize --print-ir-after-all --timing
    mixopt --list-passes

Exit status: 0 on success, 1 on a diagnosed error (unreadable input, malformed or
invalid IR, a bad pipeline, a failing pass, mismatched ``--verify-diagnostics``),
2 for a command-line usage error. Errors are printed to stderr as
``file:line:col: error: message`` with the source line and a caret; never a traceback.
Remarks and warnings that passes emit (detect-gemm's "left to numba") are printed the
same way, with the line of the Python source they point at when that file lies under a
``--source-dir`` (a ``loc()`` in a dump is untrusted: no other file is ever read); they
do not change the exit status.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from mixjit.expected_diagnostics import check_expectations, parse_expectations
from mixjit.ir.core import Operation
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError, Severity, SourceManager
from mixjit.ir.location import Location
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

__all__ = ["main", "build_arg_parser", "list_passes_text", "decode_input"]

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
        help="check the diagnostics (errors, warnings, remarks, notes) against '// expected-<severity> {{...}}' "
        "annotations in the input; exit 0 iff they match",
    )
    parser.add_argument(
        "--source-dir", dest="source_dirs", action="append", default=[], metavar="DIR",
        help="show source lines for diagnostics located in files under DIR (repeatable); "
        "without it only lines of the input itself are shown, never of other files a loc() names",
    )
    parser.add_argument("--allow-unregistered-dialect", action="store_true", help="accept ops that no dialect declares (as generic ops)")
    parser.add_argument(
        "--dag-dot", metavar="FILE",
        help="write the GEMM dependence graph of the result (see build-dag) as Graphviz DOT to FILE, "
        "and FILE with suffix .png when Graphviz 'dot' is installed",
    )
    parser.add_argument(
        "--emit-dir", metavar="DIR",
        help="write the CUDA sources of the result's mix.kernel ops (see emit-cuda) and manifest.json to DIR",
    )
    parser.add_argument(
        "--report", action="store_true",
        help="print the tuning report of the result (site, shapes, chosen config, modeled time ...; see tune) to stderr",
    )
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
    module: Operation | None = None  # the resulting module, when everything succeeded
    diagnostics: list[Diagnostic] = field(default_factory=list)  # remarks and warnings first, as emitted
    failed_pass: str | None = None  # "pass 'x' failed (passes run before it: ...)"
    crash: str | None = None  # a pass raised something other than a DiagnosticError
    kernel_files: list | None = None  # --emit-dir: the module's checked kernel sources (emit_cuda.KernelFile)


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
            chunk.diagnostics.extend(self.manager.run(module))
            chunk.output = print_op(module)
            chunk.module = module
        except DiagnosticError as err:
            chunk.diagnostics.extend(err.diagnostics)
        except PassFailure as failure:
            chunk.diagnostics.extend(failure.emitted)
            chunk.failed_pass = failure.summary()
            if isinstance(failure.cause, DiagnosticError):
                chunk.diagnostics.extend(failure.cause.diagnostics)
            else:
                chunk.crash = f"{type(failure.cause).__name__}: {failure.cause}"


#: largest input read (a dump of a large program is a few MB; /dev/zero is endless)
MAX_INPUT_BYTES = 64 * 2**20


class InputTooLarge(Exception):
    """The input has more than MAX_INPUT_BYTES bytes."""


def _read_input(path: str) -> tuple[str, str]:
    """(text, name) of the input; OSError if unreadable, InputTooLarge past MAX_INPUT_BYTES,
    DiagnosticError if not UTF-8."""
    if path == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:  # a text stream without bytes underneath (tests)
            return sys.stdin.read(), "<stdin>"
        return decode_input(_bounded(stdin.read(MAX_INPUT_BYTES + 1)), "<stdin>"), "<stdin>"
    with open(path, "rb") as handle:
        return decode_input(_bounded(handle.read(MAX_INPUT_BYTES + 1)), path), path


def _bounded(data: bytes) -> bytes:
    if len(data) > MAX_INPUT_BYTES:
        raise InputTooLarge(f"it is larger than {MAX_INPUT_BYTES // 2**20} MiB, more than a .mix dump holds")
    return data


def decode_input(data: bytes, name: str) -> str:
    """``data`` as UTF-8 text, or a DiagnosticError at the first byte that is not UTF-8:
    ``name:line:col: error: input is not UTF-8 text (byte 0xNN)`` (col counts characters)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line = data.count(b"\n", 0, err.start) + 1
        col = len(data[line_start : err.start].decode("utf-8")) + 1
        loc = Location(name, line, col)
        raise DiagnosticError(
            Diagnostic.error(f"input is not UTF-8 text (byte 0x{data[err.start]:02x})", loc)
        ) from None


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
    errors = any(d.severity is Severity.ERROR for d in diagnostics)
    failed_pass = chunk.failed_pass if errors or chunk.crash else None
    if failed_pass is not None:
        stderr.write(f"mixopt: error: {failed_pass}" + (f": {chunk.crash}" if chunk.crash else "") + "\n")
    return not errors and chunk.crash is None


def _check_kernel_files(chunk: _Chunk) -> None:
    """``--emit-dir``: render and check the module's kernel files now, so that a refused one (a
    ``file`` outside the directory) is an error at its op like any other diagnostic."""
    from mixjit.passes.emit_cuda import kernel_files

    assert chunk.module is not None
    try:
        chunk.kernel_files = kernel_files(chunk.module)
    except DiagnosticError as err:
        chunk.diagnostics.extend(err.diagnostics)


def _write_dag_dot(chunk: _Chunk, path: str, sources: SourceManager, stderr: TextIO) -> bool:
    """``--dag-dot``: draw the GEMM dependence graph of the chunk's module; False on failure."""
    from mixjit.passes.build_dag import gemm_dag, write_dot

    assert chunk.module is not None
    try:
        write_dot(gemm_dag(chunk.module), path)
    except DiagnosticError as err:
        for diag in err.diagnostics:
            stderr.write(sources.render(diag) + "\n")
        return False
    except OSError as err:
        stderr.write(f"mixopt: error: cannot write '{path}': {err.strerror or err}\n")
        return False
    except subprocess.CalledProcessError as err:
        stderr.write(f"mixopt: error: Graphviz 'dot' failed on '{path}': {err.stderr.decode(errors='replace')}\n")
        return False
    return True


def _write_report(chunk: _Chunk, sources: SourceManager, stderr: TextIO) -> bool:
    """``--report``: the tuning table of the chunk's module (passes/tuning/report.py)."""
    from mixjit.passes.tuning.report import format_report

    try:
        stderr.write(format_report(chunk.module, stream=stderr))
    except DiagnosticError as err:
        stderr.write("".join(sources.render(d) + "\n" for d in err.diagnostics))
        return False
    return True


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
    if args.dag_dot and args.split_input_file:
        return fail("--dag-dot draws the graph of one module; it cannot be combined with --split-input-file")
    if args.emit_dir and args.split_input_file:
        return fail("--emit-dir writes the kernels of one module; it cannot be combined with --split-input-file")
    try:
        passes = build_pipeline(args.pipeline)
    except PipelineError as err:
        return fail(err.render())
    try:
        text, filename = _read_input(args.input)
    except OSError as err:
        return fail(f"cannot read '{args.input}': {err.strerror or err}")
    except InputTooLarge as err:
        return fail(f"cannot read '{args.input}': {err}")
    except DiagnosticError as err:
        stderr.write(err.render() + "\n")
        return 1

    driver = _Driver(args, passes, filename, stderr)
    # loc()s in the input are untrusted: other files are read only under the --source-dir dirs
    sources = SourceManager({filename: text}, source_dirs=args.source_dirs)
    ok = True
    outputs = []
    pieces = split_input_file(text) if args.split_input_file else [(text, 1)]
    for chunk_text, first_line in pieces:
        chunk = _Chunk(chunk_text, first_line)
        driver.process(chunk)
        if args.emit_dir and chunk.module is not None:
            _check_kernel_files(chunk)
        ok = _report(chunk, args.verify_diagnostics, filename, sources, stderr) and ok
        if chunk.output is not None:
            outputs.append(chunk.output.rstrip("\n") + "\n")
        if args.report and chunk.module is not None:
            ok = _write_report(chunk, sources, stderr) and ok
    if driver.timing is not None:
        stderr.write(driver.timing.report())
    if (args.dag_dot or args.emit_dir) and ok and chunk.module is None:
        stderr.write("mixopt: note: --dag-dot and --emit-dir write nothing: the input failed, as "
                     "--verify-diagnostics expected\n")
    elif args.dag_dot and ok:
        ok = _write_dag_dot(chunk, args.dag_dot, sources, stderr)
    if args.emit_dir and ok and chunk.kernel_files is not None:
        from mixjit.passes.emit_cuda import write_kernel_files

        try:
            write_kernel_files(chunk.kernel_files, args.emit_dir)
        except OSError as err:
            return fail(f"--emit-dir: cannot write into '{args.emit_dir}': {err.strerror or err}")

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
