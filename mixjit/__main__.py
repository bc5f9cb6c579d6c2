"""``python -m mixjit run [options] script.py [args ...]``: run an unmodified script with its Numba
functions compiled as ``@mixjit`` (mixjit.patching.patch_numba), then print one report for all of
them. docs/frontend.md, "Whole scripts: python -m mixjit run"."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from typing import Sequence

USAGE_EXAMPLE = "python -m mixjit run --budget 1e-4 --target h100 --report report.txt script.py arg1 arg2"


def split_schemes(text: str) -> list[str]:
    """``"int8{encoding=sf16,x=1},native"`` -> ``["int8{encoding=sf16,x=1}", "native"]``: commas
    inside a spec's braces stay with it."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    names = [s.strip() for s in out if s.strip()]
    if not names:
        raise argparse.ArgumentTypeError("--schemes names no scheme")
    return names


def _budget(text: str) -> float | str:
    return text if text == "native" else float(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mixjit", description=__doc__.split("\n\n")[0],
                                     epilog=f"example: {USAGE_EXAMPLE}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a script with its numba.njit / numba.jit functions as @mixjit",
                              epilog=f"example: {USAGE_EXAMPLE}")
    run.add_argument("--budget", type=_budget, default=1e-6,
                     help="error budget of every function (a number, or 'native'); default 1e-6")
    run.add_argument("--target", default="h100", help="the GPU the plans are tuned for; default h100")
    run.add_argument("--schemes", type=split_schemes, default=None,
                     help="candidate schemes of every site, comma-separated (default: the tuner's)")
    run.add_argument("--tune", default="first-call", choices=("first-call", "explicit", "never"),
                     help="when functions are tuned; default on their first call")
    run.add_argument("--workers", type=int, default=None,
                     help="worker processes a tuning runs the program on at once; default one per core")
    run.add_argument("--report", type=Path, default=None, help="also write the report to this file")
    run.add_argument("script", help="the Python script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    return parser


def run_script(script: str, args: Sequence[str], report_path: Path | None = None, **options: object) -> int:
    """Run ``script`` as ``__main__`` with ``args`` under ``patch_numba(**options)``; print the
    report to stderr (and write it to ``report_path``) even when the script fails; the script's
    exit status (1 for an exception, re-raised after the report)."""
    from mixjit.patching import patch_numba

    path = Path(script)
    if not path.is_file():
        print(f"python -m mixjit run: no such script: {script}", file=sys.stderr)
        return 2
    saved_argv, folder = sys.argv[:], str(path.resolve().parent)
    sys.argv = [str(path), *args]
    sys.path.insert(0, folder)  # as `python script.py` does
    status = 0
    try:
        with patch_numba(**options) as patched:  # type: ignore[arg-type]
            try:
                runpy.run_path(str(path), run_name="__main__")
            except SystemExit as stop:
                code = stop.code
                status = code if isinstance(code, int) else (0 if code is None else 1)
            finally:
                text = patched.report()
                sys.stdout.flush()
                print(text, file=sys.stderr)
                if report_path is not None:
                    report_path.write_text(text + "\n", encoding="utf-8")
    finally:
        sys.argv = saved_argv
        sys.path.remove(folder)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; the script's exit status, 2 for bad options."""
    ns = _parser().parse_args(argv)
    options = dict(error_budget=ns.budget, target=ns.target, schemes=ns.schemes, tune=ns.tune, workers=ns.workers)
    from mixjit.decorator import mixjit

    try:
        mixjit(**options)  # checked before the script runs
    except (ValueError, TypeError) as err:
        print(f"python -m mixjit run: {err}", file=sys.stderr)
        return 2
    return run_script(ns.script, ns.args, ns.report, **options)


if __name__ == "__main__":
    sys.exit(main())
