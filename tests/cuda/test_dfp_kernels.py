"""The dfp scheme's kernels: the CPU model (runtime/dfp/cuda/fragments.py) bit-exact against the CPU
executor over widths, exponent blocks and hard data, and the desc's refusals (what stays on the CPU
and why). The builds are checked with int8's (tests/cuda/test_int8_kernels.py). The GPU runs are
tests/gpu/test_gpu_launch.py's exact-kernel tests; the launch ABI is tests/gpu/test_gpu_launch_abi.py's."""

from __future__ import annotations

import numpy as np
import pytest
from int8_inputs import int8_inputs

from mixjit.runtime.cuda.desc import UnsupportedConfig
from mixjit.runtime.cuda.launch import cpu_gemm
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.dfp.cuda import fragments
from mixjit.runtime.dfp.cuda.desc import max_k, parse_dfp_label
from mixjit.runtime.dfp.cuda.fragments import run_dfp
from mixjit.runtime.mixpert.cuda.fragments import STATUS_NONFINITE
from mixjit.runtime.schemes import get_scheme

CONFIGS = ["bits=16,block=1", "bits=16,block=tensor", "bits=12,block=3", "bits=8,block=1", "bits=8,block=tensor",
           "bits=8,block=32", "bits=5,block=3", "bits=2,block=1", "bits=8,block=1,out=dfp", "bits=16,block=4,out=dfp",
           "bits=3,block=tensor,out=dfp"]


def _inputs(kind: str, m: int, k: int, n: int, dtype, seed: int):
    """int8's operands over more binades, and an edge row of dfp's own."""
    a, b = int8_inputs(kind, m, k, n, np.float64, seed, row_binades=120, rows=4)
    if kind == "edges":
        a[3] = 127.5 * 2.0**-3  # at 8 bits the maximum rounds up to 2^7: one more right shift
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["random", "wide", "edges"])
@pytest.mark.parametrize("shape", [(37, 70, 45), (1, 1, 1), (130, 33, 70)])
def test_model_is_the_executors_bits(config, dtype, kind, shape):
    a, b = _inputs(kind, *shape, dtype, seed=sum(shape))
    got, status = run_dfp(a, b, kernel_desc("dfp", config, "f64" if dtype == np.float64 else "f32"))
    assert status == 0
    want = cpu_gemm("dfp", a, b, config)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_a_missed_carry_is_caught(monkeypatch):
    """The check has teeth: an exponent rule without the carry (amax rounding up to 2^r) changes the
    bits (the mantissa 128 wraps in INT8)."""
    rint = np.rint  # the exponent rule rounds a scalar, the quantizer arrays: break the scalar's only
    monkeypatch.setattr(fragments.np, "rint", lambda x: np.floor(x) if np.ndim(x) == 0 else rint(x))
    a, b = _inputs("edges", 8, 16, 4, np.float32, seed=3)
    got, _ = run_dfp(a, b, kernel_desc("dfp", "bits=8,block=1"))
    assert got.tobytes() != cpu_gemm("dfp", a, b, "bits=8,block=1").tobytes()


def test_an_inf_sets_the_status():
    a, b = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32)
    b[2, 1] = np.nan
    assert run_dfp(a, b, kernel_desc("dfp", "bits=8,block=1"))[1] == STATUS_NONFINITE


def test_labels_are_the_schemes_and_what_stays_on_the_cpu_says_why():
    scheme = get_scheme("dfp")
    for label in ("", "bits=8,block=1", "bits=8,block=tensor,out=dfp", "bits=16,block=4,carry_a=8"):
        cfg = scheme.parse_config(label)
        assert parse_dfp_label(label) == (cfg.bits, cfg.block_rows, cfg.out, cfg.carry_a, cfg.carry_b)
    for label, why in [("bits=8,block=1,carry_a=8", "carried operands"), ("bits=16,carry_b=16", "carried operands")]:
        with pytest.raises(UnsupportedConfig, match=why):
            kernel_desc("dfp", label)
    with pytest.raises(UnsupportedConfig, match="product only"):
        kernel_desc("dfp", "bits=8", alpha_beta="update")
    with pytest.raises(ValueError, match="K=.* INT32"):
        kernel_desc("dfp", "bits=8").launches(8, 8, max_k(8) + 1)
    assert max_k(8) * 127 * 127 < 2**31 <= (max_k(8) + 1) * 127 * 127
    assert max_k(16) * 128 * 128 < 2**31 <= (max_k(16) + 1) * 128 * 128  # the byte pieces' products
    assert kernel_desc("dfp", "").bits == 16 and kernel_desc("dfp", "").batches == 4
    a, b = _inputs("random", 9, 30, 7, np.float32, seed=1)  # out=dfp requantizes: other bits than fp32's
    assert run_dfp(a, b, kernel_desc("dfp", "bits=8,out=dfp"))[0].tobytes() != \
        run_dfp(a, b, kernel_desc("dfp", "bits=8"))[0].tobytes()
    assert [x.entry for x in kernel_desc("dfp", "bits=8,out=dfp").launches(9, 7, 30)][-2:] == ["dfp_out_amax",
                                                                                            "dfp_rescale"]


def test_the_byte_pieces_offset_is_checked(monkeypatch):
    """The check has teeth: 16-bit mantissas split without the -128 offset's correction terms (the row
    sums and 16384·K) give other bits; so does a wrong order of B's pieces."""
    a, b = _inputs("random", 8, 40, 6, np.float64, seed=9)
    want = cpu_gemm("dfp", a, b, "bits=16,block=1").tobytes()
    real = fragments.quantize
    monkeypatch.setattr(fragments, "quantize", lambda *args: (real(*args)[0], real(*args)[1] * 0))
    assert run_dfp(a, b, kernel_desc("dfp", "bits=16,block=1", "f64"))[0].tobytes() != want
    monkeypatch.setattr(fragments, "quantize", lambda x, rp, kp, per, e, n, is_b: real(x, rp, kp, per, e, n, False))
    assert run_dfp(a, b, kernel_desc("dfp", "bits=16,block=1", "f64"))[0].tobytes() != want
