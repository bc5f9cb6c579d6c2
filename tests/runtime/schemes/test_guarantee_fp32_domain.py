"""The FP32 domain (docs/numerics.md, "Common conventions"): the FP32-emulation
schemes first round their inputs to float32 (RN32, overflow gives ±inf) and return
RN32 of their result widened to the input dtype. So a float64 call equals the float32
call on the rounded inputs, bit for bit, including the inputs where RN32 matters:
ties between two float32 neighbours, values above FLT_MAX that still round to it,
values past FLT_MAX + half an ulp (inf: the non-finite rule then applies to their row
or column), and values below half the smallest float32 subnormal (0)."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.schemes import get_scheme

F32MAX = float(np.finfo(np.float32).max)

FP32_DOMAIN = [
    ("mixpert", "segments=4,pairs=sig6,align=row"), ("mixpert", "level=IV"), ("mixpert", "level=IV,digits=balanced,align=row"),
    ("tf32x3", "products=3"), ("bf16xn", "products=6"), ("fp16x2", "products=3"), ("fp16x2", "products=1"),
    ("int8", "scale=row-col"), ("int8", "scale=row-col,encoding=sf16"), ("int8", "scale=row-col,encoding=pct50"),
    ("split", "fp16=0.5,width=1"), ("dfp", "bits=16,block=1"), ("dfp", "bits=8,block=tensor,out=dfp"),
    ("vitbit", "bits=8"),
]


def _operands64() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(17)
    a = rng.standard_normal((6, 7)) / 3.0  # float64 values with bits below float32's
    b = rng.standard_normal((7, 5)) / 7.0
    a[0, :2] = [1.0 + 2.0**-24, 1.0 + 3 * 2.0**-24]  # float32 ties: to even (1, 1 + 2^-22)
    a[1, 0] = F32MAX * (1.0 + 2.0**-25)  # above FLT_MAX, below FLT_MAX + 2^103: rounds to FLT_MAX
    a[1, 1:] = 2.0**-20
    a[2, 0] = 1e39  # past FLT_MAX + half an ulp: inf, so row 2 follows the non-finite rule
    b[0, 0] = 0.0  # ... inf * 0: NaN in column 0, where the unrounded 1e39 * 0 would be 0
    a[3, 0] = 2.0**-151  # below half of 2^-149: RN32 gives 0
    a[3, 1] = 3 * 2.0**-151  # above it: 2^-149
    b[6, 4] = -1e39  # a column of B with -inf after rounding
    a[4] = [1e30 * (1 + 2.0**-30)] + [1e30] * 6  # large values: the row's scale comes from rounded inputs
    return a, b


def _same_bits_or_both_nan(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("scheme,config", FP32_DOMAIN)
def test_float64_call_is_the_float32_call_on_rounded_inputs(scheme, config):
    s = get_scheme(scheme)
    cfg = s.parse_config(config)
    a, b = _operands64()
    with np.errstate(over="ignore", invalid="ignore"):  # 1e39 -> inf is the point
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        ieee = a32.astype(np.float64) @ b32.astype(np.float64)
    got = s.run(a, b, cfg)
    want32 = s.run(a32, b32, cfg)
    assert got.dtype == np.float64 and want32.dtype == np.float32
    same = _same_bits_or_both_nan(got, want32.astype(np.float64))
    assert same.all(), f"{scheme} {config!r}: differs at {np.argwhere(~same).tolist()}: {got[~same]} vs {want32[~same]}"
    # the rounded 1e39 is inf and -1e39 is -inf: row 2 and column 4 take the IEEE value
    # of the float64 dot product of the rounded inputs (inf * 0 = NaN in column 0,
    # where the unrounded 1e39 * 0 would be 0)
    assert np.isnan(got[2, 0])
    assert _same_bits_or_both_nan(got[2], ieee[2]).all() and _same_bits_or_both_nan(got[:, 4], ieee[:, 4]).all()
    assert np.isfinite(got[1, :4]).all(), "FLT_MAX * (1 + 2^-25) must round to FLT_MAX, not inf"
