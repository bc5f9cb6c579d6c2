"""Accuracy table of every GEMM scheme, in the style of the MixPert paper (§4.3).

For square sizes n×n×n and three input distributions, each row's relative Frobenius
error against an FP64 reference (paper Eq. 10) is measured:

    err = ||C - C_ref||_F / ||C_ref||_F,   C_ref = float64(A) @ float64(B)

Rows are an FP32 reference point that is not a scheme (a fixed-order sequential
FP32 accumulation) followed by every config of every scheme registered in
``mixjit.runtime.schemes`` that accepts float32, so new schemes and configs appear
as they land. A scheme the paper comparison needs but that is not registered is
listed as "not available". Errors are averaged over sizes as the paper does, and the
paper's figures are printed beside ours where it has one.

Usage:
    python tools/accuracy.py [--quick] [--sizes 256 512] [--dists uniform normal]
                             [--seed S] [--max-seconds T] [--json PATH] [--write-docs]

``--quick`` runs small sizes in a few seconds (used by tests/tools). ``--write-docs``
updates the generated section of docs/accuracy.md and the figure
docs/figures/accuracy_vs_products.png (full runs only).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from mixjit.runtime.schemes import Config, RunStats, Scheme, all_schemes
from common import (
    ROOT,
    fmt_sci,
    markdown_table,
    progress,
    provenance,
    replace_generated_section,
    timed,
    write_json,
)

FULL_SIZES = (256, 512, 1024, 2048)
QUICK_SIZES = (32, 64)
DEFAULT_SEED = 20240624
DOCS = ROOT / "docs" / "accuracy.md"
FIGURE = ROOT / "docs" / "figures" / "accuracy_vs_products.png"
SECTION = "accuracy-table"

#: unit roundoff of FP32
U32 = 2.0**-24

Sampler = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]

DISTRIBUTIONS: dict[str, tuple[str, Sampler]] = {
    "uniform": ("uniform [-1, 1]", lambda rng, shape: rng.uniform(-1.0, 1.0, shape)),
    "normal": ("standard normal", lambda rng, shape: rng.standard_normal(shape)),
    "positive": ("uniform [0, 1] (no cancellation)", lambda rng, shape: rng.uniform(0.0, 1.0, shape)),
    "wide": (
        "wide range: ±2^U(-20, 20) (40 binades)",
        lambda rng, shape: rng.choice([-1.0, 1.0], shape) * np.exp2(rng.uniform(-20.0, 20.0, shape)),
    ),
}

#: schemes the paper comparison needs; listed as "not available" until registered
EXPECTED_SCHEMES = ("native", "mixpert", "tf32x3", "bf16xn", "fp16x2", "int8", "split")

#: the paper's §4.3 GEMM errors (averaged over its sizes), by row key
PAPER: dict[str, tuple[str, float]] = {
    "native:accumulate=blas": ("cuBLAS FP32", 1.14e-6),
    "mixpert:level=IV": ("MixPert", 4.46e-7),
    "tf32x3:products=3": ("CUTLASS 3xTF32", 4.61e-7),
    "bf16xn:products=3": ("APE (BF16)", 7.16e-6),
}

#: configs outside a scheme's ``configs()`` family that the comparison needs, as
#: labels for ``parse_config``. MixPert: the finer (per row / per column)
#: alignment; a top segment one bit short of the paper's layout (6 significant
#: bits, x0 in [32, 63]: 20 bits per element instead of 21); and truncated
#: alignment shifts (the paper's "rounded towards zero" assumption). A label equal
#: to a config already listed is dropped.
EXTRA_CONFIGS: dict[str, tuple[str, ...]] = {
    "mixpert": (
        "level=IV,align=row",
        "level=IV,digits=balanced",
        "level=IV,digits=balanced,align=row",
        "level=IV,seg0_bits=6",
        "level=IV,rounding=trunc",
    ),
}

MIXPERT_LEVELS = ("I", "II", "III", "IV")


# --- rows --------------------------------------------------------------------------

RunFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, RunStats | None]]


@dataclass(frozen=True)
class Row:
    """One line of the table: a reference computation or one config of a scheme."""

    key: str  #: stable id, ``ref:<name>`` or ``<scheme>:<config label>``
    scheme: str
    config: str
    products: int | None  #: low-precision GEMM products the config costs
    work: str  #: the products by precision class, e.g. ``8 int8``
    run: RunFn | None  #: None: not available
    note: str = ""
    reference: bool = False  #: an FP32 yardstick (drawn as a line in the plot)
    extra: bool = False  #: from EXTRA_CONFIGS, not the scheme's configs() family


def sequential_fp32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """FP32 GEMM with a fixed accumulation order: ``C += A[:, p] ⊗ B[p, :]`` for
    p = 0..k-1, every product and every sum rounded to FP32 (no FMA, no blocking).
    The textbook FP32 inner product, vectorised as rank-1 updates."""
    a_t = np.ascontiguousarray(a.T)
    c = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    t = np.empty_like(c)
    for p in range(a.shape[1]):
        np.multiply(a_t[p][:, None], b[p][None, :], out=t)
        c += t
    return c


def reference_rows() -> list[Row]:
    """FP32 reference points that are not schemes (FP32 BLAS is the ``native`` scheme)."""
    return [
        Row("ref:fp32-seq", "fp32 sequential", "fixed k order, no FMA", 1, "1 fp32",
            lambda a, b: (sequential_fp32(a, b), None), reference=True),
    ]


def _work_text(scheme: Scheme, cfg: Config, n: int = 1024) -> str:
    try:
        ops = scheme.work(cfg, n, n, n).ops
    except NotImplementedError:
        return "?"
    full = 2.0 * n**3
    parts = [f"{v / full:.3g} {k}" for k, v in ops.items() if v]
    return " + ".join(parts) or "0"


def scheme_rows(only: Sequence[str] | None = None) -> list[Row]:
    """One row per float32 config of every registered scheme (its ``configs()`` and
    its ``EXTRA_CONFIGS``), the schemes the paper comparison needs first;
    unregistered expected schemes, and extra labels a scheme rejects, are listed as
    "not available". ``only`` restricts the rows to those scheme names."""
    schemes = all_schemes()
    if only is not None:
        unknown = set(only) - set(schemes) - set(EXPECTED_SCHEMES)
        if unknown:
            raise SystemExit(f"accuracy: unknown scheme(s) {sorted(unknown)}; registered: {sorted(schemes)}")
        schemes = {k: v for k, v in schemes.items() if k in only}
    order = [n for n in EXPECTED_SCHEMES if n in schemes] + sorted(set(schemes) - set(EXPECTED_SCHEMES))
    rows: list[Row] = []
    for name in order:
        s = schemes[name]
        if np.dtype(np.float32) not in s.dtypes:
            continue
        cfgs = list(s.configs(np.float32))
        family = len(cfgs)
        for label in EXTRA_CONFIGS.get(name, ()):
            try:
                cfg = s.parse_config(label)
            except ValueError as exc:
                rows.append(Row(f"{name}:{label}", name, label, None, "-", None, f"not available ({exc})"))
                continue
            if cfg not in cfgs:
                cfgs.append(cfg)
        for i, cfg in enumerate(cfgs):
            rows.append(Row(
                f"{name}:{cfg.label}", name, cfg.label, s.products(cfg), _work_text(s, cfg),
                lambda a, b, s=s, cfg=cfg: s.run_with_stats(a, b, cfg), reference=name == "native",
                extra=i >= family,
            ))
    for name in EXPECTED_SCHEMES:
        if name not in schemes and (only is None or name in only):
            rows.append(Row(f"{name}:-", name, "-", None, "-", None, "not available (scheme not registered)"))
    return rows


# --- measurement ---------------------------------------------------------------------


def rel_frobenius(c: np.ndarray, ref: np.ndarray) -> float:
    """||C - C_ref||_F / ||C_ref||_F in float64 (paper Eq. 10)."""
    c = np.asarray(c, dtype=np.float64)
    return float(np.linalg.norm(c - ref) / np.linalg.norm(ref))


def make_inputs(dist: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded float32 A, B (n×n) of ``dist``; the stream depends only on
    (seed, dist, n), so any subset of sizes reproduces the full run's inputs."""
    rng = np.random.default_rng([seed, list(DISTRIBUTIONS).index(dist), n])
    sample = DISTRIBUTIONS[dist][1]
    return sample(rng, (n, n)).astype(np.float32), sample(rng, (n, n)).astype(np.float32)


def warm_up(rows: Sequence[Row], seed: int) -> None:
    """Run every row once on a tiny input, so JIT compilation (Numba's, on a cold cache:
    tens of seconds for the MixPert driver) is not timed as the first size's run and does
    not make --max-seconds skip the larger sizes."""
    a, b = make_inputs("uniform", 8, seed)
    for row in rows:
        if row.run is not None:
            try:
                row.run(a, b)
            except Exception:  # measure() records the failure where it belongs
                pass


def measure(rows: Sequence[Row], dists: Sequence[str], sizes: Sequence[int], seed: int,
            max_seconds: float) -> list[dict]:
    """Run every row on every (distribution, size); one record per run.

    A row whose run at size n predicts (by n^3 scaling) more than ``max_seconds``
    at the next size is skipped for larger sizes, and the record says so.
    """
    records: list[dict] = []
    last_time: dict[str, tuple[int, float]] = {}
    skip_note: dict[tuple[str, str], str] = {}
    warm_up(rows, seed)
    for dist in dists:
        for n in sorted(sizes):
            a, b = make_inputs(dist, n, seed)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            for row in rows:
                rec = {"dist": dist, "n": n, "key": row.key, "scheme": row.scheme, "config": row.config,
                       "products": row.products, "error": None, "seconds": None, "status": "ok", "note": ""}
                records.append(rec)
                if row.run is None:
                    rec.update(status="unavailable", note=row.note)
                    continue
                if (dist, row.key) not in skip_note and row.key in last_time:
                    n0, t0 = last_time[row.key]
                    predicted = t0 * (n / n0) ** 3
                    if n > n0 and predicted > max_seconds:
                        skip_note[(dist, row.key)] = (
                            f"skipped from n={n} on: n={n0} took {t0:.1f} s, n={n} predicted {predicted:.0f} s "
                            f"> --max-seconds {max_seconds:g}")
                if (dist, row.key) in skip_note:
                    rec.update(status="skipped", note=skip_note[(dist, row.key)])
                    continue
                try:
                    (c, stats), secs = timed(lambda: row.run(a, b))
                except Exception as exc:  # a scheme bug must show in the table, not hide it
                    rec.update(status="failed", note=f"failed: {type(exc).__name__}: {exc}")
                    progress(f"[{dist} n={n}] {row.key}: FAILED {type(exc).__name__}: {exc}")
                    continue
                last_time[row.key] = (n, secs)
                rec.update(error=rel_frobenius(c, ref), seconds=secs)
                if stats is not None:
                    rec.update(fallbacks=stats.fallbacks, units=stats.units,
                               fallback_unit=stats.fallback_unit, fallback_reason=stats.fallback_reason)
                if not np.isfinite(rec["error"]):
                    rec["note"] = "non-finite result"
                progress(f"[{dist} n={n}] {row.key}: err {rec['error']:.3e} ({secs:.2f} s)")
    return records


def summarize(records: Sequence[dict], sizes: Sequence[int]) -> dict[tuple[str, str], dict]:
    """Per (dist, row key): errors by size, their mean, whether every size was
    measured, notes of runs that gave no error, and fallback/unit totals."""
    out: dict[tuple[str, str], dict] = {}
    for rec in records:
        s = out.setdefault((rec["dist"], rec["key"]), {"errors": {}, "notes": [], "fallbacks": 0, "units": 0})
        s["fallbacks"] += rec.get("fallbacks", 0)
        s["units"] += rec.get("units", 0)
        if rec["error"] is not None:
            s["errors"][rec["n"]] = rec["error"]
        elif rec["note"] and rec["note"] not in s["notes"]:
            s["notes"].append(rec["note"])
    for s in out.values():
        errs = list(s["errors"].values())
        s["mean"] = float(np.mean(errs)) if errs else None
        s["complete"] = len(errs) == len(sizes)
    return out


# --- findings --------------------------------------------------------------------------


def mixpert_level_key(level: str) -> str:
    """Row key of a MixPert level (I–IV)."""
    return f"mixpert:level={level}"


def findings(rows: Sequence[Row], summary: dict, dists: Sequence[str]) -> list[str]:
    """The comparison points of the issue, stated from the measured numbers."""
    def mean(dist: str, key: str) -> float | None:
        s = summary.get((dist, key))
        return s["mean"] if s else None

    out = []
    level_iv = [r.key for r in rows if r.key.startswith(mixpert_level_key("IV")) and r.run is not None]
    if not level_iv or "uniform" not in dists:
        out.append("MixPert level IV on uniform [-1, 1]: not measured, so the 4.5e-7 target is not checked.")
    for key in level_iv if "uniform" in dists else ():
        e = mean("uniform", key)
        verdict = "not measured" if e is None else f"mean {e:.3g}: " + ("meets" if e <= 4.5e-7 else "misses")
        out.append(f"`{key}` on uniform [-1, 1]: {verdict} the <= 4.5e-7 target (paper 4.46e-7).")
    for dist in dists:
        levels = [(lv, mean(dist, mixpert_level_key(lv))) for lv in MIXPERT_LEVELS]
        if any(e is None for _, e in levels):
            continue
        e = dict(levels)
        ok = e["I"] > max(e["II"], e["III"]) and min(e["II"], e["III"]) > e["IV"]
        text = f"MixPert levels on {dist}: " + ", ".join(f"{lv} {v:.3g}" for lv, v in levels)
        fell = [summary[(dist, mixpert_level_key(lv))] for lv in MIXPERT_LEVELS]
        if any(f["fallbacks"] for f in fell):
            text += (f"; {sum(f['fallbacks'] for f in fell)} of {sum(f['units'] for f in fell)} tiles fell back "
                     "(a fallback tile does not depend on the level)")
        out.append(text + ("; ordered I > II, III > IV." if ok else "; NOT ordered I > II, III > IV."))
    seq_u, seq_n = mean("uniform", "ref:fp32-seq"), mean("normal", "ref:fp32-seq")
    if seq_u is not None and seq_n is not None:
        winners = [r.key for r in rows if r.products is not None and r.products <= 8 and not r.reference
                   and (mean("uniform", r.key) or np.inf) < seq_u and (mean("normal", r.key) or np.inf) < seq_n]
        out.append(f"Configs with <= 8 low-precision products that beat sequential FP32 "
                   f"(uniform {seq_u:.3g}, normal {seq_n:.3g}) on both: "
                   + (", ".join(winners) if winners else "none") + ".")
    return out


# --- report ------------------------------------------------------------------------------


def _fallback_text(records: Sequence[dict], dist: str, key: str) -> str:
    done = [r for r in records if r["dist"] == dist and r["key"] == key and "fallbacks" in r]
    if not done:
        return "-"
    r = max(done, key=lambda r: r["n"])
    text = f"{r['fallbacks']}/{r['units']} {r['fallback_unit']}s (n={r['n']})"
    return text + (f": {r['fallback_reason']}" if r["fallbacks"] and r["fallback_reason"] else "")


def render(rows: Sequence[Row], records: Sequence[dict], sizes: Sequence[int], dists: Sequence[str],
           prov: Sequence[str]) -> str:
    """The Markdown report: one table per distribution, findings, timings."""
    summary = summarize(records, sizes)
    lines = [*prov, ""]
    for dist in dists:
        lines += [f"### {DISTRIBUTIONS[dist][0]}", ""]
        header = ["row", "config", "products", "work", *[f"n={n}" for n in sizes], "mean", "paper", "fallbacks"]
        table = []
        for row in rows:
            s = summary[(dist, row.key)]
            cells = [row.scheme, row.config, "-" if row.products is None else str(row.products), row.work]
            cells += [fmt_sci(s["errors"].get(n)) for n in sizes]
            mean = fmt_sci(s["mean"])
            if s["mean"] is not None and not s["complete"]:
                mean += f" ({len(s['errors'])} of {len(sizes)} sizes)"
            if s["notes"]:
                mean += " — " + "; ".join(s["notes"])
            paper = PAPER.get(row.key)
            cells += [mean, f"{paper[1]:.3g} ({paper[0]})" if paper and dist == "uniform" else "-",
                      _fallback_text(records, dist, row.key)]
            table.append(cells)
        lines += markdown_table(header, table) + [""]
    lines += ["### Findings", ""] + [f"- {f}" for f in findings(rows, summary, dists)] + [""]
    # the median, so that one distribution on a slow path (fallback tiles) does not
    # set the figure for the others; the per-run times are in --json
    lines += ["### Executor time (seconds, median over distributions)", ""]
    times = []
    for row in rows:
        cells = [row.key]
        for n in sizes:
            t = [r["seconds"] for r in records if r["key"] == row.key and r["n"] == n and r["seconds"] is not None]
            cells.append(f"{np.median(t):.3f}" if t else "-")
        times.append(cells)
    lines += markdown_table(["row", *[f"n={n}" for n in sizes]], times)
    return "\n".join(lines)


def plot(rows: Sequence[Row], summary: dict, path: pathlib.Path) -> None:
    """Mean error vs low-precision products, one panel per distribution (uniform,
    normal), one line per scheme through its ``configs()`` family, extra configs as
    labelled markers of the same colour; the FP32 references as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dists = [d for d in ("uniform", "normal") if any(k[0] == d for k in summary)]
    fig, axes = plt.subplots(1, len(dists), figsize=(6.5 * len(dists), 5), squeeze=False)
    for ax, dist in zip(axes[0], dists):
        by_scheme: dict[str, list[tuple[int, float, Row]]] = {}
        dashes = iter(["--", ":", "-."] * len(rows))
        for row in rows:
            e = summary[(dist, row.key)]["mean"]
            if e is None:
                continue
            if row.reference:
                ax.axhline(e, ls=next(dashes), lw=1.2, color="gray", label=f"{row.scheme} ({row.config})")
            else:
                by_scheme.setdefault(row.scheme, []).append((row.products, e, row))
        markers = iter("osD^vP*Xh" * len(rows))
        for name, pts in by_scheme.items():
            family = sorted((p, e) for p, e, row in pts if not row.extra)
            # markers differ so that schemes with equal errors stay visible
            (line,) = ax.plot([p for p, _ in family], [e for _, e in family], marker=next(markers), ms=7,
                              alpha=0.8, fillstyle="none", label=name)
            for p, e, row in pts:
                if row.extra:
                    ax.plot([p], [e], marker="x", color=line.get_color())
                    ax.annotate(row.config, (p, e), xytext=(-4, 0), textcoords="offset points", ha="right",
                                va="center", fontsize=7, color=line.get_color())
        ax.set_yscale("log")
        ax.set_xlabel("low-precision GEMM products")
        ax.set_ylabel("relative Frobenius error (mean over sizes)")
        ax.set_title(DISTRIBUTIONS[dist][0])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"small sizes {QUICK_SIZES}, a few seconds")
    p.add_argument("--sizes", type=int, nargs="+", help=f"matrix sizes (default {FULL_SIZES})")
    p.add_argument("--dists", nargs="+", choices=list(DISTRIBUTIONS), default=list(DISTRIBUTIONS))
    p.add_argument("--schemes", nargs="+", metavar="NAME",
                   help="only these registered schemes (default: all); the FP32 reference rows always run")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--max-seconds", type=float, default=300.0,
                   help="skip a row's larger sizes when n^3 scaling predicts more than this per run")
    p.add_argument("--json", type=pathlib.Path, help="also write every record as JSON here")
    p.add_argument("--write-docs", action="store_true",
                   help=f"update {DOCS.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    args = p.parse_args(argv)
    if args.quick and args.sizes:
        p.error("--quick picks its own sizes; drop --sizes or --quick")
    if args.write_docs and args.quick:
        p.error("--write-docs needs a full run; quick numbers do not go into the docs")
    sizes = tuple(sorted(args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)))
    rows = reference_rows() + scheme_rows(args.schemes)
    records = measure(rows, args.dists, sizes, args.seed, args.max_seconds)
    text = render(rows, records, sizes, args.dists,
                  provenance(["python", "tools/accuracy.py", *sys.argv[1:]], args.seed))
    print(text)
    summary = summarize(records, sizes)
    if args.json:
        write_json(args.json, {
            "sizes": sizes, "dists": args.dists, "seed": args.seed,
            "rows": [{"key": r.key, "scheme": r.scheme, "config": r.config, "products": r.products,
                      "work": r.work, "available": r.run is not None, "reference": r.reference} for r in rows],
            "records": records,
            "means": {f"{d}|{k}": s["mean"] for (d, k), s in summary.items()},
            "findings": findings(rows, summary, args.dists),
            "paper": PAPER,
        })
    if args.write_docs:
        replace_generated_section(DOCS, SECTION, text)
        plot(rows, summary, FIGURE)
        progress(f"accuracy: wrote {DOCS.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
