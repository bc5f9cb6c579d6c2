"""Helpers shared by the benchmark and reproduction scripts in tools/.

The scripts run as ``python tools/<script>.py`` and import this module as
``common`` (the script's directory is first on ``sys.path``). It holds what every
reproduction needs and nothing scheme-specific: where the run happened
(``machine_info``), a provenance header for generated docs, wall-clock timing,
progress lines on stderr, and the replacement of a generated section of a Markdown
file between markers, so hand-written text around it survives a re-run.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import platform
import re
import shlex
import subprocess
import sys
import time
from typing import Any, Callable, Iterable, Sequence, TypeVar

import numpy as np

#: repository root (tools/ sits directly under it)
ROOT = pathlib.Path(__file__).resolve().parents[1]

T = TypeVar("T")


def machine_info() -> dict[str, str]:
    """Where a measurement ran: CPU model, core count, OS, Python, numpy and its BLAS."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas_name(),
    }


def _blas_name() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # numpy builds without the dict form: report it as unknown
        return "unknown"


def provenance(argv: Sequence[str], seed: int | None) -> list[str]:
    """Markdown bullet lines saying how a generated section was produced."""
    info = machine_info()
    cmd = " ".join(shlex.quote(a) for a in argv)
    lines = [
        f"- command: `{cmd}`",
        f"- date: {_dt.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        f"- machine: {info['cpu']}, {info['cores']} cores, {info['os']}",
        f"- python {info['python']}, numpy {info['numpy']} ({info['blas']})",
    ]
    if seed is not None:
        lines.append(f"- seed: {seed}")
    return lines


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """Call ``fn`` and return its result with the wall-clock seconds it took."""
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def progress(message: str) -> None:
    """One progress line on stderr, so that stdout stays the result."""
    print(message, file=sys.stderr, flush=True)


def fmt_sci(x: float | None, digits: int = 2) -> str:
    """Scientific notation for error figures; ``-`` for a missing value."""
    if x is None:
        return "-"
    return f"{x:.{digits}e}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table, as lines."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def replace_generated_section(path: pathlib.Path, name: str, body: str) -> None:
    """Replace the text between ``<!-- BEGIN GENERATED: name -->`` and
    ``<!-- END GENERATED: name -->`` in ``path`` with ``body``.

    The markers must already be in the file (once each), so a typo in a section
    name cannot silently append a second copy.
    """
    begin, end = f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"
    text = path.read_text()
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    found = pattern.findall(text)
    if len(found) != 1:
        raise ValueError(
            f"{path}: expected the markers {begin!r} ... {end!r} exactly once, found "
            f"{len(found)}; add them where the generated section should go"
        )
    new = pattern.sub(lambda _: f"{begin}\n{body.rstrip()}\n{end}", text)
    path.write_text(new)


def child_json(code: str, args: Sequence[str], what: str, timeout: float | None = None) -> Any:
    """Run ``code`` in a fresh Python process (``python -c code *args``, in the repository root)
    and return the JSON of the last line it prints; RuntimeError naming ``what`` with its
    stderr when it fails."""
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def write_json(path: pathlib.Path, data: Any) -> None:
    """Write results as indented JSON (numpy scalars converted)."""
    path.write_text(json.dumps(data, indent=1, default=_json_default) + "\n")


def _json_default(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"cannot write {type(x).__name__} to JSON")
