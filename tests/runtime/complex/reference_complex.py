"""Reference of the complex wrapper, written from docs/numerics.md ("Complex products")
apart from runtime/complex/: the real products by each real scheme's plain ``run`` on
unprepared part arrays, and every addition as one scalar IEEE operation of the parts'
dtype (numpy scalars: float32 arithmetic for complex64), element by element."""

from __future__ import annotations

import numpy as np

from mixjit.runtime.schemes import get_scheme


def complex_reference(a: np.ndarray, b: np.ndarray, real: str, real_config, form: int) -> np.ndarray:
    """C = A @ B under ``form`` (4 or 3) real products of scheme ``real`` with ``real_config``."""
    w = np.float32 if a.dtype == np.complex64 else np.float64
    scheme = get_scheme(real)

    def part(x: np.ndarray, imag: bool) -> np.ndarray:
        out = np.empty(x.shape, dtype=w)
        for idx in np.ndindex(x.shape):
            out[idx] = x[idx].imag if imag else x[idx].real
        return out

    def product(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return scheme.run(x, y, real_config)

    def elementwise_sum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        out = np.empty(x.shape, dtype=w)
        for idx in np.ndindex(x.shape):
            out[idx] = w(x[idx]) + w(y[idx])
        return out

    ar, ai, br, bi = part(a, False), part(a, True), part(b, False), part(b, True)
    m, n = a.shape[0], b.shape[1]
    c = np.empty((m, n), dtype=a.dtype)
    with np.errstate(all="ignore"):
        if form == 4:
            p_rr, p_ii, p_ri, p_ir = product(ar, br), product(ai, bi), product(ar, bi), product(ai, br)
            for i in range(m):
                for j in range(n):
                    c.real[i, j] = w(p_rr[i, j]) - w(p_ii[i, j])
                    c.imag[i, j] = w(p_ri[i, j]) + w(p_ir[i, j])
        else:
            t1, t2 = product(ar, br), product(ai, bi)
            t3 = product(elementwise_sum(ar, ai), elementwise_sum(br, bi))
            for i in range(m):
                for j in range(n):
                    c.real[i, j] = w(t1[i, j]) - w(t2[i, j])
                    c.imag[i, j] = (w(t3[i, j]) - w(t1[i, j])) - w(t2[i, j])
    return c


def assert_same_complex_bits(got: np.ndarray, want: np.ndarray, *shown: object) -> None:
    """Both parts equal bit for bit (-0.0 differs from +0.0; NaN must meet NaN), same dtype."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    uint = np.uint32 if got.dtype == np.complex64 else np.uint64
    for g, r in ((got.real, want.real), (got.imag, want.imag)):
        nan_g, nan_r = np.isnan(g), np.isnan(r)
        assert (nan_g == nan_r).all(), (*shown, got, want)
        assert (np.ascontiguousarray(g[~nan_g]).view(uint) == np.ascontiguousarray(r[~nan_r]).view(uint)).all(), \
            (*shown, got, want)
