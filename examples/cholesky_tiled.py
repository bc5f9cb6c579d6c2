"""Tiled right-looking Cholesky with four GEMM kinds under @mixjit (float32 or float64).

    python examples/cholesky_tiled.py [--n 256] [--block 32]

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
(tools/bench_tuner.py), like the paper's (MixPert §4.4, Fig. 10).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from mixjit import mixjit
from mixjit.report import dag_report, sites_report
from mixjit.tuning.outputs import relative_frobenius  # paper Eq. 10, in float64


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


def spd_matrix(n: int, seed: int = 0) -> np.ndarray:
    """A well-conditioned symmetric positive definite float64 matrix."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    return x @ x.T / n + np.eye(n)


def main(n: int = 256, block: int = 32, seed: int = 0) -> dict[str, float]:
    """Run the example in float32 and float64; returns the error of L per dtype."""
    if block < 2 or block % 2:
        raise ValueError(f"--block must be an even number >= 2, got {block}")
    a = spd_matrix(n, seed)
    ref = np.linalg.cholesky(a)
    errors = {np.dtype(dt).name: relative_frobenius(cholesky_tiled(a.astype(dt), block), ref)
              for dt in (np.float64, np.float32)}
    print(f"tiled Cholesky, n={n}, tile={block}")
    print(sites_report(cholesky_tiled))
    print(dag_report(cholesky_tiled))
    for name, err in errors.items():
        print(f"error vs float64 reference ({name}): {err:.3e}")
    return errors


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--block", type=int, default=32)
    args = parser.parse_args()
    main(args.n, args.block)
