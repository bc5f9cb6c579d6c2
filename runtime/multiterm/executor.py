"""Compiled executor of the multi-term float schemes: tf32x3, bf16xn, fp16x2.

One kernel, parameterised by the part format (docs/numerics.md, sections "tf32x3",
"bf16x3, bf16x6, bf16x9", "fp16x2"): split each FP32-domain operand element into
parts of the format, keep the first ``products`` pairs of the pair order, and
round the exact sum of the kept products once to float32. The same code runs for
``scheme.run`` (runtime/schemes/emulation.py) and for compiled callers:

* :func:`multiterm_gemm` ``(a, b, c, params, stats) -> status``: ``C = A @ B`` for
  2-D float32/float64 arrays with any strides (``c`` float32 or float64, m×n);
  ``params`` the config as int64 words (``ProductsConfig.words()``, layout ``W_*``
  below); ``stats`` an int64 array of ``N_STATS`` (``STAT_*``) it fills. Returns 0
  or an ``ERR_*`` status (``STATUS_MESSAGES``); never raises, never takes the GIL;
  all scratch is allocated per call, so concurrent calls are safe.

Word layout (``N_WORDS = 2``): ``W_FORMAT`` = ``FMT_TF32`` | ``FMT_BF16`` |
``FMT_FP16``; ``W_PRODUCTS`` = kept pairs, 1..9 (the schemes offer tf32x3 {3, 1},
bf16xn {9, 6, 3, 1}, fp16x2 {3, 1}; the kernel runs any 1..9, fp16 at most 3
parts like the others).
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.numerics.executor_common import (
    ERR_PARAMS,
    ERR_SHAPE,
    OK,
    SHAPE_MESSAGE,
    chunk_layout,
    chunked,
    nonfinite_rule,
    round_products32,
    row_form,
    store,
)

__all__ = [
    "W_FORMAT",
    "W_PRODUCTS",
    "N_WORDS",
    "FMT_TF32",
    "FMT_BF16",
    "FMT_FP16",
    "FORMAT_CODES",
    "STAT_NONFINITE",
    "STAT_PART_OVERFLOW",
    "STAT_SLOW_ELEMENTS",
    "N_STATS",
    "OK",
    "ERR_PARAMS",
    "ERR_SHAPE",
    "STATUS_MESSAGES",
    "build_parts",
    "multiterm_gemm",
]

# ---- the config as int64 words (written by ProductsConfig.words) ---------------
W_FORMAT = 0
W_PRODUCTS = 1
N_WORDS = 2
FMT_TF32 = 0
FMT_BF16 = 1
FMT_FP16 = 2
FORMAT_CODES = {"tf32": FMT_TF32, "bf16": FMT_BF16, "fp16": FMT_FP16}

# ---- what a call did (the stats array) ---------------------------------------
STAT_NONFINITE = 0  # outputs set by the non-finite rule
STAT_PART_OVERFLOW = 1  # outputs recomputed because a leading part overflowed
STAT_SLOW_ELEMENTS = 2  # outputs Ziv's test left in doubt: summed exactly
N_STATS = 3

# ---- status codes: OK, ERR_PARAMS, ERR_SHAPE from executor_common ---------------
STATUS_MESSAGES: dict[int, str] = {
    ERR_PARAMS: "the config words are invalid (encode configs with ProductsConfig.words(): "
    "format 0 tf32, 1 bf16, 2 fp16; products 1..9)",
    ERR_SHAPE: SHAPE_MESSAGE,
}
"""What each non-zero status of :func:`multiterm_gemm` means."""

#: the pair order (docs/numerics.md, tf32x3): pair t is (part _PAIR_P[t] of A, _PAIR_Q[t] of B)
_PAIR_P = np.array([0, 0, 1, 0, 1, 2, 1, 2, 2], dtype=np.int64)
_PAIR_Q = np.array([0, 1, 0, 2, 1, 0, 2, 1, 2], dtype=np.int64)
#: float64 fraction bits dropped to keep the 11 (TF32, FP16) or 8 (BF16) significant bits
_DROP = np.array([42, 45, 42], dtype=np.int64)
_TWO128 = 2.0**128
#: fp16 range scaling: a scaled row's largest magnitude lies in [2^14, 2^15)
_SCALED_TOP_EXP = 15
#: the scale of a row whose largest element is in float32's top binade (2^127)
_SIGMA_TOP = 14 - 127
#: 1.5 * 2^28: adding and subtracting it rounds |v| < 2^-14 to FP16's subnormal grid 2^-24
_FP16_SUB_MAGIC = 402653184.0
_FP16_MAX_BELOW_2_15 = 32752.0  # (2^11 - 1) * 2^4


@cached_njit(nogil=True)
def _rn_bits(v: float, drop: int) -> float:
    """``v`` rounded to ``53 - drop`` significant bits, ties to even, with no lower
    exponent limit (on the float64 pattern: a carry moves into the exponent)."""
    u = np.float64(v).view(np.uint64)
    lsb = (u >> np.uint64(drop)) & np.uint64(1)
    half = np.uint64((1 << (drop - 1)) - 1)
    mask = ~np.uint64((1 << drop) - 1)
    return np.uint64((u + half + lsb) & mask).view(np.float64)


@cached_njit(nogil=True)
def _rn16(v: float) -> float:
    """IEEE binary16 rounding of ``v`` (|v| < 65520 here), ties to even, subnormals."""
    if abs(v) >= 2.0**-14:
        return _rn_bits(v, 42)
    return (v + _FP16_SUB_MAGIC) - _FP16_SUB_MAGIC


@cached_njit(nogil=True)
def _split_unscaled(v: float, drop: int, nparts: int, parts) -> bool:
    """TF32/BF16 parts of the float32 value ``v``: x_p = RN_f(v - earlier parts) with
    f's significant bits and no lower exponent limit (float32 subnormals are kept
    exactly). Returns True (parts all 0) if the leading part overflows (≥ 2^128)."""
    r = v
    for p in range(nparts):
        x = _rn_bits(r, drop)
        if p == 0 and abs(x) >= _TWO128:
            for q in range(nparts):
                parts[q] = 0.0
            return True
        parts[p] = x
        r = r - x
    return False


@cached_njit(nogil=True)
def _split_scaled(y: float, down: float, top: bool, nparts: int, parts):
    """FP16 parts of the scaled value ``y = x·2^σ`` in the input's units
    (``down = 2^-σ``): part p = RN16(residual·2^(11p))·2^-(σ+11p). With one part, a
    hi that rounds up to 2^15 in a row of float32's top binade (``top``: the unscaled
    value would be 2^128, inf in float32) is truncated to the largest FP16 value
    below 2^15 instead; with more parts the lo part corrects the carry exactly."""
    r = y
    sh = 1.0
    for p in range(nparts):
        h = _rn16(r * sh)
        if p == 0 and top and nparts == 1 and abs(h) == 32768.0:
            h = math.copysign(_FP16_MAX_BELOW_2_15, h)
        parts[p] = h * down / sh
        r = r - h / sh
        sh *= 2048.0


@cached_njit(nogil=True)
def build_parts(raw, fmt: int, nparts: int, sel, K: int):
    """Chunk-major operand of the float64 GEMM (executor_common.chunked layout) from
    a row-form operand: block g of the K' = G·K columns holds, per element, the sum
    of its parts q with ``sel[g, q]`` (exact: parts of one float32 value). Non-finite
    inputs count as 0. Also returns the rows whose leading part overflowed."""
    r = raw.shape[0]
    groups = sel.shape[0]
    kk = groups * K
    nch, w = chunk_layout(kk)
    out = np.zeros((nch, r, w))
    ovf = np.zeros(r, dtype=np.bool_)
    parts = np.zeros(nparts)
    drop = _DROP[fmt]
    for i in range(r):
        down = 1.0
        up = 1.0
        top = False
        if fmt == FMT_FP16:
            amax = 0.0
            for k in range(K):
                v = raw[i, k]
                if math.isfinite(v) and abs(v) > amax:
                    amax = abs(v)
            if amax > 0.0:
                _, e = math.frexp(amax)
                sigma = _SCALED_TOP_EXP - e
                up = math.ldexp(1.0, sigma)
                down = math.ldexp(1.0, -sigma)
                top = sigma == _SIGMA_TOP
        for k in range(K):
            v = raw[i, k]
            if not math.isfinite(v):
                v = 0.0
            if fmt == FMT_FP16:
                _split_scaled(v * up, down, top, nparts, parts)
            elif _split_unscaled(v, drop, nparts, parts):
                ovf[i] = True
            for g in range(groups):
                acc = 0.0
                for q in range(nparts):
                    if sel[g, q]:
                        acc += parts[q]
                t = g * K + k
                out[t // w, i, t % w] = acc
    return out, ovf


@cached_njit(nogil=True)
def _finite(raw):
    out = raw.copy()
    for i in range(out.shape[0]):
        for k in range(out.shape[1]):
            if not math.isfinite(out[i, k]):
                out[i, k] = 0.0
    return out


@cached_njit(nogil=True)
def _exact_fp32_rows(araw, braw, rows, cols, out) -> int:
    """``out[rows x cols] = RN32`` of the exact dot products of the float32 values
    (non-finite as 0): the part-overflow fallback. Returns the exact-sum count."""
    K = araw.shape[1]
    allk = np.arange(K)
    sub = np.empty((rows.shape[0], cols.shape[0]), dtype=np.float32)
    dummy = np.zeros((0, 0))
    slow = round_products32(chunked(_finite(araw), rows, allk), chunked(_finite(braw), cols, allk), K, dummy, False, sub)
    for t in range(rows.shape[0]):
        for u in range(cols.shape[0]):
            out[rows[t], cols[u]] = sub[t, u]
    return slow


@cached_njit(nogil=True)
def _groups(products: int):
    """The kept pairs as column groups of one float64 GEMM: ``(sel_a, sel_b)``, both
    (groups × parts). Parts p of A that are paired with the same set Q of B's parts
    share a group: group g contributes ``(Σ_{sel_a[g,p]} a_p)·(Σ_{sel_b[g,q]} b_q)``,
    exactly the kept products of those p (e.g. bf16x9: one group, ``a·b``). Every
    such product is exact in float64: each sum is a sum of parts of one float32
    value, at most 26 significant bits."""
    nparts = 1
    for t in range(products):
        nparts = max(nparts, 1 + max(_PAIR_P[t], _PAIR_Q[t]))
    qmask = np.zeros(nparts, dtype=np.int64)  # bit q set: (p, q) kept
    for t in range(products):
        qmask[_PAIR_P[t]] |= 1 << _PAIR_Q[t]
    masks = np.zeros(nparts, dtype=np.int64)
    groups = 0
    for p in range(nparts):
        if qmask[p] == 0:
            continue
        seen = False
        for g in range(groups):
            seen = seen or masks[g] == qmask[p]
        if not seen:
            masks[groups] = qmask[p]
            groups += 1
    sel_a = np.zeros((groups, nparts), dtype=np.bool_)
    sel_b = np.zeros((groups, nparts), dtype=np.bool_)
    for g in range(groups):
        for p in range(nparts):
            sel_a[g, p] = qmask[p] == masks[g]
            sel_b[g, p] = (masks[g] >> p) & 1 == 1
    return sel_a, sel_b


@cached_njit(nogil=True)
def _params_ok(params) -> bool:
    if params.shape[0] < N_WORDS:
        return False
    return FMT_TF32 <= params[W_FORMAT] <= FMT_FP16 and 1 <= params[W_PRODUCTS] <= 9


@cached_njit(nogil=True)
def multiterm_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the multi-term semantics (docs/numerics.md, tf32x3):
    ``a`` (m x k), ``b`` (k x n), ``c`` (m x n), float32/float64, any strides;
    ``params`` the config words; ``stats`` int64[N_STATS]. Returns 0 or an
    ``ERR_*`` status (``c`` is then unchanged). ``c`` may overlap ``a`` or ``b``:
    they are read only into row-form copies first."""
    if not _params_ok(params):
        return ERR_PARAMS
    m, K = a.shape
    n = b.shape[1]
    if b.shape[0] != K or c.shape[0] != m or c.shape[1] != n:
        return ERR_SHAPE
    stats[:] = 0
    if m == 0 or n == 0:
        return OK
    fmt = params[W_FORMAT]
    products = params[W_PRODUCTS]
    sel_a, sel_b = _groups(products)
    groups, nparts = sel_a.shape
    araw, abad = row_form(a, False)
    braw, bbad = row_form(b, True)
    x3, aovf = build_parts(araw, fmt, nparts, sel_a, K)
    y3, bovf = build_parts(braw, fmt, nparts, sel_b, K)
    out = np.empty((m, n), dtype=np.float32)
    slow = round_products32(x3, y3, groups * K, np.zeros((0, 0)), False, out)
    # part overflow: those rows / columns are correctly rounded float32 dot products
    rows = np.flatnonzero(aovf)
    cols = np.flatnonzero(bovf)
    if rows.shape[0]:
        slow += _exact_fp32_rows(araw, braw, rows, np.arange(n), out)
    if cols.shape[0]:
        slow += _exact_fp32_rows(araw, braw, np.arange(m), cols, out)
    nr = rows.shape[0]
    nc = cols.shape[0]
    stats[STAT_PART_OVERFLOW] = nr * n + nc * m - nr * nc
    if abad.any() or bbad.any():
        stats[STAT_NONFINITE] = nonfinite_rule(araw, braw, abad, bbad, out)
    stats[STAT_SLOW_ELEMENTS] = slow
    store(out, c)
    return OK
