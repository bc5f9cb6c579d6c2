"""CPU time of the complex wrapper's executor against numpy's complex matmul, side by side.

    .venv/bin/python tools/bench_complex.py [--sizes 1024 2048] [--repeats 3] [--out FILE]

For complex64 and complex128 square GEMMs of normal data (both parts), ``mixjit.gemm(a, b,
"complex", config)`` and ``a @ b`` (cgemm/zgemm) are timed alternately in one process, in CPU
time of all threads (``time.process_time``), after one warm-up call each; each repeat gives a
ratio and the median is reported. The configs: the default real scheme's most precise config
(MixPert for complex64, mixpert-fp64 for complex128) in the 4-product form and in Gauss's
3-product form. Results go to ``docs/results/complex_speed.json`` and the table of
``docs/results/complex_speed.md`` (between its generated-section markers).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from common import ROOT, markdown_table, progress, provenance, replace_generated_section, write_json

from mixjit import gemm
from mixjit.runtime.complex import COMPLEX, ComplexConfig

DEFAULT_JSON = ROOT / "docs" / "results" / "complex_speed.json"
DEFAULT_PAGE = ROOT / "docs" / "results" / "complex_speed.md"
DTYPES = (np.dtype(np.complex64), np.dtype(np.complex128))


def _cpu(fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def configs(dtype: np.dtype) -> list[ComplexConfig]:
    """The most precise real config of the default real scheme, in form 4 and form 3."""
    top = COMPLEX.default_config(dtype)
    return [top, ComplexConfig(3, top.real, top.real_config)]


def measure(sizes: Sequence[int], repeats: int, seed: int = 0) -> list[dict]:
    """One record per (dtype, n, config): the median ratio and every repeat's times."""
    rng = np.random.default_rng(seed)
    records = []
    for dtype in DTYPES:
        for n in sizes:
            a = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(dtype)
            b = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(dtype)
            for cfg in configs(dtype):
                progress(f"{dtype.name} n={n} {cfg.label}")
                gemm(a, b, "complex", cfg.label)  # warm-up: load the executors' paths
                a @ b
                pairs = [(_cpu(lambda: gemm(a, b, "complex", cfg.label)), _cpu(lambda: a @ b))
                         for _ in range(repeats)]
                ratios = sorted(t / max(t_np, 1e-9) for t, t_np in pairs)
                records.append({"dtype": dtype.name, "n": n, "config": cfg.label,
                                "median_ratio": ratios[len(ratios) // 2], "seconds": pairs})
    return records


def table(records: list[dict]) -> list[str]:
    return markdown_table(
        ["dtype", "n", "config", "CPU time / numpy's (median)", "mixjit s, numpy s (each repeat)"],
        [[r["dtype"], r["n"], f"`{r['config']}`", f"{r['median_ratio']:.1f}x",
          "; ".join(f"{t:.2f}, {t_np:.3f}" for t, t_np in r["seconds"])] for r in records])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=DEFAULT_JSON, help="JSON file (default %(default)s)")
    parser.add_argument("--page", type=Path, default=DEFAULT_PAGE, help="page whose table is replaced")
    args = parser.parse_args(argv)
    if args.repeats < 1 or any(n < 1 for n in args.sizes):
        parser.error("--sizes and --repeats must be positive")
    records = measure(args.sizes, args.repeats)
    lines = table(records)
    print("\n".join(lines))
    write_json(args.out, {"records": records, "provenance": provenance(sys.argv, 0)})
    if args.page.exists():
        replace_generated_section(args.page, "complex-speed", "\n".join(provenance(sys.argv, 0) + [""] + lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
