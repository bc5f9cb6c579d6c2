"""Run code in fresh Python processes that share one Numba disk cache: for tests of what
cached code does when a new process loads it (reload hooks, address cells)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap


def run_in_fresh_processes(tmp_path: pathlib.Path, module_name: str, module_source: str, run_source: str,
                           runs: int = 2) -> list[dict]:
    """Write ``module_source`` as ``module_name.py`` under ``tmp_path``, then run
    ``run_source`` (which imports it and prints one JSON line last) ``runs`` times, each in
    a new process with the cache in ``tmp_path/cache``; the printed objects, in order."""
    (tmp_path / f"{module_name}.py").write_text(module_source)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(run_source)], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out
