"""The int8 scheme's kernels: the CPU model (runtime/int8/cuda/fragments.py) bit-exact against the
CPU executor, the desc's refusals, and the builds for every target (runtime/cuda/desc.py ARCHS:
the IMMA main loop, no spills; dfp's kernels too).
The GPU runs are tests/gpu/test_gpu_launch.py's exact-kernel tests; the launch ABI is
tests/gpu/test_gpu_launch_abi.py's."""

from __future__ import annotations

import numpy as np
import pytest
from build_targets import per_target
from int8_inputs import int8_inputs

from mixjit.runtime.cuda.build import CompilerNotFound, find_compiler
from mixjit.runtime.cuda.desc import UnsupportedConfig
from mixjit.runtime.cuda.launch import cpu_gemm
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.cuda.sass import ToolNotFound, find_tool, opcode_counts
from mixjit.runtime.int8.cuda import fragments
from mixjit.runtime.int8.cuda.desc import MAX_K, parse_int8_label
from mixjit.runtime.int8.cuda.fragments import run_int8
from mixjit.runtime.mixpert.cuda.fragments import STATUS_NONFINITE
from mixjit.runtime.schemes import get_scheme


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["random", "wide", "edges"])
@pytest.mark.parametrize("shape", [(37, 70, 45), (1, 1, 1), (130, 33, 70)])
def test_model_is_the_executors_bits(dtype, kind, shape):
    a, b = int8_inputs(kind, *shape, dtype, seed=sum(shape))
    got, status = run_int8(a, b, kernel_desc("int8", "", "f64" if dtype == np.float64 else "f32"))
    assert status == 0
    want = cpu_gemm("int8", a, b, "")
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_a_wrong_rounding_of_the_quotient_is_caught(monkeypatch):
    """The check has teeth: quantizing with round-half-away instead of rint changes the bits."""
    monkeypatch.setattr(fragments.np, "rint", lambda x: np.trunc(x + np.copysign(0.5, x)))
    a, b = int8_inputs("random", 64, 64, 16, np.float32, seed=1)
    a[:, 0] = 127.0 / 2  # amax 127/2: s = 0.5, and a[:, 1] = 0.25 gives v/s = 0.5, a tie
    a[:, 1] = 0.25
    got, _ = run_int8(a, b, kernel_desc("int8", ""))
    assert got.tobytes() != cpu_gemm("int8", a, b, "").tobytes()


def test_an_inf_sets_the_status():
    a, b = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32)
    a[1, 1] = np.inf
    assert run_int8(a, b, kernel_desc("int8", ""))[1] == STATUS_NONFINITE


def test_labels_are_the_schemes_and_encodings_are_refused():
    scheme = get_scheme("int8")
    for label in ("", "scale=row-col", "encoding=sf16", "encoding=pct50"):
        cfg = scheme.parse_config(label)
        assert parse_int8_label(label) == (cfg.scale, cfg.encoding)
    with pytest.raises(UnsupportedConfig, match="encodings are not on the GPU"):
        kernel_desc("int8", "encoding=sf16")
    with pytest.raises(UnsupportedConfig, match="product only"):
        kernel_desc("int8", "", alpha_beta="update")
    with pytest.raises(ValueError, match="K=.* INT32"):
        kernel_desc("int8", "").launches(8, 8, MAX_K + 1)
    assert MAX_K * 127 * 127 < 2**31 <= (MAX_K + 1) * 127 * 127


def _tools() -> str:
    try:
        find_compiler()
        find_tool()
    except (CompilerNotFound, ToolNotFound) as exc:
        return str(exc)
    return ""


@pytest.mark.skipif(bool(_tools()), reason=_tools() or "tools found")
@pytest.mark.parametrize("arch,dtype,scheme,config", per_target([("f32", "int8", ""), ("f64", "int8", "")])
                         + per_target([("f64", "dfp", "bits=16,block=1"), ("f32", "dfp", "bits=8,block=1"),
                                       ("f32", "dfp", "bits=8,block=tensor,out=dfp")]))
def test_builds_with_the_imma_main_loop_and_no_spills(cubin, sass, usage, arch, dtype, scheme, config):
    """int8 and dfp (tests/cuda/test_dfp_kernels.py): their quantizers around int8_gemm.cu."""
    desc = kernel_desc(scheme, config, dtype, arch=arch)
    path = cubin(desc)
    text, resources = sass(path), usage(path)
    assert set(desc.entry_points) <= set(text) and set(desc.entry_points) <= set(resources)
    entry, opcode, count = desc.main_loop_mma()
    ops = opcode_counts(text[entry])
    assert ops[opcode] >= count and ops["FFMA"] == 0, ops.most_common(12)
    assert not any(r.spills for r in resources.values())
    if arch == "sm_80":
        gemm = next(launch for launch in desc.launches(100, 70, 90) if launch.entry == "int8_gemm")
        assert resources[gemm.entry].shared_bytes == gemm.shared_bytes
