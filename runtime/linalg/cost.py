"""Modeled time of a linalg candidate (docs/numerics.md, "linalg"; *modeled*, not measured).

A candidate is priced as the sum of its steps. Its GEMMs (trailing updates, the triangular
solves' updates) are the GEMM cost model's time of each product under the candidate's
scheme (runtime/model/costmodel.py). The panel steps and the in-block substitutions run
in the working precision: each is priced as a native GEMM of the same flops (a panel of
``rows x nb`` columns costs ``rows·nb²`` flops: an ``rows x nb x nb/2`` GEMM), one kernel each,
so a GPU's launch cost per step is counted. Refinement adds, per correction, a native
residual GEMM (``n x r x n``) and one more pair of blocked triangular solves; the model
assumes :data:`MODELED_REFINE_STEPS` corrections (the measured count replaces it in reports).

``lapack`` is priced as a tuned library's own blocked algorithm: getrf and potrf are
right-looking blocked algorithms with native GEMM updates (LAPACK's ILAENV block size is 64;
GPU solvers choose theirs), so the same sum with the native scheme, at the fastest of
:data:`LAPACK_BLOCK` and the tuner's block sizes: a blocked candidate with native products
never models faster than ``lapack``.
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.linalg.config import BLOCK_SIZES, LAPACK, OPS, LinalgConfig
from mixjit.runtime.model.costmodel import modeled_time
from mixjit.runtime.model.hardware import Hardware

__all__ = ["modeled_linalg_time", "MODELED_REFINE_STEPS", "LAPACK_BLOCK"]

#: corrections the model assumes a refined solve makes
MODELED_REFINE_STEPS = 2
#: LAPACK's panel width for getrf / potrf (ILAENV's default)
LAPACK_BLOCK = 64


def _native(m: int, n: int, k: float, dtype: np.dtype, target: str | Hardware) -> float:
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    return modeled_time("native", None, m, n, max(1, int(round(k))), dtype, target).seconds


def _gemm(scheme: str, config: str, m: int, n: int, k: int, dtype: np.dtype, target: str | Hardware) -> float:
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    return modeled_time(scheme, config, m, n, k, dtype, target).seconds


def _triangular_solves(n: int, r: int, nb: int, scheme: str, config: str, dtype: np.dtype,
                       target: str | Hardware) -> float:
    total = 0.0
    for j0 in range(0, n, nb):
        j1 = min(j0 + nb, n)
        b = j1 - j0
        total += 2 * _native(b, r, b / 2, dtype, target)  # the forward and the backward in-block steps
        total += _gemm(scheme, config, n - j1, r, b, dtype, target)  # forward update below
        total += _gemm(scheme, config, j0, r, b, dtype, target)  # backward update above
    return total


def modeled_linalg_time(op: str, n: int, nrhs: int, config: LinalgConfig | str, dtype: np.dtype | type,
                        target: str | Hardware) -> float:
    """Modeled seconds of ``np.linalg.<op>`` on an ``n x n`` matrix (``nrhs`` right-hand sides
    for ``solve``; ``inv`` has ``n``) under ``config`` (or ``"lapack"``) on ``target``."""
    if op not in OPS:
        raise ValueError(f"linalg: unknown op {op!r}; ops are {', '.join(OPS)}")
    if n < 0 or nrhs < 0:
        raise ValueError(f"linalg: sizes must be non-negative, got n={n}, nrhs={nrhs}")
    dt = np.dtype(dtype)
    if config == LAPACK:
        return min(modeled_linalg_time(op, n, nrhs, LinalgConfig(nb, "native", "accumulate=blas"), dt, target)
                   for nb in (LAPACK_BLOCK, *BLOCK_SIZES))
    cfg = config if isinstance(config, LinalgConfig) else LinalgConfig.parse(config)
    nb, scheme, label = cfg.block, cfg.gemm_scheme, cfg.gemm_config
    total = 0.0
    for j0 in range(0, n, nb):
        j1 = min(j0 + nb, n)
        b = j1 - j0
        total += _native(n - j0, b, b / 2, dt, target)  # the panel
        if op != "cholesky":
            total += _native(b, n - j1, b / 2, dt, target)  # the block row of U
        total += _gemm(scheme, label, n - j1, n - j1, b, dt, target)  # the trailing update
    if op == "cholesky":
        return total
    r = n if op == "inv" else nrhs
    solves = _triangular_solves(n, r, nb, scheme, label, dt, target)
    total += solves
    if cfg.refine:
        residual = _native(n, r, n, dt, target)
        total += MODELED_REFINE_STEPS * (residual + solves) + residual
    return total
