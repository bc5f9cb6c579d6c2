"""A Schrödinger propagator under @mixjit: wave packets stepped by a complex propagator, tuned.

    python examples/schrodinger.py [--size 384] [--packets 384] [--steps 8] [--budget 1e-3]
                                   [--target a100] [--dtype complex64]

A particle in a 1-D anharmonic well (``V(x) = x^2/2 + x^4/20``) on ``--size`` grid points: the
Hamiltonian ``H`` is the second-difference kinetic term plus ``V``, and the propagator of one
time step ``U = exp(-i H dt)`` is built once from ``H``'s eigenvectors (in FP64, outside the
tuned program). The program propagates ``--packets`` Gaussian wave packets (different centres
and momenta, the columns of ``Psi``) for ``--steps`` steps: ``Psi = U @ Psi``, a complex GEMM
site in a loop whose result feeds its next call. ``U`` is unitary, so every packet keeps its norm;
the application metrics are the largest drift of a packet's norm, ``| ||psi_T|| / ||psi_0|| - 1 |``,
and the smallest fidelity ``|<psi_T^FP64 | psi_T>|^2`` (normalised) against the same propagation
in FP64. The script tunes on one set of packets, runs the plan on another and prints the site
and its DAG, the tuned plan, the error against FP64, the metrics and the modeled speedup.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from mixjit import mixjit

sys.path.insert(0, str(Path(__file__).resolve().parent))  # examples/_common.py
from _common import ExampleResult, parse_flags, relative_frobenius, report, run_fp64, tuned  # noqa: E402

__all__ = ["propagate", "propagator", "packets", "flush_below_float32", "norm_drift", "fidelity", "main"]


@mixjit
def propagate(U, Psi, steps):
    """``U^steps @ Psi``: every wave packet (a column of ``Psi``) stepped ``steps`` times."""
    for _ in range(steps):
        Psi = U @ Psi  # the GEMM site: complex, in a loop, its result feeding its next call
    return Psi


def flush_below_float32(x: np.ndarray) -> np.ndarray:
    """``x`` with the entries below float32's resolution relative to its largest (``2^-24``)
    set to 0: the propagator's far off-diagonal entries and the packets' Gaussian tails span
    hundreds of binades that a float32 code carries no information in, and MixPert spends its
    exact paths on such spans (docs/numerics.md, "mixpert"); the unitarity this costs is
    below 1e-8."""
    out = x.copy()
    out[np.abs(out) < 2.0**-24 * np.abs(out).max()] = 0
    return out


def propagator(n: int, dt: float = 0.05, length: float = 16.0) -> np.ndarray:
    """``exp(-i H dt)`` (complex128, unitary up to :func:`flush_below_float32`) for the
    anharmonic well on ``n`` points of ``[-length/2, length/2]``."""
    x = np.linspace(-length / 2, length / 2, n)
    h = x[1] - x[0]
    kinetic = (np.diag(np.full(n, 1.0)) - 0.5 * np.diag(np.ones(n - 1), 1) - 0.5 * np.diag(np.ones(n - 1), -1)) / h**2
    H = kinetic + np.diag(x**2 / 2 + x**4 / 20)
    energies, vectors = np.linalg.eigh(H)
    return flush_below_float32((vectors * np.exp(-1j * energies * dt)) @ vectors.T)


def packets(n: int, m: int, seed: int = 0, length: float = 16.0) -> np.ndarray:
    """``m`` normalised Gaussian wave packets on ``n`` points (columns), random centres, widths
    and momenta (tails flushed: :func:`flush_below_float32`)."""
    rng = np.random.default_rng(seed)
    x = np.linspace(-length / 2, length / 2, n)[:, None]
    centre, width, momentum = rng.uniform(-2, 2, m), rng.uniform(1.5, 3.0, m), rng.uniform(-4, 4, m)
    psi = np.exp(-((x - centre) ** 2) / (2 * width**2) + 1j * momentum * x)
    return flush_below_float32(psi / np.linalg.norm(psi, axis=0))


def norm_drift(psi_t: np.ndarray, psi_0: np.ndarray) -> float:
    """The largest ``| ||psi_T|| / ||psi_0|| - 1 |`` over the packets (0 for exact unitary steps)."""
    return float(np.max(np.abs(np.linalg.norm(psi_t, axis=0) / np.linalg.norm(psi_0, axis=0) - 1.0)))


def fidelity(psi: np.ndarray, psi_ref: np.ndarray) -> float:
    """The smallest ``|<psi_ref | psi>|^2 / (||psi|| ||psi_ref||)^2`` over the packets (1: the same state)."""
    psi, psi_ref = psi.astype(np.complex128), psi_ref.astype(np.complex128)
    overlap = np.abs(np.sum(np.conj(psi_ref) * psi, axis=0)) ** 2
    return float(np.min(overlap / (np.linalg.norm(psi, axis=0) * np.linalg.norm(psi_ref, axis=0)) ** 2))


def main(argv: Sequence[str] | None = None) -> ExampleResult:
    """Tune, run on held-out packets and print the report (``--help`` for the flags)."""
    flags = parse_flags(__doc__, argv, size=384, size_help="grid points (the propagator is size x size)",
                        budget=1e-3, target="a100", dtype="complex64",
                        extra=[("packets", int, 384, "wave packets propagated at once (columns of Psi)"),
                               ("steps", int, 8, "time steps")])
    n, m, steps = flags.size, flags.extra["packets"], flags.extra["steps"]
    U = propagator(n).astype(flags.dtype)

    def inputs(seed: int) -> tuple:
        return U, packets(n, m, seed).astype(flags.dtype), steps

    held_out = inputs(flags.seed + 1)
    f = tuned(propagate, flags, inputs)
    psi = f(*held_out)
    psi64 = run_fp64(f, held_out)
    return report(f"Schrödinger propagator, {n} grid points, {m} packets, {steps} steps, {flags.dtype}", f,
                  relative_frobenius(psi, psi64), "norm drift (largest over packets)", norm_drift(psi, held_out[1]),
                  "<= 1e-3 at budget 1e-3", fidelity=fidelity(psi, psi64))


if __name__ == "__main__":
    main()
