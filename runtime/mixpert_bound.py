"""The MixPert executor's guarantee: outputs it cannot vouch for are recomputed exactly.

Semantics: docs/numerics.md, "mixpert-fp64", *Guarantee*, and "mixpert", step 6.
A MixPert output is ``RN(X)``, ``X`` the exact sum of the kept segment products of
the *aligned* operands; an element far below its group's largest keeps few bits,
or none, so ``X`` can be far from ``A·B`` (``[[1, 1e-20]] @ [[1e-20], [1]]`` gives 0).

* float64 domain (:func:`fp64_doubtful`): a rigorous bound ``Err_ij >= |X_ij -
  (AB)_ij|`` (one small GEMM over 4 columns per k-tile: operand quantisation and
  dropped pairs, per alignment group) is compared with a lower bound ``L_ij <=
  (|A||B|)_ij`` (``|C| - Err``, or where cancellation makes that too small, the
  dot product of |a_i| and |b_j|); where ``Err(1+u) > (gamma_K - u) L`` the
  output is *doubtful*;
* float32 domain (:func:`lost_rows`): rows of A / columns of B holding a nonzero
  element that alignment shifted out entirely (``q = 0``) outside a fallback tile
  make their outputs doubtful.

Doubtful outputs are recomputed as ``RN(sum_k a_ik b_kj)`` of the domain's inputs,
exactly (:func:`recompute`, runtime/exactsum.exact_dot_round) and counted.
"""

from __future__ import annotations

import math

import numpy as np

from mixjit.runtime.exactsum import _ACC_LIMBS, exact_dot_round
from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.segments import BALANCED, ZERO_EXP, digit_bits

__all__ = ["dropped_weight", "fp64_doubtful", "lost_rows", "recompute"]

_U64 = 2.0**-53
_TINY = 2.0**-1074


@cached_njit(nogil=True)
def _pow2(n: int) -> float:
    """``2^n`` as ``math.ldexp(1.0, n)`` gives it (0 below 2^-1074, inf above the
    range), built from its bits where it is a normal or subnormal float64 (no libm
    call: the check calls it per output with n near -1075)."""
    if -1022 <= n <= 1023:
        return np.int64((n + 1023) << 52).view(np.float64)
    if -1074 <= n < -1022:
        return np.int64(1 << (n + 1074)).view(np.float64)
    if n < -1074:
        return 0.0  # 2^-1075 is a tie and rounds to even (0); below it, 0
    return math.ldexp(1.0, n)


@cached_njit(nogil=True)
def _scaled(x: float, n: int) -> float:
    """``math.ldexp(x, n)``, the same bits: one multiplication by the normal
    ``2^n`` rounds like ldexp (once, to nearest), so it is used where ``2^n`` is normal."""
    if -1022 <= n <= 1023:
        return x * _pow2(n)
    return math.ldexp(x, n)


@cached_njit(nogil=True)
def dropped_weight(pairs, segments: int, seg0_bits: int, digits: int) -> float:
    """``D = sum over dropped pairs (p, r) of cap_p cap_r 2^(b(s-1-p) + b(s-1-r))``:
    the dropped pairs of one k add at most ``D 2^(E_A + E_B - 2(W-1))`` (cap: the
    largest |segment|, 2^t - 1 / 127 for sign-magnitude, 128 for balanced digits)."""
    b = digit_bits(digits)
    d = 0.0
    for p in range(segments):
        for r in range(segments):
            if pairs[p, r]:
                continue
            cp = 128.0 if digits == BALANCED else (2.0**seg0_bits - 1.0 if p == 0 else 127.0)
            cr = 128.0 if digits == BALANCED else (2.0**seg0_bits - 1.0 if r == 0 else 127.0)
            d += cp * cr * 2.0 ** (b * (2 * segments - 2 - p - r))
    return d


@cached_njit(nogil=True)
def _bound_operand(raw, gexp, ref, tk: int, w: int, side_b: bool, c: float):
    """One side of the bound GEMM, scaled by ``2^-ref`` per row: per k-tile κ four
    columns, A: ``[delta, S, n delta, c n 2^E]``, B: ``[S, delta, delta, 2^E]``, with
    ``delta = 2^(E-W+2)`` where some element of the group is not on its grid
    ``2^(E-W+1)`` (it bounds split + shift error, rounded or truncated), else 0;
    ``S`` the group's sum of |x| (rounded up), ``n`` the k-tile's length."""
    r, K = raw.shape
    nkt = gexp.shape[1]
    out = np.zeros((r, 4 * nkt))
    up = 1.0 + 2.0 * (tk + 2) * _U64
    for i in range(r):
        for t in range(nkt):
            e = gexp[i, t]
            if e == ZERO_EXP:
                continue
            k0 = t * tk
            k1 = min(k0 + tk, K)
            grid = e - w + 1
            exact = True
            s = 0.0
            for k in range(k0, k1):
                x = raw[i, k]
                if x == 0.0 or not math.isfinite(x):
                    continue
                s += _scaled(abs(x), -ref[i])
                u = np.float64(x).view(np.uint64)
                be = np.int64((u >> np.uint64(52)) & np.uint64(0x7FF))
                m = np.int64(u & np.uint64(0xFFFFFFFFFFFFF))
                lsb = np.int64(-1074)
                if be != 0:
                    m |= np.int64(1) << 52
                    lsb = be - 1075
                sh = grid - lsb
                if sh > 0 and (sh >= 53 or (m & ((np.int64(1) << sh) - 1)) != 0):
                    exact = False
            delta = _pow2(e - ref[i] - w + 2) if not exact else 0.0
            sc = s * up + (k1 - k0) * _TINY  # scaled |x| that underflowed
            top = _pow2(e - ref[i])
            if side_b:
                out[i, 4 * t] = sc
                out[i, 4 * t + 1] = delta
                out[i, 4 * t + 2] = delta
                out[i, 4 * t + 3] = top
            else:
                out[i, 4 * t] = delta
                out[i, 4 * t + 1] = sc
                out[i, 4 * t + 2] = (k1 - k0) * delta
                out[i, 4 * t + 3] = c * (k1 - k0) * top
    return out


@cached_njit(nogil=True)
def _abs_dot(x, y, sx: int, sy: int) -> float:
    """``sum_k |x_k| |y_k| 2^-(sx+sy)`` in float64 (finite elements; may round)."""
    t = 0.0
    for k in range(x.shape[0]):
        a = x[k]
        b = y[k]
        if a != 0.0 and b != 0.0 and math.isfinite(a) and math.isfinite(b):
            t += _scaled(abs(a), -sx) * _scaled(abs(b), -sy)
    return t


@cached_njit(nogil=True)
def fp64_doubtful(araw, agexp, aref, braw, bgexp, bref, tk: int, w: int, dropped: float, c):
    """Outputs (m x n booleans) of a float64-domain product ``c = RN64(X)`` whose
    error bound does not prove ``|X - AB| (1+u) <= (gamma_K - u) |A||B|`` (so that
    ``RN64(X)`` meets native dgemm's ``gamma_K |A||B|``). Everything is scaled by
    ``2^-(ref_A(i) + ref_B(j))``; every rounding of the check is covered by a
    safety factor. ``|A||B| >= |AB| >= |X| - Err`` certifies almost every output
    from ``c`` itself; the rest (cancellation) get ``(|A||B|)_ij`` from one dot
    product of absolute values each."""
    m, K = araw.shape
    n = braw.shape[0]
    nkt = agexp.shape[1]
    # |ab - a'b'| <= delta_A |b| + |a| delta_B + delta_A delta_B per k, and the
    # dropped pairs add at most D 2^(EA+EB-2W+2) (0 when every pair is kept)
    cd = math.ldexp(dropped, 2 - 2 * w)
    xa = _bound_operand(araw, agexp, aref, tk, w, False, cd)
    yb = _bound_operand(braw, bgexp, bref, tk, w, True, cd)
    nb = 4 * nkt
    err = np.dot(xa, yb.T)
    err_up = (1.0 + 4.0 * (nb + 2) * _U64) * (1.0 + _U64)
    err_abs = 4.0 * (nb + 2) * _TINY
    tol = (K * _U64 / (1.0 - K * _U64) - _U64) * (1.0 - 2.0**-40)
    dot_down = 1.0 - 2.0 * (K + 2) * _U64 / (1.0 - (K + 2) * _U64)
    doubt = np.zeros((m, n), dtype=np.bool_)
    for i in range(m):
        for j in range(n):
            e = err[i, j] * err_up + err_abs
            if e == 0.0:
                continue  # X = AB exactly
            # |A||B| >= |X| - Err >= |c| (1 - u) - 2^-1075 - Err (c = RN64(X)), scaled
            sc = aref[i] + bref[j]
            cs = _scaled(abs(c[i, j]), -sc) * (1.0 - 2.0 * _U64) - _pow2(-1075 - sc) - 2.0 * _TINY
            if math.isfinite(cs) and e <= tol * (cs - e):
                continue
            low = _abs_dot(araw[i], braw[j], aref[i], bref[j])
            low = (low - (K + 2) * _TINY) * dot_down
            doubt[i, j] = e > tol * low
    return doubt


@cached_njit(nogil=True)
def lost_rows(raw, q, fb, tk: int):
    """Per row: does a finite nonzero element outside a fallback tile align to 0?"""
    r, K = raw.shape
    out = np.zeros(r, dtype=np.bool_)
    for i in range(r):
        for k in range(K):
            x = raw[i, k]
            if q[i, k] == 0 and x != 0.0 and math.isfinite(x) and not fb[i, k // tk]:
                out[i] = True
                break
    return out


@cached_njit(nogil=True)
def recompute(araw, braw, doubt, out, to32: bool) -> int:
    """``out[i, j] = RN(sum_k a_ik b_kj)`` exactly where ``doubt``; returns how many."""
    acc = np.zeros(_ACC_LIMBS, dtype=np.int64)
    count = 0
    for i in range(doubt.shape[0]):
        for j in range(doubt.shape[1]):
            if doubt[i, j]:
                out[i, j] = exact_dot_round(araw[i], braw[j], acc, to32)
                count += 1
    return count
