"""Operand encodings sf16 / sf8 / pct<p> of the int8 and split schemes: the executors
equal a scalar reference written from docs/numerics.md ("Operand encodings") bit
for bit; SuperFloat's sparse (FP32 exponent <= 111) and unity rules; labels stay
as they were at the default encoding; the cost facts."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import reference_schemes as ref
from hypothesis import HealthCheck, given, settings
from reference_operands import assert_same_bits, operands

from mixjit.runtime.int8 import encodings as enc
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.split import fp16_slices

TWO = Fraction(2)


def _superfloat(x: Fraction, f: int) -> Fraction:
    if abs(x) > 1:
        return x
    if abs(x) >= 1 - TWO**-f:
        return Fraction(1 if x > 0 else -1)
    t = math.floor(abs(x) * TWO**f)
    return (t if x > 0 else -t) / TWO**f


def _pct(row: list[Fraction], p: float) -> list[Fraction]:
    if not row:
        return []
    tau = ref.nearest_rank([abs(v) for v in row], p)
    if tau == 0:
        return [v if abs(v) > tau else Fraction(0) for v in row]
    e = ref.floor_log2(tau) + 1 - 7
    if round(tau / TWO**e) == 128:
        e += 1
    return [v if abs(v) > tau else round(v / TWO**e) * TWO**e for v in row]


def encode_reference(rows: list[list[Fraction]], encoding: str) -> list[list[Fraction]]:
    """Each row (of A, or column of B) encoded as docs/numerics.md says."""
    if encoding.startswith("pct"):
        return [_pct(row, float(encoding[3:])) for row in rows]
    f = 15 if encoding == "sf16" else 7
    return [[_superfloat(v, f) for v in row] for row in rows]


def _finite_rows(x: list[list]) -> list[list[Fraction]]:
    return [[v if ref._finite(v) else Fraction(0) for v in row] for row in x]


def encoded_int8_reference(a_in, b_in, encoding: str) -> np.ndarray:
    a, b = ref._matrix(a_in), ref._matrix(b_in)
    ea = encode_reference(_finite_rows(a), encoding)
    eb = encode_reference(_finite_rows([list(col) for col in zip(*b)]), encoding)
    return ref._finish(a, b, lambda i, j: ref.rn(sum(x * y for x, y in zip(ea[i], eb[j])), "fp32"))


def encoded_split_reference(a_in, b_in, cfg) -> np.ndarray:
    """INT8 part encoded, FP16 part as split's step 4, the exact sum rounded once."""
    a, b = ref._matrix(a_in), ref._matrix(b_in)
    fa, fbt = _finite_rows(a), _finite_rows([list(col) for col in zip(*b)])
    mask = fp16_slices(a_in, b_in, cfg)  # the ranking (its own reference test: test_schemes_bitexact)
    fc, ic = np.flatnonzero(mask).tolist(), np.flatnonzero(~mask).tolist()
    ea = encode_reference([[row[t] for t in ic] for row in fa], cfg.encoding)
    eb = encode_reference([[row[t] for t in ic] for row in fbt], cfg.encoding)
    ha = [[p[0] for p in ref.split_scaled_fp16([row[t] for t in fc], 1)] for row in fa]
    hb = [[p[0] for p in ref.split_scaled_fp16([row[t] for t in fc], 1)] for row in fbt]

    def compute(i, j):
        s = sum(x * y for x, y in zip(ea[i], eb[j])) + sum(x * y for x, y in zip(ha[i], hb[j]))
        return ref.rn(Fraction(s), "fp32")

    return ref._finish(a, b, compute)


NEAR_ONE = [1.0, -1.0, 1 - 2.0**-16, 1 - 2.0**-15, 1 - 2.0**-14, 1 - 2.0**-7, 1 - 2.0**-8, 0.99, 1 + 2.0**-23,
            2.0**-15, 2.0**-16, 1.5 * 2.0**-16, 2.0**-7, 2.0**-8, 0.0, -0.0, 3.0, -40.0, 1e30, 1e-40,
            float(np.finfo(np.float32).max)]


SETTINGS = dict(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ENCODINGS = ["sf16", "sf8", "pct50", "pct90", "pct99.5"]


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(**SETTINGS)
@given(ab=operands(NEAR_ONE, max_mn=4, max_k=12, ranges=((-1.0, 1.0), (-4.0, 4.0))))
def test_int8_encoding_matches_reference(encoding, ab):
    a, b = ab
    s = get_scheme("int8")
    got = s.run(a, b, s.parse_config(f"scale=row-col,encoding={encoding}"))
    assert got.dtype == a.dtype
    assert_same_bits(got, encoded_int8_reference(a, b, encoding), a, b)


@pytest.mark.parametrize("encoding", ["sf16", "sf8", "pct90"])
@pytest.mark.parametrize("fp16", ["0.5", "auto"])
@settings(**SETTINGS)
@given(ab=operands(NEAR_ONE, max_mn=4, max_k=12, ranges=((-1.0, 1.0), (-4.0, 4.0))))
def test_split_encoding_matches_reference(encoding, fp16, ab):
    a, b = ab
    s = get_scheme("split")
    cfg = s.parse_config(f"fp16={fp16},width=2,encoding={encoding}")
    assert_same_bits(s.run(a, b, cfg), encoded_split_reference(a, b, cfg), a, b)


def test_split_without_fp16_slices_is_the_encoded_int8_scheme():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 40)).astype(np.float32)
    b = rng.standard_normal((40, 5)).astype(np.float32)
    for e in ("sf16", "sf8", "pct95"):
        got = get_scheme("split").run(a, b, get_scheme("split").parse_config(f"fp16=0,encoding={e}"))
        want = get_scheme("int8").run(a, b, get_scheme("int8").parse_config(f"encoding={e}"))
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_superfloat_sparse_and_unity_rules():
    x = np.array([[2.0**-16 * 1.9, 2.0**-15, 1 - 2.0**-15, 1 - 2.0**-15 - 2.0**-24, 1.0, 1.25, -0.5]])
    counts = np.zeros(enc.N_COUNTS, np.int64)
    got = enc.encode_rows(x, enc.ENC_SF16, 0.0, counts)
    # FP32 exponent 111 -> 0 (sparse); exponent 112 keeps one bit; [1-2^-15, 1] -> unity; > 1 stays FP32
    assert got.tolist() == [[0.0, 2.0**-15, 1.0, 1 - 2.0**-14, 1.0, 1.25, -0.5]]
    assert counts.tolist() == [1, 2, 1]
    got8 = enc.encode_rows(np.array([[0.0078, 0.995, 0.5 + 2.0**-9]]), enc.ENC_SF8, 0.0, counts)
    assert got8.tolist() == [[0.0, 1.0, 0.5]]


def test_percentile_keeps_the_outliers_in_fp32():
    row = np.array([[0.1, -0.2, 0.3, 0.05, 7.123, -0.15, 0.25, 0.0, 0.12, 0.2]])
    counts = np.zeros(enc.N_COUNTS, np.int64)
    got = enc.encode_rows(row, enc.ENC_PCT, 90.0, counts)
    assert got[0, 4] == 7.123 and counts[enc.COUNT_OUTLIERS] == 1  # tau = 0.3, the 9th of 10
    q = got[0, [0, 1, 2, 3, 5, 6, 8, 9]] * 2.0**8  # tau = 0.3: e = -2 + 1 - 7 = -8
    assert np.array_equal(q, np.rint(q)) and np.abs(q).max() <= 127


def test_labels_at_the_default_encoding_are_unchanged_and_round_trip():
    i8, sp = get_scheme("int8"), get_scheme("split")
    assert i8.default_config().label == "scale=row-col"
    assert sp.default_config().label == "fp16=auto,width=32,rank=p99,target=a100"
    for s, text in [(i8, "scale=row-col,encoding=pct99.5"), (sp, "fp16=0.25,width=32,rank=p99,target=a100,encoding=sf8")]:
        assert s.parse_config(text).label == text
    for bad in ("pct100", "pct", "sf4"):
        with pytest.raises(ValueError, match="use int8, sf16, sf8 or pct<p>"):
            i8.parse_config(f"encoding={bad}")


def test_encoding_cost_facts():
    i8, sp = get_scheme("int8"), get_scheme("split")
    assert i8.products(i8.parse_config("encoding=sf16")) == 4 and i8.products(i8.parse_config("encoding=sf8")) == 1
    w = i8.work(i8.parse_config("encoding=pct99"), 64, 32, 128)
    assert w.ops["int8"] == 2.0 * 64 * 32 * 128
    assert w.ops["fp32"] == pytest.approx(2.0 * 2.0 * 0.01 * 64 * 32 * 128)
    w0 = sp.work(sp.parse_config("fp16=0"), 64, 32, 128)
    w16 = sp.work(sp.parse_config("fp16=0,encoding=sf16"), 64, 32, 128)
    assert w16.ops["int8"] == 4 * w0.ops["int8"] and w16.bytes_moved > w0.bytes_moved
