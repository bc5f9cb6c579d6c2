"""Slow scalar references of the emulation schemes, written from docs/numerics.md.

Exact rational arithmetic (fractions.Fraction) everywhere a value is defined as
exact; IEEE float64 operations only where the text says "RN64". Nothing here
imports the executors' helpers, so a shared bug cannot hide: the only shared piece
is the partition-size calculator, which has its own tests.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from mixjit.runtime.model.hardware import get_hardware
from mixjit.runtime.model.partition import partition_sizes

INF = math.inf

# (significant bits, minimum normal exponent, maximum exponent)
FMT = {
    "fp32": (24, -126, 127),
    "tf32": (11, -126, 127),
    "bf16": (8, -126, 127),
    "fp16": (11, -14, 15),
}
#: the unscaled part formats as the multi-term split rounds to them: the format's
#: significant bits and largest exponent, no lower exponent limit (docs/numerics.md,
#: tf32x3 step 1: float32 subnormal inputs are split exactly)
SPLIT_FMT = {"tf32": (11, -(10**6), 127), "bf16": (8, -(10**6), 127)}
FMT.update({f"{k}-split": v for k, v in SPLIT_FMT.items()})

PAIRS = [(0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (2, 0), (1, 2), (2, 1), (2, 2)]


def floor_log2(x: Fraction) -> int:
    """floor(log2(x)) for x > 0, exactly."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    return e


def rn(x: Fraction, fmt: str) -> Fraction | float:
    """Round exact ``x`` to ``fmt``: nearest, ties to even, gradual underflow,
    overflow to ±inf (returned as a float)."""
    if x == 0:
        return Fraction(0)
    prec, emin, emax = FMT[fmt]
    sign = -1 if x < 0 else 1
    ax = abs(x)
    e = max(floor_log2(ax), emin)
    quantum = Fraction(2) ** (e - prec + 1)
    q = ax / quantum
    n = math.floor(q)
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * quantum
    max_finite = (2 - Fraction(2) ** (1 - prec)) * Fraction(2) ** emax
    if r > max_finite:
        return sign * INF
    return sign * r


def to_f32(x: Fraction | float) -> float:
    """The float32 value (as a Python float) of an exact value or inf; zero is +0."""
    if isinstance(x, float):
        return x
    return float(x) if x != 0 else 0.0


def fp32_input(v: float) -> Fraction | float:
    """The FP32-domain value of an input element (RN32 of it), inf/NaN as floats."""
    if not math.isfinite(v):
        return v
    return rn(Fraction(v), "fp32")


def ieee_dot(row: list, col: list) -> float:
    """The IEEE value of a dot product that has a non-finite term (order independent)."""
    prods = [float(a) * float(b) for a, b in zip(row, col)]
    if any(math.isnan(p) for p in prods):
        return math.nan
    pos = any(p == INF for p in prods)
    neg = any(p == -INF for p in prods)
    if pos and neg:
        return math.nan
    return INF if pos else -INF


def _finite(v) -> bool:
    return not isinstance(v, float) or math.isfinite(v)


def _matrix(x: np.ndarray) -> list[list]:
    return [[fp32_input(float(v)) for v in row] for row in x]


def _finish(a, b, compute) -> np.ndarray:
    """Apply the non-finite rule around ``compute(i, j)`` (exact finite path)."""
    m, k, n = len(a), len(b), len(b[0]) if b else 0
    bad_r = [not all(_finite(v) for v in a[i]) for i in range(m)]
    bad_c = [not all(_finite(b[l][j]) for l in range(k)) for j in range(n)]
    out = np.empty((m, n), dtype=np.float32)
    for i in range(m):
        for j in range(n):
            if bad_r[i] or bad_c[j]:
                out[i, j] = ieee_dot(a[i], [b[l][j] for l in range(k)])
            else:
                out[i, j] = to_f32(compute(i, j))
    return out


# ---------------------------------------------------------------- multi-term


def split_value(x: Fraction, fmt: str, nparts: int) -> list | None:
    """Unscaled split (TF32, BF16): parts p_i = RN(x - sum of earlier parts) to the
    format's precision with no lower exponent limit; None if the leading part
    overflows."""
    parts = []
    r = x
    for _ in range(nparts):
        p = rn(r, f"{fmt}-split")
        if isinstance(p, float):
            return None
        parts.append(p)
        r = r - p
    return parts


def split_scaled_fp16(xs: list[Fraction], nparts: int) -> list[list[Fraction]]:
    """Scaled FP16 split of one row (or column): shift so that max|x| is in
    [2^14, 2^15); part i = RN16(residual · 2^(11 i)); parts returned unscaled. With
    one part, a hi that rounds up to 2^15 where the unscaled value would be 2^128
    (the row's maximum is in float32's top binade) is truncated to 2^15 - 2^4."""
    amax = max((abs(v) for v in xs), default=Fraction(0))
    shift = 14 - floor_log2(amax) if amax > 0 else 0
    out = []
    for x in xs:
        r = x * Fraction(2) ** shift
        parts = []
        for i in range(nparts):
            p = rn(r * Fraction(2) ** (11 * i), "fp16")
            if i == 0 and nparts == 1 and shift == 14 - 127 and abs(p) == 2**15:
                p = (2**15 - 2**4) * (1 if p > 0 else -1)
            parts.append(p / Fraction(2) ** (shift + 11 * i))
            r = r - p / Fraction(2) ** (11 * i)
        out.append(parts)
    return out


def multiterm(a_in: np.ndarray, b_in: np.ndarray, fmt: str, products: int) -> np.ndarray:
    """Reference of tf32x3 / bf16xn / fp16x2 (docs/numerics.md)."""
    a, b = _matrix(a_in), _matrix(b_in)
    m, k, n = len(a), len(b), len(b[0])
    pairs = PAIRS[:products]
    nparts = 1 + max(max(p) for p in pairs)
    fa = [[v if _finite(v) else Fraction(0) for v in row] for row in a]
    fb = [[v if _finite(v) else Fraction(0) for v in row] for row in b]
    if fmt == "fp16":
        ap = [split_scaled_fp16(row, nparts) for row in fa]  # ap[i][l][p]
        cols = [split_scaled_fp16([fb[l][j] for l in range(k)], nparts) for j in range(n)]
        bp = [[cols[j][l] for j in range(n)] for l in range(k)]  # bp[l][j][q]
        ovf_r, ovf_c = [False] * m, [False] * n
    else:
        ap = [[split_value(v, fmt, nparts) for v in row] for row in fa]
        bp = [[split_value(v, fmt, nparts) for v in row] for row in fb]
        ovf_r = [any(p is None for p in ap[i]) for i in range(m)]
        ovf_c = [any(bp[l][j] is None for l in range(k)) for j in range(n)]

    def compute(i, j):
        if ovf_r[i] or ovf_c[j]:
            return rn(sum(fa[i][l] * fb[l][j] for l in range(k)), "fp32")
        s = sum(ap[i][l][p] * bp[l][j][q] for l in range(k) for p, q in pairs)
        return rn(Fraction(s), "fp32")

    return _finish(a, b, compute)


# ---------------------------------------------------------------------- int8


def quantize(xs: list[Fraction]) -> tuple[list[int], float]:
    """Symmetric INT8: s = RN64(amax/127), q = rint(RN64(x/s)) ties to even."""
    amax = float(max((abs(v) for v in xs), default=Fraction(0)))
    s = amax / 127.0
    if s == 0.0:
        return [0] * len(xs), 0.0
    return [round(float(v) / s) for v in xs], s


def _int_part(fa, fb, cols: list[int]) -> list[list[float]]:
    """Dequantized INT8 sub-GEMM over K columns ``cols``: RN64(RN64(S·sa)·sb)."""
    m, n = len(fa), len(fb[0])
    qa = [quantize([fa[i][l] for l in cols]) for i in range(m)]
    qb = [quantize([fb[l][j] for l in cols]) for j in range(n)]
    out = [[0.0] * n for _ in range(m)]
    for i in range(m):
        for j in range(n):
            s = sum(x * y for x, y in zip(qa[i][0], qb[j][0]))
            out[i][j] = (float(s) * qa[i][1]) * qb[j][1]
    return out


def int8(a_in: np.ndarray, b_in: np.ndarray) -> np.ndarray:
    a, b = _matrix(a_in), _matrix(b_in)
    fa = [[v if _finite(v) else Fraction(0) for v in row] for row in a]
    fb = [[v if _finite(v) else Fraction(0) for v in row] for row in b]
    d = _int_part(fa, fb, list(range(len(fb))))
    return _finish(a, b, lambda i, j: rn(Fraction(d[i][j]), "fp32"))


# --------------------------------------------------------------------- split


def nearest_rank(values: list[Fraction], q: float) -> Fraction:
    n = len(values)
    r = min(n, max(1, math.ceil(q / 100.0 * n)))
    return sorted(values)[r - 1]


def split(a_in: np.ndarray, b_in: np.ndarray, fp16, width: int, rank: str, target: str) -> np.ndarray:
    a, b = _matrix(a_in), _matrix(b_in)
    m, k, n = len(a), len(b), len(b[0])
    fa = [[v if _finite(v) else Fraction(0) for v in row] for row in a]
    fb = [[v if _finite(v) else Fraction(0) for v in row] for row in b]
    nsl = -(-k // width)
    slices = [list(range(s * width, min(k, (s + 1) * width))) for s in range(nsl)]
    if fp16 == "auto":
        f = partition_sizes(m, n, k, get_hardware(target)).fp16_fraction
    else:
        f = Fraction(fp16)
    n16 = math.floor(f * nsl + Fraction(1, 2))
    if rank == "index":
        imp = [-s for s in range(nsl)]
    else:
        q = float(rank[1:])
        imp = [
            float(nearest_rank([abs(fa[i][l]) for i in range(m) for l in sl], q))
            * float(nearest_rank([abs(fb[l][j]) for l in sl for j in range(n)], q))
            for sl in slices
        ]
    order = sorted(range(nsl), key=lambda s: (-imp[s], s))
    chosen = set(order[:n16])
    f_cols = [l for s in range(nsl) if s in chosen for l in slices[s]]
    i_cols = [l for s in range(nsl) if s not in chosen for l in slices[s]]
    d = _int_part(fa, fb, i_cols) if i_cols else [[0.0] * n for _ in range(m)]
    if f_cols:
        a16 = [split_scaled_fp16([fa[i][l] for l in f_cols], 1) for i in range(m)]  # [i][idx][0]
        b16 = [split_scaled_fp16([fb[l][j] for l in f_cols], 1) for j in range(n)]  # [j][idx][0]
    else:
        a16 = b16 = None

    def compute(i, j):
        s = Fraction(d[i][j])
        if a16 is not None:
            s += sum(a16[i][t][0] * b16[j][t][0] for t in range(len(f_cols)))
        return rn(s, "fp32")

    return _finish(a, b, compute)
