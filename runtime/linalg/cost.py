"""Modeled time of a linalg candidate (docs/numerics.md, "linalg"; *modeled*, not measured).

A candidate is priced as the sum of its steps. Its GEMMs (trailing updates, the triangular
solves' updates) are the GEMM cost model's time of each product under the candidate's
scheme (runtime/model/costmodel.py). The panel steps and the in-block substitutions run
in the working precision: each is priced as a native GEMM of the same flops (a panel of
``rows x nb`` columns costs ``rows·nb²`` flops: an ``rows x nb x nb/2`` GEMM), one kernel each,
so a GPU's launch cost per step is counted. Refinement adds, per correction, a native
residual GEMM (``n x r x n``) and one more pair of blocked triangular solves; the model
assumes :data:`MODELED_REFINE_STEPS` corrections (the measured count replaces it in reports).

Least squares (``lstsq``, A ``rows x n``) by the normal equations is priced as its steps
(:func:`_normal_equations`); ``lapack``'s gelsd by its flop count at the native GEMM rate.

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
from mixjit.runtime.model.hardware import Hardware, get_hardware

__all__ = ["modeled_linalg_time", "MODELED_REFINE_STEPS", "LAPACK_BLOCK", "ESTIMATOR_PROBES"]

#: corrections the model assumes a refined solve makes
MODELED_REFINE_STEPS = 2
#: the ops that are a factorization alone (det and slogdet read LU's diagonal: O(n), not priced)
FACTOR_ONLY = ("cholesky", "det", "slogdet")
#: LAPACK's panel width for getrf / potrf (ILAENV's default)
LAPACK_BLOCK = 64
#: applications of ``I − M⁻¹AᵀA`` or its transpose the model assumes the contraction estimate
#: makes (runtime/linalg/lstsq.py: at most 2 per step, 5 steps, and one more probe)
ESTIMATOR_PROBES = 11


def _native(m: int, n: int, k: float, dtype: np.dtype, target: str | Hardware) -> float:
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    return modeled_time("native", None, m, n, max(1, int(round(k))), dtype, target).seconds


def _matvec(m: int, n: int, dtype: np.dtype, target: str | Hardware) -> float:
    """A working-precision product of an ``m x n`` matrix (or a triangular factor) with one
    vector: memory-bound, its matrix read once at the DRAM bandwidth, one kernel launch."""
    hw = target if isinstance(target, Hardware) else get_hardware(target)
    return m * n * dtype.itemsize / (hw.mem_bw_gbs * 1e9) + hw.launch_us * 1e-6


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


def _factor(op: str, n: int, nb: int, scheme: str, config: str, dtype: np.dtype, target: str | Hardware) -> float:
    """The blocked factorization of an ``n x n`` matrix: Cholesky (``op == "cholesky"``) or LU (every other op)."""
    total = 0.0
    for j0 in range(0, n, nb):
        j1 = min(j0 + nb, n)
        b = j1 - j0
        total += _native(n - j0, b, b / 2, dtype, target)  # the panel
        if op != "cholesky":
            total += _native(b, n - j1, b / 2, dtype, target)  # the block row of U
        total += _gemm(scheme, config, n - j1, n - j1, b, dtype, target)  # the trailing update
    return total


def _lapack_lstsq(m: int, n: int, nrhs: int, dtype: np.dtype, target: str | Hardware) -> float:
    """gelsd as the R-SVD least-squares algorithm (Golub and Van Loan: ``2mn² + 11n³`` flops): a
    blocked Householder QR of the ``m x n`` matrix (per panel of ``nb`` columns, the panel and its
    two GEMM updates, native, at the fastest of :data:`LAPACK_BLOCK` and the tuner's block sizes),
    then the SVD of R and the solve (``35n³/3 + 4n²·nrhs`` flops) at the native GEMM rate in one
    kernel (optimistic for LAPACK: half of a bidiagonalization is matrix-vector work). For
    ``m < n`` the same with ``m`` and ``n`` exchanged."""
    m, n = max(m, n), min(m, n)
    if n == 0:
        return 0.0

    def qr(nb: int) -> float:
        total = 0.0
        for j0 in range(0, n, nb):
            j1 = min(j0 + nb, n)
            b = j1 - j0
            total += _native(m - j0, b, b, dtype, target)  # the panel
            total += _native(b, n - j1, m - j0, dtype, target) + _native(m - j0, n - j1, b, dtype, target)
        return total

    rest = 35 * n ** 3 / 3 + 4 * n * n * max(nrhs, 1)
    return min(qr(nb) for nb in (LAPACK_BLOCK, *BLOCK_SIZES)) + _native(n, n, rest / (2 * n * n), dtype, target)


def modeled_linalg_time(op: str, n: int, nrhs: int, config: LinalgConfig | str, dtype: np.dtype | type,
                        target: str | Hardware, rows: int | None = None) -> float:
    """Modeled seconds of ``np.linalg.<op>`` on an ``n x n`` matrix (``rows x n`` for ``lstsq``;
    ``rows`` defaults to ``n``), ``nrhs`` right-hand sides for ``solve`` and ``lstsq`` (``inv``
    has ``n``), under ``config`` (or ``"lapack"``) on ``target``."""
    if op not in OPS:
        raise ValueError(f"linalg: unknown op {op!r}; ops are {', '.join(OPS)}")
    m = n if rows is None else rows
    if n < 0 or nrhs < 0 or m < 0:
        raise ValueError(f"linalg: sizes must be non-negative, got n={n}, nrhs={nrhs}, rows={m}")
    dt = np.dtype(dtype)
    if config == LAPACK:
        if op == "lstsq":
            return _lapack_lstsq(m, n, nrhs, dt, target)
        return min(modeled_linalg_time(op, n, nrhs, LinalgConfig(nb, "native", "accumulate=blas"), dt, target)
                   for nb in (LAPACK_BLOCK, *BLOCK_SIZES))
    cfg = config if isinstance(config, LinalgConfig) else LinalgConfig.parse(config)
    nb, scheme, label = cfg.block, cfg.gemm_scheme, cfg.gemm_config
    if op == "lstsq":
        return _normal_equations(m, n, nrhs, cfg, dt, target)
    total = _factor(op, n, nb, scheme, label, dt, target)
    if op in FACTOR_ONLY:
        return total
    r = n if op == "inv" else nrhs
    solves = _triangular_solves(n, r, nb, scheme, label, dt, target)
    total += solves
    if cfg.refine:
        residual = _native(n, r, n, dt, target)
        total += MODELED_REFINE_STEPS * (residual + solves) + residual
    return total


def _normal_equations(m: int, n: int, nrhs: int, cfg: LinalgConfig, dtype: np.dtype, target: str | Hardware) -> float:
    """A blocked ``lstsq`` candidate (runtime/linalg/lstsq.py): ``AᵀA`` and ``AᵀB`` under the scheme,
    the blocked Cholesky, the contraction estimate (:data:`ESTIMATOR_PROBES` products of ``A``,
    ``Aᵀ`` and the factor with a vector, each memory-bound: :func:`_matvec`), the solves and, refined, per correction
    the residual ``B − AX``, ``AᵀR`` and the solves. An underdetermined system runs LAPACK."""
    if m < n:
        return _lapack_lstsq(m, n, nrhs, dtype, target)
    nb, scheme, label = cfg.block, cfg.gemm_scheme, cfg.gemm_config
    r = max(nrhs, 1)
    total = _gemm(scheme, label, n, n, m, dtype, target) + _gemm(scheme, label, n, r, m, dtype, target)
    total += _factor("cholesky", n, nb, scheme, label, dtype, target)
    total += ESTIMATOR_PROBES * (2 * _matvec(m, n, dtype, target) + 2 * _matvec(n, n, dtype, target))
    solves = _triangular_solves(n, r, nb, scheme, label, dtype, target)
    total += solves
    if cfg.refine:
        residual = _native(m, r, n, dtype, target) + _native(n, r, m, dtype, target)
        total += MODELED_REFINE_STEPS * (residual + solves) + residual
    return total
