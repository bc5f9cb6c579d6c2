"""Slow scalar reference of mixpert / mixpert-fp64, written from docs/numerics.md.

Plain Python ints and Fractions, element by element, following the numbered steps
of the "mixpert" section. Nothing here imports the executor or its helpers; the
TF32 rounding of the fallback split is the exact rational rounding of the emulation
schemes' reference (reference_schemes.rn).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from reference_schemes import rn as rn_format

# (significant bits, minimum normal exponent, maximum exponent)
_FMT = {"fp32": (24, -126, 127), "fp64": (53, -1022, 1023)}


def rn_int(x: Fraction) -> int:
    """Nearest integer, ties to even."""
    n = math.floor(x)
    rem = x - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    return n


def rn(x: Fraction, fmt: str) -> float:
    """Round exact ``x`` to float32/float64 (as a Python float): RN, gradual
    underflow, overflow to ±inf, zero as +0."""
    if x == 0:
        return 0.0
    prec, emin, emax = _FMT[fmt]
    ax = abs(x)
    e = ax.numerator.bit_length() - ax.denominator.bit_length()
    if Fraction(2) ** e > ax:
        e -= 1
    if Fraction(2) ** (e + 1) <= ax:
        e += 1
    quantum = Fraction(2) ** (max(e, emin) - prec + 1)
    r = rn_int(ax / quantum) * quantum
    if r == 0:
        return 0.0  # underflow to zero is written as +0 too
    if r >= Fraction(2) ** (emax + 1):
        v = math.inf
    else:
        v = float(r)
    return v if x > 0 else -v


def element_split(x: float, w: int, emax: int) -> tuple[int, int] | None:
    """Step 1: (signed M, e) with |x| ~ |M| 2^(e-w+1); None for zero. A carry past
    the format's largest exponent ``emax`` truncates instead."""
    if x == 0:
        return None
    f, e0 = math.frexp(abs(x))
    m = rn_int(Fraction(f) * 2**w)
    e = e0 - 1
    if m == 2**w and e == emax:
        m = math.floor(Fraction(f) * 2**w)
    elif m == 2**w:
        m, e = 2 ** (w - 1), e + 1
    return (m if x > 0 else -m), e


def shift(m: int, d: int, rounding: str) -> int:
    """Step 2: the magnitude of m shifted right by d, truncated or rounded (RNE)."""
    a = abs(m)
    s = a >> d if rounding == "trunc" else rn_int(Fraction(a, 2**d))
    return s if m >= 0 else -s


def segments_of(q: int, s: int, t: int, digits: str) -> list[int]:
    """Step 3: the signed INT8 segments of q (sign-magnitude, or balanced radix-256
    digits in [-128, 127] computed from the least significant one up)."""
    if digits == "balanced":
        out, rest = [], q
        for _ in range(s):
            d = (rest + 128) % 256 - 128
            out.append(d)
            rest = (rest - d) // 256
        assert rest == 0, "aligned value outside the balanced digit range"
        return out[::-1]
    a = abs(q)
    out = []
    for i in range(s):
        d = a // 2 ** (7 * (s - 1 - i))
        if i > 0:
            d %= 2**7
        assert (d < 2**t) if i == 0 else (d < 2**7)
        out.append(d if q >= 0 else -d)
    return out


def tf32_split(v: float) -> tuple[Fraction, Fraction]:
    """Step 4's split, as tf32x3's: big = RN(v), small = RN(v - big) to TF32's 11
    significant bits with no lower exponent limit (float32 subnormals kept exactly);
    big = v, small = 0 if big overflows."""
    x = Fraction(v)
    big = rn_format(x, "tf32-split")
    if isinstance(big, float):  # overflow to inf
        return x, Fraction(0)
    return big, Fraction(rn_format(x - big, "tf32-split"))


def _pack(x: list[list[float]], group_rows: int, tile_rows: int, tk: int, cfg) -> tuple:
    """Steps 1-4 for one operand in row form (A, or Bᵀ): per element the segments,
    per (row, k-tile) the group exponent, and per (row, k-tile) the fallback flag."""
    b = 8 if cfg.digits == "balanced" else 7
    w = cfg.seg0_bits + b * (cfg.segments - 1)
    top = 127 * (256**cfg.segments - 1) // 255  # largest value of balanced digits
    r = len(x)
    K = len(x[0]) if r else 0
    nkt = -(-K // tk)
    emax = _FMT[cfg.domain][2]
    split = [[element_split(v, w, emax) for v in row] for row in x]
    seg = [[None] * K for _ in range(r)]
    gexp = [[None] * nkt for _ in range(r)]
    far = [[0] * nkt for _ in range(r)]  # nonzero elements shifted by more than F bits
    zeroed = [[False] * nkt for _ in range(r)]  # a nonzero element aligned to q = 0
    nonzero = [[0] * nkt for _ in range(r)]
    for g0 in range(0, r, group_rows):
        rows = range(g0, min(g0 + group_rows, r))
        for t in range(nkt):
            ks = range(t * tk, min((t + 1) * tk, K))
            es = [split[i][k][1] for i in rows for k in ks if split[i][k] is not None]
            E = max(es) if es else None
            if cfg.digits == "balanced" and any(
                split[i][k] is not None and split[i][k][1] == E and split[i][k][0] > top for i in rows for k in ks
            ):
                E += 1  # the top digit would be +128: one more bit of shift for the group
            for i in rows:
                gexp[i][t] = E
                for k in ks:
                    sp = split[i][k]
                    q = 0 if sp is None else shift(sp[0], E - sp[1], cfg.rounding)
                    if sp is not None and E > emax and abs(q) >= 2 ** (w - 1):  # would reach 2^(emax+1): truncate
                        q = shift(sp[0], E - sp[1], "trunc")
                    if sp is not None:
                        zeroed[i][t] |= q == 0
                        nonzero[i][t] += 1
                        far[i][t] += E - sp[1] > cfg.fallback
                    seg[i][k] = segments_of(q, cfg.segments, cfg.seg0_bits, cfg.digits)
    fb = [[False] * nkt for _ in range(r)]
    if cfg.fallback >= 0:
        for t0 in range(0, r, tile_rows):
            rows = range(t0, min(t0 + tile_rows, r))
            for t in range(nkt):
                flag = 8 * sum(far[i][t] for i in rows) > sum(nonzero[i][t] for i in rows)
                for i in rows:
                    fb[i][t] = flag
    # step 6 (float32 domain): a row holding an element aligned to 0 outside a fallback tile
    lost = [any(zeroed[i][t] and not fb[i][t] for t in range(nkt)) for i in range(r)]
    return seg, gexp, fb, lost


def mixpert(a_in: np.ndarray, b_in: np.ndarray, cfg) -> np.ndarray:
    """C of the mixpert / mixpert-fp64 semantics for config ``cfg`` (a MixPertConfig:
    only its fields and ``domain`` are read). Float32 domain: step 6 included (outputs
    of rows / columns with an element aligned to 0 are RN32 of the exact product).
    Float64 domain: ``RN64(X)`` before step 6, whose outputs the executor may replace
    by :func:`exact_rounded` (see :func:`check_fp64_guarantee`)."""
    fmt = cfg.domain
    dt = np.float32 if fmt == "fp32" else np.float64
    with np.errstate(over="ignore"):
        a = np.asarray(a_in, dtype=dt).astype(np.float64)
        b = np.asarray(b_in, dtype=dt).astype(np.float64)
    m, K = a.shape
    n = b.shape[1]
    tm, tk, tn = cfg.tile
    radix = 8 if cfg.digits == "balanced" else 7
    w = cfg.seg0_bits + radix * (cfg.segments - 1)
    fa = [[float(v) if math.isfinite(v) else 0.0 for v in row] for row in a]
    fbt = [[float(b[k, j]) if math.isfinite(b[k, j]) else 0.0 for k in range(K)] for j in range(n)]
    seg_a, ea, fb_a, lost_a = _pack(fa, 1 if cfg.align == "row" else tm, tm, tk, cfg)
    seg_b, eb, fb_b, lost_b = _pack(fbt, 1 if cfg.align == "row" else tn, tn, tk, cfg)
    s = cfg.segments
    c = np.zeros((m, n), dtype=np.float64)
    for i in range(m):
        for j in range(n):
            row = a[i, :]
            col = b[:, j]
            if not (np.isfinite(row).all() and np.isfinite(col).all()):
                c[i, j] = _nonfinite(row, col)
                continue
            if fmt == "fp32" and (lost_a[i] or lost_b[j]):
                c[i, j] = rn(sum(Fraction(fa[i][k]) * Fraction(fbt[j][k]) for k in range(K)), fmt)
                continue
            x = Fraction(0)
            for t in range(-(-K // tk)):
                ks = range(t * tk, min((t + 1) * tk, K))
                if fb_a[i][t] or fb_b[j][t]:
                    for k in ks:
                        (ab, asm), (bb, bsm) = tf32_split(fa[i][k]), tf32_split(fbt[j][k])
                        x += ab * bb + ab * bsm + asm * bb
                    continue
                if ea[i][t] is None or eb[j][t] is None:
                    continue
                tot = 0
                for p, r in cfg.pairs:
                    weight = 2 ** (radix * (s - 1 - p) + radix * (s - 1 - r))
                    tot += weight * sum(seg_a[i][k][p] * seg_b[j][k][r] for k in ks)
                x += tot * Fraction(2) ** (ea[i][t] + eb[j][t] - 2 * (w - 1))
            c[i, j] = rn(x, fmt)
    return c.astype(dt)


def _nonfinite(row: np.ndarray, col: np.ndarray) -> float:
    """The non-finite rule (Common conventions)."""
    pos = neg = False
    for x, y in zip(row.tolist(), col.tolist()):
        if math.isnan(x) or math.isnan(y):
            return math.nan
        if math.isinf(x) or math.isinf(y):
            if x == 0 or y == 0:
                return math.nan
            if (x > 0) == (y > 0):
                pos = True
            else:
                neg = True
    if pos and neg:
        return math.nan
    return math.inf if pos else -math.inf


def exact_rounded(a_in: np.ndarray, b_in: np.ndarray, fmt: str) -> np.ndarray:
    """``RN(A @ B)`` of the exact product (finite inputs), in the format's dtype."""
    dt = np.float32 if fmt == "fp32" else np.float64
    a = np.asarray(a_in, dtype=dt)
    b = np.asarray(b_in, dtype=dt)
    m, K = a.shape
    n = b.shape[1]
    c = np.zeros((m, n), dtype=np.float64)
    for i in range(m):
        for j in range(n):
            c[i, j] = rn(sum(Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(K)), fmt)
    return c.astype(dt)


def gamma_bound_excess(c: np.ndarray, a: np.ndarray, b: np.ndarray, fmt: str = "fp64") -> list[tuple[int, int]]:
    """Outputs that break ``|C - AB|_ij <= gamma_K (|A||B|)_ij + 2^(emin_sub - 1)``
    (native GEMM's componentwise bound, gamma_K = K u / (1 - K u), plus half the
    smallest subnormal for the final rounding's underflow), exactly (finite inputs)."""
    prec, emin, _ = _FMT[fmt]
    u = Fraction(1, 2**prec)
    eta = Fraction(1, 2 ** (prec - emin))  # half the smallest subnormal
    m, K = a.shape
    gamma = K * u / (1 - K * u)
    bad = []
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            terms = [Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(K)]
            exact = sum(terms)
            if abs(Fraction(float(c[i, j])) - exact) > gamma * sum(abs(t) for t in terms) + eta:
                bad.append((i, j))
    return bad
