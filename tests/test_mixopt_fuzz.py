"""A bounded, seeded fuzz of ``mixopt`` over every registered pass (issue 26, item 10): mutated
dumps (byte flips, deleted and duplicated lines, huge numbers, hostile config strings and kernel
file names) under ``--report``, ``--emit-dir`` and ``--verify-diagnostics``. Every run must end in
exit status 0 or 1 within its time limit, with no crash (an exception out of ``main`` or a pass
failing with anything but a diagnosed error: what a traceback would be in the command), and
``--emit-dir`` must write only inside its directory. mixopt runs in-process (``main(argv)``), as
in tests/test_mixopt.py."""

from __future__ import annotations

import io
import random
import re
import shutil
from pathlib import Path

from time_limit import within

from mixjit.mixopt import main
from mixjit.passes.registry import all_passes

FILECHECK = Path(__file__).resolve().parent / "filecheck"
SEED = 20261128
RUNS = 3000
LIMIT_S = 3.0  # a run takes milliseconds; a hang (or a loop building a huge config) stops here

HOSTILE_CONFIGS = ["segments=99999999,pairs=sig1", "segments=99999999", "level=IV,tile=99999999999999999999x1x1",
                   "level=IV,fallback=" + "9" * 5000, "pairs=slices99999999sig99999999", "moduli=99999999", "",
                   ",,,", "level=V", "bits=" + "9" * 30 + ",block=" + "9" * 30 + ",out=dfp", "products=-1",
                   "width=99999999999999999999", "bits=8,m=99999999999999999999,n=1", "a=b=c", "\u0663=\u0663"]
HOSTILE_FILES = ["../../x.cu", "/tmp/mixjit-fuzz-escape.cu", "..", "", "sub/k.cu", "a\\\\b.cu", "x" * 300]
HUGE_NUMBERS = ["9" * 5000, "99999999999999999999", "-99999999999999999999", "1e999", "nan", "0"]
JUNK = '%^"(){}<>[]:=,-@!#0123456789abcxyz. \n\u00ff'


def _inputs(tmp_path_factory) -> list[str]:
    texts = [p.read_text() for p in sorted(FILECHECK.glob("*.mix"))]
    out = tmp_path_factory.mktemp("fuzz-seed") / "kernels.mix"  # a dump with mix.kernel ops (file names)
    assert main([str(FILECHECK / "emit-cuda.mix"), "-p", "emit-cuda", "-o", str(out)],
                stdout=io.StringIO(), stderr=io.StringIO()) == 0
    return [*texts, out.read_text()]


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    kind = rng.randrange(6)
    if kind == 0:  # byte flips
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            if chars:
                chars[rng.randrange(len(chars))] = rng.choice(JUNK)
        return "".join(chars)
    if kind == 1 and len(lines) > 1:  # a deleted line
        del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if kind == 2:  # a duplicated line
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "\n".join(lines)
    if kind == 3:  # a huge number
        numbers = list(re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?:e[-+]?\d+)?", text))
        if numbers:
            m = rng.choice(numbers)
            return text[: m.start()] + rng.choice(HUGE_NUMBERS) + text[m.end():]
    if kind == 4:  # a hostile config string
        configs = list(re.finditer(r'config = "([^"]*)"', text))
        if configs:
            m = rng.choice(configs)
            return text[: m.start(1)] + rng.choice(HOSTILE_CONFIGS) + text[m.end(1):]
    files = list(re.finditer(r'file = "([^"]*)"', text))  # a hostile kernel file name
    if files:
        m = rng.choice(files)
        return text[: m.start(1)] + rng.choice(HOSTILE_FILES) + text[m.end(1):]
    return _mutate(text, rng) if kind != 0 else text


def test_mutated_dumps_never_crash_hang_or_write_outside_emit_dir(tmp_path_factory):
    rng = random.Random(SEED)
    inputs = _inputs(tmp_path_factory)
    passes = sorted(all_passes())
    for run in range(RUNS):
        root = tmp_path_factory.mktemp(f"run{run}")
        path = root / "in.mix"
        path.write_text(_mutate(rng.choice(inputs), rng), encoding="utf-8", errors="surrogatepass")
        pipeline = ",".join(rng.sample(passes, rng.choice((1, 1, 2))))
        argv = [str(path), "-p", pipeline]
        if rng.random() < 0.4:
            argv.append("--report")
        if rng.random() < 0.4:
            argv.append("--verify-diagnostics")
        if rng.random() < 0.5:
            argv += ["--emit-dir", str(root / "emit" / "out")]
        elif rng.random() < 0.5:
            argv.append("--split-input-file")
        err = io.StringIO()
        with within(LIMIT_S, f"run {run}: mixopt {' '.join(argv)}"):
            code = main(argv, stdout=io.StringIO(), stderr=err)
        report = err.getvalue()
        assert code in (0, 1), (run, argv, report[-2000:])
        crash = re.search(r"^mixopt: error: pass '[^']*' failed \(passes run before it: [^)]*\): (\w+): ", report,
                          re.MULTILINE)
        assert crash is None, (run, argv, path.read_text()[:3000], report[-3000:])
        written = {p.relative_to(root) for p in root.rglob("*")} - {Path("in.mix")}
        assert all(p.parts[:2] == ("emit", "out") or p == Path("emit") for p in written), (run, argv, written)
        shutil.rmtree(root)
    assert not Path("/tmp/mixjit-fuzz-escape.cu").exists()
