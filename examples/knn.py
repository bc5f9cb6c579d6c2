"""k nearest neighbours under @mixjit: a distance GEMM plus a top-k selection, tuned for a budget and a target.

    python examples/knn.py [--size 4096] [--queries 256] [--d 64] [--neighbours 10] [--budget 1e-3] [--target a100]

For queries ``Q`` and database points ``X`` the squared distances are
``|q|^2 - 2 q.x + |x|^2``; the cross term ``Q @ X.T`` is the GEMM site, and each query
keeps its ``--neighbours`` nearest points (distances and indices, nearest first). The
tuner measures a plan by the relative error of the distances and the share of FP64
neighbours lost (``_common.relative_or_mismatch``). The script tunes on one data set,
runs the plan on another and prints the site and its DAG, the tuned plan, the distance
error against the same search in FP64, the recall@k against the FP64 neighbours (the
application metric) and the modeled speedup on the target.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, parse_flags, relative_frobenius, relative_or_mismatch, report, run_fp64, tuned  # noqa: E402

__all__ = ["knn", "points", "recall", "main"]


@mixjit
def knn(Q, X, kk):
    """Squared distances and indices of the ``kk`` points of ``X`` nearest each row of ``Q``."""
    nq, d = Q.shape
    nx = X.shape[0]
    xx = np.zeros(nx, X.dtype)
    for j in range(nx):
        for c in range(d):
            xx[j] += X[j, c] * X[j, c]
    G = Q @ X.T  # the GEMM site: cross terms q.x
    dist = np.empty((nq, kk), Q.dtype)
    idx = np.empty((nq, kk), np.int64)
    row = np.empty(nx, Q.dtype)
    for i in range(nq):
        qq = 0.0
        for c in range(d):
            qq += Q[i, c] * Q[i, c]
        for j in range(nx):
            row[j] = qq - 2.0 * G[i, j] + xx[j]
        order = np.argsort(row)
        for t in range(kk):
            idx[i, t] = order[t]
            dist[i, t] = row[order[t]]
    return dist, idx


def points(n: int, queries: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Queries and database points in 32 loose clusters around a common offset, as uncentred
    embeddings are: ``|q|^2`` and ``|x|^2`` are then large against the distances, which the
    expansion ``|q|^2 - 2 q.x + |x|^2`` recovers by cancellation, so the GEMM's precision matters."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((32, d)) * 2.0 + 8.0
    X = centres[rng.integers(0, 32, n)] + rng.standard_normal((n, d))
    Q = centres[rng.integers(0, 32, queries)] + rng.standard_normal((queries, d))
    return Q, X


def recall(idx: np.ndarray, idx_ref: np.ndarray) -> float:
    """recall@k: the share of the reference's k neighbours of each query that ``idx`` found too."""
    return 1.0 - relative_or_mismatch(idx, idx_ref)


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune, run on held-out data and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=4096, size_help="number of database points", budget=1e-3,
                        target="a100", dtype="float32",
                        extra=[("queries", int, 256, "number of queries"), ("d", int, 64, "dimension"),
                               ("neighbours", int, 10, "neighbours per query (the k of recall@k)")])
    n, nq, d, kk = flags.size, flags.extra["queries"], flags.extra["d"], flags.extra["neighbours"]
    if kk > n:
        raise SystemExit(f"knn: --neighbours {kk} exceeds --size {n}; ask for at most as many as there are points")

    def inputs(seed: int) -> tuple:
        Q, X = points(n, nq, d, seed)
        return Q.astype(flags.dtype), X.astype(flags.dtype), kk

    held_out = inputs(flags.seed + 1)
    f = tuned(knn, flags, inputs, metric=relative_or_mismatch)
    dist, idx = f(*held_out)
    dist64, idx64 = run_fp64(f, held_out)
    return report(f"kNN, {nq} queries, {n} points, d={d}, k={kk}, {flags.dtype}", f,
                  relative_frobenius(dist, dist64), f"recall@{kk} against the FP64 neighbours",
                  recall(idx, idx64), ">= 0.99 at budget 1e-3")


if __name__ == "__main__":
    main()
