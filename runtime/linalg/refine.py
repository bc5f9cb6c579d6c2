"""The iterative-refinement loop shared by the solves and least squares (docs/numerics.md,
"linalg"): residuals in the working precision, a stopping test per right-hand side, a
correction through the cheap factorization, at most :data:`REFINE_MAX_STEPS` corrections."""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["refine", "REFINE_MAX_STEPS"]

#: corrections iterative refinement makes at most before the LAPACK fallback (LAPACK's dsgesv: 30)
REFINE_MAX_STEPS = 30


def refine(x: np.ndarray, residual: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
           correct: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, int, bool]:
    """Refine ``x`` (n x r): ``residual(x)`` gives ``(R, done)`` (``done``: per column, whether it
    passes the stopping test); while a column fails, ``x ← x + correct(R)`` (one rounding per
    element; every column takes the same steps). ``(x, corrections, converged)``."""
    for step in range(REFINE_MAX_STEPS + 1):
        r, done = residual(x)
        if done.all():
            return x, step, True
        if step == REFINE_MAX_STEPS:
            break
        x = x + correct(r)
    return x, REFINE_MAX_STEPS, False
