"""Compile mixjit's run-time code once and cache it on disk: ``python -m mixjit.warm``.

A fresh checkout has no compiled code: the first ``@mixjit`` call compiles the run-time
entry and, when its plans or its tuning need them, each scheme's executor (Numba, minutes of
CPU in all; docs/results/first_use.md). ``make setup`` runs this module once, so that the demo, the
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
    executors = {ex.code: ex.name for ex in map(entry.executor_for, entry.EXECUTORS)}
    executors[entry.EXEC_REFERENCE] = entry.REFERENCE_EXECUTOR
    for code, name in sorted(executors.items()):
        total += _timed(f"site executor {name}", lambda code=code: entry.load_executor(code), out)
    rng = np.random.default_rng(0)
    for name, scheme in sorted(all_schemes().items()):
        for dtype in scheme.dtypes:
            a = rng.uniform(-1, 1, (4, 4)).astype(dtype)
            total += _timed(f"{name} ({np.dtype(dtype).name})",
                            lambda s=scheme, a=a: s.run(a, a, s.default_config(a.dtype)), out)
    total += _timed("mixpert paths compiled on demand", _mixpert_rare_paths, out)
    total += _timed("kernels compiled at first call", _lazy_cells, out)
    total += _timed("mixpert threaded packing", _mixpert_threaded_packing, out)
    out.write(f"mixjit: done in {total:.1f} s CPU\n")
    return total


def _mixpert_rare_paths() -> None:
    """Run the MixPert general path on data that takes its paths compiled on demand
    (runtime/mixpert/driver.py's product calls each only when a call needs it): wide
    exponent spans (certified and exact paths), elements aligned to 0 (step 6's
    recomputation), non-finite elements; the small shapes above take the small path only."""
    from mixjit.gemm_api import gemm

    rng = np.random.default_rng(1)
    for dtype, label, n in ((np.float32, None, 170), (np.float32, "level=IV", 170),
                            (np.float64, "segments=7,pairs=sig6,tile=4x8x4", 70)):
        a = rng.standard_normal((n, n)).astype(dtype)
        a[3, : n // 2] *= 2.0**60  # a wide span along K
        a[5, 1] = 2.0**-40  # aligned to 0 beside its row's other elements
        a[7, 2] = np.nan
        scheme = "mixpert" if dtype == np.float32 else "mixpert-fp64"
        gemm(a, a, scheme, label)


def _lazy_cells() -> None:
    """Compile the kernels that the code loaded above calls through lazy cells
    (runtime/jit/lazy_link.py's ``unlinked_lazy``: the MixPert small path's loops, which the
    data above leaves to the direct paths, the float64 direct path's full guarantee check,
    which its proof spares on that data, and the sites' general-path trampoline), for the
    argument types of each caller, so that no first call compiles them."""
    from mixjit.runtime.jit.lazy_link import fill_lazy_cells

    fill_lazy_cells(package="mixjit")


def _mixpert_threaded_packing() -> None:
    """Compile the MixPert general path's threaded row form and block packing, which its
    trampolines reach only for calls large enough for threads to pay
    (mixpert.pack.threads_pay), for the operands Python callers pass (C-ordered)
    and those sites pass (strided views)."""
    from mixjit.runtime.mixpert.pack import _block_operand_threads
    from mixjit.runtime.mixpert.split import _row_form_threads, prepare_operand
    from mixjit.runtime.mixpert.words import W_DIGITS, W_SEGMENTS, W_TK
    from mixjit.runtime.schemes.base import get_scheme

    rng = np.random.default_rng(2)
    for dtype, scheme in ((np.float32, "mixpert"), (np.float64, "mixpert-fp64")):
        x = rng.standard_normal((8, 16)).astype(dtype)
        for operand in (x, x[:, ::2]):
            for transpose in (False, True):
                shape = operand.shape[::-1] if transpose else operand.shape
                for out_dtype in (np.float64, np.float32) if dtype == np.float32 else (np.float64,):
                    _row_form_threads(np.empty(shape, out_dtype), operand, transpose, dtype == np.float32)
        params = np.asarray(get_scheme(scheme).default_config(dtype).words(), dtype=np.int64)
        op = prepare_operand(x, False, params)
        rows = np.arange(op.q.shape[0])
        out = np.empty(op.q.shape)
        _block_operand_threads(out, op.q, op.scale, rows, 0, op.q.shape[1], 0, 0, int(params[W_SEGMENTS]),
                               int(params[W_DIGITS]), int(params[W_TK]))


if __name__ == "__main__":
    warm()
