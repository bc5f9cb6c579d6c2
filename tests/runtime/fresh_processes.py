"""Run code in fresh Python processes that share one Numba disk cache: for tests of what
cached code does when a new process loads it (reload hooks, address cells)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap
from typing import Callable


def run_in_fresh_processes(tmp_path: pathlib.Path, module_name: str, module_source: str, run_source: str,
                           runs: int = 2, between: Callable[[int], None] | None = None) -> list[dict]:
    """Write ``module_source`` as ``module_name.py`` under ``tmp_path``, then run
    ``run_source`` (which imports it and prints one JSON line last) ``runs`` times, each in
    a new process with the cache in ``tmp_path/cache``; the printed objects, in order.
    ``between(i)``, if given, runs before run ``i`` (1, 2, ...: after the first), e.g. to damage
    the cache the previous run wrote."""
    (tmp_path / f"{module_name}.py").write_text(module_source)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = []
    for i in range(runs):
        if between is not None and i > 0:
            between(i)
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(run_source)], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out
