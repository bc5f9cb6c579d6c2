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
        config = {"split": "fp16=0", "dfp": "bits=8"}.get(scheme, "")  # the default (dfp: 16 bits) has no kernel
        dtype = "f64" if scheme == "mixpert-fp64" else "f32"  # the one scheme of float64 operands only
        desc = factory(scheme, config, dtype, arch="sm_90", trans_b=True)
        names = {f.name for f in dataclasses.fields(desc)}
        assert "tiling" in names and not names & set(TILING_FIELDS), (scheme, names & set(TILING_FIELDS))
        assert isinstance(desc.tiling, TileDescription)
        assert (desc.arch, desc.trans_b, desc.block) == ("sm_90", True, desc.tiling.block)
    with pytest.raises(TypeError, match="not both"):
        KernelDesc.for_config("mixpert", "level=IV", tiling=TileDescription(), arch="sm_90")
