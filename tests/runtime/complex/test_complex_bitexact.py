"""The complex wrapper's executor equals the reference (reference_complex.py, written from
docs/numerics.md "Complex products") bit for bit: over every real scheme of the catalogue,
its most precise and its cheapest config, both forms, both complex dtypes, on random
operands and on hypothesis-drawn special values (inf/NaN in either part, signed zeros,
subnormals, parts of widely different magnitude)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_complex import assert_same_complex_bits, complex_reference

from mixjit.runtime.complex import COMPLEX, FORMS, ComplexConfig, complex_gemm
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import get_scheme

DTYPES = (np.complex64, np.complex128)


def _cases() -> list[tuple[str, str, str]]:
    """(real scheme, 'precise' | 'cheap', complex dtype name) for every scheme and dtype it takes."""
    out = []
    for family in catalog.families():
        for name in family.schemes:
            for cdt, w in ((np.complex64, "float32"), (np.complex128, "float64")):
                if w in family.dtypes and np.dtype(w) in get_scheme(name).dtypes:
                    out += [(name, "precise", np.dtype(cdt).name), (name, "cheap", np.dtype(cdt).name)]
    return out


CASES = _cases()


def _real_config(name: str, which: str, cdt: str):
    w = np.float32 if cdt == "complex64" else np.float64
    configs = get_scheme(name).configs(w)
    return configs[0] if which == "precise" else configs[-1]


def test_every_family_is_covered():
    covered = {name for name, _, _ in CASES}
    assert covered == {s for f in catalog.families() for s in f.schemes} - {"complex"}  # every real scheme
    assert ("mixpert-fp64", "precise", "complex64") not in CASES  # takes float64 parts only


def _random(rng, shape, cdt, spread=0):
    """Parts uniform in [-1, 1); the imaginary parts scaled by 2**spread."""
    x = rng.uniform(-1, 1, shape) + 1j * np.ldexp(rng.uniform(-1, 1, shape), spread)
    return x.astype(cdt)


@pytest.mark.parametrize("name,which,cdt", CASES)
def test_random_operands_match_reference(name, which, cdt):
    rng = np.random.default_rng(24)
    rc = _real_config(name, which, cdt)
    for form in FORMS:
        for spread in (0, 20, -20):
            a, b = _random(rng, (9, 37), cdt, spread), _random(rng, (37, 6), cdt, spread)
            got, stats = COMPLEX.run_with_stats(a, b, ComplexConfig(form, name, rc))
            assert got.dtype == np.dtype(cdt)
            assert len(stats.extra["real"]) == form
            assert_same_complex_bits(got, complex_reference(a, b, name, rc, form), name, rc.label, form, spread)


F32 = np.finfo(np.float32)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 2.0**20, 2.0**-20, 1e-45, -1e-45, 1e-40, 1.1754944e-38,
           float(F32.max), -float(F32.max), 1e30, 1e-30, 5e-324, 2.0**-1030, 1e300]
NONFINITE = [np.inf, -np.inf, np.nan]


def _part():
    finite = st.one_of(st.sampled_from(SPECIAL), st.floats(-4.0, 4.0),
                       st.builds(lambda m, e: float(np.ldexp(m, e)), st.floats(-1, 1), st.integers(-150, 120)))
    return st.one_of(finite, finite, finite, finite, finite, st.sampled_from(NONFINITE))


@st.composite
def _operands(draw, cdt):
    m, n, k = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 6))
    scale_a, scale_b = draw(st.sampled_from([0, 20, -20, 60])), draw(st.sampled_from([0, 20, -20, -60]))

    def matrix(rows, cols, spread):
        re = np.array(draw(st.lists(_part(), min_size=rows * cols, max_size=rows * cols)))
        im = np.array(draw(st.lists(_part(), min_size=rows * cols, max_size=rows * cols)))
        out = np.zeros((rows, cols), dtype=cdt)
        with np.errstate(all="ignore"):  # parts beyond float32's range round to +-inf, on purpose
            # set the parts, never multiply by 1j (inf * 1j has a NaN real part)
            out.real = re.reshape(rows, cols)
            out.imag = np.ldexp(im, spread).reshape(rows, cols)
        return out

    return matrix(m, k, scale_a), matrix(k, n, scale_b)


@pytest.mark.parametrize("name,which,cdt", CASES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_special_values_match_reference(name, which, cdt, data):
    a, b = data.draw(_operands(np.dtype(cdt)))
    rc = _real_config(name, which, cdt)
    form = data.draw(st.sampled_from(FORMS))
    with np.errstate(all="ignore"):
        got = COMPLEX.run(a, b, ComplexConfig(form, name, rc))
    assert_same_complex_bits(got, complex_reference(a, b, name, rc, form), a.tolist(), b.tolist(), name, form)


@pytest.mark.parametrize("cdt", DTYPES)
def test_form3_real_part_is_form4s(cdt):
    """Re C is T1 - T2 = P_rr - P_ii in both forms: the forms differ in Im C only."""
    rng = np.random.default_rng(3)
    a, b = _random(rng, (8, 40), cdt, 20), _random(rng, (40, 5), cdt, 20)
    c4, c3 = complex_gemm(a, b, "tf32x3", form=4), complex_gemm(a, b, "tf32x3", form=3)
    uint = np.uint32 if cdt == np.complex64 else np.uint64
    assert np.array_equal(np.ascontiguousarray(c3.real).view(uint), np.ascontiguousarray(c4.real).view(uint))
    assert (c3.imag != c4.imag).any()


def test_strided_operands_give_the_contiguous_result():
    rng = np.random.default_rng(5)
    a = _random(rng, (30, 12), np.complex64)[::2, ::-1]
    b = _random(rng, (20, 12), np.complex64).T
    for form in FORMS:
        want = complex_gemm(np.ascontiguousarray(a), np.ascontiguousarray(b), "mixpert", form=form)
        assert_same_complex_bits(complex_gemm(a, b, "mixpert", form=form), want)
