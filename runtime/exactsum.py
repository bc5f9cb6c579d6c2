"""Exact sums of products, rounded once to float32 ("exact then round").

The emulation schemes define each output element as the *exact* sum of a set of
products of low-precision parts (plus, for the split scheme, one float64 addend),
rounded once to float32, ties to even, with a zero result written as +0. That
definition does not depend on any summation order, so BLAS, a GPU kernel and a
scalar reference can all produce the same bits.

:func:`round_exact_sum` computes it in two steps:

1. fast path: float64 GEMMs (any BLAS order) give ``S'`` with
   ``|S' - S| <= e``, where ``e`` is the standard dot-product error bound
   ``gamma_n * sum|terms|`` with ``sum|terms|`` bounded by Cauchy-Schwarz (row and
   column 2-norms, free next to the GEMMs). If the interval ``[S'-e, S'+e]`` lies
   strictly inside the float32 rounding interval of ``RN32(S')``, that is the
   correctly rounded result (Ziv's rounding test);
2. slow path for the rare elements that fail the test (result near a float32
   rounding boundary, or heavy cancellation): the exact sum is evaluated with
   ``math.fsum`` (correctly rounded to float64) and rounded to float32 with a
   residual check that removes the double-rounding case.

Which elements take the slow path never changes the result, only the time.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["round_exact_sum", "round_to_f32_exact"]

_U = 2.0**-53
_TWO128 = 2.0**128
_F32MAX = np.float32(np.finfo(np.float32).max)
#: K' chunk of the fast path (tightens the error bound from K' to CHUNK + K'/CHUNK)
_CHUNK = 256
#: elements (terms) per block of the vectorised slow path (~32 MB of float64)
_SLOW_BLOCK = 1 << 22


def round_exact_sum(
    a_parts: Sequence[np.ndarray],
    b_parts: Sequence[np.ndarray],
    pairs: Sequence[tuple[int, int]],
    addend: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Return ``RN32(sum_{(p,q) in pairs} a_parts[p] @ b_parts[q] + addend)`` computed
    exactly, and the number of elements that needed the slow path.

    ``a_parts`` are float64 m×k arrays, ``b_parts`` float64 k×n arrays, all finite.
    Caller's contract: for each ``p``, the sum of the ``b_parts[q]`` paired with it is
    exact in float64, and so is its product with any element of ``a_parts[p]`` (true
    when the parts come from one float32 value per element: a_p has at most 24
    significant bits and the sum at most 26). ``addend`` is an optional float64 m×n
    array added exactly. Zero results are +0.
    """
    groups: dict[int, list[int]] = {}
    for p, q in pairs:
        groups.setdefault(p, []).append(q)
    # one operand pair with K' = (number of groups)·k: X = [a_p ...], Y = [sum_q b_q; ...]
    x = np.hstack([a_parts[p] for p in groups])
    y = np.vstack([np.add.reduce([b_parts[q] for q in qs]) for qs in groups.values()])
    m, kk = x.shape
    n = y.shape[1]
    s = np.zeros((m, n)) if addend is None else np.array(addend, dtype=np.float64)
    # K' in chunks: each chunk's dot products err by <= gamma_chunk * sum|terms|, the
    # chunk results add with <= gamma_nchunks more (Higham, Accuracy and Stability, §3.1)
    n_chunks = 0
    for k0 in range(0, kk, _CHUNK):
        s += x[:, k0 : k0 + _CHUNK] @ y[k0 : k0 + _CHUNK, :]
        n_chunks += 1
    # sum |terms| <= ||x_i||_2 ||y_j||_2 (Cauchy-Schwarz)
    t = np.outer(np.sqrt(np.einsum("ik,ik->i", x, x)), np.sqrt(np.einsum("kj,kj->j", y, y)))
    adds = n_chunks + 2
    err = (2.0 * (min(kk, _CHUNK) + adds) * _U) * t + (2.0 * _U) * np.abs(s)
    if addend is not None:
        err += (2.0 * adds * _U) * np.abs(addend)
    with np.errstate(over="ignore"):
        c = s.astype(np.float32)
        ok = _inside_rounding_interval(s, err, c)
    c += np.float32(0.0)  # -0 -> +0
    bad_i, bad_j = np.nonzero(~ok)
    if bad_i.size:
        c[bad_i, bad_j] = _round_rows_exact(x, y, bad_i, bad_j, None if addend is None else addend[bad_i, bad_j])
    return c, int(bad_i.size)


def _round_rows_exact(
    x: np.ndarray, y: np.ndarray, rows: np.ndarray, cols: np.ndarray, addend: np.ndarray | None
) -> np.ndarray:
    """``RN32`` of the exact ``x[r] · y[:, c] (+ addend)`` for each listed element.

    Vectorised accurate summation of the exact products: two error-free extraction
    levels (Rump, Ogita, Oishi, "Accurate floating-point summation", SISC 2008,
    ExtractVector) give exact partial sums tau1, tau2 and a tiny remainder; Ziv's test
    accepts all but near-ties, which go to :func:`round_to_f32_exact`.
    """
    out = np.empty(rows.size, dtype=np.float32)
    per = max(1, _SLOW_BLOCK // (x.shape[1] + 1))
    for b0 in range(0, rows.size, per):
        r, cc = rows[b0 : b0 + per], cols[b0 : b0 + per]
        terms = x[r, :] * y[:, cc].T  # exact products
        if addend is not None:
            terms = np.hstack([terms, addend[b0 : b0 + per, None]])
        nt = terms.shape[1]
        scale = 2.0 ** math.ceil(math.log2(nt + 2))
        taus = []
        for _ in range(2):
            mu = np.abs(terms).max(axis=1, keepdims=True)
            _, e = np.frexp(mu)  # 2^e > mu
            sigma = np.where(mu > 0, np.ldexp(scale, e), 0.0)
            q = (sigma + terms) - sigma  # exact; q on the grid of ulp(sigma)/2
            terms = terms - q  # exact
            taus.append(q.sum(axis=1))  # exact: |sum| < sigma, all on one grid
        head = taus[0] + taus[1]
        rest = terms.sum(axis=1)
        s = head + rest
        err = 2.0 * _U * (np.abs(s) + np.abs(head)) + (3.0 * nt * _U) * np.abs(terms).sum(axis=1)
        with np.errstate(over="ignore"):
            c = s.astype(np.float32)
            ok = _inside_rounding_interval(s, err, c)
        c += np.float32(0.0)
        for t in np.nonzero(~ok)[0]:
            row = x[r[t], :] * y[:, cc[t]]
            extra = [] if addend is None else [addend[b0 + t]]
            c[t] = round_to_f32_exact(np.concatenate([row, extra]))
        out[b0 : b0 + per] = c
    return out


def _inside_rounding_interval(s: np.ndarray, err: np.ndarray, c: np.ndarray) -> np.ndarray:
    """True where every value within ``err`` of ``s`` rounds to the float32 ``c = RN32(s)``.

    The rounding interval of ``c`` reaches half an ulp above and below it, except
    below a power of two, where the lower ulp is half as large: there a quarter ulp is
    used on both sides (conservative). ``d = s - c`` is exact (Sterbenz). Infinite
    ``c`` and ``|c| = FLT_MAX`` (where the upper neighbour is the overflow threshold)
    are never accepted; the slow path rounds them.
    """
    ac = np.abs(c)
    half = np.spacing(ac).astype(np.float64)
    pow2 = (ac.view(np.uint32) & np.uint32(0x7FFFFF)) == 0
    half *= np.where(pow2, 0.25, 0.5)
    with np.errstate(invalid="ignore"):
        return (np.abs(s - c) + err < half) & (ac < _F32MAX)


def round_to_f32_exact(terms: np.ndarray) -> np.float32:
    """``RN32`` of the exact sum of float64 ``terms`` (ties to even; zero is +0)."""
    t = terms.tolist()
    s = math.fsum(t)  # RN64 of the exact sum
    with np.errstate(over="ignore"):
        c = np.float32(s)
        other = np.nextafter(c, np.float32(math.copysign(math.inf, s - float(c))))
    if float(c) != s:
        # RN32(RN64(S)) differs from RN32(S) only when RN64(S) is a float32 midpoint.
        cv = math.copysign(_TWO128, float(c)) if math.isinf(c) else float(c)
        ov = math.copysign(_TWO128, float(other)) if math.isinf(other) and not math.isinf(c) else float(other)
        if (cv + ov) * 0.5 == s:
            resid = math.fsum(t + [-s])
            if resid != 0.0:
                c = other if (ov > cv) == (resid > 0.0) else c
    return np.float32(c + np.float32(0.0))
