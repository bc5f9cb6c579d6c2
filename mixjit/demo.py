"""``make demo``: the blocked Cholesky example under ``@mixjit``, then mixopt on its IR.

Part 1 runs examples/cholesky.py: the function is compiled by ``@mixjit``, its
GEMM site (the fused trailing update ``A[e:, e:] -= P @ P.T``) is linked to the
run-time entry, and the demo prints the sites, their DAG, the per-site call
counts and the error against a float64 reference.

Part 2 dumps the function's mix IR (``f.dump``) and runs
``mixopt cholesky.mix -p detect-gemm,build-dag --print-ir-after-all --timing``
on it, showing the IR after each pass.
"""

from __future__ import annotations

import importlib.util
import io
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from mixjit import mixopt

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PIPELINE = "detect-gemm,build-dag"


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` once per process (as ``mixjit_example_<name>``),
    so its ``@mixjit`` functions compile once however many callers use them."""
    module_name = f"mixjit_example_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"demo: {path} not found; run `make demo` from a source checkout")
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def main() -> int:
    """Run the demo; returns mixopt's exit status."""
    try:
        chol = load_example("cholesky")
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    print("== 1. examples/cholesky.py under @mixjit ==\n")
    chol.main()
    with tempfile.TemporaryDirectory() as tmp:
        dump = chol.cholesky.dump(Path(tmp) / "cholesky.mix", *chol.cholesky.signatures[0])
        print(f"\n== 2. mixopt on the dumped IR (f.dump) ==\n")
        print(f"$ mixopt cholesky.mix -p {PIPELINE} --print-ir-after-all --timing\n")
        result = io.StringIO()
        status = mixopt.main([str(dump), "-p", PIPELINE, "--print-ir-after-all", "--timing"],
                             stdout=result, stderr=sys.stdout)
    print("// Result:\n" + result.getvalue(), end="")
    return status


if __name__ == "__main__":
    sys.exit(main())
