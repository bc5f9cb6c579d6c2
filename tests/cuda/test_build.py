"""The emitted MixPert kernels build for every target (runtime/cuda/desc.py ARCHS), contain the INT8
tensor-core MMA that target runs in SASS and no FFMA main loop, do not spill, and compile errors point at the template line.

CI builds the representative config (level=IV) for every target and with NVRTC; the other configs
and variants are marked ``slow`` (run them with ``-m slow``). Cubins come from conftest.py's
session build (the on-disk cache)."""

from __future__ import annotations

import dataclasses

import pytest

from mixjit.runtime.cuda.build import CompilerNotFound, CudaBuildError, build, find_compiler
from mixjit.runtime.cuda.desc import ARCHS, mma_sass
from mixjit.runtime.cuda.emit import render
from mixjit.runtime.cuda.sass import ToolNotFound, find_tool, opcode_counts, resource_usage, sass_by_kernel
from mixjit.runtime.mixpert.cuda.desc import KernelDesc

try:
    COMPILER = find_compiler()
except CompilerNotFound as exc:
    pytest.skip(str(exc), allow_module_level=True)

#: level=IV is the representative config CI builds; the others run with -m slow
CONFIGS = ["level=IV",
           *(pytest.param(c, marks=pytest.mark.slow) for c in ("level=I", "level=IV,digits=balanced,align=row"))]


def _mmas_per_chunk(desc: KernelDesc) -> int:
    """m16n8k32 MMAs a warp issues per K chunk: one per kept pair and 16×8 piece of its tile."""
    wm, wn = desc.warp_tile
    assert desc.main_loop_mma() == ("mixpert_gemm", "IMMA.16832.S8.S8", len(desc.pairs) * (wm // 16) * (wn // 8))
    return desc.main_loop_mma()[2]


def _tool_or_skip() -> None:
    try:
        find_tool()
    except ToolNotFound as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("config", CONFIGS)
def test_sass_has_imma_and_no_ffma_main_loop(cubin, sass, config, arch):
    _tool_or_skip()
    text = sass(cubin(KernelDesc.for_config("mixpert", config, arch=arch)))
    assert set(KernelDesc.entry_points) <= set(text)
    ops = opcode_counts(text["mixpert_gemm"])
    assert ops[mma_sass(arch, "s8")] >= _mmas_per_chunk(KernelDesc.for_config("mixpert", config)), ops.most_common(12)
    assert ops["FFMA"] == 0 and ops[mma_sass(arch, "tf32")] == 0


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("config", CONFIGS)
def test_no_spills(cubin, usage, config, arch):
    _tool_or_skip()
    resources = usage(cubin(KernelDesc.for_config("mixpert", config, arch=arch)))
    assert set(KernelDesc.entry_points) <= set(resources)
    for kernel, res in resources.items():
        assert not res.spills, f"{kernel} ({config}, {arch}) spills {res.local_bytes} bytes to local memory"
        assert res.registers <= 255
    if arch == "sm_80":  # the launch table's shared bytes are ptxas's (sm_90 reserves 1 KiB more)
        gemm = KernelDesc.for_config("mixpert", config).launches(70, 40, 100)[-1]
        assert gemm.shared_bytes == resources["mixpert_gemm"].shared_bytes


def test_cache_by_source_hash(tmp_path, monkeypatch):
    from mixjit.runtime.cuda import build as build_module

    kernel = render(KernelDesc.for_config("mixpert", "level=I"))
    first = build(kernel, cache=tmp_path)  # a real build into an empty cache
    mtime = first.stat().st_mtime_ns
    compiled = []
    monkeypatch.setattr(build_module, "_nvcc" if COMPILER.kind == "nvcc" else "_nvrtc",
                        lambda *args: compiled.append(args) or (b"stand-in cubin", ""))
    assert build(kernel, cache=tmp_path) == first and first.stat().st_mtime_ns == mtime and not compiled
    other = build(render(KernelDesc.for_config("mixpert", "level=II")), cache=tmp_path)  # another source: compiled
    assert other != first and len(compiled) == 1 and other.read_bytes() == b"stand-in cubin"


def test_compile_error_names_kernel_template_and_line(tmp_path):
    kernel = render(KernelDesc.for_config("mixpert", "level=IV"))
    marker = "const int g = lane / 4, t = lane % 4;"
    broken = dataclasses.replace(kernel, source=kernel.source.replace(marker, "const int g = lane / 4, t = undeclared;"))
    with pytest.raises(CudaBuildError) as info:
        build(broken, cache=tmp_path)
    err = info.value
    assert err.kernel == kernel.desc.name and err.kernel in str(err)
    where = [d for d in err.diagnostics if d.template == "mixpert_gemm.cu"]
    assert where and "undeclared" in where[0].message
    # the line is the template's own line (here: the original text, as the template has it)
    assert marker in where[0].text


def _nvrtc_or_skip():
    try:
        return find_compiler("nvrtc")
    except CompilerNotFound as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90"])
def test_nvrtc_builds_the_same_kernels(arch, cubin, sass, usage):
    nvrtc = _nvrtc_or_skip()
    _tool_or_skip()
    desc = KernelDesc.for_config("mixpert", "level=IV", arch=arch)
    path = cubin(desc, nvrtc)
    assert opcode_counts(sass(path)["mixpert_gemm"])["IMMA.16832.S8.S8"] >= _mmas_per_chunk(desc)
    assert not any(r.spills for r in usage(path).values())


def test_nvrtc_compile_error_is_mapped_too(tmp_path):
    nvrtc = _nvrtc_or_skip()
    kernel = render(KernelDesc.for_config("mixpert", "level=I"))
    broken = dataclasses.replace(kernel, source=kernel.source.replace("atomicMax(&s_rowmax[ty], e);",
                                                                      "atomicMax(&s_rowmax[ty], e) oops;"))
    with pytest.raises(CudaBuildError) as info:
        build(broken, compiler=nvrtc, cache=tmp_path)
    assert any(d.template == "mixpert_pack.cu" and "atomicMax(&s_rowmax[ty], e);" in d.text
               for d in info.value.diagnostics), info.value.log


@pytest.mark.slow
def test_update_and_transposed_f64_variant_builds_without_spills(tmp_path):
    _tool_or_skip()
    desc = KernelDesc.for_config("mixpert", "level=IV,align=row", dtype="f64", trans_a=True, trans_b=True,
                                 alpha_beta="update")
    cubin = build(render(desc), cache=tmp_path)
    assert opcode_counts(sass_by_kernel(cubin)["mixpert_gemm"])["IMMA.16832.S8.S8"] >= _mmas_per_chunk(desc)
    assert not any(r.spills for r in resource_usage(cubin).values())
