"""Peak memory of one ``mixjit.gemm`` against numpy's ``a @ b``, above the process's baseline.

Each measurement runs in a fresh Python process: it makes the operands (and, for mixjit, warms
the executor up on a small GEMM, so compiling or loading code is not counted), takes its resident
size as the baseline, resets the kernel's peak-RSS mark (``/proc/self/clear_refs``, Linux), runs
the GEMM once and reads the peak (``VmHWM``). The result array is counted, as for numpy. Prints
both peaks and their ratio, and writes them to ``docs/results/gemm_memory.json`` (``--out``), which
docs/results/executor_speed.md cites; issue 26 asks for at most ``TARGET_RATIO`` x numpy's.

For a MixPert scheme a third process runs the general path's steps one by one (both operands
split, the result array, the product: ``runtime/mixpert/lazy.general_gemm`` and
``mixpert.driver.multiply_into`` unrolled) and records what each adds to the resident
size and the peak inside the product: where the memory goes.

    .venv/bin/python tools/bench_gemm_memory.py [--n 2048] [--dtype float32] [--scheme mixpert]
"""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path

import common

DEFAULT_OUT = common.ROOT / "docs" / "results" / "gemm_memory.json"
TARGET_RATIO = 4.0
"""mixjit.gemm's peak above baseline may be at most this many times numpy's (issue 26, item 9)."""

_CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(field + " not in /proc/self/status")

    how, n, dtype, scheme = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    if how == "stages":
        import mixjit
        from mixjit.runtime.mixpert.driver import _result_array, product
        from mixjit.runtime.mixpert.words import DOMAIN_FP32, N_STATS, W_DOMAIN
        from mixjit.runtime.mixpert.split import prepare_call_operand
        from mixjit.runtime.schemes.base import resolve_scheme

        scheme_obj, fixed = resolve_scheme(scheme)
        params = np.array((fixed or scheme_obj.default_config()).words(), dtype=np.int64)
        small = np.ones((64, 64), dtype)
        mixjit.gemm(small, small, scheme)
        out, live = {}, status("VmRSS")
        c = np.empty((n, n), dtype)
        for step in ("split A", "split B", "result array (c itself, or a float64 scratch)"):
            if step == "split A":
                pa = prepare_call_operand(a, False, params)
                out[step + ": raw kept, q (bytes)"] = [int(pa.raw.nbytes), int(pa.q.nbytes)]
            elif step == "split B":
                pb = prepare_call_operand(b, True, params)
            else:
                c[:] = 0.0
                scratch = _result_array(c, a, b, bool(params[W_DOMAIN] == DOMAIN_FP32))
                scratch[:] = 0.0
            now = status("VmRSS")
            out[step] = now - live
            live = now
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        product(pa, pb, params, scratch, np.zeros(N_STATS, np.int64), (a, b))
        out["product: peak above its start (packed blocks, block products)"] = status("VmHWM") - live
        print(json.dumps(out))
        raise SystemExit(0)
    if how == "mixjit":
        import mixjit
        small = np.ones((64, 64), dtype)
        mixjit.gemm(small, small, scheme)  # compile or load the executor: not part of the GEMM
        run = lambda: mixjit.gemm(a, b, scheme)
    else:
        small = np.ones((64, 64), dtype)
        small @ small  # BLAS threads and buffers started, as for mixjit
        run = lambda: a @ b
    baseline = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak-RSS mark to the current size
    c = run()
    peak = status("VmHWM")
    print(json.dumps({"baseline_bytes": baseline, "peak_bytes": peak, "above_baseline_bytes": peak - baseline,
                      "result_bytes": int(c.nbytes)}))
    """
)


def measure(how: str, n: int, dtype: str, scheme: str) -> dict:
    """One fresh process's numbers (``how``: ``numpy`` or ``mixjit``)."""
    return common.child_json(_CHILD, [how, str(n), dtype, scheme], f"the {how} measurement", timeout=900)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2048, help="square GEMM size (default 2048)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--scheme", default="mixpert", help="mixjit.gemm scheme (default mixpert)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write (default %(default)s)")
    args = parser.parse_args(argv)
    rows = {how: measure(how, args.n, args.dtype, args.scheme) for how in ("numpy", "mixjit")}
    mib = 2.0 ** 20
    stages = measure("stages", args.n, args.dtype, args.scheme) if args.scheme.startswith("mixpert") else {}
    ratio = rows["mixjit"]["above_baseline_bytes"] / max(rows["numpy"]["above_baseline_bytes"], 1)
    for how, row in rows.items():
        print(f"{how:>6}: peak {row['above_baseline_bytes'] / mib:7.1f} MiB above baseline "
              f"(result {row['result_bytes'] / mib:.1f} MiB)")
    print(f"ratio mixjit/numpy: {ratio:.1f}x (target at most {TARGET_RATIO:g}x)")
    for step, size in stages.items():
        if isinstance(size, int):
            print(f"  {step}: {size / mib:.1f} MiB")
    record = {"n": args.n, "dtype": args.dtype, "scheme": args.scheme, "ratio": round(ratio, 2),
              "target_ratio": TARGET_RATIO, **{how: row for how, row in rows.items()}, "mixjit_stages_bytes": stages}
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
