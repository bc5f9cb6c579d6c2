"""dfp chains (claims 8/14 of seed 004): a site whose operand is a dfp site's ``out=dfp``
output carries that site's shared exponent and mantissas (``carry_a`` / ``carry_b``),
bit for bit as docs/numerics.md ("dfp", chains) says, in ``mixjit.gemm`` and at the
sites of a chained ``@mixjit`` function."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mixjit
from mixjit.runtime.dfp import executor as ex
from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.dfp import DfpConfig, dfp_quantize

DFP = get_scheme("dfp")


def _chain_operands(seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((12, 24)).astype(np.float32)
    b = (rng.standard_normal((24, 10)) * 1e2).astype(np.float32)
    w = rng.standard_normal((10, 6)).astype(np.float32)
    return a, b, w


def _producer(a, b, bits=16):
    c, stats = DFP.run_with_stats(a, b, DfpConfig(bits, "tensor", "dfp"))
    return c, stats.extra["out_exponent"]


def test_a_carried_operand_keeps_the_producers_exponent_and_mantissas():
    a, b, w = _chain_operands()
    c, ec = _producer(a, b, 16)
    got, stats = DFP.run_with_stats(c, w, DfpConfig(8, "1", carry_a=16))
    assert stats.extra["carry_misses"] == 0
    # written semantics: A = the producer's 16-bit mantissas at its exponent, B = 8-bit per column
    qc, e = dfp_quantize(c, bits=16, block="tensor")
    assert e.tolist() == [ec]
    qw, ew = dfp_quantize(w.T, bits=8, block="1")
    want = np.float32(np.ldexp(qc @ qw.T, ec + ew[None, :]))
    assert np.array_equal(got, want)


def test_carrying_a_wider_producer_is_more_precise_than_quantizing_again():
    a, b, _ = _chain_operands(1)
    c, _ = _producer(a, b, 16)
    # W holds 8-bit integers, exact in the site's own 8-bit format: the only quantization
    # left is the one of C, which the carry removes
    w = np.random.default_rng(1).integers(-127, 128, (10, 6)).astype(np.float32)
    exact = c.astype(np.float64) @ w
    err = {carry: np.linalg.norm(DFP.run(c, w, DfpConfig(8, "1", carry_a=carry)) - exact) / np.linalg.norm(exact)
           for carry in (0, 16)}
    assert err[16] < 2.0**-23 < 2.0**-12 < err[0]  # carried: C·W rounded once to float32


def test_carrying_a_narrower_producer_changes_no_bit():
    """An 8-bit dfp tensor is held exactly at 16 bits: the carry saves the requantization
    (modeled bytes, IMMA products), the result is the same."""
    a, b, _ = _chain_operands(2)
    c, _ = _producer(a, b, 8)
    x = np.random.default_rng(2).standard_normal((5, c.shape[0])).astype(np.float32)  # X @ C: C is B
    plain = DFP.run(x, c, DfpConfig(16, "1"))
    carried, stats = DFP.run_with_stats(x, c, DfpConfig(16, "1", carry_b=8))
    assert stats.extra["carry_misses"] == 0
    assert np.array_equal(plain, carried)
    assert DFP.products(DfpConfig(16, "1", carry_b=8)) == 2 < DFP.products(DfpConfig(16, "1")) == 4
    shape = (64, 32, 128)
    assert DFP.work(DfpConfig(16, "1", carry_b=8), *shape).bytes_moved < DFP.work(DfpConfig(16, "1"), *shape).bytes_moved


def test_an_operand_that_changed_after_its_producer_is_quantized_again_and_counted():
    a, b, w = _chain_operands(3)
    c, _ = _producer(a, b, 16)
    changed = c + np.float32(0.1)  # a bias between the sites: no longer a 16-bit dfp tensor
    got, stats = DFP.run_with_stats(changed, w, DfpConfig(8, "1", carry_a=16))
    assert stats.extra["carry_misses"] == 1
    assert np.array_equal(got, DFP.run(changed, w, DfpConfig(8, "1")))


def test_carry_config_label_words_and_refusals():
    cfg = DFP.parse_config("bits=8,block=1,out=fp32,carry_a=16")
    assert cfg == DfpConfig(8, "1", carry_a=16)
    assert cfg.label == "bits=8,block=1,out=fp32,carry_a=16"
    assert DfpConfig(8, "1").label == "bits=8,block=1,out=fp32"  # labels without carries are unchanged
    assert cfg.words() == (8, 1, ex.OUT_FP32, 16, 0)
    with pytest.raises(ValueError, match="carry_b=17"):
        DfpConfig(8, "1", carry_b=17)
    c = np.empty((2, 2), np.float32)
    stats = np.zeros(ex.N_STATS, np.int64)
    one = np.ones((2, 3), np.float32)
    assert ex.dfp_gemm(one, one.T.copy(), c, np.array([8, 1, 0, 1, 0], np.int64), stats) == ex.ERR_PARAMS
    # K limit of a 16-bit operand carried into an 8-bit site: the widths of both operands
    assert ex.max_k(16, 8) == (2**53 - 1) // (32767 * 127)


def test_chained_mixjit_function_runs_the_carry_at_its_sites():
    from mixjit.plan import SitePlan, set_plan

    @mixjit.mixjit(schemes=["dfp"], tune="never", backend="cpu")
    def chain(a, b, w):
        c = a @ b
        return c @ w

    a, b, w = _chain_operands(4)
    chain(a, b, w)  # compiles, finds the two sites
    sites = sorted(s.id for s in chain.sites)
    assert len(sites) == 2
    producer, consumer = DfpConfig(16, "tensor", "dfp"), DfpConfig(8, "1", carry_a=16)
    set_plan(sites[0], SitePlan("dfp", producer.label, "dfp"))
    set_plan(sites[1], SitePlan("dfp", consumer.label, "dfp"))
    got = chain(a, b, w)
    want = mixjit.gemm(mixjit.gemm(a, b, "dfp", producer.label), w, "dfp", consumer.label)
    assert np.array_equal(got, want)
    set_plan(sites[1], SitePlan("dfp", DfpConfig(8, "1").label, "dfp"))
    assert not np.array_equal(chain(a, b, w), got)  # without the carry, C is requantized to 8 bits


def test_tuning_a_chained_mixjit_function_carries_the_exponent_it_chose():
    """@mixjit's own tuner runs dfp-chain after its search: the consumer site's plan carries the
    producer's exponent, the compiled function gives those bits, and the remark says so."""

    @mixjit.mixjit(error_budget=0.5, target="a100", tune="explicit", schemes=["dfp{bits=8,out=dfp}"])
    def chain(a, b, w):
        c = a @ b
        return c @ w

    rng = np.random.default_rng(5)  # 512-wide: INT8 tensor cores are modeled faster than SGEMM on an A100
    a, b, w = (rng.standard_normal((512, 512)).astype(np.float32) for _ in range(3))
    result = chain.tune(a, b, w)
    producer, consumer = [s.config for s in result.plan.sites]
    assert "carry" not in producer and consumer.endswith("carry_a=8"), (producer, consumer)
    got = chain(a, b, w)
    assert np.array_equal(got, mixjit.gemm(mixjit.gemm(a, b, "dfp", producer), w, "dfp", consumer))
    remarks = [d.message for d in result.pipeline.diagnostics]
    assert any("operand A carries the exponent of site" in m for m in remarks), remarks


# ---- the dfp-chain pass (passes/dfp_chain.py) on the golden test's module ------------------------

GOLDEN = Path(__file__).resolve().parents[2] / "filecheck" / "dfp-chain.mix"


PLAN_TIME = 1.0e-3  # the mix.tuning modeled_time the module is given before the pass


def _chain_module(widen: bool = False, producer_out: str = "dfp", module_out: list | None = None):
    from mixjit.frontend_pipeline import run_frontend_pipeline
    from mixjit.ir.attributes import to_attr
    from mixjit.ir.parser import parse_module
    from mixjit.passes.tuning.plan_attr import TUNING_ATTR
    from mixjit.passes.tuning.sites import gemm_sites

    text = GOLDEN.read_text().replace('config = "bits=16,block=tensor,out=dfp"',
                                      f'config = "bits=16,block=tensor,out={producer_out}"')
    module = parse_module(text, "dfp-chain.mix")
    module.attributes[TUNING_ATTR] = to_attr({"budget": 1e-2, "modeled_time": PLAN_TIME})
    result = run_frontend_pipeline(module, f"dfp-chain{{widen={str(widen).lower()}}}")
    if module_out is not None:
        module_out.append(module)
    return gemm_sites(module), result.diagnostics


def _plan_of(op):
    from mixjit.passes.tuning.plan_attr import PLAN_ATTR, SitePlan

    return SitePlan.from_attr(op.site.value, op.attributes[PLAN_ATTR])


def test_dfp_chain_pass_carries_same_width_producers_and_remodels_their_time():
    from mixjit.passes.dfp_chain import CARRY_ATTR
    from mixjit.passes.tuning.plan_attr import TUNING_ATTR
    from mixjit.runtime.model.costmodel import modeled_calls_time

    ops, diags = _chain_module()
    plan = _plan_of(ops[1])
    assert plan.config == "bits=16,block=1,out=dfp,carry_a=16" and plan.error == 2.0e-05
    assert {k: v.value for k, v in ops[1].attributes[CARRY_ATTR].value} == {"a": 0}
    carried = modeled_calls_time("dfp", plan.config, [(1024, 512, 1024, 1)], "float32", "a100")
    plain = modeled_calls_time("dfp", "bits=16,block=1,out=dfp", [(1024, 512, 1024, 1)], "float32", "a100")
    assert plan.modeled_time == carried < plain
    module: list = []
    _chain_module(module_out=module)
    tuning = module[0].attributes[TUNING_ATTR].as_dict()
    assert tuning["modeled_time"].value == pytest.approx(PLAN_TIME - (4.55e-05 - carried))  # the input's 4.55e-05
    assert all(CARRY_ATTR not in ops[s].attributes for s in (0, 2, 3))  # 16 -> 8 bits needs widen
    assert [d.message for d in diags if "carries" in d.message] == [
        "site 1: operand A carries the exponent of site 0 (16 bits): dfp[bits=16,block=1,out=dfp,carry_a=16]"]


def test_dfp_chain_pass_widens_only_when_asked_and_drops_the_uncarried_error():
    ops, _ = _chain_module(widen=True)
    plan = _plan_of(ops[2])  # reads site 1's output through a transpose, as B
    assert plan.config == "bits=8,block=1,out=fp32,carry_b=16" and plan.error is None


def test_dfp_chain_pass_needs_a_dfp_output_to_carry():
    from mixjit.passes.dfp_chain import CARRY_ATTR

    ops, _ = _chain_module(producer_out="fp32")
    assert CARRY_ATTR not in ops[1].attributes and _plan_of(ops[1]).config == "bits=16,block=1,out=dfp"
