"""k-means (Lloyd's algorithm) under @mixjit; distances through ``X @ C.T``.

    python examples/kmeans.py [--n 512] [--d 16] [--k 8] [--iters 10]

Squared distances are ``|x|^2 - 2 x.c + |c|^2``; the cross term ``X @ C.T`` is
the GEMM site. The script prints the sites found, their DAG, the per-site call
counts and, for float64 and float32 data, the relative Frobenius error of the
centroids against a float64 NumPy reference run from the same start.
"""

from __future__ import annotations

import argparse

import numpy as np

from mixjit import mixjit
from mixjit.report import dag_report, sites_report


@mixjit
def kmeans(X, C0, iters):
    """Centroids and labels after ``iters`` Lloyd iterations from centroids ``C0``."""
    n, d = X.shape
    k = C0.shape[0]
    C = C0.copy()
    labels = np.zeros(n, np.int64)
    xx = np.zeros(n, X.dtype)
    for i in range(n):
        for j in range(d):
            xx[i] += X[i, j] * X[i, j]
    for _ in range(iters):
        G = X @ C.T  # the GEMM site
        for i in range(n):
            best, arg = np.inf, 0
            for c in range(k):
                cc = 0.0
                for j in range(d):
                    cc += C[c, j] * C[c, j]
                dist = xx[i] - 2.0 * G[i, c] + cc
                if dist < best:
                    best, arg = dist, c
            labels[i] = arg
        sums = np.zeros((k, d), X.dtype)
        counts = np.zeros(k, np.int64)
        for i in range(n):
            counts[labels[i]] += 1
            for j in range(d):
                sums[labels[i], j] += X[i, j]
        for c in range(k):
            if counts[c] > 0:
                for j in range(d):
                    C[c, j] = sums[c, j] / counts[c]
    return C, labels


def reference(X: np.ndarray, C0: np.ndarray, iters: int) -> tuple[np.ndarray, np.ndarray]:
    """The same iterations in float64 NumPy."""
    C = C0.astype(np.float64)
    X = X.astype(np.float64)
    for _ in range(iters):
        dist = (X * X).sum(1)[:, None] - 2.0 * (X @ C.T) + (C * C).sum(1)[None, :]
        labels = dist.argmin(1)
        for c in range(C.shape[0]):
            if (labels == c).any():
                C[c] = X[labels == c].mean(0)
    return C, labels


def blobs(n: int, d: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points around ``k`` well-separated centres, and ``k`` starting centroids."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, d)) * 4.0
    X = centres[rng.integers(0, k, n)] + rng.standard_normal((n, d))
    return X, X[rng.choice(n, k, replace=False)].copy()


def main(n: int = 512, d: int = 16, k: int = 8, iters: int = 10, seed: int = 0) -> dict[str, float]:
    """Run the example; returns the centroid error per dtype."""
    X, C0 = blobs(n, d, k, seed)
    ref, ref_labels = reference(X, C0, iters)
    errors = {}
    for dtype in (np.float64, np.float32):
        C, labels = kmeans(X.astype(dtype), C0.astype(dtype), iters)
        errors[np.dtype(dtype).name] = float(np.linalg.norm(C.astype(np.float64) - ref) / np.linalg.norm(ref))
        agree = float((labels == ref_labels).mean())
        print(f"{np.dtype(dtype).name}: labels agree with the reference on {agree:.1%} of points")
    print(f"k-means, n={n}, d={d}, k={k}, iters={iters}")
    print(sites_report(kmeans))
    print(dag_report(kmeans))
    for name, err in errors.items():
        print(f"centroid error vs float64 reference ({name}): {err:.3e}")
    return errors


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--d", type=int, default=16)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--iters", type=int, default=10)
    args = parser.parse_args()
    main(args.n, args.d, args.k, args.iters)
