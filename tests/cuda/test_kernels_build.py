"""Every kernel family other than MixPert (tests/cuda/test_build.py) builds for every target
(runtime/cuda/desc.py ARCHS), contains the tensor-core MMA that target runs in SASS and no FFMA main loop, and does not spill.

CI builds one representative config per family (for every target, and with NVRTC); the variants
(other dtypes, transposes, update mode, tiles) are marked ``slow``. Cubins come from conftest.py's
session build (the on-disk cache)."""

from __future__ import annotations

import pytest

from mixjit.runtime.cuda.build import CompilerNotFound, find_compiler
from mixjit.runtime.cuda.desc import ARCHS, TARGETS, mma_sass
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.cuda.sass import ToolNotFound, find_tool, opcode_counts

try:
    find_compiler()
    find_tool()
except (CompilerNotFound, ToolNotFound) as exc:
    pytest.skip(str(exc), allow_module_level=True)

#: (scheme, config, desc fields): the representative kernel of each family, built in CI
REPRESENTATIVE = [("tf32x3", "products=3", {}), ("bf16xn", "products=9", {}), ("ozaki2", "moduli=8", {}),
                  ("split", "fp16=auto", {}), ("fp16x2", "products=3", {})]
#: the variants, built with -m slow
VARIANTS = [("bf16xn", "products=6", {"dtype": "f64", "trans_a": True, "trans_b": True, "alpha_beta": "update"}),
            ("ozaki2", "moduli=20", {"dtype": "f64", "trans_b": True}),
            ("split", "fp16=0.25", {"block": (64, 128), "warps": (2, 2), "alpha_beta": "update"}),
            ("fp16x2", "products=1", {"dtype": "f64", "trans_a": True})]
KERNELS = [pytest.param(*k, id=f"{k[0]}[{k[1]}]") for k in REPRESENTATIVE] + \
          [pytest.param(*k, id=f"{k[0]}[{k[1]}]", marks=pytest.mark.slow) for k in VARIANTS]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("scheme,config,fields", KERNELS)
def test_sass_has_the_mma_and_no_ffma(cubin, sass, scheme, config, fields, arch):
    desc = kernel_desc(scheme, config, arch=arch, **fields)
    text = sass(cubin(desc))
    assert set(desc.entry_points) <= set(text)
    entry, opcode, count = desc.main_loop_mma()
    ops = opcode_counts(text[entry])
    assert ops[opcode] >= count, ops.most_common(12)
    foreign = {"FFMA", *TARGETS[arch].sass.values()} - {opcode}  # no other MMA, no FP32 FMA main loop
    assert all(ops[other] == 0 for other in foreign), ops.most_common(12)
    if desc.scheme == "split":  # the FP16 part's GEMM: HMMA f16 -> f32, one per 16x8 piece and k-step
        wm, wn = desc.warp_tile
        assert opcode_counts(text["multiterm_gemm"])[mma_sass(arch, "f16")] >= 2 * (wm // 16) * (wn // 8)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("scheme,config,fields", KERNELS)
def test_no_spills(cubin, usage, scheme, config, fields, arch):
    desc = kernel_desc(scheme, config, arch=arch, **fields)
    resources = usage(cubin(desc))
    assert set(desc.entry_points) <= set(resources)
    for kernel, res in resources.items():
        assert not res.spills, f"{kernel} ({desc.name}) spills {res.local_bytes} bytes to local memory"
        assert res.registers <= 255


@pytest.mark.parametrize("scheme,config,fields", KERNELS)
def test_static_shared_memory_is_what_the_desc_launches_with(cubin, usage, scheme, config, fields):
    """The launch table's shared bytes (desc.launches) match ptxas's static allocation on sm_80."""
    desc = kernel_desc(scheme, config, arch="sm_80", **fields)
    resources = usage(cubin(desc))
    for launch in desc.launches(100, 70, 90):
        assert resources[launch.entry].shared_bytes == launch.shared_bytes, (desc.name, launch)
    if desc.scheme == "split":
        assert desc.shared_bytes == {k: resources[k].shared_bytes for k in ("int8_gemm", "multiterm_gemm")}


@pytest.mark.parametrize("scheme,config", [("tf32x3", "products=3"), ("bf16xn", "products=9"), ("ozaki2", "moduli=8"),
                                           ("split", "fp16=auto")])
def test_nvrtc_from_the_pip_wheel_builds_them_too(scheme, config, cubin, sass, usage):
    """The backend works from pip alone: NVRTC builds every family (sm_90), same MMAs, no spills."""
    try:
        nvrtc = find_compiler("nvrtc")
    except CompilerNotFound as exc:
        pytest.skip(str(exc))
    desc = kernel_desc(scheme, config, arch="sm_90")
    path = cubin(desc, nvrtc)
    entry, opcode, count = desc.main_loop_mma()
    assert opcode_counts(sass(path)[entry])[opcode] >= count
    assert not any(r.spills for r in usage(path).values())
