"""Accuracy sanity of the emulation schemes: measured relative Frobenius errors (paper
Eq. 10) against float64, their ordering, and per-element bounds from the split
arithmetic. On positive data there is no cancellation, so each element's relative
error is bounded by the operands' split error plus the dropped products plus the
final float32 rounding (u32 = 2^-24)."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.schemes import get_scheme

U32 = 2.0**-24


@pytest.fixture(scope="module")
def uniform():
    rng = np.random.default_rng(2024)
    a = rng.random((192, 256), dtype=np.float32)
    b = rng.random((256, 160), dtype=np.float32)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def _run(name, label, a, b, ref):
    s = get_scheme(name)
    c = s.run(a, b, s.parse_config(label)).astype(np.float64)
    fro = np.linalg.norm(c - ref) / np.linalg.norm(ref)
    elem = np.max(np.abs(c - ref) / ref)
    return fro, elem


# (scheme, config, per-element relative bound): split error of x = hi (+ lo ...)
# is 2^-p per dropped level for p significant bits kept, twice (A and B), plus
# the dropped products, plus the final RN32.
CASES = [
    ("bf16xn", "products=1", 2 * 2.0**-8 + 2.0**-16 + U32),
    ("bf16xn", "products=3", 2 * 2.0**-16 + 2.0**-16 + U32),
    ("bf16xn", "products=6", 2 * 2.0**-24 + 3 * 2.0**-24 + U32),
    ("bf16xn", "products=9", U32),  # the 3-way BF16 split is exact: correctly rounded
    ("tf32x3", "products=1", 2 * 2.0**-11 + 2.0**-22 + U32),
    ("tf32x3", "products=3", 2 * 2.0**-22 + 2.0**-22 + U32),
    ("fp16x2", "products=1", 2 * 2.0**-11 + 2.0**-22 + U32),
    ("fp16x2", "products=3", 2 * 2.0**-22 + 2.0**-22 + U32),
]


@pytest.mark.parametrize("name,label,bound", CASES)
def test_per_element_error_bound(uniform, name, label, bound):
    a, b, ref = uniform
    _, elem = _run(name, label, a, b, ref)
    assert elem <= bound * (1 + 1e-12), (name, label, elem, bound)


def test_error_ordering_by_kept_products(uniform):
    a, b, ref = uniform
    e = {lab: _run("bf16xn", lab, a, b, ref)[0] for lab in ("products=1", "products=3", "products=6", "products=9")}
    # measured at this seed: 1.2e-3, 1.6e-7, 2.74e-8, 2.74e-8 (x6 vs x9 differ in the
    # 5th digit: the products x6 drops are ~2^-24 relative, the size of the final rounding)
    assert e["products=1"] > e["products=3"] > e["products=6"] > e["products=9"]
    assert e["products=3"] > 4 * e["products=6"]
    for name in ("tf32x3", "fp16x2"):
        e1, e3 = _run(name, "products=1", a, b, ref)[0], _run(name, "products=3", a, b, ref)[0]
        assert e1 > 100 * e3
    # the 3-product schemes are within a factor 2 of correctly rounded float32
    rn32 = np.linalg.norm(ref.astype(np.float32) - ref) / np.linalg.norm(ref)
    for name in ("tf32x3", "fp16x2"):
        assert _run(name, "products=3", a, b, ref)[0] < 2 * rn32


@pytest.fixture(scope="module")
def outliers():
    """Normal data with a few large-magnitude K columns (as in LLM activations)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((128, 512)).astype(np.float32)
    b = rng.standard_normal((512, 96)).astype(np.float32)
    a[:, [7, 200, 333]] *= 60.0
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_split_error_falls_with_the_fp16_share_and_ranking_matters(outliers):
    a, b, ref = outliers
    e = {f: _run("split", f"fp16={f},width=16,rank=p99,target=a100", a, b, ref)[0]
         for f in (0.0, 0.0625, 0.125, 0.25, 0.5, 1.0)}
    e_int8 = _run("int8", "scale=row-col", a, b, ref)[0]
    assert e[0.0] == e_int8  # fp16=0 is the int8 scheme
    # 32 slices of 16: 0.0625 moves 2 of the 3 outlier slices to FP16, 0.125 all 3
    assert e[0.0] > e[0.0625] > 10 * e[0.125]
    assert e[0.125] > e[0.25] > e[0.5] > e[1.0]
    unranked = _run("split", "fp16=0.125,width=16,rank=index,target=a100", a, b, ref)[0]
    assert unranked > 10 * e[0.125]
