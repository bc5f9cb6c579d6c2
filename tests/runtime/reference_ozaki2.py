"""Slow scalar reference of ozaki2, written from docs/numerics.md (section "ozaki2").

Plain Python ints and Fractions, element by element. It computes the integer
product S = a'_i . b'_j directly (no residues, no CRT): the semantics defines the
output from S, and the executor's residue GEMMs and CRT must reproduce S exactly,
which is what comparing the two checks. :func:`crt` is an independent textbook CRT
(sum of N_l * M_l terms, Python ints) for the tests that check the scaling bound.
Nothing here imports the executor.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from reference_mixpert import _nonfinite, rn

#: GEMMul8's moduli (src/table.hpp), in its order
GEMMUL8_MODULI = [256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191, 181, 179, 173]


def modulus_product(n: int) -> int:
    """P = the product of the first n moduli."""
    return math.prod(GEMMUL8_MODULI[:n])


def exponent(x: float) -> int:
    """e with 2^e <= |x| < 2^(e+1)."""
    ax = Fraction(abs(x))
    e = ax.numerator.bit_length() - ax.denominator.bit_length()
    if Fraction(2) ** e > ax:
        e -= 1
    if Fraction(2) ** (e + 1) <= ax:
        e += 1
    return e


def shift(values: list[float], n: int) -> int:
    """The row/column shift s of step 1 (0 for a vector without finite nonzeros)."""
    finite = [v for v in values if math.isfinite(v) and v != 0]
    if not finite:
        return 0
    g = modulus_product(n).bit_length() - 2  # floor(log2 P) - 1
    top = max(exponent(v) for v in finite)
    units = sum(2 ** (32 - 2 * d) if 2 * d <= 32 else 1 for d in (top - exponent(v) for v in finite))
    w = (units - 1).bit_length()  # smallest w with units <= 2^w
    return (g + 32 - w) // 2 - top - 1


def top_exponent(values: list[float]) -> int | None:
    """max e over the finite nonzero values (None when there is none)."""
    finite = [v for v in values if math.isfinite(v) and v != 0]
    return max(exponent(v) for v in finite) if finite else None


def leading(values: list[float]) -> list[int]:
    """Accurate mode: u = ceil(|x| * 2^(5 - E)) for finite nonzero x, else 0."""
    e = top_exponent(values)
    return [math.ceil(abs(Fraction(v)) * Fraction(2) ** (5 - e)) if math.isfinite(v) and v != 0 else 0
            for v in values]


def accurate_shifts(rows: list[list[float]], cols: list[list[float]], n: int) -> tuple[list[int], list[int]]:
    """Accurate-mode shifts of the rows of A and the columns of B (the bound GEMM
    V = U_A U_B, row and column maxima R, Q, s = 5 - E + floor((G - bitlen(R))/2))."""
    g = modulus_product(n).bit_length() - 2
    ua = [leading(r) for r in rows]
    ub = [leading(c) for c in cols]
    v = [[sum(x * y for x, y in zip(ra, cb)) for cb in ub] for ra in ua]

    def shift_of(values: list[float], bound: int) -> int:
        e = top_exponent(values)
        return 0 if e is None else 5 - e + (g - bound.bit_length()) // 2

    sa = [shift_of(r, max(v[i], default=0)) for i, r in enumerate(rows)]
    sb = [shift_of(c, max((v[i][j] for i in range(len(rows))), default=0)) for j, c in enumerate(cols)]
    return sa, sb


def scaled(values: list[float], s: int) -> list[int]:
    """trunc(x * 2^s) for each finite x (0 for inf/NaN)."""
    out = []
    for v in values:
        if not math.isfinite(v):
            out.append(0)
            continue
        q = Fraction(v) * Fraction(2) ** s
        out.append(math.trunc(q))
    return out


def crt(residues: list[int], moduli: list[int]) -> int:
    """The symmetric representative in [-P/2, P/2) of the x with x = r_l mod p_l."""
    p = math.prod(moduli)
    x = sum(r * (p // q) * pow(p // q, -1, q) for r, q in zip(residues, moduli)) % p
    return x - p if x >= p // 2 else x


def ozaki2(a_in: np.ndarray, b_in: np.ndarray, n: int, mode: str = "fast") -> np.ndarray:
    """C = A @ B under ozaki2 with ``n`` moduli and scaling ``mode``, in the inputs' dtype."""
    dt = a_in.dtype
    fmt = "fp32" if dt == np.float32 else "fp64"
    a = [[float(v) for v in row] for row in a_in]
    bt = [[float(b_in[k, j]) for k in range(b_in.shape[0])] for j in range(b_in.shape[1])]
    if mode == "accurate":
        sa, sb = accurate_shifts(a, bt, n)
    else:
        sa = [shift(row, n) for row in a]
        sb = [shift(col, n) for col in bt]
    ia = [scaled(row, s) for row, s in zip(a, sa)]
    ib = [scaled(col, s) for col, s in zip(bt, sb)]
    c = np.empty((len(a), len(bt)), dtype=dt)
    for i in range(len(a)):
        for j in range(len(bt)):
            if not all(map(math.isfinite, a[i])) or not all(map(math.isfinite, bt[j])):
                c[i, j] = _nonfinite(a_in[i].astype(np.float64), b_in[:, j].astype(np.float64))
                continue
            s = sum(x * y for x, y in zip(ia[i], ib[j]))
            c[i, j] = rn(Fraction(s) * Fraction(2) ** -(sa[i] + sb[j]), fmt)
    return c
