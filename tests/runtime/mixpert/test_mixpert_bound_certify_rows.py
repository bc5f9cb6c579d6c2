"""The guarantee check's pass 1 (mixpert_bound._certify_rows): branch-free rows with
powers of two built from their bits must decide every output as the scalar rule does
(``Err <= tol (|c| 2^-(ref_A + ref_B) (1 - 2u) - 2^(-1075 - ref_A - ref_B) - 2 tiny - Err)``,
written here with math.ldexp), also where the scale leaves float64's normal range."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mixjit.runtime.mixpert.guarantee.bound import _certify_rows

_U = 2.0**-53
_TINY = 2.0**-1074


def _ldexp(x: float, n: int) -> float:
    """math.ldexp as compiled code has it: inf past the range (Python raises)."""
    try:
        return math.ldexp(x, n)
    except OverflowError:
        return math.copysign(math.inf, x)


def _scalar_rule(xa, yb, aref, bref, c, err_up, err_abs, inl_up, inl_abs, tol) -> np.ndarray:
    m, nb = xa.shape
    n = yb.shape[0]
    doubt = np.zeros((m, n), dtype=bool)
    for i in range(m):
        for j in range(n):
            v = 0.0
            for q in range(nb):
                v += float(xa[i, q]) * float(yb[j, q])
            e = (v * inl_up + inl_abs) * err_up + err_abs
            if e == 0.0:
                continue
            sc = int(aref[i] + bref[j])
            cs = _ldexp(abs(float(c[i, j])), -sc) * (1.0 - 2.0 * _U) - _ldexp(1.0, -1075 - sc) - 2.0 * _TINY
            if math.isfinite(cs) and e <= tol * (cs - e):
                continue
            doubt[i, j] = True
    return doubt


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5), st.integers(1, 9), st.sampled_from([4, 8]), st.integers(0, 2**32 - 1),
       st.sampled_from(["near", "extreme", "edges"]))
def test_pass_one_decides_as_the_scalar_rule(m, n, nb, seed, exps):
    rng = np.random.default_rng(seed)
    xa = np.abs(rng.standard_normal((m, nb))) * 2.0 ** rng.integers(-60, 5, (m, nb))
    yb = np.abs(rng.standard_normal((n, nb))) * 2.0 ** rng.integers(-60, 5, (n, nb))
    xa[rng.random((m, nb)) < 0.2] = 0.0  # Err = 0 outputs
    if exps == "near":
        aref, bref = rng.integers(-3, 3, m), rng.integers(-3, 3, n)
    elif exps == "extreme":
        aref, bref = rng.integers(-1200, 1200, m), rng.integers(-1200, 1200, n)
    else:  # sums at the edges of the normal range and of the subnormal powers
        edges = np.array([-1023, -1022, -1021, 1022, 1023, 1024, -52, -53, -54, 0, 1, -1])
        aref, bref = rng.choice(edges, m), rng.integers(-2, 3, n)
    # |c| from tiny to huge, so that some outputs pass and some fail the threshold
    with np.errstate(over="ignore"):
        c = rng.standard_normal((m, n)) * 2.0 ** (aref[:, None] + bref[None, :]).clip(-1074, 1023)
        c *= 2.0 ** rng.integers(-50, 5, (m, n)).astype(float)
    c[rng.random((m, n)) < 0.1] = np.inf
    args = (1.0 + 40 * _U, 8 * _TINY, 1.0 + 24 * _U, 8 * _TINY, 2.0**-40)
    want = _scalar_rule(xa, yb, aref, bref, c, *args)
    doubt = np.zeros((m, n), dtype=np.bool_)
    rows = np.zeros(m, dtype=np.int64)
    cols = np.zeros(n, dtype=np.bool_)
    pending = _certify_rows(xa, yb, aref.astype(np.int64), bref.astype(np.int64), c, *args, doubt, rows, cols)
    assert (doubt == want).all()
    assert pending == want.sum() and (rows == want.sum(axis=1)).all() and (cols == want.any(axis=0)).all()
