"""KernelDesc and the template renderer: the pure label parser agrees with the scheme's, the
renderer declares typed compile-time parameters only, and unsupported configs are refused."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mixjit.runtime.cuda.desc import UnsupportedConfig
from mixjit.runtime.cuda.emit import _declaration, render
from mixjit.runtime.cuda.registry import kernel_desc
from mixjit.runtime.mixpert.cuda.desc import MOST_PRECISE, KernelDesc, parse_label
from mixjit.runtime.schemes import get_scheme

LABELS = ["", "level=IV", "level=I", "level=full,align=row,rounding=trunc", "segments=4,pairs=sig3",
          "pairs=00.01.10", "level=IV,tile=32x64x16,fallback=off", "level=II,seg0_bits=6,fallback=5",
          "level=IV,digits=balanced"]


@pytest.mark.parametrize("label", LABELS)
def test_label_parser_agrees_with_the_scheme(label):
    cfg = get_scheme("mixpert").parse_config(label)
    fields = parse_label(label)
    for name in ("segments", "seg0_bits", "digits", "align", "rounding", "tile", "fallback"):
        assert fields[name] == getattr(cfg, name), name
    assert tuple(sorted(fields["pairs"])) == cfg.pairs


def test_most_precise_is_the_schemes_first_config():
    assert get_scheme("mixpert").configs()[0].label == MOST_PRECISE


@pytest.mark.parametrize("label", ["level=V", "colour=red", "level"])
def test_bad_labels_raise(label):
    with pytest.raises(ValueError):
        parse_label(label)


@pytest.mark.parametrize("scheme,label,why", [
    ("native", "", "has no CUDA kernel yet"), ("mixpert", "segments=8,pairs=sig6,digits=balanced", "at most 7"),
    ("mixpert", "level=IV,tile=16x48x8", "multiple of the MMA k"),
    ("mixpert", "segments=5,pairs=sig4", "overflows int64")])
def test_unsupported_configs_name_the_reason(scheme, label, why):
    with pytest.raises(UnsupportedConfig, match=why):
        kernel_desc(scheme, label)


def test_mixpert_desc_refuses_other_schemes():
    with pytest.raises(UnsupportedConfig, match="registry.kernel_desc"):
        KernelDesc.for_config("tf32x3", "products=3")


def test_render_is_deterministic_and_specialised():
    a = render(KernelDesc.for_config("mixpert", "level=IV"))
    assert a.source == render(KernelDesc.for_config("mixpert", "level=IV")).source
    b = render(KernelDesc.for_config("mixpert", "level=I"))
    assert a.source_hash != b.source_hash
    assert "typedef IntList<0, 0, 1, 1> kPairA;" in b.source and "constexpr int kNumPairs = 4;" in b.source
    assert "constexpr bool kTransA = true;" in render(KernelDesc.for_config("mixpert", "", trans_a=True)).source


@pytest.mark.parametrize("value", [1.5, "x", (), (1, "a"), 2**64])
def test_declarations_are_typed(value):
    with pytest.raises(TypeError):
        _declaration("kX", value)


def test_emitter_imports_no_numba():
    code = ("import sys, mixjit.runtime.cuda.emit, mixjit.runtime.cuda.desc, mixjit.runtime.cuda.build, "
            "mixjit.runtime.cuda.sass, mixjit.runtime.cuda.registry, mixjit.runtime.mixpert.cuda.desc, "
            "mixjit.passes.emit_cuda; "
            "mixjit.runtime.cuda.emit.render(mixjit.runtime.mixpert.cuda.desc.KernelDesc.for_config('mixpert', 'level=IV')); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_family_desc_composes_the_one_tiling_description():
    """Each family's desc holds its CTA tile, warp grid, pipeline, arch, transposes and
    alpha/beta mode in one TileDescription (no desc re-declares those fields), takes them by
    name in for_config, and reads them back as its own attributes."""
    import dataclasses

    from mixjit.runtime.cuda.desc import TILING_FIELDS, TileDescription
    from mixjit.runtime.cuda.registry import desc_factory, kernel_schemes

    for scheme in kernel_schemes():
        factory = desc_factory(scheme)
        config = "" if scheme != "split" else "fp16=0"
        dtype = "f64" if scheme == "mixpert-fp64" else "f32"  # the one scheme of float64 operands only
        desc = factory(scheme, config, dtype, arch="sm_90", trans_b=True)
        names = {f.name for f in dataclasses.fields(desc)}
        assert "tiling" in names and not names & set(TILING_FIELDS), (scheme, names & set(TILING_FIELDS))
        assert isinstance(desc.tiling, TileDescription)
        assert (desc.arch, desc.trans_b, desc.block) == ("sm_90", True, desc.tiling.block)
    with pytest.raises(TypeError, match="not both"):
        KernelDesc.for_config("mixpert", "level=IV", tiling=TileDescription(), arch="sm_90")


def test_targets_load_on_the_capabilities_cuda_says():
    """Binary compatibility within a major version (X.y loads on X.z, z >= y); an ``a`` target on its
    own capability only: B300 (10.3) does not load sm_100a, it gets sm_103a; cc 11.0 (Thor) none."""
    from mixjit.runtime.cuda.desc import ARCHS, TARGETS, target_for

    found = {cc: getattr(target_for(*cc), "arch", None)
             for cc in ((7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1))}
    assert found == {(7, 5): None, (8, 0): "sm_80", (8, 6): "sm_80", (8, 9): "sm_80", (9, 0): "sm_90",
                     (10, 0): "sm_100a", (10, 3): "sm_103a", (11, 0): None, (12, 0): "sm_120", (12, 1): "sm_120"}
    assert not TARGETS["sm_100a"].loads_on(10, 3) and not TARGETS["sm_103a"].loads_on(10, 0)
    assert ARCHS == ("sm_80", "sm_90", "sm_100a", "sm_103a", "sm_120")


def test_the_sass_table_names_the_ptx_the_templates_issue():
    """Every MMA kind of the SASS table is one the templates issue (its PTX is in them), every target
    rates every kind, and an unknown target or kind is an error naming the table."""
    from pathlib import Path

    from mixjit.runtime.cuda import desc as cuda_desc

    templates = "".join(p.read_text() for p in (Path(cuda_desc.__file__).parent / "templates").glob("*.cu*"))
    for kind, ptx in cuda_desc.MMA_PTX.items():
        assert f'"{ptx} ' in templates, kind
    for target in cuda_desc.TARGETS.values():
        assert set(target.sass) == set(cuda_desc.MMA_PTX), target.arch
    assert cuda_desc.mma_sass("sm_120", "s8") == "IMMA.16832.S8.S8"
    with pytest.raises(ValueError, match="sm_110.*TARGETS"):
        cuda_desc.mma_sass("sm_110", "s8")
