"""A three-layer perceptron (forward pass, float32) under @mixjit: three dependent GEMMs.

    python examples/mlp.py [--size 256] [--batch 512]

``h1 = relu(x @ w1 + b1)``, ``h2 = relu(h1 @ w2 + b2)``, ``y = h2 @ w3 + b3``: each layer's
GEMM reads the previous layer's output, so the site DAG is the chain 0 -> 1 -> 2 (the
micro benchmark of the MixPert paper, §4.1, at CPU-friendly sizes). The script prints the
sites found, their DAG and the relative Frobenius error of ``y`` against the same network
run in float64.
"""

from __future__ import annotations

import argparse

import numpy as np

from mixjit import mixjit
from mixjit.report import dag_report, sites_report
from mixjit.tuning.outputs import relative_frobenius  # paper Eq. 10, in float64


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


def main(size: int = 256, batch: int = 512, seed: int = 0) -> float:
    """Run the example; returns the error of the float32 output against float64."""
    args = network(size, batch, seed)
    ref = mlp_forward(*(a.astype(np.float64) for a in args))  # plain Python + NumPy in float64
    err = relative_frobenius(mlp(*args), ref)
    print(f"3-layer MLP, width {size}, batch {batch} (float32)")
    print(sites_report(mlp))
    print(dag_report(mlp))
    print(f"error vs float64 reference: {err:.3e}")
    return err


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    main(args.size, args.batch)
