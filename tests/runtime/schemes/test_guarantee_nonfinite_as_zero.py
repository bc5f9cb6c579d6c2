"""The non-finite rule's second half (docs/numerics.md, "Common conventions"): inf and
NaN inputs are replaced by 0 for the rest of the computation; they take no part in
exponents, scales, tiles or rankings. So every output outside the rows and columns that
hold them is, bit for bit, the output of the same call with those inputs set to 0 —
also for the schemes whose exponents or scales are shared by a whole tile, block,
tensor or K slice (mixpert with align=tile, dfp with block=tensor, split's ranking)."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.schemes import get_scheme

SCHEMES = [
    ("mixpert", "level=IV"), ("mixpert", "segments=4,pairs=sig6,align=row"), ("mixpert", "level=IV,tile=4x4x2"),
    ("tf32x3", "products=3"), ("bf16xn", "products=6"), ("fp16x2", "products=3"), ("int8", "scale=row-col"),
    ("int8", "scale=row-col,encoding=pct50"), ("split", "fp16=0.5,width=2,rank=p100"), ("split", "fp16=0.25,width=1"),
    ("ozaki2", "moduli=8"), ("ozaki2", "moduli=8,mode=accurate"), ("dfp", "bits=8,block=tensor"),
    ("dfp", "bits=8,block=2,out=dfp"), ("vitbit", "bits=8"),
]


def _operands(dtype) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(23)
    a = (rng.standard_normal((6, 9)) * 2.0 ** rng.integers(-6, 6, (6, 9))).astype(dtype)
    b = rng.standard_normal((9, 5)).astype(dtype)
    return a, b


@pytest.mark.parametrize("scheme,config", SCHEMES)
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_nonfinite_inputs_count_as_zero_for_every_other_output(scheme, config, value):
    s = get_scheme(scheme)
    cfg = s.parse_config(config)
    a, b = _operands(np.float32)
    # one huge non-finite "maximum" in row 1 of A (in the same tile, block and
    # K slice as rows 0, 2, 3) and in column 3 of B
    a_bad, b_bad = a.copy(), b.copy()
    a_bad[1, 4] = value
    b_bad[6, 3] = value
    a_zero, b_zero = a.copy(), b.copy()
    a_zero[1, 4] = 0.0
    b_zero[6, 3] = 0.0
    got = s.run(a_bad, b_bad, cfg)
    want = s.run(a_zero, b_zero, cfg)
    rows = [0, 2, 3, 4, 5]
    cols = [0, 1, 2, 4]
    assert np.array_equal(got[np.ix_(rows, cols)].view(np.uint32), want[np.ix_(rows, cols)].view(np.uint32)), \
        (scheme, config, got, want)
    # and the outputs that touch them follow the non-finite rule
    assert not np.isfinite(got[1]).any() and not np.isfinite(got[:, 3]).any()
