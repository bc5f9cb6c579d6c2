"""Gaussian-process regression under @mixjit: the posterior's flops are in np.linalg, tuned.

    python examples/gp_regression.py [--size 384] [--tests 128] [--budget 1e-6]
                                     [--target rtx4090] [--dtype float64]

``--size`` noisy observations ``y = f(x) + noise`` of a smooth function of ``x`` in 3-D, a
squared-exponential kernel (unit variance, length scale 0.5, noise 0.1). The kernel matrices are
built outside the program (``K`` of the training points plus the noise, ``Ks`` between the
``--tests`` test points and the training points); the program is the posterior, as GP codes
write it with NumPy:

    L = np.linalg.cholesky(K)            # a linalg site
    alpha = np.linalg.solve(K, y)        # a linalg site
    mean = Ks.dot(alpha)                 # a GEMM site (the .dot method)
    v = np.linalg.solve(L, Ks.T)         # a linalg site
    var = 1 - sum(v * v, axis=0)

and the log marginal likelihood's data-fit and log-determinant terms. Its application metric is
the predictive log-likelihood of held-out observations at the test points,
``mean(log N(y_test | mean, var + noise^2))``, compared with the same program in FP64: the plan's
value must be within 1e-6 (relative) of FP64's. The script tunes on one draw of the data, runs
the plan on another and prints the sites, the tuned plan, the error against FP64, the metric
and the modeled speedup. On targets with slow FP64 (rtx4090, l40s) the cost model prices the
blocked factorizations with INT8-emulated FP64 products below LAPACK from a few hundred points
on; on FP64-rich ones (a100, h100) it keeps LAPACK.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, parse_flags, relative_frobenius, report, run_fp64, tuned  # noqa: E402

__all__ = ["posterior", "dataset", "predictive_log_likelihood", "main"]

NOISE = 0.1
LENGTH_SCALE = 0.5


@mixjit
def posterior(K, Ks, y):
    """The GP posterior at the test points: mean, variance, and the log marginal likelihood's
    data-fit (``y^T K^-1 y``) and log-determinant (``log det K``) terms."""
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(K, y)
    mean = Ks.dot(alpha)
    v = np.linalg.solve(L, Ks.T)
    var = 1.0 - (v * v).sum(axis=0)
    fit = (y * alpha).sum()
    logdet = 2.0 * np.log(np.diag(L)).sum()
    return mean, var, fit, logdet


def _kernel(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    d2 = ((p[:, None, :] - q[None, :, :]) ** 2).sum(-1)
    return np.exp(-0.5 * d2 / LENGTH_SCALE**2)


def _truth(x: np.ndarray) -> np.ndarray:
    return np.sin(3 * x[:, 0]) * np.cos(2 * x[:, 1]) + 0.5 * x[:, 2]


def dataset(n: int, tests: int, seed: int, dtype: str = "float64") -> tuple[tuple, np.ndarray]:
    """``((K, Ks, y), y_test)``: kernel matrices and observations of one draw (float64 built,
    cast to ``dtype``), and the held-out observations at the test points."""
    rng = np.random.default_rng(seed)
    x, xs = rng.uniform(-1, 1, (n, 3)), rng.uniform(-1, 1, (tests, 3))
    y = _truth(x) + NOISE * rng.standard_normal(n)
    y_test = _truth(xs) + NOISE * rng.standard_normal(tests)
    K = _kernel(x, x) + NOISE**2 * np.eye(n)
    Ks = _kernel(xs, x)
    cast = (lambda a: a.astype(dtype))
    return (cast(K), cast(Ks), cast(y[:, None])), y_test


def predictive_log_likelihood(mean: np.ndarray, var: np.ndarray, y_test: np.ndarray) -> float:
    """``mean(log N(y_test | mean, var + noise^2))`` over the test points (float64)."""
    s2 = np.asarray(var, dtype=np.float64) + NOISE**2
    r = y_test - np.asarray(mean, dtype=np.float64).ravel()
    return float(np.mean(-0.5 * (np.log(2 * np.pi * s2) + r * r / s2)))


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune, run on a held-out draw and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=384, size_help="training points (K is size x size)",
                        budget=1e-6, target="rtx4090", dtype="float64",
                        extra=[("tests", int, 128, "test points (Ks is tests x size)")])
    n, tests = flags.size, flags.extra["tests"]

    def inputs(seed: int) -> tuple:
        return dataset(n, tests, seed, flags.dtype)[0]

    held_out, y_test = dataset(n, tests, flags.seed + 1, flags.dtype)
    f = tuned(posterior, flags, inputs)
    mean, var, _, _ = f(*held_out)
    mean64, var64, _, _ = run_fp64(f, held_out)
    pll, pll64 = predictive_log_likelihood(mean, var, y_test), predictive_log_likelihood(mean64, var64, y_test)
    return report(f"GP regression, {n} training points, {tests} test points, {flags.dtype}", f,
                  relative_frobenius(mean, mean64),
                  "predictive log-likelihood, relative difference from FP64", abs(pll - pll64) / abs(pll64),
                  "<= 1e-6 at budget 1e-6", predictive_log_likelihood=pll, fp64=pll64)


if __name__ == "__main__":
    main()
