"""The mixopt command, run in-process: flags, outputs, exit codes, error messages."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixjit.ir.diagnostics import Diagnostic
from mixjit.ir.location import Location
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.mixopt import main
from mixjit.passes import registry
from mixjit.passes.pass_base import ModulePass, PassContext
from mixjit.passes.registry import all_passes

PROGRAM = """\
"func.func"() <{sym_name = "f", function_type = (i64) -> i64}> ({
^bb0(%x: i64):
  %zero = "arith.constant"() <{value = 0 : i64}> : () -> i64
  %y = "arith.addi"(%x, %zero) : (i64, i64) -> i64
  %dead = "test.pure"(%y) : (i64) -> i64
  "func.return"(%y) : (i64) -> ()
}) : () -> ()
"""


def run(args: list[str], stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.mix"
    path.write_text(PROGRAM)
    return path


def test_no_pipeline_parses_verifies_and_prints(program):
    code, out, err = run([str(program)])
    assert (code, err) == (0, "")
    assert out == print_op(parse_module(PROGRAM)) + "\n"


def test_reads_stdin_and_writes_output_file(tmp_path, monkeypatch):
    target = tmp_path / "out.mix"
    code, out, err = run(["-", "-p", "canonicalize", "-o", str(target)], stdin=PROGRAM, monkeypatch=monkeypatch)
    assert (code, out, err) == (0, "", "")
    text = target.read_text()
    assert "arith.addi" not in text and "test.pure" not in text
    assert '"func.return"(%x)' in text


def test_output_file_is_not_written_on_failure(tmp_path):
    bad = tmp_path / "bad.mix"
    bad.write_text('"nosuch.op"() : () -> ()\n')
    target = tmp_path / "out.mix"
    code, _, err = run([str(bad), "-o", str(target)])
    assert code == 1 and "unknown operation 'nosuch.op'" in err
    assert not target.exists()


def test_list_passes_shows_every_pass_with_its_summary():
    code, out, _ = run(["--list-passes"])
    assert code == 0
    for name, cls in all_passes().items():
        assert re.search(rf"^  {re.escape(name)} +{re.escape(cls.summary())}$", out, re.M)
    assert "max-iterations=int (default 10)" in out


def _dumps(stderr: str) -> list[tuple[str, str, str]]:
    """(class name [+ " Failed"], pass name, IR text) of every IR dump in ``stderr``."""
    parts = re.split(r"^// -----// IR Dump After ([\w ]+) \(([\w-]+)\) //----- //$", stderr, flags=re.M)
    assert parts[0] == ""
    return [(parts[i], parts[i + 1], parts[i + 2]) for i in range(1, len(parts), 3)]


def test_print_ir_after_all_dumps_parse_again(program):
    code, out, err = run([str(program), "-p", "dce,canonicalize", "--print-ir-after-all"])
    assert code == 0
    dumps = _dumps(err)
    assert [(cls, name) for cls, name, _ in dumps] == [
        ("DeadCodeElimination", "dce"),
        ("Canonicalize", "canonicalize"),
    ]
    for _, _, text in dumps:
        print_op(parse_module(text))  # every dump is valid IR on its own
    assert "test.pure" not in dumps[0][2] and "arith.addi" in dumps[0][2]
    assert print_op(parse_module(dumps[-1][2])) + "\n" == out


def test_print_ir_after_change_skips_passes_that_change_nothing(program):
    code, _, err = run([str(program), "-p", "canonicalize,dce,canonicalize", "--print-ir-after-change"])
    assert code == 0
    assert [name for _, name, _ in _dumps(err)] == ["canonicalize"]


def test_timing_reports_every_pass_and_the_total(program):
    code, _, err = run([str(program), "-p", "dce,canonicalize,dce", "--timing"])
    assert code == 0
    rows = re.findall(r"^\s+(\d+\.\d{4}) \(\s*(\d+\.\d)%\)  (\S+)$", err, re.M)
    assert [name for _, _, name in rows] == ["dce", "canonicalize", "dce", "Total"]
    assert rows[-1][1] == "100.0"
    total = float(re.search(r"Total Execution Time: (\d+\.\d+) seconds", err).group(1))
    assert total == pytest.approx(sum(float(s) for s, _, _ in rows[:-1]), abs=5e-4)


@pytest.mark.parametrize(
    "args, content, message",
    [
        (["-p", "dce,"], PROGRAM, "invalid pass pipeline: expected a pass name, got end of pipeline"),
        (["-p", "dcee"], PROGRAM, "unknown pass 'dcee'; did you mean 'dce'?"),
        (["-p", "dce{aggressive=true}"], PROGRAM, "pass 'dce' has no option 'aggressive'"),
        (["-p", "canonicalize{max-iterations=1.5}"], PROGRAM, "option 'max-iterations' of pass 'canonicalize' expects int, got '1.5'"),
        ([], '"test.effect"() {a = } : () -> ()\n', "prog.mix:1:22: error: expected an attribute value"),
        ([], '"nosuch.op"() : () -> ()\n', "prog.mix:1:1: error: unknown operation 'nosuch.op'"),
        ([], '%x = "test.pure"(%y) : (i64) -> i64\n', "prog.mix:1:18: error:"),
        ([], '"func.return"() : () -> ()\n"test.effect"() : () -> ()\n', "prog.mix:1:1: error:"),
        ([], b"\xff\xfe garbage", "prog.mix:1:1: error: input is not UTF-8 text (byte 0xff)"),
        ([], "// ok\n// café \udcfe\n".encode("utf-8", "surrogateescape"),
         "prog.mix:2:9: error: input is not UTF-8 text (byte 0xfe)"),
    ],
)
def test_bad_input_is_a_diagnosed_error(tmp_path, args, content, message):
    path = tmp_path / "prog.mix"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    code, out, err = run([str(path), *args])
    assert code == 1
    assert message in err
    assert "Traceback" not in err and out == ""


def test_unreadable_inputs(tmp_path):
    code, _, err = run([str(tmp_path / "missing.mix")])
    assert code == 1 and err == f"mixopt: error: cannot read '{tmp_path / 'missing.mix'}': No such file or directory\n"
    code, _, err = run([str(tmp_path)])
    assert code == 1 and "Is a directory" in err
    binary = tmp_path / "binary.mix"
    binary.write_bytes(b"\xff\xfe\x00")
    code, _, err = run([str(binary)])
    assert code == 1 and err == f"{binary}:1:1: error: input is not UTF-8 text (byte 0xff)\n"


def test_non_utf8_stdin_is_located(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'"test.effect"() : () -> ()\n\x80\n')))
    code, out, err = run(["-"])
    assert (code, out) == (1, "")
    assert err.startswith("<stdin>:2:1: error: input is not UTF-8 text (byte 0x80)\n")


def test_unregistered_ops_need_the_flag(tmp_path):
    path = tmp_path / "u.mix"
    path.write_text('%v = "foo.bar"() : () -> i64\n')
    assert run([str(path)])[0] == 1
    code, out, _ = run([str(path), "--allow-unregistered-dialect", "-p", "dce"])
    assert code == 0 and '"foo.bar"' in out


@dataclass(frozen=True)
class BreakIR(ModulePass):
    """Test only: erase every func.return, leaving blocks without a terminator."""

    name = "break-ir"

    def apply(self, module) -> None:
        for op in list(module.walk()):
            if op.name == "func.return":
                op.erase()


@dataclass(frozen=True)
class Crash(ModulePass):
    """Test only: raise a plain exception."""

    name = "crash"

    def apply(self, module) -> None:
        raise RuntimeError("kaboom")


@dataclass(frozen=True)
class Remarks(ModulePass):
    """Test only: a warning at each func.func, a remark at ``helper.py`` lines 2 and 9."""

    name = "remarks"

    def run(self, module, context: PassContext) -> None:
        for op in module.walk():
            if op.name == "func.func":
                context.warning("look here", op.text_loc)
        context.remark("in the source", Location("helper.py", 2, 7), [Diagnostic.note("why", Location("helper.py", 1, 1))])
        context.remark("not there", Location("gone.py", 9, 1))


@dataclass(frozen=True)
class LocRemarks(ModulePass):
    """Test only: a remark at the ``loc(...)`` of every op that has one (as detect-gemm does)."""

    name = "loc-remarks"

    def run(self, module, context: PassContext) -> None:
        for op in module.walk():
            if op.loc.is_known:
                context.remark(f"at {op.name}", op.loc)


@pytest.fixture
def test_passes(monkeypatch):
    all_passes()  # load the real passes first
    for cls in (BreakIR, Crash, Remarks, LocRemarks):
        monkeypatch.setitem(registry._REGISTRY, cls.name, cls)


def test_remarks_and_warnings_are_printed_with_source_lines_and_do_not_fail(program, test_passes):
    (program.parent / "helper.py").write_text("def f(a):\n    x = a @ a\n")
    code, out, err = run([str(program), "-p", "remarks,dce", "--source-dir", str(program.parent)])
    assert code == 0 and "func.func" in out
    assert err.splitlines() == [
        f"{program}:1:1: warning: look here",
        PROGRAM.splitlines()[0],
        "^",
        "helper.py:2:7: remark: in the source",  # found under --source-dir
        "    x = a @ a",
        "      ^",
        "helper.py:1:1: note: why",
        "def f(a):",
        "^",
        "gone.py:9:1: remark: not there",  # unreadable source: no source line, no caret
    ]


SECRET = "the-secret-line-that-must-not-leak"


def dump_pointing_at(*files: str) -> str:
    """A dump whose ops carry ``loc()``s naming ``files`` (as an attacker's dump may)."""
    ops = "".join(f'"test.op"() : () -> () loc("{f}":1:1)\n' for f in files)
    return ops


@pytest.fixture
def secret_layout(tmp_path: Path) -> tuple[Path, Path]:
    """``tmp/secret.txt`` (outside) and ``tmp/src/`` holding ``dump.mix`` and ``ok.py``."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.py").write_text("visible_source_line\n")
    (src / "link.py").symlink_to(secret)
    return secret, src


def test_a_loc_naming_a_file_outside_the_input_never_shows_its_content(secret_layout, test_passes):
    secret, src = secret_layout
    dump = src / "dump.mix"
    names = [str(secret), "../secret.txt", "secret.txt", "src/../secret.txt", "link.py", "ok.py", "/etc/passwd"]
    dump.write_text(dump_pointing_at(*names))
    code, _, err = run([str(dump), "-p", "loc-remarks"])
    assert code == 0
    assert SECRET not in err and "visible_source_line" not in err and "root:" not in err
    assert [line for line in err.splitlines() if "remark" not in line] == []  # no source line at all
    # with --source-dir, files under it are shown, and still nothing outside it
    code, _, err = run([str(dump), "-p", "loc-remarks", "--source-dir", str(src)])
    assert code == 0
    assert SECRET not in err and "root:" not in err
    assert err.count("visible_source_line") == 1 and "ok.py:1:1: remark: at test.op\nvisible_source_line\n^" in err


def test_source_dir_shows_files_by_absolute_path_and_is_repeatable(secret_layout, test_passes):
    secret, src = secret_layout
    dump = src / "dump.mix"
    dump.write_text(dump_pointing_at(str(src / "ok.py"), str(secret)))
    code, _, err = run([str(dump), "-p", "loc-remarks", "--source-dir", str(src)])
    assert code == 0 and "visible_source_line" in err and SECRET not in err
    code, _, err = run([str(dump), "-p", "loc-remarks", "--source-dir", str(src), "--source-dir", str(secret.parent)])
    assert code == 0 and "visible_source_line" in err and SECRET in err


def test_the_input_itself_is_shown_without_source_dir(tmp_path, test_passes):
    dump = tmp_path / "self.mix"
    dump.write_text(dump_pointing_at(str(dump)))
    code, _, err = run([str(dump), "-p", "loc-remarks"])
    assert code == 0 and err.splitlines()[1] == dump.read_text().splitlines()[0]


def test_help_documents_source_dir():
    from mixjit.mixopt import build_arg_parser

    assert "--source-dir DIR" in build_arg_parser().format_help()


def test_remarks_before_a_failing_pass_are_printed(program, test_passes):
    code, _, err = run([str(program), "-p", "remarks,crash"])
    assert code == 1
    assert "warning: look here" in err and "gone.py:9:1: remark: not there" in err
    assert err.splitlines()[-1].startswith("mixopt: error: pass 'crash' failed (passes run before it: remarks)")


def test_verify_diagnostics_checks_remarks_and_warnings(tmp_path, test_passes):
    path = tmp_path / "v.mix"
    body = PROGRAM.replace("}) : () -> ()", "}) : () -> ()  // expected-warning@-6 {{look here}}")
    path.write_text(
        body + "// expected-remark@unknown {{in the source}}\n// expected-note@unknown {{why}}\n"
        "// expected-remark@unknown {{not there}}\n"
    )
    code, _, err = run([str(path), "-p", "remarks", "--verify-diagnostics"])
    assert (code, err) == (0, "")
    path.write_text(body)
    code, _, err = run([str(path), "-p", "remarks", "--verify-diagnostics"])
    assert code == 1 and "error: unexpected remark: in the source" in err
    assert "unexpected warning" not in err


def test_verify_each_names_the_pass_that_broke_the_ir(program, test_passes):
    code, out, err = run([str(program), "-p", "dce,break-ir,canonicalize"])
    assert code == 1 and out == ""
    assert "error:" in err and "terminator" in err
    assert err.splitlines()[-1] == "mixopt: error: pass 'break-ir' failed (passes run before it: dce)"
    code, out, _ = run([str(program), "-p", "dce,break-ir", "--no-verify"])
    assert code == 0 and "func.return" not in out


def test_a_crashing_pass_is_reported_without_traceback(program, test_passes):
    code, _, err = run([str(program), "-p", "canonicalize{max-iterations=3},crash", "--print-ir-after-all"])
    assert code == 1
    assert err.splitlines()[-1] == (
        "mixopt: error: pass 'crash' failed (passes run before it: canonicalize{max-iterations=3}): "
        "RuntimeError: kaboom"
    )
    dumps = _dumps(err.rsplit("mixopt: error:", 1)[0])
    assert [(cls, name) for cls, name, _ in dumps] == [("Canonicalize", "canonicalize"), ("Crash Failed", "crash")]


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--no-such-flag"])
    assert info.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_mangled_input_never_escapes_as_an_exception(tmp_path_factory, data):
    cut = data.draw(st.integers(0, len(PROGRAM)))
    junk = data.draw(st.text(alphabet='%^"(){}<>[]:=,-@!#0123456789abcxyz. \n', max_size=8))
    path = tmp_path_factory.mktemp("fuzz") / "m.mix"
    path.write_text(PROGRAM[:cut] + junk + PROGRAM[cut:])
    code, _, err = run([str(path), "-p", "canonicalize,dce"])
    assert code in (0, 1)
    assert code == 0 or "error:" in err
    assert "failed (passes run before it" not in err  # bad input is the parser's to reject


def test_docs_describe_exactly_the_flags_mixopt_has():
    from mixjit.mixopt import build_arg_parser

    docs = (Path(__file__).resolve().parents[1] / "docs" / "passes.md").read_text()
    flags = {s for a in build_arg_parser()._actions for s in a.option_strings if s.startswith("--")}
    flags.discard("--help")
    documented = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", docs))
    assert flags == documented


FILECHECK = Path(__file__).resolve().parent / "filecheck"


@pytest.fixture(scope="module")
def kernel_dump(tmp_path_factory) -> str:
    """emit-cuda.mix after emit-cuda: a module with seven mix.kernel ops."""
    path = tmp_path_factory.mktemp("dump") / "kernels.mix"
    code, _, err = run([str(FILECHECK / "emit-cuda.mix"), "-p", "emit-cuda", "-o", str(path)])
    assert code == 0, err
    return path.read_text()


@pytest.mark.parametrize("name", ["../../escape.cu", "/tmp/mixjit-escape.cu", "sub/k.cu", "..", "", "a\\b.cu"])
def test_emit_dir_refuses_a_kernel_file_outside_it_and_writes_nothing(tmp_path, kernel_dump, name):
    escaped = tmp_path / "escape.cu"
    first = re.search(r'file = "([^"]+)"', kernel_dump).group(1)
    hostile = kernel_dump.replace(f'file = "{first}"', f'file = "{name}"'.replace("\\", "\\\\"), 1)
    path = tmp_path / "deep" / "er" / "k.mix"
    path.parent.mkdir(parents=True)
    path.write_text(hostile)
    out = tmp_path / "deep" / "er" / "out"
    code, _, err = run([str(path), "--emit-dir", str(out)])
    assert code == 1
    line = 1 + hostile[: hostile.index(f'file = "{name}"'.replace("\\", "\\\\"))].count("\n")
    assert f"{path}:{line}:1: error: emit-cuda: kernel " in err and "plain file name" in err, err
    assert not out.exists() and not escaped.exists() and not Path("/tmp/mixjit-escape.cu").exists()
    assert "Traceback" not in err


def test_emit_dir_replaces_a_planted_symlink_instead_of_writing_through_it(tmp_path, kernel_dump):
    path = tmp_path / "k.mix"
    path.write_text(kernel_dump)
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("keep me")
    first = re.search(r'file = "([^"]+)"', kernel_dump).group(1)
    for name in (first, "manifest.json"):
        (out / name).symlink_to(victim)
    code, _, err = run([str(path), "--emit-dir", str(out)])
    assert (code, err) == (0, "")
    assert victim.read_text() == "keep me"
    assert not (out / first).is_symlink() and "__global__" in (out / first).read_text()
    assert not (out / "manifest.json").is_symlink() and "kernels" in (out / "manifest.json").read_text()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []  # no temporary file left


@pytest.mark.parametrize("flag", ["--emit-dir", "--dag-dot"])
def test_verify_diagnostics_with_an_output_flag_on_an_expected_failure(tmp_path, flag):
    path = tmp_path / "bad.mix"
    path.write_text('// expected-error@+1 {{unknown operation \'nosuch.op\'}}\n"nosuch.op"() : () -> ()\n')
    target = tmp_path / "out"
    code, _, err = run([str(path), "--verify-diagnostics", flag, str(target)])
    assert code == 0, err
    assert not target.exists() and "write nothing" in err


def test_an_endless_input_is_refused_cleanly():
    code, out, err = run(["/dev/zero"])
    assert (code, out) == (1, "")
    assert err == "mixopt: error: cannot read '/dev/zero': it is larger than 64 MiB, more than a .mix dump holds\n"


@pytest.mark.parametrize("where", ["9" * 5000, "+" + "9" * 5000, "-" + "9" * 20])
def test_an_annotation_pointing_absurdly_far_is_a_diagnosed_error(tmp_path, where):
    path = tmp_path / "far.mix"
    path.write_text(f'// expected-error@{where} {{{{x}}}}\n"test.effect"() : () -> ()\n')
    code, _, err = run([str(path), "--verify-diagnostics"])
    assert code == 1 and f"annotation points at line {where[:12]}..., outside the file" in err
