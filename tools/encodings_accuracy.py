"""Accuracy of the operand encodings (sf16, sf8, pct<p>) of int8 and split, on data
that lies mostly in [-1, 1] and has outliers (seed 002's setting), beside dfp and
vitbit, with each config's modeled speed.

Operands: N(0, 0.3²) entries (about 0.1 % beyond ±1), of which a share ``rate`` is
replaced by outliers ±10^u, u uniform in [0.5, 2] (magnitudes 3 to 100). For each
row the relative Frobenius error against float64 (paper Eq. 10) is averaged over
the sizes and seeds; "kept FP32" is the share of operand elements the encoding left
in FP32 at the middle outlier rate; the modeled speedup is the cost model's
(runtime/model/costmodel.py) over native FP32 SGEMM at 4096³ on an A100: modeled, not
measured.

Usage:
    python tools/encodings_accuracy.py [--quick] [--sizes 128 256] [--seeds 2]
                                       [--json PATH] [--write-docs]

``--write-docs`` rewrites the generated table in docs/results/encodings_accuracy.md (section
"Operand encodings") and docs/results/encodings_accuracy.json.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
from common import ROOT, fmt_sci, markdown_table, progress, provenance, replace_generated_section, write_json

from mixjit.runtime.model.costmodel import modeled_speedup
from mixjit.runtime.schemes import get_scheme

RATES = (0.0, 0.005, 0.02)
SEED = 2002
DOCS = ROOT / "docs" / "results" / "encodings_accuracy.md"
JSON = ROOT / "docs" / "results" / "encodings_accuracy.json"
ENCODINGS = ("int8", "sf16", "sf8", "pct99.9", "pct99", "pct95")
ROWS: tuple[tuple[str, str], ...] = (
    ("native", "accumulate=blas"),
    *[("int8", "scale=row-col" + ("" if e == "int8" else f",encoding={e}")) for e in ENCODINGS],
    *[("split", "fp16=0.25" + ("" if e == "int8" else f",encoding={e}")) for e in ENCODINGS],
    ("dfp", "bits=16,block=1"), ("dfp", "bits=8,block=1"), ("dfp", "bits=8,block=tensor"),
    ("vitbit", "bits=8"), ("vitbit", "bits=4"),
)


def operand(rng: np.random.Generator, shape: tuple[int, int], rate: float) -> np.ndarray:
    """Mostly-in-[-1, 1] data with a share ``rate`` of outliers of magnitude 3..100."""
    x = rng.normal(0.0, 0.3, shape)
    hit = rng.random(shape) < rate
    x[hit] = rng.choice([-1.0, 1.0], hit.sum()) * 10.0 ** rng.uniform(0.5, 2.0, hit.sum())
    return x.astype(np.float32)


def measure(sizes: list[int], seeds: int) -> list[dict]:
    """One record per row: mean error per outlier rate, kept-FP32 share, modeled speedup."""
    out = []
    for name, label in ROWS:
        scheme = get_scheme(name)
        cfg = scheme.parse_config(label)
        errs = {rate: [] for rate in RATES}
        kept = []
        for n in sizes:
            for seed in range(seeds):
                for rate in RATES:
                    rng = np.random.default_rng([SEED, n, seed, int(rate * 1e4)])
                    a, b = operand(rng, (n, n), rate), operand(rng, (n, n), rate)
                    ref = a.astype(np.float64) @ b.astype(np.float64)
                    c, stats = scheme.run_with_stats(a, b, cfg)
                    errs[rate].append(float(np.linalg.norm(c - ref) / np.linalg.norm(ref)))
                    if rate == RATES[1] and "outliers" in stats.extra:
                        kept.append(stats.extra["outliers"] / (a.size + b.size))
        progress(f"{name} {cfg.label}")
        out.append({
            "scheme": name, "config": cfg.label,
            "error": {str(r): float(np.mean(v)) for r, v in errs.items()},
            "kept_fp32": float(np.mean(kept)) if kept else None,
            "modeled_speedup_a100_4096": modeled_speedup(name, cfg, 4096, 4096, 4096, np.float32, "a100"),
        })
    return out


def table(records: list[dict]) -> list[str]:
    header = ["scheme", "config", *[f"error, {100 * r:g} % outliers" for r in RATES],
              "kept FP32 (0.5 %)", "modeled speedup, A100 4096³"]
    rows = [[r["scheme"], f"`{r['config']}`", *[fmt_sci(r["error"][str(x)]) for x in RATES],
             "—" if r["kept_fp32"] is None else f"{100 * r['kept_fp32']:.2f} %",
             f"{r['modeled_speedup_a100_4096']:.2f}× (modeled)"] for r in records]
    return markdown_table(header, rows)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes 32 and 64, one seed (seconds)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[128, 256])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--json", default=None, help="write the records here")
    ap.add_argument("--write-docs", action="store_true", help="update docs/results/encodings_accuracy.md and docs/results/encodings_accuracy.json")
    args = ap.parse_args(argv)
    if args.quick and args.write_docs:
        ap.error("--write-docs needs a full run (drop --quick)")
    sizes, seeds = ([32, 64], 1) if args.quick else (args.sizes, args.seeds)
    records = measure(sizes, seeds)
    lines = table(records)
    print("\n".join(lines))
    if args.json:
        write_json(pathlib.Path(args.json), records)
    if args.write_docs:
        write_json(JSON, {"sizes": sizes, "seeds": seeds, "rates": RATES, "records": records})
        body = "\n".join([*provenance(["python", "tools/encodings_accuracy.py", *argv], SEED),
                          f"- sizes {sizes} (square), {seeds} seeds each; errors are means", "", *lines])
        replace_generated_section(DOCS, "encodings-accuracy", "\n" + body + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
