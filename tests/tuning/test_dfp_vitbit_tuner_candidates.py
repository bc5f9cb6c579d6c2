"""Opt-in candidates of the tuner. dfp and vitbit are error-tolerant, so they are tuner candidates only when named in
``schemes=`` (not in the default set, docs/tuning.md); then every config is, with modeled times from their ``work``: dfp at 8 bits is modeled about as fast
as int8 (2-byte exponents instead of 8-byte scales), at 16 bits slower (four INT8 products).
On an MLP, a loose budget lets the tuner pick 8-bit dfp (and vitbit when it is the scheme
offered); a tight one keeps 8 bits out. A ``schemes=`` entry that fixes config fields
(``"int8{encoding=sf16|pct99}"``) offers those configs: the operand encodings become candidates,
and the tuner picks one where the budget allows."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit import mixjit
from mixjit.runtime.schemes import get_scheme
from mixjit.tuning.profiling import site_candidates


def test_dfp_and_vitbit_are_candidates_only_when_named():
    default = site_candidates(np.dtype(np.float32), None, [(512, 512, 512, 3)], "a100")
    assert not {c.scheme for c in default} & {"dfp", "vitbit"}


def test_dfp_and_vitbit_configs_are_tuner_candidates_when_named():
    cands = site_candidates(np.dtype(np.float32), ["dfp", "vitbit", "int8"], [(512, 512, 512, 3)], "a100")
    by_label = {(c.scheme, c.config): c for c in cands}
    for name in ("dfp", "vitbit"):
        for cfg in get_scheme(name).configs(np.float32):
            assert (name, cfg.label) in by_label, (name, cfg.label)
    int8 = by_label[("int8", "scale=row-col")].time
    assert by_label[("dfp", "bits=8,block=1,out=fp32")].time == pytest.approx(int8, rel=1e-3)  # exponents vs scales
    assert by_label[("dfp", "bits=16,block=1,out=fp32")].time > int8
    assert by_label[("dfp", "bits=16,block=1,out=fp32")].products == 4


def _mlp(x, w1, w2, w3):
    h = np.tanh(x @ w1)
    g = np.tanh(h @ w2)
    return g @ w3


def _mlp_inputs(seed: int, n: int = 512) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n)).astype(np.float32),
            *[(rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32) for _ in range(3)])


def _tuned(budget: float, scheme: str) -> list[tuple[str, str]]:
    f = mixjit(error_budget=budget, target="a100", tune="explicit", schemes=[scheme])(_mlp)
    result = f.tune(*_mlp_inputs(0), validate=[_mlp_inputs(1)])
    assert result.plan.error <= budget
    return [(s.scheme, s.config) for s in result.plan.sites]


def test_a_loose_budget_lets_the_tuner_pick_8_bit_dfp():
    # 512-wide layers: INT8 tensor cores are modeled 1.6x faster than SGEMM on an A100
    plan = _tuned(3e-2, "dfp")
    assert all(scheme == "dfp" for scheme, _ in plan) and any("bits=8" in cfg for _, cfg in plan)


@pytest.mark.slow
def test_a_tight_budget_keeps_8_bit_dfp_out_and_vitbit_is_picked_when_offered():
    assert not any(cfg.startswith("bits=8") for _, cfg in _tuned(1e-4, "dfp"))
    assert all(plan == ("vitbit", "bits=8") for plan in _tuned(3e-2, "vitbit"))


def test_a_scheme_spec_offers_the_scheme_configs_with_its_fields_fixed():
    shapes = [(512, 512, 512, 1)]
    cands = site_candidates(np.dtype(np.float32), ["int8{encoding=sf16|pct99}", "dfp{out=dfp}"], shapes, "a100")
    labels = [c.label for c in cands]
    assert labels[:2] == ["int8[scale=row-col,encoding=sf16]", "int8[scale=row-col,encoding=pct99]"]
    assert "int8[scale=row-col]" not in labels  # the default encoding only when asked for
    dfp = [c.config for c in cands if c.scheme == "dfp"]
    assert dfp == [cfg.label.replace("out=fp32", "out=dfp") for cfg in get_scheme("dfp").configs()]
    assert labels[-1] == "native[accumulate=blas]"
    by = {c.label: c for c in cands}
    assert by["int8[scale=row-col,encoding=sf16]"].products == 4 > by["int8[scale=row-col,encoding=pct99]"].products


def test_a_spec_field_that_conflicts_with_some_base_configs_offers_the_others():
    """mixpert's ``level`` cannot join its most precise config (given by segments and pairs):
    that base is left out, the levels' bases give the level asked for, once."""
    cands = site_candidates(np.dtype(np.float32), ["mixpert{level=II|IV}"], [(64, 64, 64, 1)], "a100")
    assert [c.config for c in cands if c.scheme == "mixpert"] == ["level=II", "level=IV"]


@pytest.mark.parametrize("spec, match", [("int8{encodng=sf16}", "encodng"), ("int8{encoding=sf4}", "sf4"),
                                         ("int8{encoding}", "bad field"), ("nosuch{a=1}", "nosuch"),
                                         ("mixpert{level=IX}", "unknown level")])
def test_a_bad_scheme_spec_is_refused_at_decoration_and_named(spec, match):
    with pytest.raises((ValueError, KeyError), match=match):
        mixjit(schemes=[spec])(_product)


def _product(x, w):
    return x @ w


def _outlier_inputs(seed: int, n: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Mostly in [-1, 1], 0.5 % of x 50 times larger: the data the encodings are for."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    x[rng.random((n, n)) < 0.005] *= 50
    return x, rng.uniform(-1, 1, (n, n)).astype(np.float32)


@pytest.mark.parametrize("budget, chosen", [(3e-2, "int8[scale=row-col,encoding=pct99]"),
                                            (1e-3, "native[accumulate=blas]")])
def test_the_tuner_picks_an_encoded_int8_config_where_the_budget_allows(budget, chosen):
    # modeled on an A100 at 512^3: pct99 (one INT8 product) is faster than SGEMM, sf16 (four)
    # is not; pct99 measures about 1.2e-2 on these inputs, sf16 about 3e-5
    f = mixjit(error_budget=budget, target="a100", tune="explicit",
               schemes=["int8{encoding=sf16|pct99}"])(_product)
    result = f.tune(*_outlier_inputs(0), validate=[_outlier_inputs(1)])
    assert [f"{s.scheme}[{s.config}]" for s in result.plan.sites] == [chosen]
    assert result.plan.error <= budget
