"""The CPU model of the mixpert-fp64 kernels (runtime/mixpert/cuda/fp64_fragments.py) plus the host's
step 6 (runtime/mixpert/cuda/host_check.py) against the CPU executor, bit for bit; the desc's configs
and refusals; emit-cuda on float64 sites tuned to mixpert-fp64."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
import pytest

from mixjit.ir.dialects.mix import GemmOp, KernelOp
from mixjit.ir.parser import parse_module
from mixjit.passes.emit_cuda import EmitCuda, site_choice, site_kernels
from mixjit.passes.manager import PassManager
from mixjit.passes.pipeline import build_pipeline
from mixjit.runtime.cuda import fragments
from mixjit.runtime.cuda.desc import MMA_K, UnsupportedConfig
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.mixpert.cuda import fragments as mixpert_fragments
from mixjit.runtime.mixpert.cuda.fp64_desc import Fp64Desc
from mixjit.runtime.mixpert.cuda.fp64_fragments import pack_operand64, run_gemm64
from mixjit.runtime.mixpert.cuda.fragments import STATUS_NONFINITE, STATUS_SPAN
from mixjit.runtime.mixpert.cuda.host_check import guarantee_on_host
from mixjit.runtime.mixpert.segments import segment_digits
from mixjit.runtime.mixpert.split import prepare_operand
from mixjit.runtime.schemes import get_scheme

SCHEME = get_scheme("mixpert-fp64")
#: the scheme's configs (what the tuner chooses from), its default (label ""), and layouts they do not
#: use: several k-tiles, tile alignment, truncating shifts, W < 53 (a rounded element split)
CONFIGS = [c.label for c in SCHEME.configs()] + [
    "", "segments=9,pairs=slices3sig2,tile=16x64x8", "segments=9,pairs=sig8,align=tile", "pairs=sig7,rounding=trunc",
    "segments=5,pairs=sig3,tile=16x64x8"]


def _words(config: str) -> np.ndarray:
    return np.array(SCHEME.parse_config(config).words(), np.int64)


def _device_result(a: np.ndarray, b: np.ndarray, config: str) -> tuple[np.ndarray, int, int]:
    """(C, status, recomputed): the model's P, then the host's step 6, as the launcher runs them."""
    p, status = run_gemm64(a, b, Fp64Desc.for_config("mixpert-fp64", config))
    recomputed = guarantee_on_host(a, b, p, _words(config)) if status == 0 else -1
    return p, status, recomputed


def _exact_p(a: np.ndarray, b: np.ndarray, config: str) -> np.ndarray:
    """RN64(X) from the executor's own split (its aligned mantissas and group exponents): X summed
    exactly, pair by pair and k-tile by k-tile, independently of the model's planes and MMAs."""
    cfg, words = SCHEME.parse_config(config), _words(config)
    pa, pb = prepare_operand(a, False, words), prepare_operand(b, True, words)
    da, db = segment_digits(pa.q, cfg.segments), segment_digits(pb.q, cfg.segments)
    tk, w = cfg.tile[1], Fp64Desc.for_config("mixpert-fp64", config).width
    x = np.zeros((a.shape[0], b.shape[1]), object)
    for kt in range(pa.gexp.shape[1]):
        ks = slice(kt * tk, (kt + 1) * tk)
        part = sum((da[p][:, ks].astype(np.int64) @ db[r][:, ks].T.astype(np.int64)).astype(object)
                   * 2 ** (7 * (2 * cfg.segments - 2 - p - r)) for p, r in cfg.pairs)
        scale = np.where(part != 0, pa.gexp[:, kt:kt + 1] + pb.gexp[:, kt][None, :] - 2 * (w - 1), 0)  # zero groups
        x += np.where(part != 0, part * np.vectorize(lambda e: Fraction(2) ** int(e), otypes=[object])(scale), 0)
    return np.vectorize(lambda v: _rn64(Fraction(v)), otypes=[np.float64])(x)


def _rn64(v: Fraction) -> float:
    """RN64(v), overflow to inf, zero as +0."""
    try:
        r = float(v)
    except OverflowError:
        r = math.inf if v > 0 else -math.inf
    return r if r != 0 else 0.0


def _check(a: np.ndarray, b: np.ndarray, config: str) -> int:
    p, status = run_gemm64(a, b, Fp64Desc.for_config("mixpert-fp64", config))
    assert status == 0, f"inputs left the kernel path (status {status}): not a kernel-path test"
    p_want = _exact_p(a, b, config)
    bad = p.view(np.uint64) != p_want.view(np.uint64)
    assert not bad.any(), f"{config}: the kernel's P is not RN64(X) at {bad.sum()} elements, first {np.argwhere(bad)[0]}"
    got, status, recomputed = _device_result(a, b, config)
    want = SCHEME.run(a, b, SCHEME.parse_config(config))
    diff = got.view(np.uint64) != want.view(np.uint64)
    assert not diff.any(), f"{config}: {diff.sum()} elements differ, first at {np.argwhere(diff)[0]}"
    return recomputed


def _inputs(kind: str, m: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    if kind == "scaled":  # rows and columns over many binades; a zero row and column; zeros inside a group
        a *= np.exp2(rng.integers(-60, 60, (m, 1)))
        b *= np.exp2(rng.integers(-60, 60, (1, n)))
        a[1], b[:, 2], a[0, 3] = 0.0, 0.0, 0.0
    elif kind == "spread":  # elements of one group up to 80 binades apart: shifts drop low bits
        a *= np.exp2(rng.integers(-80, 1, (m, k)))
    elif kind == "cancel":  # exact and near cancellation: outputs the guarantee check recomputes
        b[:, 0] = 1.0
        a[:, 1::2] = -a[:, 0:-1:2] if k % 2 == 0 else -a[:, 0:k - 1:2]
        a[:, -1] += 2.0**-40
    elif kind == "tiny":  # subnormal inputs and products below float64's range
        a *= 2.0**-1000
        b *= 2.0**-60
        a[0, 0] = 5e-324
    return a, b


@pytest.mark.parametrize("config", CONFIGS)
def test_model_and_host_step_are_the_executors_bits(config):
    """Random data over several shapes (K not a multiple of 32, ragged m and n, several k-tiles)."""
    for m, k, n, seed in [(37, 100, 21, 1), (5, 3, 40, 2), (16, 130, 8, 3)]:
        _check(*_inputs("normal", m, k, n, seed), config)


@pytest.mark.parametrize("kind", ["scaled", "spread", "cancel", "tiny"])
@pytest.mark.parametrize("config", [CONFIGS[0], "segments=7,pairs=sig6", "segments=9,pairs=slices3sig2,tile=16x64x8"])
def test_model_bits_on_hard_data(config, kind):
    _check(*_inputs(kind, 33, 70, 17, 7), config)


def test_the_host_step_recomputes_what_the_executor_does():
    """Cancellation leaves outputs the bound cannot certify: the host step recomputes them (a test
    that only ever saw certified outputs would not know whether step 6 ran)."""
    assert _check(*_inputs("cancel", 33, 70, 17, 7), "segments=7,pairs=sig6") > 0


@pytest.mark.parametrize("a,b", [
    ([[-1.0, -2.0]], [[0.0], [0.0]]),  # zero products: +0
    ([[-1.5, 1.5]], [[1.0], [1.0]]),  # exact cancellation: +0
    ([[-(2.0**-600)]], [[2.0**-600]]),  # a negative product below the subnormals: +0
    ([[2.0**1023, 2.0**1023]], [[1.5], [1.0]]),  # X beyond the largest float64: inf
    ([[-(2.0**1023)], [1.0]], [[1.9999999999999998]]),  # the largest finite magnitude, and 2 - 2^-52
    ([[5e-324, 3e-323]], [[0.75], [0.5]]),  # subnormal results, rounded once
])
def test_special_values(a, b):
    a, b = np.array(a), np.array(b)
    for config in (CONFIGS[0], "segments=7,pairs=sig6"):
        _check(a, b, config)


def test_an_inf_or_a_wide_span_hands_back():
    a, b = np.ones((4, 64)), np.ones((64, 3))
    a[2, 5] = np.inf
    assert run_gemm64(a, b, Fp64Desc.for_config("mixpert-fp64", ""))[1] & STATUS_NONFINITE
    a[2, 5] = 1.0
    a[0, 40] = 2.0**200  # another k-tile (tile k = 32) than a[0, :32]: a span of 200 binades
    assert run_gemm64(a, b, Fp64Desc.for_config("mixpert-fp64", ""))[1] == STATUS_SPAN
    assert run_gemm64(a, b, Fp64Desc.for_config("mixpert-fp64", CONFIGS[0]))[1] == 0  # one k-tile: no span
    _check(a, b, CONFIGS[0])


@pytest.mark.parametrize("config", [CONFIGS[0], "segments=7,pairs=sig6,align=tile,rounding=trunc"])
def test_packer_planes_and_exponents_are_the_executors_split(config):
    """The model's digit planes put back together are the executor's aligned mantissas, and its group
    exponents the executor's (every segment is read by some pair in these configs)."""
    desc = Fp64Desc.for_config("mixpert-fp64", config)
    a, _ = _inputs("spread", 32, 64, 8, 3)
    packed = pack_operand64(a, desc, False, 32, 64)
    assert desc.a_segments == tuple(range(desc.segments))
    weights = [2 ** (desc.digit_bits * (desc.segments - 1 - s)) for s in desc.a_segments]
    q = sum(packed.planes[p].astype(np.int64) * w for p, w in enumerate(weights))
    split = prepare_operand(a, False, _words(config))
    assert np.array_equal(q, split.q) and np.array_equal(packed.gexp, split.gexp)


def test_a_wrong_fragment_layout_is_caught(monkeypatch):
    """The bit-equality check has teeth: rows g and g+8 of the A fragment swapped (under the most
    precise config, whose outputs step 6 certifies rather than recomputes)."""
    # the fragment loads are the float32 model's (chunk_products), shared by both kernels' models
    monkeypatch.setattr(mixpert_fragments, "A_LOADS", ((8, 0), (0, 0), (8, 16), (0, 16)))
    a, b = _inputs("normal", 16, 32, 8, 4)
    with pytest.raises(AssertionError, match="not RN64"):
        _check(a, b, CONFIGS[0])


def test_round_to_float64_is_the_correctly_rounded_value():
    """round_to_float (the model of round_to_f64) against exact rationals: ties, subnormals, overflow."""
    rng = np.random.default_rng(5)
    cases = [(3 * 2**52 + 1, -1126), (2**53 + 1, 0), (2**54 + 2, -1), (-(2**60 + 2**7), -1134), (1, -1075),
             (3, -1076), (2**53 - 1, 971), (2**54 - 1, 970), (-5, -1077)]
    cases += [(int(rng.integers(1, 2**62)) * int(rng.choice([-1, 1])) << int(rng.integers(0, 140)),
               int(rng.integers(-1300, 900))) for _ in range(300)]
    for acc, scale in cases:
        got = fragments.round_to_float(acc, scale, np.float64)
        try:
            want = float(Fraction(acc) * Fraction(2) ** scale)
        except OverflowError:
            want = math.copysign(math.inf, acc)
        want = want if want != 0 else 0.0  # a zero result is +0
        assert got.view(np.uint64) == np.float64(want).view(np.uint64), (acc, scale)


def test_desc_defaults_and_configs_are_the_schemes():
    cls = type(SCHEME.parse_config(""))
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    for config in [c.label for c in SCHEME.configs()] + [""]:
        desc, cfg = Fp64Desc.for_config("mixpert-fp64", config), SCHEME.parse_config(config)
        for name in ("segments", "seg0_bits", "pairs", "align", "rounding", "tile", "fallback"):
            assert getattr(desc, name) == getattr(cfg, name), (config, name)
    assert Fp64Desc.for_config("mixpert-fp64", "").segments == defaults["segments"]
    assert isinstance(kernel_desc("mixpert-fp64", "", "f64"), Fp64Desc)


def test_the_diagonal_accumulators_stay_within_int32():
    """Each diagonal's INT32 sum over its flush period is bounded below 2^31 (the model asserts it
    too); the default config's 4096-long k-tile flushes every 128 chunks."""
    for config in CONFIGS:
        d = Fp64Desc.for_config("mixpert-fp64", config)
        fullest = max(sum(1 for p, r in d.pairs if p + r == s) for s in d.diagonals)
        assert d.flush_chunks * MMA_K * fullest * 127 * 127 < 2**31
        assert d.tile[1] // MMA_K % d.flush_chunks == 0 or d.flush_chunks < d.tile[1] // MMA_K
    assert Fp64Desc.for_config("mixpert-fp64", CONFIGS[0]).flush_chunks == 128


@pytest.mark.parametrize("fields,reason", [
    ({"dtype": "f32"}, "float64 operands only"),
    ({"alpha_beta": "update"}, "step 6"),
    ({"config": "digits=balanced"}, "sign-magnitude digits only"),
    ({"config": "tile=16x48x8"}, "not a multiple of the MMA k"),
    ({"block": (64, 64), "warps": (4, 8)}, "shared tiles"),
])
def test_configs_the_kernels_cannot_serve_say_why(fields, reason):
    fields = {"config": "", **fields}
    with pytest.raises(UnsupportedConfig, match=reason):
        kernel_desc("mixpert-fp64", fields.pop("config"), fields.pop("dtype", "f64"), **fields)


_SITE = ('  %{v} = "mix.gemm"(%d, %d) <{{dtype = f64, site = {site} : i64}}> {{mix.plan = {{config = "{config}", '
         'modeled_time = 1.0e-04 : f64, scheme = "mixpert-fp64"}}}} : (!py.array<f64, 2, C>, !py.array<f64, 2, C>) '
         '-> !py.array<f64, 2, C> loc("f.py":{line}:8)')


def test_emit_cuda_emits_a_kernel_for_every_site_tuned_to_mixpert_fp64():
    """A float64 module whose sites the tuner set to each mixpert-fp64 config, and one without a plan
    (the default): one kernel per site, none skipped."""
    configs = [c.label for c in SCHEME.configs()]
    sites = "\n".join(_SITE.format(v=f"s{i}", site=i, config=c, line=i + 2) for i, c in enumerate(configs))
    text = f""""func.func"() <{{sym_name = "f", function_type = (!py.array<f64, 2, C>) -> ()}}> ({{
^bb0(%d: !py.array<f64, 2, C>):
{sites}
  %z = "mix.gemm"(%d, %d) <{{dtype = f64, site = {len(configs)} : i64}}> : (!py.array<f64, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C> loc("f.py":9:8)
  "func.return"() : () -> ()
}}) : () -> ()
"""
    module = parse_module(text, "f.mix")
    found = site_kernels(module, "sm_90")
    assert found.skipped == {}
    PassManager([EmitCuda(arch="sm_90")]).run(module)
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert [k.scheme.value for k in kernels] == ["mixpert-fp64"] * (len(configs) + 1)
    assert [k.config.value for k in kernels] == configs + [""]


def test_tune_then_emit_cuda_gives_a_float64_site_its_mixpert_fp64_kernel():
    """The tune pass picks mixpert-fp64 for a profiled float64 site (the most precise config is the
    fastest candidate within the budget), then emit-cuda renders that plan's kernel."""
    candidates = ", ".join(
        f'{{config = "{c}", error = {e}, products = {p} : i64, scheme = "{s}", time = {t}}}'
        for s, c, e, p, t in [("mixpert-fp64", CONFIGS[0], "1.0e-16", 54, "3.0e-04"),
                              ("native", "accumulate=blas", "2.0e-16", 1, "5.5e-04"),
                              ("ozaki2", "moduli=14", "4.0e-16", 14, "4.0e-04")])
    text = f""""func.func"() <{{sym_name = "f", function_type = (!py.array<f64, 2, C>) -> ()}}> ({{
^bb0(%d: !py.array<f64, 2, C>):
  %s = "mix.gemm"(%d, %d) <{{dtype = f64, site = 0 : i64}}> {{mix.deps = [], mix.loop_depth = 0 : i64, mix.profile = {{calls = 1 : i64, candidates = [{candidates}], dtype = "float64", loop_depth = 0 : i64, shapes = [[1024, 1024, 1024, 1]], target = "a100"}}}} : (!py.array<f64, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C> loc("f.py":2:8)
  "func.return"() : () -> ()
}}) : () -> ()
"""
    module = parse_module(text, "f.mix")
    PassManager(build_pipeline("tune{budget=1e-12,target=a100},emit-cuda{arch=sm_90}")).run(module)
    site = next(op for op in module.walk() if isinstance(op, GemmOp))
    assert site_choice(site)[:2] == ("mixpert-fp64", CONFIGS[0])
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert [(k.scheme.value, k.config.value, k.sites.value[0].value) for k in kernels] == [
        ("mixpert-fp64", CONFIGS[0], 0)]
