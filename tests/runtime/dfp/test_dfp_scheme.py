"""dfp (dynamic fixed point): the compiled executor equals a scalar reference written
from docs/numerics.md ("dfp") bit for bit; an ``out=dfp`` result re-enters the next
dfp GEMM losslessly (claims 8/14); the cost facts the tuner reads."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import reference_schemes as ref
from hypothesis import HealthCheck, given, settings
from reference_operands import assert_same_bits, operands

import mixjit
from mixjit.runtime.dfp import executor as ex
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.dfp import DfpConfig, dfp_quantize

TWO = Fraction(2)


def _shared_exponent(values: list[Fraction], r: int) -> int:
    amax = max((abs(v) for v in values), default=Fraction(0))
    if amax == 0:
        return 0
    e = ref.floor_log2(amax) + 1 - r
    return e + 1 if round(amax / TWO**e) == 2**r else e


def _blocks(rows: list[list[Fraction]], r: int, bs: int) -> tuple[list[list[int]], list[int]]:
    """Mantissas and per-row exponents of row-form ``rows`` (docs: dfp, step 1)."""
    bs = bs or max(len(rows), 1)
    q, e = [], []
    for i0 in range(0, len(rows), bs):
        blk = rows[i0:i0 + bs]
        eb = _shared_exponent([v for row in blk for v in row], r)
        for row in blk:
            q.append([round(v / TWO**eb) for v in row])
            e.append(eb)
    return q, e


def _carried(rows: list[list[Fraction]], width: int) -> tuple[list[list[int]], list[int]] | None:
    """A carried operand (docs: dfp, chains): the per-tensor mantissas and exponent of
    ``width`` bits when every value is an integer multiple of 2^E, else None (a miss)."""
    values = [v for row in rows for v in row]
    e = _shared_exponent(values, width - 1)
    amax = max((abs(v) for v in values), default=Fraction(0))
    if amax and e != ref.floor_log2(amax) + 2 - width:  # the maximum rounds up: not of this width
        return None
    if any((v / TWO**e).denominator != 1 for v in values):
        return None
    return [[int(v / TWO**e) for v in row] for row in rows], [e] * len(rows)


def dfp_reference(a_in: np.ndarray, b_in: np.ndarray, cfg: DfpConfig) -> np.ndarray:
    a, b = ref._matrix(a_in), ref._matrix(b_in)
    fa = [[v if ref._finite(v) else Fraction(0) for v in row] for row in a]
    fbt = [[b[l][j] if ref._finite(b[l][j]) else Fraction(0) for l in range(len(b))] for j in range(len(b[0]))]
    r = cfg.bits - 1
    qa, ea = (cfg.carry_a and _carried(fa, cfg.carry_a)) or _blocks(fa, r, cfg.block_rows)
    qb, eb = (cfg.carry_b and _carried(fbt, cfg.carry_b)) or _blocks(fbt, r, cfg.block_rows)
    val = [[sum(x * y for x, y in zip(qa[i], qb[j])) * TWO ** (ea[i] + eb[j]) for j in range(len(qb))]
           for i in range(len(qa))]
    if cfg.out == "dfp":
        ec = _shared_exponent([v for row in val for v in row], r)
        val = [[round(v / TWO**ec) * TWO**ec for v in row] for row in val]
    return ref._finish(a, b, lambda i, j: ref.rn(Fraction(val[i][j]), "fp32"))


F32MAX = float(np.finfo(np.float32).max)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 127.5, 126.5, 32767.5, -32766.5, 2.0**-24, 1 + 2.0**-23, 3.0, 2.0**20,
           2.0**-30, 1e-45, 1e-40, F32MAX, -F32MAX, 1e30, 1e-30]


LABELS = ["bits=16,block=1", "bits=16,block=tensor", "bits=8,block=1", "bits=8,block=tensor",
          "bits=8,block=2,out=dfp", "bits=16,block=tensor,out=dfp", "bits=4,block=3",
          "bits=8,block=1,carry_a=16", "bits=16,block=2,carry_b=4", "bits=4,block=tensor,carry_a=3,carry_b=8"]


@pytest.mark.parametrize("label", LABELS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ab=operands(SPECIAL, max_mn=5, max_k=10))
def test_dfp_matches_reference(label, ab):
    a, b = ab
    s = get_scheme("dfp")
    cfg = s.parse_config(label)
    got = s.run(a, b, cfg)
    assert got.dtype == a.dtype
    assert_same_bits(got, dfp_reference(a, b, cfg))


def test_right_shift_takes_one_more_bit_when_the_maximum_rounds_up():
    # 127.5 has e = 6: E = 6 + 1 - 7 = 0 would round it to 128 > 127, so E = 1
    q, e = dfp_quantize(np.array([[127.5, 1.0, -3.0]]), bits=8)
    assert e.tolist() == [1] and q.tolist() == [[64.0, 0.0, -2.0]]
    q, e = dfp_quantize(np.array([[126.5, 1.0, -3.0]]), bits=8)
    assert e.tolist() == [0] and q.tolist() == [[126.0, 1.0, -3.0]]


@pytest.mark.parametrize("bits", [8, 16])
def test_dfp_output_reenters_the_next_gemm_losslessly(bits):
    """Claims 8/14: the output's shared exponent is carried by its values. Requantizing
    an out=dfp result at any block size gives back its mantissas and exponent exactly,
    so a chain of dfp GEMMs computes on the mantissas the first one produced."""
    rng = np.random.default_rng(bits)
    a = rng.standard_normal((9, 20)).astype(np.float32)
    b = (rng.standard_normal((20, 7)) * 1e3).astype(np.float32)
    s = get_scheme("dfp")
    c, stats = s.run_with_stats(a, b, DfpConfig(bits, "tensor", "dfp"))
    ec = stats.extra["out_exponent"]
    q, e = dfp_quantize(c, bits=bits, block="tensor")
    assert e.tolist() == [ec]
    assert np.array_equal(np.ldexp(q, ec), c.astype(np.float64))
    assert np.abs(q).max() >= 2 ** (bits - 2)  # normalized: the leading bit is at bit bits-2
    for block in ("1", "3"):  # finer blocks hold the same values exactly
        qf, ef = dfp_quantize(c, bits=bits, block=block)
        rows = np.repeat(ef, int(block))[: c.shape[0]]
        assert np.array_equal(np.ldexp(qf, rows[:, None]), c.astype(np.float64))
    # the next GEMM of the chain: C·D equals the exact integer GEMM of the carried mantissas
    d = rng.standard_normal((7, 5)).astype(np.float32)
    qd, ed = dfp_quantize(d.T, bits=bits, block="tensor")
    want = np.float32(np.ldexp(q @ qd.T, ec + ed[0]))
    assert np.array_equal(s.run(c, d, DfpConfig(bits, "tensor")), want)


def test_dfp_is_reachable_from_mixjit_gemm_and_is_less_precise_at_8_bits():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 64)).astype(np.float32)
    b = rng.standard_normal((64, 30)).astype(np.float32)
    exact = a.astype(np.float64) @ b
    err = {lab: np.linalg.norm(mixjit.gemm(a, b, "dfp", lab) - exact) / np.linalg.norm(exact)
           for lab in ("bits=16,block=1", "bits=8,block=1")}
    assert err["bits=16,block=1"] < 2.0**-13 < err["bits=8,block=1"] < 2.0**-5


def test_dfp_refuses_bad_words_and_names_the_fix():
    a = np.ones((2, 3), np.float32)
    c = np.empty((2, 2), np.float32)
    stats = np.zeros(ex.N_STATS, np.int64)
    assert ex.dfp_gemm(a, a.T.copy(), c, np.array([17, 0, 0, 0, 0], np.int64), stats) == ex.ERR_PARAMS
    assert ex.max_k(16) == (2**53 - 1) // 32767**2
    with pytest.raises(ValueError, match="bits=17"):
        DfpConfig(bits=17)
    with pytest.raises(ValueError, match="block="):
        get_scheme("dfp").parse_config("block=row")
    assert DfpConfig(8, 32) == get_scheme("dfp").parse_config("bits=8,block=32")


def test_dfp_cost_facts():
    s = get_scheme("dfp")
    assert [s.products(c) for c in s.configs()] == [4, 4, 1, 1]
    w16 = s.work(DfpConfig(16, "tensor"), 64, 32, 128)
    w8 = s.work(DfpConfig(8, "tensor"), 64, 32, 128)
    assert w16.ops == {"int8": 4 * 2.0 * 64 * 32 * 128} and w8.ops == {"int8": 2.0 * 64 * 32 * 128}
    assert s.work(DfpConfig(8, "tensor", "dfp"), 64, 32, 128).bytes_moved == w8.bytes_moved + 12 * 64 * 32
