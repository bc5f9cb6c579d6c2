"""Programs whose runs do not end under some candidates: a Newton-Schulz inverse iterated to a
tolerance (a float32-class candidate stalls it above the tolerance: it loops on its GEMM sites)
and a scalar loop after one GEMM that ends only near the precise result (it loops without any
GEMM call). Plain Python functions: each test wraps them in @mixjit. Also run as a script by
the Ctrl-C test (``python diverging.py``)."""

from __future__ import annotations

import numpy as np
from numba import prange


def ns_inverse(a, x0, eps):
    """Newton-Schulz inverse of ``a`` iterated until a step changes no entry by more than ``eps``:
    no iteration cap, as in the scientific codes it stands for."""
    x = x0.copy()
    delta = 1.0
    while delta > eps:
        r = a @ x
        x_new = 2.0 * x - x @ r
        delta = np.abs(x_new - x).max()
        x = x_new
    return x


def ns_inputs(n=16, seed=0):
    rng = np.random.default_rng(seed)
    a = np.eye(n) + 0.1 * rng.standard_normal((n, n))
    x0 = a.T / (np.abs(a).sum(0).max() * np.abs(a).sum(1).max())
    return a, x0, 1e-13


def stall(a, b, want):
    """One GEMM, then a loop (no GEMM in it) that ends only when the product's sum is within
    1e-12 of ``want``: it never ends under a candidate less accurate than that."""
    s = (a @ b).sum()
    steps = 0
    while abs(s - want) > 1e-12 * abs(want):
        steps += 1
        s = s * 1.0 + 0.0 * steps
    return s, steps


def stall_parallel(a, b, want):
    """``stall`` with a parallel region first (compiled with ``parallel=True``): a row sum by
    ``prange``, then the same product and the same loop. Its runs must happen on a worker forked
    twice once GNU OpenMP has started (mixjit.tuning.workers.DetachedWorker)."""
    rows = np.zeros(a.shape[0])
    for i in prange(a.shape[0]):
        rows[i] = a[i].sum()
    s = (a @ b).sum()
    steps = 0
    while abs(s - want) > 1e-12 * abs(want):
        steps += 1
        s = s * 1.0 + 0.0 * steps
    return s, steps, rows


def stall_inputs(n=16, seed=1):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    return a, b, float((a @ b).sum())


def stall_in_float64(a, b):
    """One GEMM, then a loop that ends at once in the program's own float32 (``s + t`` rounds back
    to ``s`` when ``t`` is 1e-9 of it) and never in float64: the tuner's float64 run of the whole
    program (``f.tune(..., fp64=True)``) does not end, every float32 run does."""
    s = (a @ b).sum()
    scale = np.empty(1, a.dtype)
    scale[0] = 1e-9
    t = s * scale[0]
    steps = 0
    while s + t != s:
        steps += 1
    return s, steps


def stall_in_float64_inputs(n=8, seed=2):
    rng = np.random.default_rng(seed)
    return rng.random((n, n), dtype=np.float32) + 1, rng.random((n, n), dtype=np.float32) + 1


STALL_SCHEMES = ("mixpert-fp64", "mixpert")
"""The stall test's candidates: mixpert-fp64's, native, and mixpert's float32-class configs (they stall)."""


if __name__ == "__main__":  # the Ctrl-C test: a tuning that would run for a minute per stalled candidate
    import sys

    from mixjit import mixjit

    f = mixjit(stall, schemes=STALL_SCHEMES, tune="explicit")
    args = stall_inputs()
    f(*args)  # compile (tune="explicit": no tuning yet)
    print("tuning", flush=True)
    result = f.tune(*args, eval_timeout=60.0, fp64=False)
    print("RESULT", result.stopped, result.plan.within_budget, flush=True)
    sys.exit(0)
