"""``make demo``: run mixopt over examples/demo.mix, printing the IR after every pass.

Until the Numba frontend lands, the demo starts from a hand-written IR dump of a
small dense layer (a GEMM site, constant arithmetic, a dead debug branch, an unused
global) and shows dce and canonicalize at work, with the per-pass timing report.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from mixjit import mixopt

DEMO_FILE = Path(__file__).resolve().parents[1] / "examples" / "demo.mix"
PIPELINE = "dce,canonicalize"


def main() -> int:
    """Run the demo; returns mixopt's exit status."""
    if not DEMO_FILE.is_file():
        print(f"demo: {DEMO_FILE} not found; run `make demo` from a source checkout", file=sys.stderr)
        return 1
    args = [str(DEMO_FILE), "-p", PIPELINE, "--print-ir-after-all", "--timing"]
    print(f"$ mixopt examples/demo.mix -p {PIPELINE} --print-ir-after-all --timing\n")
    print(DEMO_FILE.read_text().rstrip() + "\n")
    result = io.StringIO()
    status = mixopt.main(args, stdout=result, stderr=sys.stdout)  # dumps + timing, in order
    print("// Result:\n" + result.getvalue(), end="")
    return status


if __name__ == "__main__":
    sys.exit(main())
