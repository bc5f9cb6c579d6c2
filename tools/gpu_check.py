"""`make gpu-check`: everything a lent GPU machine should run, in one command with a time limit.

    python3 tools/gpu_check.py --results DIR [--wheels DIR] [--time-limit SECONDS] [--archs sm_90 ...]

Made for a bare, offline GPU machine (CUDA, PyTorch and CuPy installed, nothing else of this
project's; its numba/llvmlite not necessarily the pinned ones): with ``--wheels`` (filled by
``make gpu-wheels`` here, carried with the working tree), it installs the project into
``build/gpu-venv`` (a virtual environment that sees the machine's own packages) from those wheels
alone, where the machine's numba/llvmlite do not satisfy the pins; otherwise it uses this Python.
Then, each step under what is left of the time limit (default 480 s, inside the 8 minutes one
H200 session may spend on it):

1. ``environment``: Python, the GPU's name and driver (``nvidia-smi``), nvcc's version;
2. ``install`` (with ``--wheels``) and ``import``: mixjit, numba, llvmlite and their versions;
3. ``device``: ``mixjit.runtime.cuda.device.probe()`` (a CUDA device that can run the kernels?);
4. ``builds``: every kernel of every family built, its SASS checked for the tensor-core MMA and
   no spills (tools/cuda_kernels.py --no-write): for the device's target (the cubins it loads),
   without a device for every target, or for ``--archs``;
5. ``tests``: ``tests/gpu`` run (with a device; JUnit XML in ``DIR/junit.xml``), or only
   collected (without one);
6. ``bench``: tools/bench_cuda.py --quick against cuBLAS (with a device; ``DIR/bench.json``).

It writes ``DIR/gpu-check.log`` (every step's output) and ``DIR/summary.json`` (each step's
status, seconds and detail). Exit status: 0 every step passed on a device; ``EXIT_NO_DEVICE``
(3) every step it could run passed but there is no device (the device steps are skipped);
1 a step failed; ``EXIT_TIME_LIMIT`` (4) the time limit stopped a step (the rest skipped).
Standard library only, so that it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import site
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXIT_FAILED = 1
EXIT_NO_DEVICE = 3
EXIT_TIME_LIMIT = 4
DEFAULT_TIME_LIMIT = 480.0
PINNED = {"numba": ((0, 68), (0, 69)), "llvmlite": ((0, 50), (0, 51)), "threadpoolctl": ((3, 5), (1000, 0))}
"""The versions pyproject.toml pins that a GPU machine may lack, as [low, high) of (major, minor)."""


@dataclass
class Step:
    """One step: ``status`` ok, failed, skipped or timeout; ``output`` (not in the summary) its stdout."""

    name: str
    status: str = "skipped"
    seconds: float = 0.0
    detail: str = ""
    output: str = field(default="", repr=False)

    def summary(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if k != "output"}


@dataclass
class Check:
    """One gpu-check run: where it writes, its deadline, the Python it tests with, its steps."""

    results: Path
    deadline: float
    python: str = sys.executable
    steps: list[Step] = field(default_factory=list)
    device: bool = False

    def log(self, text: str) -> None:
        with open(self.results / "gpu-check.log", "a", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")

    def run(self, name: str, argv: list[str], env: dict[str, str] | None = None,
            ok_codes: tuple[int, ...] = (0,)) -> Step:
        """Run ``argv`` as step ``name`` within the time left; its output goes to the log."""
        step = Step(name)
        self.steps.append(step)
        left = self.deadline - time.monotonic()
        if left <= 1:
            step.status, step.detail = "timeout", "no time left"
            return step
        self.log(f"\n== {name}: {' '.join(argv)}")
        start = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True,
                                  text=True, timeout=left)
        except subprocess.TimeoutExpired as stop:
            step.seconds = time.monotonic() - start
            self.log(_text(stop.stdout) + _text(stop.stderr))
            step.status, step.detail = "timeout", f"stopped at the time limit after {step.seconds:.0f} s"
            return step
        step.seconds = time.monotonic() - start
        step.output = proc.stdout
        self.log(proc.stdout + proc.stderr)
        step.status = "ok" if proc.returncode in ok_codes else "failed"
        lines = [line for line in (proc.stdout + proc.stderr).strip().splitlines() if line.strip()]
        step.detail = f"exit {proc.returncode}" + (f": {lines[-1][:300]}" if lines else "")
        return step

    def note(self, name: str, status: str, detail: str) -> Step:
        step = Step(name, status, 0.0, detail)
        self.steps.append(step)
        self.log(f"\n== {name}: {status}: {detail}")
        return step


def _text(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else (value or "")  # type: ignore[return-value]


def _version(python: str, package: str) -> tuple[int, ...] | None:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return tuple(int(p) for p in proc.stdout.strip().split(".")[:2] if p.isdigit())


def _needs_wheels(python: str) -> list[str]:
    """The pinned packages ``python`` lacks, or has at another version."""
    out = []
    for package, (low, high) in PINNED.items():
        have = _version(python, package)
        if have is None or not low <= have < high:
            out.append(package)
    return out


FINDER = """\
\"\"\"Written by tools/gpu_check.py: imports mixjit from {root} with pyproject.toml's package-dir
mapping (mixjit.ir is ir/, ...), as an editable install does, without building anything.\"\"\"
import importlib.abc, importlib.util, sys

DIRS = {dirs!r}


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        folder = DIRS.get(name)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(name, folder + "/__init__.py",
                                                      submodule_search_locations=[folder])


sys.meta_path.insert(0, _Finder())
"""


def package_dirs() -> dict[str, str]:
    """pyproject.toml's ``[tool.setuptools] package-dir``, as absolute folders."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: the one line, read as written
        import re

        line = re.search(r"^package-dir\s*=\s*\{(.*)\}", (ROOT / "pyproject.toml").read_text(), re.M)
        mapping = dict(re.findall(r'"([^"]+)"\s*=\s*"([^"]+)"', line.group(1) if line else ""))
    else:
        with open(ROOT / "pyproject.toml", "rb") as f:
            mapping = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return {name: str((ROOT / folder).resolve()) for name, folder in mapping.items()}


def install(check: Check, wheels: Path) -> bool:
    """Make build/gpu-venv: a virtual environment that sees this Python's own packages through a
    ``.pth`` file (this Python may itself be a virtual environment, as the GPU machine's PyTorch
    one is, which ``--system-site-packages`` would not see), with the carried wheels of the pinned
    packages this Python lacks or has at other versions, and mixjit importable from this checkout
    (a meta-path finder with the package-dir mapping: nothing is built, so no setuptools of a
    given version is needed). Later steps use its Python."""
    venv = ROOT / "build" / "gpu-venv"
    python = str(venv / "bin" / "python")
    if not Path(python).exists():
        step = check.run("install: venv", [sys.executable, "-m", "venv", "--without-pip", str(venv)])
        if step.status != "ok":
            return False
    own = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip())
    (own / "_gpu_check_parent.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    missing = _needs_wheels(python)
    if missing:
        wanted = [str(f) for f in sorted(wheels.glob("*.whl")) if any(f.name.startswith(p + "-") for p in missing)]
        found = {Path(f).name.split("-")[0] for f in wanted}
        if set(missing) - found:
            check.note("install: wheels", "failed", f"{', '.join(sorted(set(missing) - found))} must be installed "
                       f"from wheels, and {wheels} holds none for them (`make gpu-wheels` on a machine with network)")
            return False
        step = check.run("install: wheels", [python, "-m", "pip", "install", "--no-index", "--no-deps", *wanted])
        if step.status != "ok":
            return False
    else:
        check.note("install: wheels", "ok", f"none needed: this Python has {', '.join(PINNED)} at the pinned versions")
    (own / "_mixjit_gpu_check.py").write_text(FINDER.format(root=ROOT, dirs=package_dirs()), encoding="utf-8")
    (own / "_mixjit_gpu_check.pth").write_text("import _mixjit_gpu_check\n", encoding="utf-8")
    check.note("install: mixjit", "ok", f"importable from {ROOT} (package-dir mapping)")
    check.python = python
    return True


def environment(check: Check) -> None:
    lines = [f"python {platform.python_version()} ({sys.executable})", f"machine {platform.machine()}"]
    smi = shutil.which("nvidia-smi")
    if smi:
        proc = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True)
        lines.append("gpu " + (proc.stdout.strip() or proc.stderr.strip() or "none reported"))
    else:
        lines.append("gpu: no nvidia-smi")
    nvcc = shutil.which("nvcc")
    if nvcc:
        proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True)
        lines.append("nvcc " + (proc.stdout.strip().splitlines() or ["?"])[-1])
    check.note("environment", "ok", "; ".join(lines))


PROBE = ("import json; from mixjit.runtime.cuda.device import probe; s = probe(); "
         "print(json.dumps({'ok': s.available, 'why': s.reason, 'name': s.name, 'arch': s.arch, "
         "'target': s.target if s.available else ''}))")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, required=True, help="folder for the log, summary.json, junit.xml, bench.json")
    parser.add_argument("--wheels", type=Path, default=None, help="install from these wheels (make gpu-wheels)")
    parser.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, help="seconds for everything")
    parser.add_argument("--archs", nargs="+", default=None,
                        help="targets the builds step builds (default: the device's, or every target without one)")
    args = parser.parse_args(argv)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "gpu-check.log").write_text("", encoding="utf-8")
    check = Check(args.results.resolve(), time.monotonic() + args.time_limit)

    environment(check)
    installed = install(check, args.wheels) if args.wheels is not None else True
    if installed:
        check.run("import", [check.python, "-c", "import mixjit, numba, llvmlite; "
                             "print('mixjit', mixjit.__version__, 'numba', numba.__version__, "
                             "'llvmlite', llvmlite.__version__)"])
    if installed and check.steps[-1].status == "ok":
        probe = check.run("device", [check.python, "-c", PROBE])
        if probe.status == "ok":
            found = json.loads(probe.output.strip().splitlines()[-1])
            check.device = found["ok"]
            probe.detail = (f"{found['name']} ({found['arch']}) runs the kernels" if check.device
                            else f"no device: {found['why']}")
        archs = args.archs or ([found["target"]] if check.device else [])
        check.run("builds", [check.python, "tools/cuda_kernels.py", "--no-write", *(["--archs", *archs] if archs else [])])
        if check.device:
            check.run("tests", [check.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/gpu",
                                "-m", "gpu or not gpu", f"--junitxml={check.results / 'junit.xml'}"])
            check.run("bench", [check.python, "tools/bench_cuda.py", "--quick", "--json",
                                str(check.results / "bench.json")])
        else:
            check.run("tests", [check.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/gpu",
                                "-m", "gpu or not gpu", "--collect-only"])
            check.note("bench", "skipped", "no device")
    statuses = [s.status for s in check.steps]
    code = (EXIT_TIME_LIMIT if "timeout" in statuses else EXIT_FAILED if "failed" in statuses
            else 0 if check.device else EXIT_NO_DEVICE)
    summary = {"exit": code, "device": check.device, "python": check.python,
               "time_limit_s": args.time_limit, "steps": [s.summary() for s in check.steps]}
    (check.results / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    for s in check.steps:
        print(f"{s.name:<18} {s.status:<8} {s.seconds:6.1f} s  {s.detail}")
    verdict = {0: "passed on a device", EXIT_NO_DEVICE: "passed what it could: no CUDA device here",
               EXIT_FAILED: "a step failed", EXIT_TIME_LIMIT: "stopped at the time limit"}[code]
    print(f"gpu-check: {verdict} (exit {code}); {check.results}/summary.json and gpu-check.log")
    return code


if __name__ == "__main__":
    sys.exit(main())
