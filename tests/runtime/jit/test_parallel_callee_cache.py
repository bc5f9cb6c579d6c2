"""A cached function whose parallel callee came from the cache keeps the callee's reload hooks
(runtime/jit/cache.py, third defect): reloaded in a new process, it starts the threading layer
before calling into it, instead of calling through a null pointer (a segfault). Found when an
edit of numerics/executor_common.py recompiled the MixPert driver while its threaded packer loaded from
the cache: the next process crashed in ``mixjit.gemm(..., "mixpert")``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

CALLEE = textwrap.dedent(
    """
    import numba
    from numba import prange
    from mixjit.runtime.jit.cache import TolerantFunctionCache


    def cached(**options):
        def decorate(py_func):
            dispatcher = numba.njit(**options)(py_func)
            dispatcher._cache = TolerantFunctionCache(py_func)
            return dispatcher
        return decorate


    @cached(parallel=True)
    def total(x):
        s = 0.0
        for i in prange(x.shape[0]):
            s += x[i]
        return s
    """
)
CALLER = "from callee import cached, total\n\n\n@cached()\ndef caller(x):\n    return total(x) + {version}\n"
RUN = "import numpy as np, caller\nprint(caller.caller(np.ones(1000)))\n"


def _run(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root), NUMBA_CACHE_DIR=str(root / "numba-cache"))
    return subprocess.run([sys.executable, "-c", RUN], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_caller_recompiled_beside_a_cached_parallel_callee_reloads_safely(tmp_path):
    (tmp_path / "callee.py").write_text(CALLEE)
    (tmp_path / "caller.py").write_text(CALLER.format(version=1))
    first = _run(tmp_path)  # both compiled, both cached
    assert first.returncode == 0 and first.stdout.split() == ["1001.0"], first.stderr[-2000:]
    (tmp_path / "caller.py").write_text(CALLER.format(version=2))
    edited = _run(tmp_path)  # the caller compiles again; the parallel callee comes from its cache
    assert edited.returncode == 0 and edited.stdout.split() == ["1002.0"], edited.stderr[-2000:]
    reloaded = _run(tmp_path)  # the caller from its cache: it must start the threading layer itself
    assert reloaded.returncode == 0 and reloaded.stdout.split() == ["1002.0"], (reloaded.returncode,
                                                                               reloaded.stderr[-2000:])
