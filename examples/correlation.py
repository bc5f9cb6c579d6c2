"""Sparkler-like correlation under @mixjit: all pairs of two sets of long vectors (k >> m, n), tuned.

    python examples/correlation.py [--size 4096] [--m 128] [--n 128] [--budget 1e-3] [--target a100]

Sparkler (the CoMet code) compares every pair of vectors of a genomics data set, each of
``k`` samples, with far more samples than vectors per block. Here ``A`` (k x m) and ``B``
(k x n) hold allele counts (0, 1, 2) of ``m`` and ``n`` loci over ``--size`` = ``k``
individuals, and the program computes the Pearson correlation of every pair: each column
is centred and scaled to unit norm in scalar loops, then ``R = Za.T @ Zb``, a tall-skinny
GEMM with inner size ``k``, is the site. Some pairs of loci are made to co-vary (linked
loci). The application metric is the share of the strongest 1% of FP64 correlations (by
``|r|``) that the plan's strongest 1% also holds: the pairs a study would report. The
script tunes on one cohort, runs the plan on another and prints the site and its DAG, the
tuned plan, the error of ``R`` against FP64, that metric, and the modeled speedup.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np
from numba import njit

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, parse_flags, relative_frobenius, report, run_fp64, tuned  # noqa: E402

__all__ = ["correlation", "cohort", "strongest_pairs_recall", "main"]


@njit
def standardized(X):
    """``X`` with each column centred and scaled to unit Euclidean norm (a zero column stays zero)."""
    k, m = X.shape
    Z = np.empty_like(X)
    for j in range(m):
        mean = 0.0
        for i in range(k):
            mean += X[i, j]
        mean /= k
        ss = 0.0
        for i in range(k):
            Z[i, j] = X[i, j] - mean
            ss += Z[i, j] * Z[i, j]
        scale = 1.0 / np.sqrt(ss) if ss > 0 else 0.0
        for i in range(k):
            Z[i, j] *= scale
    return Z


@mixjit
def correlation(A, B):
    """Pearson correlation of every column of ``A`` with every column of ``B`` (an m x n matrix)."""
    Za = standardized(A)
    Zb = standardized(B)
    return Za.T @ Zb  # the GEMM site: inner size k, the number of samples


def cohort(k: int, m: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Allele counts (0, 1, 2) of ``m`` and ``n`` loci over ``k`` individuals, as float64. A
    quarter of the loci of ``B`` are linked to a locus of ``A``: they copy its count for a
    random share (10% to 90%) of the individuals."""
    rng = np.random.default_rng(seed)
    A = rng.binomial(2, rng.uniform(0.1, 0.9, m), (k, m)).astype(np.float64)
    B = rng.binomial(2, rng.uniform(0.1, 0.9, n), (k, n)).astype(np.float64)
    for j in rng.choice(n, n // 4, replace=False):
        copy = rng.random(k) < rng.uniform(0.1, 0.9)
        B[copy, j] = A[copy, rng.integers(m)]
    return A, B


def strongest_pairs_recall(R: np.ndarray, R_ref: np.ndarray, share: float = 0.01) -> float:
    """The share of the ``share`` strongest pairs of ``R_ref`` (by ``|r|``) that are also among the
    ``share`` strongest of ``R`` (at least 10 pairs)."""
    top = max(10, int(R_ref.size * share))
    strongest = lambda x: set(np.argsort(-np.abs(x), axis=None)[:top].tolist())  # noqa: E731
    return len(strongest(R) & strongest(R_ref)) / top


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune, run on a held-out cohort and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=4096, size_help="k, the number of samples (inner size of the GEMM)",
                        budget=1e-3, target="a100", dtype="float32",
                        extra=[("m", int, 128, "vectors (loci) in A"), ("n", int, 128, "vectors (loci) in B")])
    k, m, n = flags.size, flags.extra["m"], flags.extra["n"]

    def inputs(seed: int) -> tuple:
        return tuple(x.astype(flags.dtype) for x in cohort(k, m, n, seed))

    held_out = inputs(flags.seed + 1)
    f = tuned(correlation, flags, inputs)
    R = f(*held_out)
    R64 = run_fp64(f, held_out)
    return report(f"Sparkler-like correlation, k={k} samples, {m} x {n} pairs, {flags.dtype}", f,
                  relative_frobenius(R, R64), "strongest 1% of FP64 pairs found", strongest_pairs_recall(R, R64),
                  ">= 0.99 at budget 1e-3")


if __name__ == "__main__":
    main()
