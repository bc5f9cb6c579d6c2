"""k-means (Lloyd's algorithm) under @mixjit; distances through ``X @ C.T``, tuned for a budget and a target.

    python examples/kmeans.py [--size 2048] [--d 32] [--k 16] [--iters 10] [--budget 1e-3] [--target jetson-agx-orin]

Squared distances are ``|x|^2 - 2 x.c + |c|^2``; the cross term ``X @ C.T`` is the GEMM
site. The tuner measures a plan by the relative error of the centroids and the fraction of
points whose label changes (``_common.relative_or_mismatch``), so a budget of 1e-3 allows
one label in a thousand to move *on the points it is tuned and validated on*. That is
evidence, not a guarantee: on other points more labels can move (a point near the boundary
between two clusters flips on a tiny change of its distances). The script tunes on one set
of points, runs the plan on another and prints the site and its DAG, the tuned plan, the
centroid error against the same iterations in FP64, the share of points whose cluster agrees
with the FP64 run (the application metric), the modeled speedup on the target, and the
tuning metric of the plan on the held-out points against the budget (``f.check_plan``,
which also warns when the budget is broken there). The default target, a Jetson AGX Orin,
has weak FP64, so emulating the float64 distance GEMM pays (modeled).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, parse_flags, relative_frobenius, relative_or_mismatch, report, run_fp64, tuned  # noqa: E402

__all__ = ["kmeans", "reference", "blobs", "main"]


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


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune, run on held-out points and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=2048, size_help="number of points", budget=1e-3,
                        target="jetson-agx-orin", dtype="float64",
                        extra=[("d", int, 32, "dimension of the points"), ("k", int, 16, "number of clusters"),
                               ("iters", int, 10, "Lloyd iterations")])
    n, d, k, iters = flags.size, flags.extra["d"], flags.extra["k"], flags.extra["iters"]

    def inputs(seed: int) -> tuple:
        X, C0 = blobs(n, d, k, seed)
        return X.astype(flags.dtype), C0.astype(flags.dtype), iters

    held_out = inputs(flags.seed + 1)
    f = tuned(kmeans, flags, inputs, metric=relative_or_mismatch)
    C, labels = f(*held_out)
    C64, labels64 = run_fp64(f, held_out)
    check = f.check_plan(*held_out)  # the budget is met on the tuning inputs; here it is measured
    result = report(f"k-means, n={n}, d={d}, k={k}, iters={iters}, {flags.dtype}", f,
                    relative_frobenius(C, C64), "labels agreeing with the FP64 run",
                    float((labels == labels64).mean()), ">= 0.99 at budget 1e-3", held_out_check=check)
    print(f"held-out input against the budget (f.check_plan): tuning metric {check.error:.3g}, "
          f"{'within' if check.within_budget else 'EXCEEDS'} budget {check.budget:g} (the tuner meets the "
          "budget on its tuning and validation inputs; on other inputs it is measured, not guaranteed)")
    return result


if __name__ == "__main__":
    main()
