"""The packer after the mixpert-fp64 speed work (issue 10 item 2): ``segments.pack_groups``
runs one group of rows at a time into a ``q`` the caller may give (``pack_groups_into``,
on huge pages), ``split_element`` normalises subnormals without an int64 -> float64
conversion, and ``executor_mixpert_pack.fresh_array`` puts large scratch arrays on a
2 MiB boundary. Each is checked against the written semantics (reference_mixpert), not
against itself: several groups and k-tiles, group exponents bumped by the balanced
digits' range, subnormals of every bit length, zeros, inf and NaN, values near overflow."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_mixpert import element_split, shift

from mixjit.runtime.mixpert.pack import fresh64, fresh_array
from mixjit.runtime.mixpert.segments import (
    ROUND_NEAREST,
    ROUND_TRUNC,
    ZERO_EXP,
    max_aligned,
    pack_groups,
    pack_groups_into,
    split_element,
)

_HUGE = 2 * 1024 * 1024


def _bits(x: float) -> np.uint64:
    return np.array([x], dtype=np.float64).view(np.uint64)[0]


def _reference_pack(x: np.ndarray, group_rows: int, tk: int, w: int, rounding: int, far: int, qmax: int,
                    emax: int):
    """pack_groups' results from the written semantics (docs/numerics.md, mixpert steps 1-2)."""
    r, k = x.shape
    nkt = -(-k // tk)
    mode = "trunc" if rounding == ROUND_TRUNC else "round"
    split = [[element_split(float(v), w, emax) if math.isfinite(v) else None for v in row] for row in x]
    q = np.zeros((r, k), dtype=np.int64)
    gexp = np.full((r, nkt), ZERO_EXP, dtype=np.int64)
    nonzero = np.zeros((r, nkt), dtype=np.int64)
    shifted = np.zeros((r, nkt), dtype=np.int64)
    bad = np.array([not np.isfinite(row).all() for row in x])
    for g0 in range(0, r, group_rows):
        rows = range(g0, min(g0 + group_rows, r))
        for t in range(nkt):
            ks = range(t * tk, min(t * tk + tk, k))
            es = [split[i][kk][1] for i in rows for kk in ks if split[i][kk] is not None]
            if not es:
                continue
            e_top = max(es)
            if any(split[i][kk] is not None and split[i][kk][1] == e_top and split[i][kk][0] > qmax
                   for i in rows for kk in ks):
                e_top += 1
            for i in rows:
                gexp[i, t] = e_top
                for kk in ks:
                    sp = split[i][kk]
                    if sp is None:
                        continue
                    v = shift(sp[0], e_top - sp[1], mode)
                    if e_top > emax and abs(v) >= 2 ** (w - 1):
                        v = shift(sp[0], e_top - sp[1], "trunc")
                    q[i, kk] = v
                    nonzero[i, t] += 1
                    shifted[i, t] += e_top - sp[1] > far
    return q, gexp, nonzero, shifted, bad


_SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 2.0**-1022, 1.7976931348623157e308,
            -1.7976931348623157e308, 2.0**-1074 * (2**52 - 1)]


@st.composite
def _operands(draw):
    r = draw(st.integers(1, 7))
    k = draw(st.integers(1, 9))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lo, hi = draw(st.sampled_from([(-3, 3), (-60, 60), (-1074, -1020), (1000, 1023), (-1074, 1023)]))
    x = rng.uniform(0.5, 1.0, (r, k)) * rng.choice([-1.0, 1.0], (r, k)) * 2.0 ** rng.integers(lo, hi + 1, (r, k))
    x = np.where(np.isfinite(x), x, 0.0)
    specials = rng.random((r, k)) < 0.15
    x[specials] = rng.choice(_SPECIAL, specials.sum())
    return x


@settings(max_examples=150, deadline=None)
@given(_operands(), st.integers(1, 4), st.integers(1, 5), st.sampled_from([20, 24, 48, 62]),
       st.sampled_from([ROUND_NEAREST, ROUND_TRUNC]), st.integers(0, 12))
def test_pack_groups_matches_the_semantics_group_by_group(x, group_rows, tk, w, rounding, far):
    qmax = (1 << 62) - 1  # sign-magnitude digits: no bump
    got = pack_groups(x, group_rows, tk, w, rounding, far, qmax, 1023)
    want = _reference_pack(x, group_rows, tk, w, rounding, far, qmax, 1023)
    for name, g, e in zip(("q", "gexp", "nonzero", "shifted", "bad"), got, want):
        assert (np.asarray(g) == e).all(), name


@settings(max_examples=60, deadline=None)
@given(_operands(), st.integers(1, 4), st.integers(1, 5))
def test_balanced_bump_matches_the_semantics(x, group_rows, tk):
    # 2 balanced digits of 8 bits: w = 16, qmax = 127 * 257; a positive element at its
    # group's exponent above qmax bumps the group exponent by one
    qmax = max_aligned(2, 1)
    got = pack_groups(x, group_rows, tk, 16, ROUND_NEAREST, 8, qmax, 1023)
    want = _reference_pack(x, group_rows, tk, 16, ROUND_NEAREST, 8, qmax, 1023)
    for name, g, e in zip(("q", "gexp", "nonzero", "shifted", "bad"), got, want):
        assert (np.asarray(g) == e).all(), name


def test_pack_groups_into_writes_every_element_of_the_given_q():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((9, 13)) * 2.0 ** rng.integers(-40, 40, (9, 13))
    q = np.full(x.shape, 12345, dtype=np.int64)  # stale values must not survive
    out = pack_groups_into(q, x, 4, 5, 62, ROUND_NEAREST, 8, (1 << 62) - 1, 1023)
    assert out[0] is q
    for g, e in zip(out, pack_groups(x, 4, 5, 62, ROUND_NEAREST, 8, (1 << 62) - 1, 1023)):
        assert (np.asarray(g) == e).all()


@pytest.mark.parametrize("w", [20, 53, 62])
def test_split_element_of_every_subnormal_bit_length(w):
    # the bit length of a subnormal's fraction is read off float64(frac), built from bits
    for nbits in range(1, 53):
        for frac in {1 << (nbits - 1), (1 << nbits) - 1, (1 << (nbits - 1)) | 1}:
            for sign in (1.0, -1.0):
                x = sign * frac * 2.0**-1074
                assert tuple(int(v) for v in split_element(_bits(x), w, 1023)) == element_split(x, w, 1023), (x, w)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_fresh_array_puts_large_arrays_on_a_huge_page_boundary(dtype):
    big = fresh_array(700, 1000, dtype)  # 5.6 MB of float64 / int64, 0.7 MB of bool
    assert big.shape == (700, 1000) and big.dtype == dtype and big.flags.c_contiguous and big.flags.writeable
    if big.nbytes >= _HUGE:
        assert big.ctypes.data % _HUGE == 0
    big[...] = 1
    assert (big == 1).all()
    small = fresh_array(3, 4, dtype)
    assert small.shape == (3, 4) and small.dtype == dtype
    assert fresh64(513, 512).ctypes.data % _HUGE == 0
    assert not np.shares_memory(fresh64(600, 600), fresh64(600, 600))
