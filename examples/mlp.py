"""A three-layer perceptron (forward pass, float32) under @mixjit: three dependent GEMMs, tuned.

    python examples/mlp.py [--size 256] [--batch 512] [--budget 1e-3] [--target a100]

``h1 = relu(x @ w1 + b1)``, ``h2 = relu(h1 @ w2 + b2)``, ``y = h2 @ w3 + b3``: each layer's
GEMM reads the previous layer's output, so the site DAG is the chain 0 -> 1 -> 2 (the micro
benchmark of the MixPert paper, §4.1, at CPU-friendly sizes). The script tunes on one batch,
runs the plan on another and prints the sites and their DAG, the tuned plan, the error of
``y`` against the same network in FP64, the share of samples whose predicted class (the
argmax of ``y``) agrees with the FP64 network (the application metric) and the modeled
speedup on the target.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, parse_flags, relative_frobenius, report, run_fp64, tuned  # noqa: E402

__all__ = ["mlp", "mlp_forward", "network", "main"]


def mlp_forward(x, w1, b1, w2, b2, w3, b3):
    """The network's output for the batch ``x`` (rows are samples)."""
    h1 = x @ w1
    for i in range(h1.shape[0]):
        for j in range(h1.shape[1]):
            v = h1[i, j] + b1[j]
            h1[i, j] = v if v > 0 else 0
    h2 = h1 @ w2
    for i in range(h2.shape[0]):
        for j in range(h2.shape[1]):
            v = h2[i, j] + b2[j]
            h2[i, j] = v if v > 0 else 0
    y = h2 @ w3
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            y[i, j] += b3[j]
    return y


mlp = mixjit(mlp_forward)


def network(size: int, batch: int, seed: int = 0, dtype: type = np.float32) -> tuple[np.ndarray, ...]:
    """Inputs and weights (He-scaled normal, small biases): ``x, w1, b1, w2, b2, w3, b3``."""
    rng = np.random.default_rng(seed)
    scale = np.sqrt(2.0 / size)
    x = rng.standard_normal((batch, size))
    out = [x]
    for _ in range(3):
        out.append(rng.standard_normal((size, size)) * scale)
        out.append(rng.standard_normal(size) * 0.01)
    return tuple(a.astype(dtype) for a in out)


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune, run on a held-out batch and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=256, size_help="width of each layer", budget=1e-3,
                        target="a100", dtype="float32", extra=[("batch", int, 512, "samples per batch")])
    size, batch = flags.size, flags.extra["batch"]
    inputs = lambda seed: network(size, batch, seed, flags.dtype)  # noqa: E731
    held_out = inputs(flags.seed + 1)
    f = tuned(mlp, flags, inputs)
    y = f(*held_out)
    y64 = run_fp64(f, held_out)
    return report(f"3-layer MLP, width {size}, batch {batch}, {flags.dtype}", f, relative_frobenius(y, y64),
                  "predicted classes (argmax of y) agreeing with the FP64 network",
                  float((y.argmax(1) == y64.argmax(1)).mean()), ">= 0.99 at budget 1e-3")


if __name__ == "__main__":
    main()
