"""``mixjit.ir`` stays light: importing every IR module pulls in no numba, numpy or llvmlite
(``mixopt`` on a dump must not pay for them)."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

IR_DIR = Path(__file__).resolve().parents[2] / "ir"


def ir_modules() -> list[str]:
    names = ["mixjit.ir"]
    for info in pkgutil.walk_packages([str(IR_DIR)], prefix="mixjit.ir."):
        names.append(info.name)
    return names


def test_every_ir_module_is_found() -> None:
    modules = ir_modules()
    for expected in ("mixjit.ir.parser", "mixjit.ir.verifier", "mixjit.ir.dialects.mix", "mixjit.ir.rewriting"):
        assert expected in modules


def test_importing_the_ir_loads_no_heavy_packages() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {ir_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "from mixjit.ir.parser import parse_module\n"
        "parse_module('\"test.op\"() : () -> ()')\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'numpy', 'llvmlite', 'scipy'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing mixjit.ir pulled in: {out}"
