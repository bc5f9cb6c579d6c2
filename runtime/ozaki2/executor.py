"""Bit-exact CPU executor of the Ozaki-II scheme (``ozaki2``): GEMM by the Chinese
remainder theorem, after GEMMul8 (Ozaki, Uchino, Imamura 2025; github.com/RIKEN-RCCS/GEMMul8,
formerly UCHINO-Yuki/GEMMul8).

Semantics: docs/numerics.md, section "ozaki2". In short, with N moduli
``p_1..p_N`` (GEMMul8's table: 256, 255, 253, ... 173, pairwise coprime, below
or at 256) and ``P = p_1 ... p_N``:

1. every row i of A gets a power-of-two scale ``2^s_i`` and every column j of B a
   scale ``2^t_j`` so that the integer vectors ``a'_i = trunc(a_i * 2^s_i)`` and
   ``b'_j = trunc(b_j * 2^t_j)`` have ``|a'_i . b'_j| < 2^G <= P/2`` with
   ``G = floor(log2 P) - 1``: GEMMul8's fast mode (a Cauchy-Schwarz bound from the
   row's exponents) or its accurate mode (one more exact GEMM, of 6-bit upper
   bounds of |A| and |B|, bounds sum_k |a_ik||b_kj| for every pair);
2. the residues of ``a'`` and ``b'`` modulo each ``p_l`` (symmetric, in
   [-128, 127]: INT8) are multiplied exactly: on the CPU as float64 GEMMs (every
   partial sum is an integer of magnitude <= K_block * 128^2 <= 2^53, so any
   summation order is exact), K cut into blocks of at most ``MAX_KBLOCK``;
3. the integer ``S = a'_i . b'_j`` is recovered exactly from its N residues
   (Garner's mixed-radix CRT, then the symmetric representative in [-P/2, P/2));
   ``|S| < P/2`` by step 1, so the recovery is exact;
4. ``C[i,j] = RN(S * 2^-(s_i + t_j))`` in the input's format (float32 or float64),
   rounded once (runtime/numerics/exactsum.py).

Non-finite inputs: those elements count as 0 for the computation and the
affected outputs are set by the non-finite rule (Common conventions).

The executor is compiled (``@cached_njit(nogil=True)``), so ``scheme.run`` and a
compiled caller (the @mixjit run-time entry) run one code path:

* :func:`ozaki2_gemm` ``(a, b, c, params, stats) -> status``: ``C = A @ B`` for
  2-D float32/float64 arrays with any strides (``a``, ``b``, ``c`` of one dtype);
  ``params`` the config as int64 words (``Ozaki2Config.words()``, layout ``W_*``),
  ``stats`` an int64 array of ``N_STATS`` (``STAT_*``) it fills. Returns 0 or an
  ``ERR_*`` code (``STATUS_MESSAGES``); never raises, never takes the GIL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.numerics.exactsum import MAX_PARTIALS, add_piece, finish, round32, round64_scaled

__all__ = [
    "MODULI",
    "MAX_MODULI",
    "MAX_KBLOCK",
    "MAX_K",
    "N_WORDS",
    "N_STATS",
    "STATUS_MESSAGES",
    "scale_bits",
    "ozaki2_gemm",
    "run_ozaki2",
    "ExecStats",
    "LIMBS",
    "row_tops",
    "fast_shifts",
    "reconstruct",
    "round_out",
]

#: GEMMul8's moduli, in its order (src/table.hpp): pairwise coprime, <= 256, so a
#: symmetric residue fits INT8. Config ``moduli=N`` uses the first N.
MODULI = np.array(
    [256, 255, 253, 251, 247, 241, 239, 233, 229, 227, 223, 217, 211, 199, 197, 193, 191, 181, 179, 173],
    dtype=np.int64,
)
MAX_MODULI = MODULI.shape[0]

#: longest exact K block of a float64 residue GEMM: K * 128^2 <= 2^53
MAX_KBLOCK = 1 << 39
#: longest K: the fast mode's fixed-point norm bound sums K terms of at most 2^32 in an int64
MAX_K = 1 << 30

# ---- the config as int64 words (written by Ozaki2Config.words) -----------------
W_MODULI = 0  # number of moduli N, 1..MAX_MODULI
W_KBLOCK = 1  # K block of the exact residue GEMMs, 1..MAX_KBLOCK
W_MODE = 2  # MODE_FAST | MODE_ACCURATE: how the scaling bounds the integer products
N_WORDS = 3
MODE_FAST = 0
MODE_ACCURATE = 1

# ---- what a call did (the stats array) ---------------------------------------
STAT_NONFINITE = 0  # outputs set by the non-finite rule
STAT_KBLOCKS = 1  # K blocks of the residue GEMMs
STAT_RESIDUE_GEMMS = 2  # float64 residue GEMMs run (moduli x K blocks)
STAT_BOUND_GEMMS = 3  # accurate mode's bound GEMM of the leading bits (0 or 1)
N_STATS = 4

# ---- status codes ----------------------------------------------------------
OK = 0
ERR_PARAMS = 1
ERR_SHAPE = 2
ERR_K_TOO_LONG = 3
STATUS_MESSAGES: dict[int, str] = {
    ERR_PARAMS: f"the config words are invalid (moduli must be 1..{MAX_MODULI}, the K block 1..2^39, "
    "the mode 0 (fast) or 1 (accurate)); "
    "encode configs with Ozaki2Config.words()",
    ERR_SHAPE: "shapes or dtypes do not match: A is m x k, B must be k x n and C m x n, all of one dtype",
    ERR_K_TOO_LONG: f"K is longer than {MAX_K} (the scaling's fixed-point norm bound would overflow int64); "
    "split the GEMM along K",
}
"""What each non-zero status of the compiled executor means."""


def _tables() -> tuple[np.ndarray, ...]:
    """Per N: G = floor(log2 P_N) - 1; inverses inv[j, l] = p_j^-1 mod p_l (j < l);
    2^t mod p_l; P_N / 2 and P_N as 24-bit limbs (all exact, from Python ints)."""
    p = [int(v) for v in MODULI]
    g = np.zeros(MAX_MODULI + 1, dtype=np.int64)
    half = np.zeros((MAX_MODULI + 1, LIMBS), dtype=np.int64)
    full = np.zeros((MAX_MODULI + 1, LIMBS), dtype=np.int64)
    prod = 1
    for n in range(1, MAX_MODULI + 1):
        prod *= p[n - 1]
        g[n] = prod.bit_length() - 2
        h = prod // 2
        for l in range(LIMBS):
            half[n, l] = (h >> (_LIMB_BITS * l)) & _LIMB_MASK
            full[n, l] = (prod >> (_LIMB_BITS * l)) & _LIMB_MASK
    inv = np.zeros((MAX_MODULI, MAX_MODULI), dtype=np.int64)
    for j in range(MAX_MODULI):
        for l in range(j + 1, MAX_MODULI):
            inv[j, l] = pow(p[j], -1, p[l])
    pow2 = np.array([[pow(2, t, q) for t in range(_POW2_LEN)] for q in p], dtype=np.int64)
    return g, inv, pow2, half, full


_LIMB_BITS = 24
_LIMB_MASK = (1 << _LIMB_BITS) - 1
LIMBS = 7  # 168 bits > log2(P_20) = 155.4
_POW2_LEN = 64  # t in 2^t of a scaled integer's 53-bit mantissa (|a'| < 2^84: t < 32)
_G, _INV, _POW2, _HALF, _P = _tables()
#: fixed point of the norm bound: each |x|^2 < 4^(e+1) counts 2^(32 - 2d) units (d = E - e)
_FIX = 32
#: accurate mode: bits of the leading upper bounds u = ceil(|x| 2^(5-E)) <= 64 (GEMMul8's "6-bit")
_LEAD_BITS = 6
#: E of a row without finite nonzero elements
NO_TOP = -(1 << 20)


def scale_bits(n_moduli: int) -> int:
    """G = floor(log2 P) - 1 for the first ``n_moduli`` moduli: scaled rows of A and
    columns of B have 2-norms below 2^(G/2), so |S| < 2^G <= P/2."""
    return int(_G[n_moduli])


# ------------------------------------------------------------------ parameters


@cached_njit(nogil=True)
def _params_ok(params) -> bool:
    if params.shape[0] < N_WORDS:
        return False
    return (
        1 <= params[W_MODULI] <= MAX_MODULI
        and 1 <= params[W_KBLOCK] <= MAX_KBLOCK
        and 0 <= params[W_MODE] <= MODE_ACCURATE
    )


# ------------------------------------------------------------------- step 1


@cached_njit(nogil=True)
def _exponent(x: float) -> int:
    """e with 2^e <= |x| < 2^(e+1), for finite nonzero x (subnormals exactly)."""
    return math.frexp(x)[1] - 1


@cached_njit(nogil=True)
def _get(x, i: int, k: int, transpose: bool) -> float:
    """Element k of row i of the row form of ``x`` (``x.T`` when ``transpose``)."""
    return np.float64(x[k, i] if transpose else x[i, k])


@cached_njit(nogil=True)
def row_tops(x, transpose: bool):
    """Per row (column when ``transpose``): E = max e over its finite nonzero elements
    (NO_TOP when there is none) and whether it holds an inf/NaN."""
    r = x.shape[1] if transpose else x.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    top = np.full(r, NO_TOP, dtype=np.int64)
    bad = np.zeros(r, dtype=np.bool_)
    for i in range(r):
        for k in range(kk):
            v = _get(x, i, k, transpose)
            if not math.isfinite(v):
                bad[i] = True
            elif v != 0.0:
                top[i] = max(top[i], _exponent(v))
    return top, bad


@cached_njit(nogil=True)
def _bit_length(v: int) -> int:
    """The smallest w >= 0 with v < 2^w (v >= 0)."""
    w = 0
    while w < 63 and (np.int64(1) << w) <= v:
        w += 1
    return w


@cached_njit(nogil=True)
def fast_shifts(x, transpose: bool, top, g: int):
    """Fast mode: s = floor((g + 32 - w)/2) - E - 1, w the smallest integer with
    W <= 2^w, W = sum over finite nonzeros of 2^(32 - 2d) (1 when 2d > 32), d = E - e:
    then ||trunc(x_row * 2^s)||^2 < 2^g."""
    r = top.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    shift = np.zeros(r, dtype=np.int64)
    for i in range(r):
        if top[i] == NO_TOP:
            continue
        units = np.int64(0)
        for k in range(kk):
            v = _get(x, i, k, transpose)
            if v != 0.0 and math.isfinite(v):
                d = top[i] - _exponent(v)
                units += np.int64(1) << (_FIX - 2 * d) if 2 * d <= _FIX else np.int64(1)
        shift[i] = (g + _FIX - _bit_length(units - 1)) // 2 - top[i] - 1
    return shift


@cached_njit(nogil=True)
def _leading(x, transpose: bool, top):
    """Accurate mode, first pass: u = ceil(|x| * 2^(5 - E)) in [1, 64] for finite
    nonzero x (0 otherwise), as a row-form float64 matrix (transposed to K x rows
    when ``transpose``, ready for the bound GEMM)."""
    r = top.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    out = np.zeros((kk, r)) if transpose else np.zeros((r, kk))
    for i in range(r):
        if top[i] == NO_TOP:
            continue
        for k in range(kk):
            v = _get(x, i, k, transpose)
            if v != 0.0 and math.isfinite(v):
                u = max(1.0, math.ceil(math.ldexp(abs(v), _LEAD_BITS - 1 - top[i])))
                if transpose:
                    out[k, i] = u
                else:
                    out[i, k] = u
    return out


@cached_njit(nogil=True)
def _accurate_shifts(a, b, atop, btop, g: int, stats):
    """Accurate mode (GEMMul8's): V = U_A U_B (one more exact GEMM, of the leading
    6-bit upper bounds) bounds sum_k |a_ik||b_kj| * 2^(5-E_i) * 2^(5-E'_j) by V_ij;
    with R_i = max_j V_ij, Q_j = max_i V_ij and r = bit_length(R), the shifts
    s_i = 5 - E_i + floor((g - r_i)/2) (likewise t_j) give sum |a'||b'| < 2^g."""
    v = np.dot(_leading(a, False, atop), _leading(b, True, btop))  # exact: K * 64^2 < 2^53
    stats[STAT_BOUND_GEMMS] += 1
    m, n = v.shape
    sa = np.zeros(m, dtype=np.int64)
    sb = np.zeros(n, dtype=np.int64)
    for i in range(m):
        if atop[i] != NO_TOP:
            big = 0.0
            for j in range(n):
                big = max(big, v[i, j])
            sa[i] = _LEAD_BITS - 1 - atop[i] + (g - _bit_length(np.int64(big))) // 2
    for j in range(n):
        if btop[j] != NO_TOP:
            big = 0.0
            for i in range(m):
                big = max(big, v[i, j])
            sb[j] = _LEAD_BITS - 1 - btop[j] + (g - _bit_length(np.int64(big))) // 2
    return sa, sb


@cached_njit(nogil=True)
def _scaled(x, transpose: bool, shift):
    """Row form of trunc(x * 2^shift_row) (exact float64 integers; 0 for inf/NaN)."""
    r = shift.shape[0]
    kk = x.shape[0] if transpose else x.shape[1]
    out = np.zeros((r, kk))
    for i in range(r):
        for k in range(kk):
            v = _get(x, i, k, transpose)
            if v != 0.0 and math.isfinite(v):
                out[i, k] = np.trunc(math.ldexp(v, shift[i])) + 0.0
    return out


# ------------------------------------------------------------------- step 2


@cached_njit(nogil=True)
def _residue(v: float, l: int) -> int:
    """Symmetric residue of the integer-valued float64 ``v`` modulo p_l, in
    [-floor(p/2), ceil(p/2) - 1] (INT8 for p <= 256)."""
    p = MODULI[l]
    if v == 0.0:
        return 0
    f, ex = math.frexp(abs(v))
    if ex <= 53:
        r = np.int64(abs(v)) % p
    else:
        r = (np.int64(math.ldexp(f, 53)) % p) * _POW2[l, ex - 53] % p
    if v < 0.0:
        r = (p - r) % p
    if r >= (p + 1) // 2:
        r -= p
    return r


@cached_njit(nogil=True)
def _residue_block(x, l: int, k0: int, k1: int, transpose: bool):
    """Residues mod p_l of ``x[:, k0:k1]`` (row form) as a contiguous float64 matrix,
    transposed (K x rows) when ``transpose``."""
    r = x.shape[0]
    if transpose:
        out = np.empty((k1 - k0, r))
        for i in range(r):
            for k in range(k0, k1):
                out[k - k0, i] = _residue(x[i, k], l)
    else:
        out = np.empty((r, k1 - k0))
        for i in range(r):
            for k in range(k0, k1):
                out[i, k - k0] = _residue(x[i, k], l)
    return out


@cached_njit(nogil=True)
def _residue_products(xa, xb, n_moduli: int, kblock: int, stats):
    """res[l, i, j] = (a'_i . b'_j) mod p_l in [0, p_l): float64 GEMMs of residues,
    exact per K block (|sum| <= kblock * 128^2 <= 2^53), blocks added mod p_l."""
    m = xa.shape[0]
    n = xb.shape[0]
    K = xa.shape[1]
    res = np.zeros((n_moduli, m, n), dtype=np.int16)
    for k0 in range(0, K, kblock):
        k1 = min(K, k0 + kblock)
        stats[STAT_KBLOCKS] += 1
        for l in range(n_moduli):
            p = MODULI[l]
            d = np.dot(_residue_block(xa, l, k0, k1, False), _residue_block(xb, l, k0, k1, True))
            stats[STAT_RESIDUE_GEMMS] += 1
            for i in range(m):
                for j in range(n):
                    res[l, i, j] = (np.int64(res[l, i, j]) + np.int64(d[i, j]) % p) % p
    return res


# ------------------------------------------------------------------- step 3-4


@cached_njit(nogil=True)
def reconstruct(res, i: int, j: int, n_moduli: int, digits, limbs) -> int:
    """S from its residues res[:, i, j] (Garner's mixed radix, then the symmetric
    representative): |S| as 24-bit limbs in ``limbs``; returns the sign (-1, 0, 1)."""
    for l in range(n_moduli):
        p = MODULI[l]
        t = np.int64(res[l, i, j])
        for q in range(l):
            t = ((t - digits[q]) * _INV[q, l]) % p
        digits[l] = t
    # U = v_0 + p_0 (v_1 + p_1 (v_2 + ...)) in [0, P), by Horner from the top digit
    for u in range(LIMBS):
        limbs[u] = 0
    limbs[0] = digits[n_moduli - 1]
    for l in range(n_moduli - 2, -1, -1):
        carry = digits[l]
        p = MODULI[l]
        for u in range(LIMBS):
            t = limbs[u] * p + carry
            limbs[u] = t & _LIMB_MASK
            carry = t >> _LIMB_BITS
    # S = U if U < P/2, else U - P (compare U with P/2 from the top limb)
    ge = True
    for u in range(LIMBS - 1, -1, -1):
        if limbs[u] != _HALF[n_moduli, u]:
            ge = limbs[u] > _HALF[n_moduli, u]
            break
    if not ge:
        nonzero = False
        for u in range(LIMBS):
            nonzero = nonzero or limbs[u] != 0
        return 1 if nonzero else 0
    # |S| = P - U, limb-wise with borrows
    borrow = 0
    for u in range(LIMBS):
        t = _P[n_moduli, u] - limbs[u] - borrow
        borrow = 0
        if t < 0:
            t += 1 << _LIMB_BITS
            borrow = 1
        limbs[u] = t
    return -1


@cached_njit(nogil=True)
def round_out(limbs, sign: int, e: int, to32: bool, parts) -> float:
    """RN(sign * |S| * 2^e) to float32 (``to32``) or float64, from |S|'s limbs."""
    if sign == 0:
        return 0.0
    n = 0
    for u in range(LIMBS):
        if limbs[u] != 0:
            n = add_piece(parts, n, math.ldexp(float(limbs[u]), _LIMB_BITS * u))
    hi, lo = finish(parts, n)
    if sign < 0:
        hi, lo = -hi, -lo
    if to32:
        # |S| < 2^155: hi * 2^e is exact unless below float64's normal range, where
        # the float32 result is 0 either way
        return float(round32(math.ldexp(hi, e), lo))
    return round64_scaled(hi, lo, e)


@cached_njit(nogil=True)
def _nonfinite_rule(a, b, abad, bbad, out) -> int:
    """The non-finite rule for every output whose row of A or column of B holds an
    inf/NaN; returns the number of such outputs."""
    K = a.shape[1]
    count = 0
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            if not (abad[i] or bbad[j]):
                continue
            count += 1
            pos = False
            neg = False
            nan = False
            for k in range(K):
                x = np.float64(a[i, k])
                y = np.float64(b[k, j])
                if math.isnan(x) or math.isnan(y):
                    nan = True
                    break
                if math.isinf(x) or math.isinf(y):
                    if x == 0.0 or y == 0.0:
                        nan = True
                        break
                    if (x > 0.0) == (y > 0.0):
                        pos = True
                    else:
                        neg = True
            if nan or (pos and neg):
                out[i, j] = math.nan
            else:
                out[i, j] = math.inf if pos else -math.inf
    return count


@cached_njit(nogil=True)
def ozaki2_gemm(a, b, c, params, stats) -> int:
    """``C = A @ B`` under the ozaki2 semantics: ``a`` (m x k), ``b`` (k x n), ``c``
    (m x n), all float32 or all float64, any strides; ``params`` the config words
    (``Ozaki2Config.words()``); ``stats`` an int64 array of ``N_STATS``. Returns 0
    or an ``ERR_*`` status (``STATUS_MESSAGES``); ``c`` is unspecified on error.
    Compiled, GIL-free, thread-safe (all scratch is allocated per call)."""
    if not _params_ok(params) or stats.shape[0] < N_STATS:
        return ERR_PARAMS
    m, K = a.shape
    n = b.shape[1]
    if b.shape[0] != K or c.shape[0] != m or c.shape[1] != n:
        return ERR_SHAPE
    if a.itemsize != b.itemsize or a.itemsize != c.itemsize:
        return ERR_SHAPE
    if K > MAX_K:
        return ERR_K_TOO_LONG
    for s in range(N_STATS):
        stats[s] = 0
    to32 = c.itemsize == 4
    n_moduli = params[W_MODULI]
    g = _G[n_moduli]
    atop, abad = row_tops(a, False)
    btop, bbad = row_tops(b, True)
    if params[W_MODE] == MODE_ACCURATE:
        sa, sb = _accurate_shifts(a, b, atop, btop, g, stats)
    else:
        sa = fast_shifts(a, False, atop, g)
        sb = fast_shifts(b, True, btop, g)
    xa = _scaled(a, False, sa)
    xb = _scaled(b, True, sb)
    res = _residue_products(xa, xb, n_moduli, params[W_KBLOCK], stats)
    out = np.empty((m, n))
    digits = np.zeros(MAX_MODULI, dtype=np.int64)
    limbs = np.zeros(LIMBS, dtype=np.int64)
    parts = np.zeros(MAX_PARTIALS)
    for i in range(m):
        for j in range(n):
            sign = reconstruct(res, i, j, n_moduli, digits, limbs)
            out[i, j] = round_out(limbs, sign, -(sa[i] + sb[j]), to32, parts)
    stats[STAT_NONFINITE] = _nonfinite_rule(a, b, abad, bbad, out)
    for i in range(m):
        for j in range(n):
            c[i, j] = out[i, j]
    return OK


# ------------------------------------------------------------ Python face


@dataclass
class ExecStats:
    """What the executor did (the scheme turns it into RunStats)."""

    nonfinite_elements: int
    k_blocks: int
    residue_gemms: int
    bound_gemms: int


def run_ozaki2(a: np.ndarray, b: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, ExecStats]:
    """C = A @ B under the ozaki2 semantics (C in the inputs' dtype, float32 or
    float64). Raises ValueError for what the compiled executor refuses."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"ozaki2: A and B must be 2-D, got shapes {a.shape} and {b.shape}")
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float64):
        raise TypeError(f"ozaki2: A and B must both be float32 or both float64, got {a.dtype} and {b.dtype}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"ozaki2: inner dimensions differ: A is {a.shape[0]}x{a.shape[1]}, B is {b.shape[0]}x{b.shape[1]}"
        )
    params = np.ascontiguousarray(params, dtype=np.int64)
    c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
    stats = np.zeros(N_STATS, dtype=np.int64)
    status = ozaki2_gemm(a, b, c, params, stats)
    if status != OK:
        raise ValueError(f"ozaki2: {STATUS_MESSAGES[status]}")
    return c, ExecStats(
        int(stats[STAT_NONFINITE]), int(stats[STAT_KBLOCKS]), int(stats[STAT_RESIDUE_GEMMS]), int(stats[STAT_BOUND_GEMMS])
    )
