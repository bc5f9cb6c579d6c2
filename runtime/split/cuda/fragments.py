"""CPU model of the split kernels (split_pack.cu, int8_gemm.cu, multiterm_gemm.cu with one FP16
part, split_combine.cu), driven by the same :class:`~mixjit.runtime.split.cuda.desc.SplitDesc`.

The host step before the kernels (:func:`host_plan`: the K split by the executor's own ranking
and partition sizes, the INT8 scales and FP16 shifts) is what the launch path runs. The INT8
GEMM is modelled by :func:`mixjit.runtime.ozaki2.cuda.fragments.int8_gemm` (integer: exact), the
FP16 GEMM by :func:`mixjit.runtime.multiterm.cuda.fragments.gemm_planes` with an exact or a
per-MMA FP32 accumulator (the hardware's is not bit-specified), and the combine as what it
computes: RN32 of the exact D + y. With the exact accumulator the model is bit-equal to the CPU
executor on any data; with the FP32 one where the FP16 part's sums are exact in FP32, and always
when the FP16 part is empty (``fp16=0``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixjit.runtime.cuda.fragments import SIGMA_TOP, axpby, range_shift, rn16_bits, round_to_f32
from mixjit.runtime.multiterm.cuda.fragments import EXACT_SCALE, gemm_planes
from mixjit.runtime.numerics.executor_common import row_form
from mixjit.runtime.ozaki2.cuda.fragments import int8_gemm
from mixjit.runtime.split import executor as esp
from mixjit.runtime.split.cuda.desc import SplitDesc

__all__ = ["HostPlan", "host_plan", "pack_split", "run_split", "STATUS_NONFINITE"]

STATUS_NONFINITE = 1


@dataclass
class HostPlan:
    """What the host computes before the kernels: the two column sets and per-row/column scales."""

    cols_i: np.ndarray
    cols_f: np.ndarray
    scale_a: np.ndarray
    scale_b: np.ndarray
    sigma_a: np.ndarray
    sigma_b: np.ndarray


def _scales(raw: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of the float32-rounded row form: INT8 scale RN64(amax/127) and FP16 shift
    14 - floor(log2 amax) (0 for a row without finite nonzero values) over ``cols``."""
    sub = np.where(np.isfinite(raw[:, cols]), np.abs(raw[:, cols]), 0.0) if cols.size else np.zeros((raw.shape[0], 0))
    amax = sub.max(axis=1, initial=0.0)
    return amax / 127.0, range_shift(amax)


def host_plan(a: np.ndarray, b: np.ndarray, config_words: np.ndarray) -> HostPlan:
    """The executor's K split (``fp16_columns``: ranking + partition sizes) and the scales."""
    araw, _ = row_form(a, False)
    braw, _ = row_form(b, True)
    f16 = esp.fp16_columns(araw, braw, np.asarray(config_words, np.int64))
    cols_i, cols_f = np.flatnonzero(~f16), np.flatnonzero(f16)
    scale_a, _ = _scales(araw, cols_i)
    scale_b, _ = _scales(braw, cols_i)
    _, sigma_a = _scales(araw, cols_f)
    _, sigma_b = _scales(braw, cols_f)
    return HostPlan(cols_i, cols_f, scale_a, scale_b, sigma_a, sigma_b)


def pack_split(rows_k: np.ndarray, plan_cols: tuple[np.ndarray, np.ndarray], scale: np.ndarray,
               sigma: np.ndarray, rows_pad: int, ki_pad: int, kf_pad: int) -> tuple[np.ndarray, np.ndarray, int]:
    """split_pack.cu for one operand as its rows × K view: (INT8 plane, FP16 plane as bytes, status)."""
    cols_i, cols_f = plan_cols
    rows = rows_k.shape[0]
    with np.errstate(over="ignore"):
        x = rows_k.astype(np.float32).astype(np.float64)  # RN32, then exact in float64
    bad = ~np.isfinite(x)
    status = STATUS_NONFINITE if bad.any() else 0
    x = np.where(bad, 0.0, x)
    p8 = np.zeros((rows_pad, ki_pad), np.int8)
    s = scale[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(s == 0.0, 0.0, np.rint(x[:, cols_i] / np.where(s == 0.0, 1.0, s)))
    p8[:rows, : cols_i.size] = q.astype(np.int8)
    p16 = np.zeros((rows_pad, kf_pad), np.uint16)
    y = np.ldexp(x[:, cols_f], sigma[:, None])
    p16[:rows, : cols_f.size] = rn16_bits(y, (sigma == SIGMA_TOP)[:, None])
    return p8, p16.view(np.uint8).reshape(rows_pad, 1, -1).transpose(1, 0, 2), status


def run_split(a: np.ndarray, b: np.ndarray, desc: SplitDesc, config_words: np.ndarray, accumulate: str = "exact",
              alpha: float = 1.0, beta: float = 0.0, c: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Host plan, the kernels of ``desc`` and the combine: (C in the input dtype, status).
    ``alpha``, ``beta`` and ``c`` are read in ``alpha_beta="update"`` mode only."""
    if desc.alpha_beta == "update" and beta != 0.0 and c is None:
        raise ValueError("fragments_split: update mode with beta != 0 needs c")
    m, k = a.shape
    n = b.shape[1]
    plan = host_plan(a, b, config_words)
    k_i, k_f = plan.cols_i.size, plan.cols_f.size
    m_pad, n_pad, ki_pad, kf_pad = desc.padded(m, n, k_i, k_f)
    launched = {launch.entry: launch for launch in desc.launches(m, n, k, k_f)}
    a8, a16, sa = pack_split(a, (plan.cols_i, plan.cols_f), plan.scale_a, plan.sigma_a, m_pad, ki_pad, kf_pad)
    b8, b16, sb = pack_split(b.T, (plan.cols_i, plan.cols_f), plan.scale_b, plan.sigma_b, n_pad, ki_pad, kf_pad)
    s8 = int8_gemm(a8[None], b8[None], desc, m, n, launched["int8_gemm"])[0] if "int8_gemm" in launched else None
    s16 = gemm_planes(a16, b16, desc, m, n, accumulate) if "multiterm_gemm" in launched else None
    out = np.zeros((m, n), a.dtype)
    for i, j in np.ndindex(m, n):
        d = (np.float64(s8[i, j]) * plan.scale_a[i]) * plan.scale_b[j] if s8 is not None else 0.0
        # exact D + y, y = S16 * 2^-(298 + sigma_i + sigma_j), rounded once to float32
        unit = max(1074, EXACT_SCALE + int(plan.sigma_a[i] + plan.sigma_b[j]))
        num, den = float(d).as_integer_ratio()  # den = 2^q, q <= 1074
        total = num << (unit - den.bit_length() + 1)
        if s16 is not None:
            total += int(s16[i, j]) << (unit - EXACT_SCALE - int(plan.sigma_a[i] + plan.sigma_b[j]))
        p = round_to_f32(total, -unit)
        if desc.alpha_beta == "update":
            p = axpby(p, alpha, beta, c[i, j] if beta != 0.0 else None, out.dtype)
        out[i, j] = p
    return out, sa | sb
