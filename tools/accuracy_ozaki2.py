"""Accuracy of the Ozaki-II scheme (``ozaki2``) by number of moduli, for float32
and float64 inputs, next to float32/float64 BLAS.

For square n×n×n GEMMs and four input distributions, each row's error against the
exact product is measured two ways:

* the project's metric, the relative Frobenius error ``||C - C_ref||_F / ||C_ref||_F``
  (MixPert paper Eq. 10);
* GEMMul8's metric, the median over elements of ``|C_ij - C_ref,ij| / |C_ref,ij|``
  (GEMMul8/testing/eval.hpp), so that the published figures can be compared.

``C_ref`` is a double-double GEMM of the inputs (tools/accuracy_reference.py:
TwoProduct + TwoSum per term, relative error far below 2^-100 of sum |a||b|),
independent of every scheme.
Rows: native BLAS in the input precision (numpy sgemm/dgemm), ``RN(exact)`` (the
correctly rounded product: the best any scheme can return), and ``ozaki2`` at each
number of moduli (fast mode, and a few in accurate mode). Distributions: uniform [-1, 1], standard normal, wide range
±2^U(-30, 30), and GEMMul8's test matrices ``(U(0,1) - 0.5) * exp(0.5 N(0,1))``
(GEMMul8/testing/make_matrix.hpp, phi = 0.5). CPU seconds (``time.process_time``)
of the executor and of BLAS are printed side by side; they are CPU figures, not
GPU ones.

Usage:
    python tools/accuracy_ozaki2.py [--quick] [--sizes 256 512 1024] [--seed S]
                                    [--json PATH] [--write-docs]

``--write-docs`` updates the generated "accuracy-ozaki2" section of docs/results/accuracy.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Callable, Sequence

import numpy as np
from accuracy_reference import dd_gemm
from common import ROOT, fmt_sci, markdown_table, progress, provenance, replace_generated_section, write_json

from mixjit.runtime.schemes import get_scheme
from mixjit.runtime.schemes.ozaki2 import Ozaki2Config

FULL_SIZES = (256, 512, 1024)
QUICK_SIZES = (32, 64)
DEFAULT_SEED = 20251124
DOCS = ROOT / "docs" / "results" / "accuracy.md"
SECTION = "accuracy-ozaki2"

#: moduli swept per input dtype (the scheme's configs() and a few below them)
MODULI = {np.dtype(np.float32): (4, 5, 6, 7, 8, 9, 10), np.dtype(np.float64): (10, 11, 12, 13, 14, 15, 16, 18, 20)}
#: moduli also run in GEMMul8's accurate mode (``mode=accurate``: one more INT8 GEMM)
ACCURATE_MODULI = {np.dtype(np.float32): (6, 7, 8), np.dtype(np.float64): (12, 13, 14, 15)}

Sampler = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]
DISTRIBUTIONS: dict[str, tuple[str, Sampler]] = {
    "uniform": ("uniform [-1, 1]", lambda rng, s: rng.uniform(-1.0, 1.0, s)),
    "normal": ("standard normal", lambda rng, s: rng.standard_normal(s)),
    "wide": ("wide range ±2^U(-30, 30)", lambda rng, s: rng.choice([-1.0, 1.0], s) * np.exp2(rng.uniform(-30, 30, s))),
    "gemmul8": ("GEMMul8's (U(0,1) - 0.5)·exp(0.5·N(0,1))",
                lambda rng, s: (rng.uniform(0.0, 1.0, s) - 0.5) * np.exp(0.5 * rng.standard_normal(s))),
}


def make_inputs(dist: str, n: int, dtype: np.dtype, seed: int, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Seeded A (n×k), B (k×n), k = n unless given, of ``dist`` in ``dtype``; the
    stream depends only on (seed, dist, n, k)."""
    k = n if k is None else k
    rng = np.random.default_rng([seed, list(DISTRIBUTIONS).index(dist), n, k])
    sample = DISTRIBUTIONS[dist][1]
    return sample(rng, (n, k)).astype(dtype), sample(rng, (k, n)).astype(dtype)


def errors(c: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> tuple[float, float]:
    """(relative Frobenius error, median elementwise relative error) against hi + lo."""
    d = (c.astype(np.float64) - hi) - lo
    frob = float(np.linalg.norm(d) / np.linalg.norm(hi))
    nz = hi != 0
    return frob, float(np.median(np.abs(d[nz]) / np.abs(hi[nz])))


def cpu_timed(fn: Callable[[], np.ndarray]) -> tuple[np.ndarray, float]:
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def measure(sizes: Sequence[int], dists: Sequence[str], seed: int, long_k: int = 0) -> list[dict]:
    """One record per (dtype, dist, n, row); with ``long_k``, also float32 GEMMul8
    matrices of 256 × long_k × 256 (records with ``k`` set), for the published K."""
    oz = get_scheme("ozaki2")
    records = []
    cases = [(dtype, dist, n, n) for dtype in (np.dtype(np.float32), np.dtype(np.float64))
             for dist in dists for n in sizes]
    if long_k:
        cases.append((np.dtype(np.float32), "gemmul8", 256, long_k))
    for dtype, dist, n, k in cases:
        a, b = make_inputs(dist, n, dtype, seed, k)
        hi, lo = dd_gemm(a.astype(np.float64), b.astype(np.float64))
        rows: list[tuple[str, int | None, Callable[[], np.ndarray]]] = [
            ("native", None, lambda: a @ b),
            ("RN(exact)", None, lambda: (hi + lo).astype(dtype)),
        ]
        rows += [(f"moduli={m}", m, lambda m=m: oz.run(a, b, Ozaki2Config(m))) for m in MODULI[dtype]]
        rows += [(f"moduli={m},mode=accurate", m, lambda m=m: oz.run(a, b, Ozaki2Config(m, mode="accurate")))
                 for m in ACCURATE_MODULI[dtype]]
        for key, moduli, run in rows:
            c, secs = cpu_timed(run)
            frob, med = errors(c, hi, lo)
            records.append({"dtype": dtype.name, "dist": dist, "n": n, "k": k, "row": key, "moduli": moduli,
                            "frobenius": frob, "median": med, "cpu_seconds": secs})
            progress(f"[{dtype.name} {dist} n={n} k={k}] {key}: frob {frob:.3e} median {med:.3e} ({secs:.2f} s)")
    return records


def render(records: Sequence[dict], sizes: Sequence[int], dists: Sequence[str], prov: Sequence[str]) -> str:
    """Markdown: per input dtype and distribution, errors by size and CPU time."""
    lines = [*prov, ""]
    big = max(sizes)
    for dtype in ("float32", "float64"):
        for dist in dists:
            recs = [r for r in records if r["dtype"] == dtype and r["dist"] == dist and r["k"] == r["n"]]
            keys = list(dict.fromkeys(r["row"] for r in recs))
            lines += [f"#### {dtype}, {DISTRIBUTIONS[dist][0]}", ""]
            header = ["row", *[f"Frobenius n={n}" for n in sizes], f"median elementwise n={big}",
                      f"CPU s n={big}", "× native"]
            table = []
            for key in keys:
                by_n = {r["n"]: r for r in recs if r["row"] == key}
                native = next(r for r in recs if r["row"] == "native" and r["n"] == big)["cpu_seconds"]
                t = by_n[big]["cpu_seconds"]
                table.append([f"`ozaki2` {key}" if key.startswith("moduli") else key,
                              *[fmt_sci(by_n[n]["frobenius"]) for n in sizes], fmt_sci(by_n[big]["median"]),
                              f"{t:.3f}", f"{t / native:.0f}" if native > 0 and key != "RN(exact)" else "-"])
            lines += markdown_table(header, table) + [""]
    long = [r for r in records if r["k"] != r["n"]]
    if long:
        k = long[0]["k"]
        lines += [f"#### float32, {DISTRIBUTIONS['gemmul8'][0]}, 256 × {k} × 256 (GEMMul8 publishes K = 16384)", ""]
        lines += markdown_table(["row", "Frobenius", "median elementwise", "CPU s"], [
            [f"`ozaki2` {r['row']}" if r["row"].startswith("moduli") else r["row"], fmt_sci(r["frobenius"]),
             fmt_sci(r["median"]), f"{r['cpu_seconds']:.3f}"] for r in long]) + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"small sizes {QUICK_SIZES}")
    p.add_argument("--sizes", type=int, nargs="+", help=f"matrix sizes (default {FULL_SIZES})")
    p.add_argument("--dists", nargs="+", choices=list(DISTRIBUTIONS), default=list(DISTRIBUTIONS))
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--long-k", type=int, default=None,
                   help="also float32 GEMMul8 matrices 256 x K x 256 (default 16384 in full runs, off with --quick)")
    p.add_argument("--json", type=str, help="also write every record as JSON here")
    p.add_argument("--write-docs", action="store_true", help=f"update the {SECTION} section of docs/results/accuracy.md")
    args = p.parse_args(argv)
    if args.write_docs and args.quick:
        p.error("--write-docs needs a full run; quick numbers do not go into the docs")
    sizes = tuple(sorted(args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)))
    long_k = args.long_k if args.long_k is not None else (0 if args.quick else 16384)
    records = measure(sizes, args.dists, args.seed, long_k)
    text = render(records, sizes, args.dists, provenance(["python", "tools/accuracy_ozaki2.py", *sys.argv[1:]], args.seed))
    print(text)
    if args.json:
        import pathlib

        write_json(pathlib.Path(args.json), {"sizes": sizes, "dists": args.dists, "seed": args.seed, "records": records})
    if args.write_docs:
        replace_generated_section(DOCS, SECTION, text)
        progress(f"accuracy_ozaki2: wrote the {SECTION} section of {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
