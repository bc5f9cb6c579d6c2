"""Compile mixjit's run-time code once and cache it on disk: ``python -m mixjit.warm``.

A fresh checkout has no compiled code: the first ``@mixjit`` call compiles the run-time
entry and, when its plans or its tuning need them, each scheme's executor (Numba, minutes of
CPU in all; docs/first_use.md). ``make setup`` runs this module once, so that the demo, the
tests and a user's first call load everything from the disk cache instead. Run it again
after an upgrade: each line says whether its code was loaded or compiled.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

import numpy as np

__all__ = ["warm"]


def _timed(label: str, fn: Callable[[], object], out: TextIO) -> float:
    start = time.process_time()
    fn()
    spent = time.process_time() - start
    out.write(f"  {label:<34} {spent:6.1f} s CPU\n")
    out.flush()
    return spent


def warm(out: TextIO = sys.stdout) -> float:
    """Compile (or load from the disk cache) the run-time entry, every compiled site executor
    and every scheme's ``scheme.run`` kernel for contiguous float32 and float64 operands.
    Returns the CPU seconds spent."""
    from mixjit import entry
    from mixjit.runtime.schemes.base import all_schemes

    out.write("mixjit: compiling (or loading) the run-time code once; later runs load it from disk\n")
    total = _timed("run-time entry", entry.entry_cfunc, out)
    for code, name in sorted({ex.code: ex.name for ex in map(entry.executor_for, entry.EXECUTORS)}.items()):
        if code not in (entry.EXEC_NATIVE, entry.EXEC_REFERENCE):
            total += _timed(f"site executor {name}", lambda code=code: entry.load_executor(code), out)
    rng = np.random.default_rng(0)
    for name, scheme in sorted(all_schemes().items()):
        for dtype in scheme.dtypes:
            a = rng.uniform(-1, 1, (4, 4)).astype(dtype)
            total += _timed(f"{name} ({np.dtype(dtype).name})",
                            lambda s=scheme, a=a: s.run(a, a, s.default_config(a.dtype)), out)
    out.write(f"mixjit: done in {total:.1f} s CPU\n")
    return total


if __name__ == "__main__":
    warm()
