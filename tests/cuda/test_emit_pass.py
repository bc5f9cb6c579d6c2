"""The emit-cuda pass as a library: what each site's kernel is built from, re-running it, and
--emit-dir's refusal of a module edited after the pass (the golden test is
tests/filecheck/emit-cuda.mix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mixjit.ir.attributes import to_attr
from mixjit.ir.dialects.mix import GemmOp, KernelOp
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.passes.emit_cuda import EmitCuda, site_choice, write_kernels
from mixjit.passes.manager import PassManager
from mixjit.runtime.cuda.emit import render
from mixjit.runtime.cuda.desc import MOST_PRECISE, KernelDesc

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
    assert {k.arch.value for k in kernels} == {"sm_90"} and len(kernels) == 4


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
    with pytest.raises(ValueError, match="no longer matches its sites"):
        write_kernels(module, tmp_path)
