"""runtime/numerics/formats.py: the rounding helpers against exact rational rounding and ml_dtypes."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from reference_schemes import rn

from mixjit.runtime.numerics.formats import round_to_bf16, round_to_fp16, round_to_tf32

ROUNDERS = {"tf32": round_to_tf32, "bf16": round_to_bf16, "fp16": round_to_fp16}


def _patterns() -> np.ndarray:
    """Random bit patterns plus the edge cases of every format: ties, carries into
    the exponent, the largest finite values, subnormals, and the fp16 boundaries."""
    rng = np.random.default_rng(1)
    rand = rng.integers(0, 2**32, size=4000, dtype=np.uint64).astype(np.uint32)
    edges = []
    for base in (0x3F800000, 0x00000000, 0x00400000, 0x7F7F0000, 0x38800000, 0x33800000, 0x477FE000):
        for low in (0x0FFF, 0x1000, 0x1001, 0x3000, 0x7FFF, 0x8000, 0x8001, 0x18000, 0xFFFF):
            edges.append(base | low)
    edges += [0x7F7FFFFF, 0x7F7FF000, 0x7F7FEFFF, 0x00000001, 0x007FFFFF]
    edges += [np.float32(v).view(np.uint32) for v in (65504.0, 65519.0, 65520.0, 65536.0, 2.0**-24, 2.0**-25, 3 * 2.0**-26, 2.0**-14)]
    pats = np.concatenate([rand, np.array(edges, dtype=np.uint32)])
    pats = np.concatenate([pats, pats | np.uint32(0x80000000)])
    return pats.view(np.float32)


@pytest.mark.parametrize("fmt", ["tf32", "bf16", "fp16"])
def test_rounding_matches_exact_reference(fmt):
    x = _patterns()
    got = ROUNDERS[fmt](x)
    for v, g in zip(x.tolist(), got.tolist()):
        if np.isnan(v):
            assert np.isnan(g)
        elif np.isinf(v):
            assert g == v
        else:
            want = rn(Fraction(v), fmt)
            assert g == (want if isinstance(want, float) else float(want)), (fmt, v.hex(), g)


def test_bf16_matches_ml_dtypes():
    x = _patterns()
    x = x[~np.isnan(x)]
    want = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(round_to_bf16(x), want)


@pytest.mark.parametrize("fmt", ["tf32", "bf16", "fp16"])
def test_nan_stays_nan_and_keeps_sign(fmt):
    # a NaN whose payload sits only in the dropped bits must not become inf
    pats = np.array([0x7F800001, 0xFF800001, 0x7FC00000, 0x7F801000], dtype=np.uint32)
    got = ROUNDERS[fmt](pats.view(np.float32))
    assert np.isnan(got).all()
    assert np.signbit(got).tolist() == [False, True, False, False]


def test_round_half_even_examples():
    one = np.float32(1.0)
    # 1 + 2^-11 is halfway between TF32 neighbours 1 and 1 + 2^-10: ties to even
    assert round_to_tf32(np.array([one + np.float32(2.0**-11)]))[0] == 1.0
    assert round_to_tf32(np.array([np.float32(1 + 3 * 2.0**-11)]))[0] == np.float32(1 + 2 * 2.0**-10)
    # largest float32 rounds past the TF32/BF16 maximum to inf
    assert np.isinf(round_to_bf16(np.array([np.finfo(np.float32).max]))[0])
    # fp16 overflow threshold 65520 and largest finite 65504
    assert round_to_fp16(np.array([65519.0, 65520.0], dtype=np.float32)).tolist() == [65504.0, np.inf]


def test_float64_input_is_refused():
    with pytest.raises(TypeError, match="float32"):
        round_to_tf32(np.array([1.0]))
