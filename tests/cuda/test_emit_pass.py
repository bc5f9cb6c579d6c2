"""The emit-cuda pass as a library: what each site's kernel is built from, re-running it, and
--emit-dir's refusal of a module edited after the pass (the golden test is
tests/filecheck/emit-cuda.mix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mixjit.ir.attributes import to_attr
from mixjit.ir.diagnostics import DiagnosticError
from mixjit.ir.dialects.mix import GemmOp, KernelOp
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.passes.emit_cuda import EmitCuda, site_choice, write_kernels
from mixjit.passes.manager import PassManager
from mixjit.passes.pass_base import PassContext
from mixjit.runtime.cuda.emit import render
from mixjit.runtime.mixpert.cuda.desc import MOST_PRECISE, KernelDesc

GOLDEN = Path(__file__).resolve().parents[1] / "filecheck" / "emit-cuda.mix"


def _module():
    text = "\n".join(l for l in GOLDEN.read_text().splitlines() if not l.startswith("//"))
    return parse_module(text, "emit-cuda.mix")


def _run(module, arch="sm_80"):
    PassManager([EmitCuda(arch=arch)]).run(module)
    return [op for op in module.walk() if isinstance(op, KernelOp)]


def test_site_choice_order_plan_runs_default():
    sites = {op.site.value: op for op in _module().walk() if isinstance(op, GemmOp)}
    assert site_choice(sites[0]) == ("mixpert", "level=II", "mix.plan")
    assert site_choice(sites[1]) == ("mixpert", "level=IV", "mix.runs")
    assert site_choice(sites[2]) == ("mixpert", MOST_PRECISE, "default")


def test_rerunning_replaces_the_kernels():
    module = _module()
    first = print_op(module)
    _run(module)
    once = print_op(module)
    assert once != first
    _run(module)
    assert print_op(module) == once
    kernels = _run(module, "sm_90")
    assert {k.arch.value for k in kernels} == {"sm_90"} and len(kernels) == 7
    assert {k.scheme.value for k in kernels} == {"mixpert", "mixpert-fp64", "tf32x3", "bf16xn"}


def test_kernel_hash_is_the_rendered_source(tmp_path):
    module = _module()
    kernels = _run(module)
    manifest = json.loads(write_kernels(module, tmp_path).read_text())
    assert [k["name"] for k in manifest["kernels"]] == [k.sym_name.value for k in kernels]
    first = kernels[0]
    desc = KernelDesc.for_config("mixpert", "level=II")
    assert render(desc).source == (tmp_path / first.file.value).read_text()
    assert first.source_hash.value == render(desc).source_hash


def test_emit_dir_refuses_a_module_changed_after_the_pass(tmp_path):
    module = _module()
    _run(module)
    site0 = next(op for op in module.walk() if isinstance(op, GemmOp) and op.site.value == 0)
    site0.attributes["mix.plan"] = to_attr({"scheme": "mixpert", "config": "level=I", "modeled_time": 1e-4})
    with pytest.raises(DiagnosticError, match="no longer matches its sites"):
        write_kernels(module, tmp_path)


def test_every_kernel_family_is_emitted_and_unsupported_modes_are_remarked():
    """ozaki2 and split sites get their kernels; an ozaki2 site with alpha/beta keeps its CPU
    executor with a remark that says why."""
    text = """"func.func"() <{sym_name = "f", function_type = (!py.array<f64, 2, C>, !py.array<f32, 2, C>) -> ()}> ({
^bb0(%d: !py.array<f64, 2, C>, %x: !py.array<f32, 2, C>):
  %a = "mix.gemm"(%d, %d) <{dtype = f64, site = 0 : i64}> {mix.plan = {config = "moduli=14", modeled_time = 1.0e-04 : f64, scheme = "ozaki2"}} : (!py.array<f64, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C> loc("f.py":2:8)
  %b = "mix.gemm"(%x, %x) <{dtype = f32, site = 1 : i64}> {mix.plan = {config = "fp16=auto", modeled_time = 1.0e-04 : f64, scheme = "split"}} : (!py.array<f32, 2, C>, !py.array<f32, 2, C>) -> !py.array<f32, 2, C> loc("f.py":3:8)
  %c = "mix.gemm"(%d, %d, %d) <{alpha = -1.0 : f64, beta = 1.0 : f64, dtype = f64, site = 2 : i64}> {mix.plan = {config = "moduli=14", modeled_time = 1.0e-04 : f64, scheme = "ozaki2"}} : (!py.array<f64, 2, C>, !py.array<f64, 2, C>, !py.array<f64, 2, C>) -> !py.array<f64, 2, C> loc("f.py":4:8)
  "func.return"() : () -> ()
}) : () -> ()
"""
    module = parse_module(text, "f.mix")
    remarks = []
    EmitCuda(arch="sm_90").run(module, PassContext(remarks.append))
    kernels = {k.scheme.value: [s.value for s in k.sites] for k in module.walk() if isinstance(k, KernelOp)}
    assert kernels == {"ozaki2": [0], "split": [1]}
    assert any("site 2 keeps its CPU executor" in str(r) and "product mode" in str(r) for r in remarks), remarks


COMPLEX_SITES = """"func.func"() <{sym_name = "z", function_type = (!py.array<complex<f32>, 2, C>, !py.array<complex<f64>, 2, C>, !py.array<f32, 2, C>) -> ()}> ({
^bb0(%c: !py.array<complex<f32>, 2, C>, %z: !py.array<complex<f64>, 2, C>, %x: !py.array<f32, 2, C>):
  %a = "mix.gemm"(%c, %c) <{dtype = complex<f32>, site = 0 : i64}> {mix.plan = {config = "form=3,real=mixpert(level=IV)", modeled_time = 1.0e-04 : f64, scheme = "complex"}} : (!py.array<complex<f32>, 2, C>, !py.array<complex<f32>, 2, C>) -> !py.array<complex<f32>, 2, C> loc("z.py":2:8)
  %b = "mix.gemm"(%x, %x) <{dtype = f32, site = 1 : i64}> {mix.plan = {config = "level=IV", modeled_time = 1.0e-04 : f64, scheme = "mixpert"}} : (!py.array<f32, 2, C>, !py.array<f32, 2, C>) -> !py.array<f32, 2, C> loc("z.py":3:8)
  %d = "mix.gemm"(%z, %z, %z) <{alpha = -1.0 : f64, beta = 1.0 : f64, dtype = complex<f64>, site = 2 : i64}> {mix.plan = {config = "form=4,real=ozaki2(moduli=14)", modeled_time = 1.0e-04 : f64, scheme = "complex"}} : (!py.array<complex<f64>, 2, C>, !py.array<complex<f64>, 2, C>, !py.array<complex<f64>, 2, C>) -> !py.array<complex<f64>, 2, C> loc("z.py":4:8)
  %e = "mix.gemm"(%z, %z) <{dtype = complex<f64>, site = 3 : i64}> : (!py.array<complex<f64>, 2, C>, !py.array<complex<f64>, 2, C>) -> !py.array<complex<f64>, 2, C> loc("z.py":5:8)
  %f = "mix.gemm"(%c, %c) <{dtype = complex<f32>, site = 4 : i64}> {mix.plan = {config = "", modeled_time = 1.0e-04 : f64, scheme = "native"}} : (!py.array<complex<f32>, 2, C>, !py.array<complex<f32>, 2, C>) -> !py.array<complex<f32>, 2, C> loc("z.py":6:8)
  %g = "mix.gemm"(%c, %c) <{dtype = complex<f32>, site = 5 : i64}> : (!py.array<complex<f32>, 2, C>, !py.array<complex<f32>, 2, C>) -> !py.array<complex<f32>, 2, C> loc("z.py":7:8)
  "func.return"() : () -> ()
}) : () -> ()
"""


def test_complex_sites_get_the_real_kernels_and_the_complex_epilogue(tmp_path):
    """A complex site's kernels are its real scheme's (product mode, shared with a real site of the
    same desc) and the complex epilogue (the site's alpha/beta mode: C -= A@B on complex128 under
    Ozaki-II, whose own kernel has only product mode); a complex site whose real config has no
    kernel, or that runs another scheme, keeps its CPU executor with a remark saying which (complex128's
    default, over mixpert-fp64, has kernels since mixpert-fp64 has)."""
    from mixjit.runtime.cuda.registry import kernel_desc

    module = parse_module(COMPLEX_SITES, "z.mix")
    remarks = []
    EmitCuda(arch="sm_90").run(module, PassContext(remarks.append))
    kernels = {k.sym_name.value: (k.scheme.value, k.config.value, [s.value for s in k.sites])
               for k in module.walk() if isinstance(k, KernelOp)}
    c64 = kernel_desc("complex", "form=3,real=mixpert(level=IV)", "f32", arch="sm_90")
    c128 = kernel_desc("complex", "form=4,real=ozaki2(moduli=14)", "f64", arch="sm_90", alpha_beta="update")
    default = kernel_desc("complex", f"form=4,real=mixpert({MOST_PRECISE})", "f32", arch="sm_90")
    z128 = kernel_desc("complex", "form=4,real=mixpert-fp64()", "f64", arch="sm_90")  # complex128's default
    assert kernels == {
        c64.real.name: ("mixpert", "level=IV", [0, 1]),  # one kernel for the complex site's parts and the real site
        c64.name: ("complex", "form=3,real=mixpert(level=IV)", [0]),
        c128.real.name: ("ozaki2", "moduli=14", [2]),
        c128.name: ("complex", "form=4,real=ozaki2(moduli=14)", [2]),
        default.real.name: ("mixpert", MOST_PRECISE, [5]),
        default.name: ("complex", f"form=4,real=mixpert({MOST_PRECISE})", [5]),
        z128.real.name: ("mixpert-fp64", "", [3]),
        z128.name: ("complex", "form=4,real=mixpert-fp64()", [3]),
    }
    assert c128.real.alpha_beta == "product" and c128.alpha_beta == "update"
    said = [str(r) for r in remarks]
    assert len(said) == 1, said
    assert "site 4 keeps its CPU executor" in said[0] and "complex<f32> site under 'native'" in said[0]
    manifest = json.loads(write_kernels(module, tmp_path).read_text())
    entries = {k["name"]: k["entry_points"] for k in manifest["kernels"]}
    assert entries[c64.name] == ["complex_combine"]
    assert entries[c64.real.name] == ["mixpert_pack_a", "mixpert_pack_b", "mixpert_gemm"]
    source = (tmp_path / f"{c128.name}.cu").read_text()
    assert source == render(c128).source and "constexpr bool kAlphaBetaUpdate = true;" in source
