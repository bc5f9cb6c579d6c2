"""Bit-exact CPU executor of the MixPert schemes (``mixpert``, ``mixpert-fp64``).

Semantics: docs/numerics.md, sections "mixpert" and "mixpert-fp64". Every output is
the exact value ``X[i,j]`` of the kept INT8 segment products (each k-tile scaled by
its A and B group exponents), plus the fallback tile products, rounded once to the
target format. The executor gets that exact value three ways, all giving the same
bits:

* fast path: segments are combined into a few integer-valued float64 matrices
  (runtime/pair_blocks.py) whose dgemms over the whole K are exact, because every
  partial sum stays below 2^53 on the finest grid of the (i, j) pair; with at most
  two blocks one TwoSum gives ``RN64(X)`` and its residual, and :func:`round32`
  finishes; with more blocks the block results are summed exactly
  (runtime/exactsum.py);
* exact path: rows of A / columns of B whose exponent span along K is too wide for
  the fast path's bound, or that touch a fallback tile, are recomputed k-tile by
  k-tile (each k-tile dgemm is exact) and summed exactly;
* fallback tiles: a tile product whose A or B tile has an exponent spread above
  ``fallback`` bits contributes its exact tf32x3 products instead.

Non-finite inputs: those elements count as 0 for the computation and the
affected outputs are set by the non-finite rule (Common conventions).
The compiled kernels take plain arrays; operands can be prepared once
(:func:`prepare`) and reused by several GEMMs.
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass

import numba
import numpy as np

from mixjit.runtime.exactsum import MAX_PARTIALS, add_piece, add_pieces, finish_all, round32, round64_scaled
from mixjit.runtime.pair_blocks import Block, k_bits, plan_blocks
from mixjit.runtime.segments import (
    BALANCED,
    MAGNITUDE,
    ROUND_NEAREST,
    ROUND_TRUNC,
    ZERO_EXP,
    digit_range,
    max_aligned,
    pack_groups,
    width,
)

__all__ = ["Layout", "Prepared", "prepare", "run_mixpert", "ExecStats"]

#: rows (or columns) recomputed together on the exact path
_EXACT_CHUNK = 32
#: widest exponent span (row of A + column of B) whose pieces stay in float64's range
_MAX_SPAN = 900


@dataclass(frozen=True)
class Layout:
    """The operand-packing part of a MixPert config (what a prepared operand fixes)."""

    segments: int
    seg0_bits: int  # significant bits of segment 0, implied one included
    digits: str  # "magnitude" | "balanced"
    align: str  # "tile" | "row"
    rounding: str  # "round" | "trunc"
    tile: tuple[int, int, int]  # (tm, tk, tn): A tile tm×tk, B tile tk×tn
    fallback: int  # spread threshold in bits; -1: never
    domain: str  # "fp32" | "fp64": the format inputs are rounded to and C is rounded to

    @property
    def digit_code(self) -> int:
        return BALANCED if self.digits == "balanced" else MAGNITUDE

    @property
    def width(self) -> int:
        return width(self.segments, self.seg0_bits, self.digit_code)


@dataclass
class Prepared:
    """One operand split, aligned and ready for several GEMMs.

    Stored in *row form*: A as m×K, B as Bᵀ (n×K), so both sides use one code path.
    """

    side: str  # "A" | "B"
    layout: Layout
    shape: tuple[int, int]  # the operand's own shape (A: m×K, B: K×n)
    dtype: np.dtype  # the caller's dtype (C is returned in it)
    raw: np.ndarray  # row form, in the domain, non-finite kept (special rule, fallback)
    bad: np.ndarray  # rows (of the row form) holding an inf/NaN
    q: np.ndarray  # aligned signed mantissas, int64
    gexp: np.ndarray  # group exponent per row and k-tile
    fb: np.ndarray  # per row and k-tile: the row's tile falls back
    fb_tiles: int  # number of fallback tiles
    ref: np.ndarray  # per row: largest group exponent outside fallback tiles
    span: np.ndarray  # per row: ref minus the smallest such group exponent
    scale: np.ndarray  # per row and k-tile: 2^(E - ref), 0 for zero/fallback groups
    ops: dict = dataclasses.field(default_factory=dict)  # (i0, i1) -> float64 operand

    def operand(self, i0: int, i1: int) -> np.ndarray:
        """Float64 matrix of segments ``i0..i1``, each k-tile times its scale (cached)."""
        if (i0, i1) not in self.ops:
            lay = self.layout
            self.ops[(i0, i1)] = _operand(self.q, self.scale, i0, i1, lay.segments, lay.digit_code, lay.tile[1])
        return self.ops[(i0, i1)]


@dataclass
class ExecStats:
    """What the executor did (the scheme turns it into RunStats)."""

    fallback_tiles: int
    tiles: int
    nonfinite_elements: int
    exact_path_rows: int
    exact_path_cols: int


def _to_domain(x: np.ndarray, domain: str) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float32 if domain == "fp32" else np.float64)


def prepare(x: np.ndarray, side: str, layout: Layout) -> Prepared:
    """Split and align operand ``x`` (A if ``side == "A"``, else B) under ``layout``."""
    if side not in ("A", "B"):
        raise ValueError(f"side must be 'A' or 'B', got {side!r}")
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"mixpert: operand {side} must be 2-D, got shape {x.shape}")
    raw = np.ascontiguousarray(_to_domain(x if side == "A" else x.T, layout.domain))
    tm, tk, tn = layout.tile
    group_rows = 1 if layout.align == "row" else (tm if side == "A" else tn)
    mode = ROUND_NEAREST if layout.rounding == "round" else ROUND_TRUNC
    far = layout.fallback if layout.fallback >= 0 else 1 << 20
    qmax = max_aligned(layout.segments, layout.digit_code)
    q, gexp, nonzero, shifted, bad = pack_groups(raw, group_rows, tk, layout.width, mode, far, qmax)
    tile_rows = tm if side == "A" else tn
    fb, fb_tiles = _fallback_flags(nonzero, shifted, tile_rows, layout.fallback)
    ref, span, scale = _scales(gexp, fb)
    return Prepared(
        side=side,
        layout=layout,
        shape=x.shape,
        dtype=x.dtype,
        raw=raw,
        bad=bad,
        q=q,
        gexp=gexp,
        fb=fb,
        fb_tiles=fb_tiles,
        ref=ref,
        span=span,
        scale=scale,
    )


def _fallback_flags(
    nonzero: np.ndarray, shifted: np.ndarray, tile_rows: int, threshold: int
) -> tuple[np.ndarray, int]:
    """Per row and k-tile: does the row's tile fall back (more than 1/8 of its nonzero
    elements shifted by more than ``threshold`` bits)? Also the number of such tiles."""
    r, nkt = nonzero.shape
    if threshold < 0 or r == 0:
        return np.zeros((r, nkt), dtype=bool), 0
    nt = -(-r // tile_rows)

    def per_tile(x: np.ndarray) -> np.ndarray:
        pad = np.zeros((nt * tile_rows, nkt), dtype=x.dtype)
        pad[:r] = x
        return pad.reshape(nt, tile_rows, nkt).sum(axis=1)

    tiles = 8 * per_tile(shifted) > per_tile(nonzero)
    return np.repeat(tiles, tile_rows, axis=0)[:r], int(tiles.sum())


@numba.njit(cache=True, nogil=True)
def _scales(gexp, fb):
    """Per row: reference exponent (max over valid groups), span, and the exact
    power-of-two factor ``2^(E - ref)`` of each group (0 for zero/fallback groups)."""
    r, nkt = gexp.shape
    ref = np.zeros(r, dtype=np.int64)
    span = np.zeros(r, dtype=np.int64)
    scale = np.zeros((r, nkt))
    for i in range(r):
        hi = ZERO_EXP
        lo = -ZERO_EXP
        for t in range(nkt):
            e = gexp[i, t]
            if e != ZERO_EXP and not fb[i, t]:
                hi = max(hi, e)
                lo = min(lo, e)
        if hi == ZERO_EXP:
            continue
        ref[i] = hi
        span[i] = hi - lo
        for t in range(nkt):
            e = gexp[i, t]
            if e != ZERO_EXP and not fb[i, t]:
                scale[i, t] = math.ldexp(1.0, e - hi)
    return ref, span, scale


@numba.njit(cache=True, nogil=True)
def _operand(q, scale, i0: int, i1: int, segments: int, digits: int, tk: int):
    """Float64 matrix of segments ``i0..i1`` of ``q``, each k-tile times its scale."""
    r, K = q.shape
    out = np.empty((r, K))
    for i in range(r):
        for t in range(scale.shape[1]):
            sc = scale[i, t]
            for k in range(t * tk, min(t * tk + tk, K)):
                out[i, k] = digit_range(q[i, k], i0, i1, segments, digits) * sc
    return out


@numba.njit(cache=True, nogil=True)
def _epilogue(d1, w1: float, d2, w2: float, two: bool, fa, fb, ea, eb, out, to32: bool):
    """``out = RN(X)`` from one or two exact block results (TwoSum gives the residual)."""
    m, n = out.shape
    for i in range(m):
        for j in range(n):
            x = d1[i, j] * w1
            if two:
                y = d2[i, j] * w2
                s = x + y
                bb = s - x
                err = (x - (s - bb)) + (y - bb)
            else:
                s = x
                err = 0.0
            if to32:
                out[i, j] = round32(s * fa[i] * fb[j], err)
            else:
                out[i, j] = round64_scaled(s, err, ea[i] + eb[j])


@numba.njit(cache=True, nogil=True)
def _special(araw, braw, rows, cols, out):
    """The non-finite rule for the listed (row, col) pairs: NaN if any term is NaN
    (a NaN input or inf·0) or the inf terms have both signs, else the inf's sign."""
    K = araw.shape[1]
    for t in range(rows.shape[0]):
        i = rows[t]
        j = cols[t]
        pos = False
        neg = False
        nan = False
        for k in range(K):
            a = araw[i, k]
            b = braw[j, k]
            if math.isnan(a) or math.isnan(b):
                nan = True
                break
            if math.isinf(a) or math.isinf(b):
                if a == 0.0 or b == 0.0:
                    nan = True
                    break
                if (a > 0.0) == (b > 0.0):
                    pos = True
                else:
                    neg = True
        if nan or (pos and neg):
            out[i, j] = np.nan
        elif pos:
            out[i, j] = np.inf
        elif neg:
            out[i, j] = -np.inf


def tf32_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tf32x3 split of float32 ``x``: big = RN_tf32(x), small = RN_tf32(x - big),
    as float64; an element whose big part overflows is kept whole (big = x, small = 0)."""
    from mixjit.runtime.formats import round_to_tf32

    x = np.ascontiguousarray(x, dtype=np.float32)
    x = np.where(np.isfinite(x), x, np.float32(0.0))  # non-finite inputs count as 0
    big = round_to_tf32(x)
    ovf = np.isinf(big) & np.isfinite(x)
    big = np.where(ovf, x, big)
    small = round_to_tf32(x - big)
    return big.astype(np.float64), small.astype(np.float64)


@numba.njit(cache=True, nogil=True)
def _add_fallback(parts, counts, abig, asmall, bbig, bsmall, fa, fb, inv_a, inv_b):
    """Add the exact tf32x3 products of the fallback tile products: element (i, j)
    gets big·big + big·small + small·big over the k-tile where ``fa[i] or fb[j]``."""
    r, kk = abig.shape
    n = bbig.shape[0]
    for i in range(r):
        for j in range(n):
            if not (fa[i] or fb[j]):
                continue
            sc = inv_a[i] * inv_b[j]
            for k in range(kk):
                for v in (abig[i, k] * bbig[j, k], abig[i, k] * bsmall[j, k], asmall[i, k] * bbig[j, k]):
                    if v != 0.0:
                        counts[i, j] = add_piece(parts[i, j], counts[i, j], v * sc)


class _Problem:
    """One GEMM in row form: ``C = A_rowform @ B_rowformᵀ``, with the derived scales."""

    def __init__(self, pa: Prepared, pb: Prepared, pairs: tuple[tuple[int, int], ...]):
        lay = pa.layout
        self.pa, self.pb, self.lay = pa, pb, lay
        self.K = pa.q.shape[1]
        self.blocks: tuple[Block, ...] = plan_blocks(pairs, lay.segments, lay.seg0_bits, self.K, lay.digit_code)
        w1 = lay.width - 1
        # value = (sum of block products * 2^shift) * 2^(ref_a - w1) * 2^(ref_b - w1)
        self.ea = pa.ref - w1
        self.eb = pb.ref - w1

    def operand(self, side: str, i0: int, i1: int) -> np.ndarray:
        return (self.pa if side == "A" else self.pb).operand(i0, i1)

    def transposed(self) -> "_Problem":
        """The same GEMM with the roles of A and B swapped (Cᵀ = Bᵀ Aᵀ)."""
        t = object.__new__(_Problem)
        t.pa, t.pb, t.lay, t.K = self.pb, self.pa, self.lay, self.K
        t.blocks = tuple(Block(b.j0, b.j1, b.i0, b.i1, b.shift, b.bits) for b in self.blocks)
        t.ea, t.eb = self.eb, self.ea
        return t


def _fast(pr: _Problem, out: np.ndarray, to32: bool) -> None:
    dots = [pr.operand("A", b.i0, b.i1) @ pr.operand("B", b.j0, b.j1).T for b in pr.blocks]
    if len(dots) <= 2:
        fa = np.ldexp(1.0, pr.ea)
        fb = np.ldexp(1.0, pr.eb)
        d2 = dots[1] if len(dots) == 2 else dots[0]
        w2 = 2.0 ** pr.blocks[1].shift if len(dots) == 2 else 0.0
        _epilogue(dots[0], 2.0 ** pr.blocks[0].shift, d2, w2, len(dots) == 2, fa, fb, pr.ea, pr.eb, out, to32)
        return
    m, n = out.shape
    parts = np.zeros((m, n, MAX_PARTIALS))
    counts = np.zeros((m, n), dtype=np.int64)
    ones_n = np.ones(n)
    for b, d in zip(pr.blocks, dots):
        add_pieces(parts, counts, d, np.full(m, 2.0**b.shift), ones_n)
    finish_all(parts, counts, pr.ea, pr.eb, out, to32)


def _exact_rows(pr: _Problem, rows: np.ndarray, out: np.ndarray, to32: bool) -> None:
    """Recompute ``out[rows, :]`` k-tile by k-tile with an exact sum (wide spans and
    fallback tiles)."""
    tk = pr.lay.tile[1]
    n = pr.pb.q.shape[0]
    nkt = pr.pa.gexp.shape[1]
    ones_n = np.ones(n)
    for c0 in range(0, len(rows), _EXACT_CHUNK):
        rs = rows[c0 : c0 + _EXACT_CHUNK]
        r = len(rs)
        parts = np.zeros((r, n, MAX_PARTIALS))
        counts = np.zeros((r, n), dtype=np.int64)
        for t in range(nkt):
            ks = slice(t * tk, min((t + 1) * tk, pr.K))
            for b in pr.blocks:
                d = pr.operand("A", b.i0, b.i1)[rs, ks] @ pr.operand("B", b.j0, b.j1)[:, ks].T
                add_pieces(parts, counts, d, np.full(r, 2.0**b.shift), ones_n)
            fa = pr.pa.fb[rs, t]
            fbb = pr.pb.fb[:, t]
            if fa.any() or fbb.any():
                abig, asmall = tf32_parts(pr.pa.raw[rs, ks])
                bbig, bsmall = tf32_parts(pr.pb.raw[:, ks])
                # fallback exists only in the float32 domain: these factors are in range
                inv_a, inv_b = np.ldexp(1.0, -pr.ea[rs]), np.ldexp(1.0, -pr.eb)
                _add_fallback(parts, counts, abig, asmall, bbig, bsmall, fa, fbb, inv_a, inv_b)
        sub = np.empty((r, n), dtype=out.dtype)
        finish_all(parts, counts, pr.ea[rs], pr.eb, sub, to32)
        out[rs, :] = sub


def _exact_sets(pr: _Problem) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns that must take the exact path: touching a fallback tile, or
    with ``span_a[i] + span_b[j]`` above the fast path's exactness bound."""
    limit = 53 - k_bits(pr.K) - max(b.bits for b in pr.blocks)
    sa, sb = pr.pa.span, pr.pb.span
    bad_a = pr.pa.fb.any(axis=1)
    bad_b = pr.pb.fb.any(axis=1)
    if len(sa) and len(sb) and sa.max() + sb.max() > limit:
        m, n = len(sa), len(sb)
        best = None
        for ta in range(limit + 1):
            ra, rb = sa > ta, sb > limit - ta
            cost = int(ra.sum()) * n + int(rb.sum()) * m
            if best is None or cost < best[0]:
                best = (cost, ra, rb)
        bad_a = bad_a | best[1]
        bad_b = bad_b | best[2]
    return np.flatnonzero(bad_a), np.flatnonzero(bad_b)


def run_mixpert(
    pa: Prepared, pb: Prepared, pairs: tuple[tuple[int, int], ...]
) -> tuple[np.ndarray, ExecStats]:
    """C = A @ B under the MixPert semantics for prepared operands; returns C in the
    domain's dtype (float32 or float64) and what was done."""
    if pa.layout != pb.layout:
        raise ValueError("mixpert: A and B were prepared under different configs; prepare both with one config")
    if pa.q.shape[1] != pb.q.shape[1]:
        raise ValueError(
            f"mixpert: inner dimensions differ: A is {pa.shape[0]}x{pa.shape[1]}, B is {pb.shape[0]}x{pb.shape[1]}"
        )
    lay = pa.layout
    to32 = lay.domain == "fp32"
    m, n = pa.q.shape[0], pb.q.shape[0]
    out = np.empty((m, n), dtype=np.float32 if to32 else np.float64)
    tiles = pa.fb.shape[1] * (-(-m // lay.tile[0]) + -(-n // lay.tile[2]))
    if m == 0 or n == 0:
        return out, ExecStats(0, tiles, 0, 0, 0)
    if pa.q.shape[1] == 0:
        out[:] = 0.0
        return out, ExecStats(0, tiles, 0, 0, 0)
    pr = _Problem(pa, pb, pairs)
    widest = int(pa.span.max(initial=0) + pb.span.max(initial=0))
    if widest > _MAX_SPAN:
        raise ValueError(
            f"mixpert: a row of A and a column of B span {widest} binades along K; the executor "
            f"supports at most {_MAX_SPAN}. Scale the operands or use the native scheme for this GEMM"
        )
    _fast(pr, out, to32)
    rows, cols = _exact_sets(pr)
    if len(rows):
        _exact_rows(pr, rows, out, to32)
    if len(cols):
        out_t = np.ascontiguousarray(out.T)
        _exact_rows(pr.transposed(), cols, out_t, to32)
        out[:, cols] = out_t.T[:, cols]
    n_special = 0
    if pa.bad.any() or pb.bad.any():
        mask = pa.bad[:, None] | pb.bad[None, :]
        ri, ci = np.nonzero(mask)
        _special(pa.raw, pb.raw, ri, ci, out)
        n_special = len(ri)
    return out, ExecStats(pa.fb_tiles + pb.fb_tiles, tiles, n_special, len(rows), len(cols))
