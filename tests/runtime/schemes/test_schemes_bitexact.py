"""Every emulation scheme and config: the executor equals the slow scalar reference
(tests/runtime/reference_schemes.py, written from docs/numerics.md) bit for bit, on
random and adversarial inputs: wide exponent spans, zeros, powers of two, negative
values, subnormals, values beyond the FP16 and TF32/BF16 ranges, inf and NaN."""

from __future__ import annotations

import numpy as np
import pytest
import reference_schemes as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_operands import assert_same_bits

from mixjit.runtime.schemes import get_scheme

F32 = np.finfo(np.float32)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0**-24, 1 + 2.0**-23, 1 + 2.0**-11, 3.0, 2.0**20, 2.0**-30,
           65504.0, 65520.0, 1e5, -7e4, 6e-8, 1e-45, -1e-45, 1e-40, 1.1754944e-38,
           float(F32.max), -float(F32.max), 3.0e38, 1e30, 1e-30]
NONFINITE = [np.inf, -np.inf, np.nan]


def elements(nonfinite: bool):
    finite = st.one_of(
        st.sampled_from(SPECIAL),
        st.floats(-4.0, 4.0, width=32),
        st.floats(width=32, allow_nan=False, allow_infinity=False),
        st.builds(lambda m, e: float(np.ldexp(m, e)), st.floats(-1, 1, width=32), st.integers(-140, 120)),
    )
    if nonfinite:
        return st.one_of(finite, finite, finite, finite, finite, finite, st.sampled_from(NONFINITE))
    return finite


@st.composite
def operands(draw, nonfinite=False, max_k=12):
    m = draw(st.integers(1, 4))
    n = draw(st.integers(1, 4))
    k = draw(st.integers(1, max_k))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    el = elements(nonfinite)
    a = np.array(draw(st.lists(el, min_size=m * k, max_size=m * k)), dtype=dtype).reshape(m, k)
    b = np.array(draw(st.lists(el, min_size=k * n, max_size=k * n)), dtype=dtype).reshape(k, n)
    if draw(st.booleans()):  # a narrow-range case: the common, well-scaled path
        a = np.clip(np.nan_to_num(a), -8, 8).astype(dtype)
        b = np.clip(np.nan_to_num(b), -8, 8).astype(dtype)
    return a, b


SETTINGS = dict(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MULTI = [("tf32x3", "tf32", 3), ("tf32x3", "tf32", 1), ("bf16xn", "bf16", 9), ("bf16xn", "bf16", 6),
         ("bf16xn", "bf16", 3), ("bf16xn", "bf16", 1), ("fp16x2", "fp16", 3), ("fp16x2", "fp16", 1)]


@pytest.mark.parametrize("scheme,fmt,products", MULTI)
@settings(**SETTINGS)
@given(data=st.data())
def test_multiterm_matches_reference(scheme, fmt, products, data):
    a, b = data.draw(operands(nonfinite=True))
    s = get_scheme(scheme)
    got = s.run(a, b, s.parse_config(f"products={products}"))
    assert got.dtype == a.dtype
    assert_same_bits(got, ref.multiterm(a, b, fmt, products), a, b)


@settings(**SETTINGS)
@given(ab=operands(nonfinite=True))
def test_int8_matches_reference(ab):
    a, b = ab
    s = get_scheme("int8")
    assert_same_bits(s.run(a, b, s.default_config()), ref.int8(a, b), a, b)


SPLIT_CONFIGS = ["fp16=auto,width=2,rank=p99,target=a100", "fp16=0.5,width=1,rank=p100,target=a100",
                 "fp16=0.25,width=3,rank=p50,target=h100", "fp16=0.5,width=2,rank=index,target=a100",
                 "fp16=1.0,width=4,rank=p99,target=a100", "fp16=0.0,width=2,rank=p99,target=a100"]


@pytest.mark.parametrize("label", SPLIT_CONFIGS)
@settings(**SETTINGS)
@given(ab=operands(nonfinite=True, max_k=14))
def test_split_matches_reference(label, ab):
    a, b = ab
    s = get_scheme("split")
    cfg = s.parse_config(label)
    want = ref.split(a, b, cfg.fp16, cfg.width, cfg.rank, cfg.target)
    assert_same_bits(s.run(a, b, cfg), want, a, b)


def test_assert_same_bits_sees_float64_bits_below_float32():
    """The helper compares float64 outputs bit for bit: a value one float64 ulp off
    the float32 reference (what a cast to float32 would hide) fails it."""
    a = np.ones((1, 1))
    want = np.array([[1.0 + 2.0**-23]], dtype=np.float32)
    assert_same_bits(np.array([[1.0 + 2.0**-23]]), want, a, a)
    with pytest.raises(AssertionError):
        assert_same_bits(np.array([[np.nextafter(1.0 + 2.0**-23, 2.0)]]), want, a, a)
    with pytest.raises(AssertionError):  # -0.0 against +0.0
        assert_same_bits(np.array([[-0.0]]), np.zeros((1, 1), np.float32), a, a)
