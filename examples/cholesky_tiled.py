"""Tiled right-looking Cholesky with four GEMM kinds under @mixjit, tuned for a budget and a target.

    python examples/cholesky_tiled.py [--size 256] [--block 64] [--budget 1e-6] [--target jetson-agx-orin]

Each step ``k`` of the tiled factorisation runs the four tasks of LAPACK/PLASMA-style
tiled Cholesky, each with its own GEMM site:

* POTRF, the diagonal tile, factored recursively: its two halves are factored by scalar
  loops and the lower half is updated with ``D22 -= D21 @ D21.T`` (site ``potrf``);
* TRSM, the panel below it, as a GEMM with the inverse of the diagonal factor:
  ``L[e:, k:e] = L[e:, k:e] @ Linv.T`` (site ``trsm``);
* SYRK, each diagonal tile of the trailing matrix: ``L[j:f, j:f] -= Pj @ Pj.T`` (site ``syrk``);
* GEMM, the tiles below it: ``L[f:, j:f] -= Pi @ Pj.T`` (site ``gemm``).

The sites depend on each other (potrf -> trsm -> syrk, gemm -> the next step), which is
what the tuner's DAG is for: this is the four-site Cholesky of the tuner benchmark
(tools/bench_tuner.py), like the paper's (MixPert §4.4, Fig. 10). The script tunes the four
sites on one SPD matrix, runs the plan on another and prints the sites and their DAG, the
tuned plan, the error of L against the same factorisation in FP64, the backward error
``||A - L L^T||_F / ||A||_F`` (the application metric) and the modeled speedup on the target.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, backward_error, parse_flags, relative_frobenius, report, run_fp64, spd_matrix, tuned  # noqa: E402

__all__ = ["cholesky_tiled", "cholesky_tiled_py", "spd_matrix", "main"]


def cholesky_tiled_py(a, nb):
    """Lower Cholesky factor of the SPD matrix ``a`` in tiles of ``nb`` (nb even)."""
    n = a.shape[0]
    L = a.copy()
    h = nb // 2
    for k in range(0, n, nb):
        e = min(k + nb, n)
        m = min(k + h, e)
        # POTRF of the diagonal tile: factor its first half by scalar loops ...
        for j in range(k, m):
            d = L[j, j]
            for p in range(k, j):
                d -= L[j, p] * L[j, p]
            L[j, j] = math.sqrt(d)
            for i in range(j + 1, e):
                s = L[i, j]
                for p in range(k, j):
                    s -= L[i, p] * L[j, p]
                L[i, j] = s / L[j, j]
        # ... update its second half with a GEMM, then factor that by scalar loops
        D21 = L[m:e, k:m]
        L[m:e, m:e] -= D21 @ D21.T  # site potrf
        for j in range(m, e):
            d = L[j, j]
            for p in range(m, j):
                d -= L[j, p] * L[j, p]
            L[j, j] = math.sqrt(d)
            for i in range(j + 1, e):
                s = L[i, j]
                for p in range(m, j):
                    s -= L[i, p] * L[j, p]
                L[i, j] = s / L[j, j]
        if e == n:
            break
        # TRSM of the panel as a GEMM with the inverse of the diagonal factor
        w = e - k
        Linv = np.zeros((w, w), L.dtype)
        for j in range(w):
            Linv[j, j] = 1.0 / L[k + j, k + j]
            for i in range(j + 1, w):
                s = 0.0
                for p in range(j, i):
                    s -= L[k + i, k + p] * Linv[p, j]
                Linv[i, j] = s / L[k + i, k + i]
        L[e:, k:e] = L[e:, k:e] @ Linv.T  # site trsm
        # SYRK of each trailing diagonal tile, GEMM of the tiles below it
        for j in range(e, n, nb):
            f = min(j + nb, n)
            Pj = L[j:f, k:e]
            L[j:f, j:f] -= Pj @ Pj.T  # site syrk
            if f < n:
                Pi = L[f:, k:e]
                L[f:, j:f] -= Pi @ Pj.T  # site gemm
    for i in range(n):
        for j in range(i + 1, n):
            L[i, j] = 0.0
    return L


cholesky_tiled = mixjit(cholesky_tiled_py)


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune, run on a held-out matrix and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=256, size_help="order n of the matrix", budget=1e-6,
                        target="jetson-agx-orin", dtype="float64",
                        extra=[("block", int, 64, "tile size (even)")])
    n, nb = flags.size, flags.extra["block"]
    if nb < 2 or nb % 2:
        raise SystemExit(f"cholesky_tiled: --block must be an even number >= 2, got {nb}")
    inputs = lambda seed: (spd_matrix(n, seed).astype(flags.dtype), nb)  # noqa: E731
    held_out = inputs(flags.seed + 1)
    f = tuned(cholesky_tiled, flags, inputs)
    L = f(*held_out)
    return report(f"tiled Cholesky, n={n}, tile={nb}, {flags.dtype}", f, relative_frobenius(L, run_fp64(f, held_out)),
                  "backward error ||A - L L^T||_F / ||A||_F", backward_error(held_out[0], L),
                  "about the budget or below")


if __name__ == "__main__":
    main()
