"""Every kernel family other than MixPert (tests/cuda/test_build.py) builds for sm_80 and sm_90,
contains its tensor-core MMA in SASS and no FFMA main loop, and does not spill."""

from __future__ import annotations

import pytest

from mixjit.runtime.cuda.build import CompilerNotFound, build, find_compiler
from mixjit.runtime.cuda.desc import ARCHS
from mixjit.runtime.cuda.emit import render
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.cuda.sass import ToolNotFound, find_tool, opcode_counts, resource_usage, sass_by_kernel

try:
    find_compiler()
    find_tool()
except (CompilerNotFound, ToolNotFound) as exc:
    pytest.skip(str(exc), allow_module_level=True)

#: (scheme, config, desc fields): the kernels built here
KERNELS = [("tf32x3", "products=3", {}), ("tf32x3", "products=1", {}), ("bf16xn", "products=9", {}),
           ("bf16xn", "products=3", {}),
           ("bf16xn", "products=6", {"dtype": "f64", "trans_a": True, "trans_b": True, "alpha_beta": "update"})]


def _gemm_kernel(desc) -> str:
    return desc.entry_points[-1]


def _expected_mmas(desc) -> tuple[str, int]:
    """The SASS MMA opcode of the main loop and how many one K chunk issues per warp."""
    wm, wn = desc.warp_tile
    tiles = (wm // 16) * (wn // 8)
    steps = 64 // 4 // 8  # multiterm: a 64-byte chunk is two 8-word MMA k-steps
    return desc.fmt.sass, steps * len(desc.pairs) * tiles


@pytest.fixture(scope="module")
def cubins(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cubins")
    out = {}
    for i, (scheme, config, fields) in enumerate(KERNELS):
        for arch in ARCHS:
            desc = kernel_desc(scheme, config, arch=arch, **fields)
            out[i, arch] = desc, build(render(desc), cache=cache)
    return out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("index", range(len(KERNELS)), ids=[f"{s}[{c}]" for s, c, _ in KERNELS])
def test_sass_has_the_mma_and_no_ffma(cubins, index, arch):
    desc, cubin = cubins[index, arch]
    sass = sass_by_kernel(cubin)
    assert set(desc.entry_points) <= set(sass)
    opcode, count = _expected_mmas(desc)
    ops = opcode_counts(sass[_gemm_kernel(desc)])
    assert ops[opcode] >= count, ops.most_common(12)
    assert ops["FFMA"] == 0 and ops["IMMA.16832.S8.S8"] == 0


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("index", range(len(KERNELS)), ids=[f"{s}[{c}]" for s, c, _ in KERNELS])
def test_no_spills(cubins, index, arch):
    desc, cubin = cubins[index, arch]
    usage = resource_usage(cubin)
    assert set(desc.entry_points) <= set(usage)
    for kernel, res in usage.items():
        assert not res.spills, f"{kernel} ({desc.name}) spills {res.local_bytes} bytes to local memory"
        assert res.registers <= 255


def test_static_shared_memory_is_what_the_desc_launches_with(cubins):
    """The launch table's shared bytes (desc.launches) match ptxas's static allocation on sm_80."""
    for (index, arch), (desc, cubin) in cubins.items():
        if arch != "sm_80":
            continue
        usage = resource_usage(cubin)
        for launch in desc.launches(100, 70, 90):
            assert usage[launch.entry].shared_bytes == launch.shared_bytes, (desc.name, launch)
