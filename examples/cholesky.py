"""Blocked right-looking Cholesky under @mixjit (float64 and float32).

    python examples/cholesky.py [--n 96] [--block 32]

Each step factors a diagonal block, solves the panel below it and updates the
trailing matrix with ``A[e:, e:] -= P @ P.T``: that fused update is the GEMM
site mixjit links. The script prints the sites found, their dependence DAG, the
per-site call counts and, for each dtype, the relative Frobenius error of L
against NumPy's float64 Cholesky.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from mixjit import mixjit
from mixjit.report import dag_report, sites_report
from mixjit.tuning.outputs import relative_frobenius  # paper Eq. 10, in float64


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


def spd_matrix(n: int, seed: int = 0) -> np.ndarray:
    """A well-conditioned symmetric positive definite float64 matrix."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    return x @ x.T / n + np.eye(n)


def main(n: int = 96, block: int = 32, seed: int = 0) -> dict[str, float]:
    """Run the example; returns the error per dtype."""
    a = spd_matrix(n, seed)
    ref = np.linalg.cholesky(a)
    errors = {}
    for dtype in (np.float64, np.float32):
        L = cholesky(a.astype(dtype), block)
        errors[np.dtype(dtype).name] = relative_frobenius(L, ref)
    print(f"blocked Cholesky, n={n}, block={block}")
    print(sites_report(cholesky))
    print(dag_report(cholesky))
    for name, err in errors.items():
        print(f"error vs float64 reference ({name}): {err:.3e}")
    return errors


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=96)
    parser.add_argument("--block", type=int, default=32)
    args = parser.parse_args()
    main(args.n, args.block)
