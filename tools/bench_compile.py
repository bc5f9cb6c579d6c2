"""Compile time of @mixjit vs plain @njit on the Cholesky example (target: <= 1.5x).

    python tools/bench_compile.py [--repeats 5] [--write]

Each measurement is a fresh Python process that imports examples/cholesky.py and
compiles ``cholesky`` for float64 and float32 (the first call of each dtype), either
under ``@mixjit`` (as the example declares it) or under plain ``@njit`` of the same
Python function. The two kinds alternate (which goes first flips every round) so
that machine load drifts hit both alike; the report gives the median of each and
their ratio. The mixjit time is everything a user waits for on a first call in a
new process: importing the frontend and passes, loading the entry (from Numba's
disk cache after the first run), compiling the GEMM wrappers, importing the typed
IR, detect-gemm, linking, and Numba's own compile. ``--write`` replaces the
generated section of docs/results/compile_time.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys

import common

CHILD = """
import json, sys, time, warnings
t0 = time.perf_counter()
import numpy as np
from numba import njit
from mixjit.demo import load_example
warnings.simplefilter("ignore")
chol = load_example("cholesky")
a = chol.spd_matrix(64)
f = chol.cholesky if sys.argv[1] == "mixjit" else njit(chol.cholesky.py_func)
t1 = time.perf_counter()
f(a, 16)
f(a.astype(np.float32), 16)
t2 = time.perf_counter()
print(json.dumps({"compile": t2 - t1, "import": t1 - t0}))
"""

KINDS = ("njit", "mixjit")


def measure(kind: str) -> dict[str, float]:
    """One fresh process: seconds to import, and to compile both signatures."""
    return common.child_json(CHILD, [kind], f"bench_compile: the {kind} child")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="rounds (each runs both kinds once)")
    parser.add_argument("--write", action="store_true", help="update docs/results/compile_time.md")
    args = parser.parse_args(argv)
    measure("mixjit")  # warm-up: fills Numba's disk cache of the entry, as any installed copy has it
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    for r in range(args.repeats):
        for kind in KINDS if r % 2 == 0 else KINDS[::-1]:
            times[kind].append(measure(kind)["compile"])
            common.progress(f"round {r + 1}/{args.repeats}: {kind} {times[kind][-1]:.2f} s")
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["mixjit"] / med["njit"]
    rows = [(k, f"{med[k]:.2f}", " ".join(f"{t:.2f}" for t in times[k])) for k in KINDS]
    table = common.markdown_table(["compiler", "median (s)", "all runs (s)"], rows)
    verdict = "within" if ratio <= 1.5 else "OVER"
    lines = table + ["", f"ratio mixjit / njit: **{ratio:.2f}x** ({verdict} the 1.5x target)"]
    print("\n".join(lines))
    if args.write:
        body = "\n".join(common.provenance(["python", "tools/bench_compile.py", *(argv or sys.argv[1:])], None)
                         + [""] + lines)
        common.replace_generated_section(common.ROOT / "docs" / "results" / "compile_time.md", "compile-time", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
