"""HPL-AI (HPL-MxP) under @mixjit: LU in low precision through the GEMM site, then FP64 iterative refinement.

    python examples/hpl_ai.py [--size 512] [--block 64] [--budget 1e-3] [--target a100] [--dtype float32]

As in the HPL-AI / HPL-MxP benchmark, the matrix is random and diagonally dominant, so LU
needs no pivoting. The blocked right-looking LU runs in ``--dtype`` (float32 by default)
under ``@mixjit``: each step factors a panel and a block row by scalar loops and updates
the trailing matrix with ``A[e:, e:] -= L21 @ U12``, the GEMM site the tuner may run in a
low-precision scheme within the budget. The factors then serve as the preconditioner of
iterative refinement in FP64 (residual ``b - A x`` and update in float64) until the HPL
scaled residual ``||A x - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n)`` is below 16,
the benchmark's pass mark. The script prints the site and its DAG, the tuned plan, the
error of the LU factors against the same LU in FP64, the scaled residual after refinement
(the application metric), the refinement steps, and the modeled speedup of the LU on the target.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.linalg import solve_triangular

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, parse_flags, relative_frobenius, report, run_fp64, tuned  # noqa: E402

__all__ = ["lu", "hpl_matrix", "refine", "scaled_residual", "PASS_MARK", "main"]

PASS_MARK = 16.0
"""HPL's threshold on the scaled residual: a solution above it fails the benchmark."""


@mixjit
def lu(a, nb):
    """``L`` (unit lower, below the diagonal) and ``U`` packed in one matrix: LU of ``a`` without
    pivoting, by blocks of ``nb`` columns."""
    n = a.shape[0]
    LU = a.copy()
    for k in range(0, n, nb):
        e = min(k + nb, n)
        for j in range(k, e):  # panel LU[k:, k:e], unblocked
            piv = LU[j, j]
            for i in range(j + 1, n):
                LU[i, j] /= piv
                lij = LU[i, j]
                for c in range(j + 1, e):
                    LU[i, c] -= lij * LU[j, c]
        for j in range(k, e):  # block row U12 = L11^-1 A12
            for i in range(j + 1, e):
                lij = LU[i, j]
                for c in range(e, n):
                    LU[i, c] -= lij * LU[j, c]
        LU[e:, e:] -= LU[e:, k:e] @ LU[k:e, e:]  # the GEMM site: trailing update
    return LU


def hpl_matrix(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A random diagonally dominant ``n x n`` float64 matrix (as HPL-MxP generates) and a right-hand side."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-0.5, 0.5, (n, n))
    a[np.diag_indices(n)] = np.abs(a).sum(1)
    return a, rng.uniform(-0.5, 0.5, n)


def scaled_residual(a: np.ndarray, x: np.ndarray, b: np.ndarray) -> float:
    """HPL's ``||A x - b||_inf / (eps (||A||_inf ||x||_inf + ||b||_inf) n)``, eps the float64 unit roundoff."""
    eps = np.finfo(np.float64).eps / 2
    r = a @ x - b
    norm = np.linalg.norm
    return float(norm(r, np.inf) / (eps * (norm(a, np.inf) * norm(x, np.inf) + norm(b, np.inf)) * a.shape[0]))


def refine(a: np.ndarray, b: np.ndarray, factors: np.ndarray, max_steps: int = 50) -> tuple[np.ndarray, list[float]]:
    """Solve ``a x = b`` by iterative refinement in FP64, preconditioned by the low-precision
    ``factors`` (``lu``'s packed L and U, used in float64). Stops when the scaled residual is
    below ``PASS_MARK``, after ``max_steps``, or when it stops decreasing. Returns ``x`` and the
    scaled residual after each solve."""
    LU = factors.astype(np.float64)

    def solve(r: np.ndarray) -> np.ndarray:
        y = solve_triangular(LU, r, lower=True, unit_diagonal=True, check_finite=False)
        return solve_triangular(LU, y, lower=False, check_finite=False)

    x = solve(b)
    history = [scaled_residual(a, x, b)]
    while history[-1] >= PASS_MARK and len(history) <= max_steps:
        x = x + solve(b - a @ x)
        history.append(scaled_residual(a, x, b))
        if not np.isfinite(history[-1]) or history[-1] >= history[-2]:
            break
    return x, history


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune the LU, factor a held-out matrix, refine, and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=512, size_help="order n of the system", budget=1e-3,
                        target="a100", dtype="float32", extra=[("block", int, 64, "block size of the LU")])
    n, nb = flags.size, flags.extra["block"]
    inputs = lambda seed: (hpl_matrix(n, seed)[0].astype(flags.dtype), nb)  # noqa: E731
    a, b = hpl_matrix(n, flags.seed + 1)
    held_out = (a.astype(flags.dtype), nb)
    f = tuned(lu, flags, inputs)
    factors = f(*held_out)
    x, history = refine(a, b, factors)
    result = report(f"HPL-AI, n={n}, block={nb}, LU in {flags.dtype}, refinement in float64", f,
                    relative_frobenius(factors, run_fp64(f, held_out)),
                    "HPL scaled residual after refinement", history[-1], f"< {PASS_MARK:g} (HPL's pass mark)",
                    residuals=history)
    print(f"refinement: {len(history) - 1} steps; scaled residual after each solve: "
          + ", ".join(f"{r:.3g}" for r in history))
    return result


if __name__ == "__main__":
    main()
