"""The mixpert-fp64 kernels build for every target (runtime/cuda/desc.py ARCHS; nvcc, and NVRTC
where installed): the GEMM's main loop issues one INT8 MMA per kept pair and warp tile, no float MMA or FMA main loop, nothing
spills to local memory, and the shared memory is what the desc launches with. The most precise
config (the default the tuner starts from) and the dataclass default build in CI; the scheme's
other configs with -m slow. Cubins come from conftest.py's session build."""

from __future__ import annotations

import pytest
from build_targets import per_target

from mixjit.runtime.cuda.build import CompilerNotFound, find_compiler
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.cuda.sass import ToolNotFound, find_tool, opcode_counts

try:
    find_compiler()
    find_tool()
except (CompilerNotFound, ToolNotFound) as exc:
    pytest.skip(str(exc), allow_module_level=True)

CONFIGS = [pytest.param("segments=9,pairs=slices3sig2,tile=16x4096x8", id="precise"), pytest.param("", id="default"),
           pytest.param("segments=9,pairs=sig8", id="sig8", marks=pytest.mark.slow),
           pytest.param("segments=7,pairs=sig6", id="sig6", marks=pytest.mark.slow)]
#: opcodes the GEMM may not contain: a float MMA or FMA main loop, or a local-memory access
FOREIGN = ("FFMA", "DFMA", "HMMA.1688.F32.TF32", "HMMA.16816.F32.BF16", "HMMA.16816.F32", "LDL", "STL")


@pytest.mark.parametrize("arch,config", per_target(CONFIGS))
def test_sass_has_an_imma_per_pair_no_float_main_loop_and_no_spills(cubin, sass, usage, config, arch):
    desc = kernel_desc("mixpert-fp64", config, "f64", arch=arch)
    text = sass(cubin(desc))
    assert set(desc.entry_points) <= set(text)
    entry, opcode, count = desc.main_loop_mma()
    ops = opcode_counts(text[entry])
    assert ops[opcode] >= count == len(desc.pairs), ops.most_common(12)
    assert all(ops[other] == 0 for other in FOREIGN), ops.most_common(12)
    resources = usage(cubin(desc))
    assert set(desc.entry_points) <= set(resources)
    for kernel, res in resources.items():
        assert not res.spills and res.stack_bytes == 0, f"{kernel} ({desc.name}) uses local memory: {res}"
        assert res.registers <= 255


def test_static_shared_memory_is_what_the_desc_launches_with(cubin, usage):
    desc = kernel_desc("mixpert-fp64", "segments=9,pairs=slices3sig2,tile=16x4096x8", "f64", arch="sm_80")
    resources = usage(cubin(desc))
    gemm = desc.launches(100, 70, 90)[2]
    assert resources[gemm.entry].shared_bytes == gemm.shared_bytes == desc.shared_bytes


def test_nvrtc_from_the_pip_wheel_builds_them_too(cubin, sass, usage):
    try:
        nvrtc = find_compiler("nvrtc")
    except CompilerNotFound as exc:
        pytest.skip(str(exc))
    desc = kernel_desc("mixpert-fp64", "segments=9,pairs=slices3sig2,tile=16x4096x8", "f64", arch="sm_90")
    path = cubin(desc, nvrtc)
    entry, opcode, count = desc.main_loop_mma()
    assert opcode_counts(sass(path)[entry])[opcode] >= count
    assert not any(r.spills for r in usage(path).values())
