"""Blocked right-looking Cholesky under @mixjit, tuned for an error budget and a GPU target.

    python examples/cholesky.py [--size 256] [--block 64] [--budget 1e-6] [--target jetson-agx-orin] [--dtype float64]

Each step factors a diagonal block, solves the panel below it and updates the trailing
matrix with ``A[e:, e:] -= P @ P.T``: that fused update is the GEMM site mixjit links.
The script tunes the site's scheme on one SPD matrix, runs the plan on another, and prints
the site and its DAG, the tuned plan, the error of L against the same factorisation in FP64,
the backward error ``||A - L L^T||_F / ||A||_F`` (the application metric) and the modeled
speedup on the target. The default target, a Jetson AGX Orin, has weak FP64, so emulating
FP64 GEMMs on its tensor cores pays even at these sizes (modeled); on an H100
(``--target h100``) native FP64 tensor cores win at this size.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Sequence

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, backward_error, parse_flags, relative_frobenius, report, run_fp64, spd_matrix, tuned  # noqa: E402

__all__ = ["cholesky", "spd_matrix", "main"]


@mixjit
def cholesky(a, nb):
    """Lower Cholesky factor of the SPD matrix ``a`` (blocks of ``nb`` columns)."""
    n = a.shape[0]
    L = a.copy()
    for k in range(0, n, nb):
        e = min(k + nb, n)
        for j in range(k, e):  # unblocked factor of the diagonal block
            d = L[j, j]
            for p in range(k, j):
                d -= L[j, p] * L[j, p]
            L[j, j] = math.sqrt(d)
            for i in range(j + 1, e):
                s = L[i, j]
                for p in range(k, j):
                    s -= L[i, p] * L[j, p]
                L[i, j] = s / L[j, j]
        for i in range(e, n):  # panel: L[e:, k:e] = A[e:, k:e] L[k:e, k:e]^-T
            for j in range(k, e):
                s = L[i, j]
                for p in range(k, j):
                    s -= L[i, p] * L[j, p]
                L[i, j] = s / L[j, j]
        P = L[e:, k:e]
        L[e:, e:] -= P @ P.T  # the GEMM site: trailing update
    for i in range(n):
        for j in range(i + 1, n):
            L[i, j] = 0.0
    return L


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune, run on a held-out matrix and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=256, size_help="order n of the matrix", budget=1e-6,
                        target="jetson-agx-orin", dtype="float64",
                        extra=[("block", int, 64, "block size (columns per step)")])
    n, nb = flags.size, flags.extra["block"]
    inputs = lambda seed: (spd_matrix(n, seed).astype(flags.dtype), nb)  # noqa: E731
    held_out = inputs(flags.seed + 1)
    f = tuned(cholesky, flags, inputs)
    L = f(*held_out)
    return report(f"blocked Cholesky, n={n}, block={nb}, {flags.dtype}", f,
                  relative_frobenius(L, run_fp64(f, held_out)),
                  "backward error ||A - L L^T||_F / ||A||_F", backward_error(held_out[0], L),
                  "about the budget or below")


if __name__ == "__main__":
    main()
