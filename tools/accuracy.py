"""Accuracy and speed table of every GEMM scheme, in the style of the MixPert paper (§4.3).

For square sizes n×n×n, float32 and float64 inputs and three input distributions
(uniform, normal, wide range), each row's error against the exact product is
measured (the reference is a double-double GEMM, tools/accuracy_reference.py):

    Frobenius (paper Eq. 10):  ||C - C_ref||_F / ||C_ref||_F
    componentwise:             max_ij |C - C_ref|_ij / (|A||B|)_ij

and its CPU time (``time.process_time``) is divided by numpy's matmul in the same
dtype on the same inputs, timed right beside the row (best of at least three calls).

Rows, per input dtype: float32 BLAS and float64 BLAS (numpy), the correctly
rounded product ``RN(exact)`` (the floor any scheme can reach), then every config
of every registered scheme, enumerated from ``mixjit.runtime.schemes``, so new
schemes and configs appear as they land. The float32 table holds every scheme that
accepts float32 (plus a few extra MixPert configs the paper comparison needs, and
a fixed-order sequential FP32 sum as a yardstick); the float64 table holds the
schemes that compute in float64: ``native``, and those whose float64 config
family differs from their float32 one or that take float64 only (``mixpert-fp64``,
``ozaki2``). A scheme the paper comparison needs but that is not registered is
listed as "not available". Errors are averaged over sizes as the paper does.

Usage:
    python tools/accuracy.py [--quick] [--sizes 256 512] [--dists uniform normal]
                             [--dtypes float32] [--schemes NAME ...] [--repeats R]
                             [--seed S] [--max-seconds T] [--json PATH] [--write-docs]

``--quick`` runs small sizes in a few seconds (used by tests/tools). Times are the
best of ``--repeats`` runs (default 3) below n = 2048 and one run from 2048 on, each
after one untimed call (a size's first call loads the kernels its path needs).
``--write-docs`` updates the generated section of docs/results/accuracy.md and the figure
docs/results/figures/accuracy_vs_products.png (full runs only).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence

#: the thread-count variables the tool pins (before numpy and Numba are imported)
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
if __name__ == "__main__":
    # Times are CPU seconds, and a multi-threaded run's CPU seconds also count the BLAS and
    # Numba thread pools' spin-waits: on two cores the same n = 2048 row measured 3.6x and
    # 6.8x numpy's sgemm single- and two-threaded (docs/results/accuracy.md, "Speed figures").
    # So the tool runs single-threaded unless the caller sets these variables itself.
    for _var in THREAD_VARS:
        os.environ.setdefault(_var, "1")

import numpy as np
from accuracy_reference import dd_errors, dd_gemm
from common import ROOT, fmt_sci, markdown_table, progress, provenance, replace_generated_section, write_json

from mixjit.runtime.schemes import Config, RunStats, Scheme, all_schemes

FULL_SIZES = (256, 512, 1024, 2048)
QUICK_SIZES = (32, 64)
DEFAULT_SEED = 20240624
DOCS = ROOT / "docs" / "results" / "accuracy.md"
FIGURE = ROOT / "docs" / "results" / "figures" / "accuracy_vs_products.png"
SECTION = "accuracy-table"
DTYPES = ("float32", "float64")
#: from this size on a row is timed once (a run costs seconds on two cores)
ONE_REPEAT_FROM = 2048
#: numpy's matmul is timed as the best of at least this many calls (cheap beside the rows;
#: best-of-several for numpy and one run for a row at n >= 2048 leans the ratio against the row)
NUMPY_REPEATS = 3

Sampler = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]

DISTRIBUTIONS: dict[str, tuple[str, Sampler]] = {
    "uniform": ("uniform [-1, 1]", lambda rng, shape: rng.uniform(-1.0, 1.0, shape)),
    "normal": ("standard normal", lambda rng, shape: rng.standard_normal(shape)),
    "wide": (
        "wide range: ±2^U(-30, 30) (60 binades)",
        lambda rng, shape: rng.choice([-1.0, 1.0], shape) * np.exp2(rng.uniform(-30.0, 30.0, shape)),
    ),
    "positive": ("uniform [0, 1] (no cancellation)", lambda rng, shape: rng.uniform(0.0, 1.0, shape)),
}
DEFAULT_DISTS = ("uniform", "normal", "wide")

#: schemes the paper comparison needs; listed as "not available" until registered
EXPECTED_SCHEMES = ("native", "mixpert", "tf32x3", "bf16xn", "fp16x2", "int8", "split")

#: the paper's §4.3 GEMM errors (averaged over its sizes), by float32 row key
PAPER: dict[str, tuple[str, float]] = {
    "native:accumulate=blas": ("cuBLAS FP32", 1.14e-6),
    "mixpert:level=IV": ("MixPert", 4.46e-7),
    "tf32x3:products=3": ("CUTLASS 3xTF32", 4.61e-7),
    "bf16xn:products=3": ("APE (BF16)", 7.16e-6),
}

#: float32 configs outside a scheme's ``configs()`` family that the comparison
#: needs, as labels for ``parse_config``. MixPert: the finer (per row / per column)
#: alignment; balanced signed digits; a top segment one bit short of the paper's
#: layout (6 significant bits); truncated alignment shifts (the paper's "rounded
#: towards zero" assumption). A label equal to a config already listed is dropped.
EXTRA_CONFIGS: dict[str, tuple[str, ...]] = {
    "mixpert": (
        "level=IV,align=row",
        "level=IV,digits=balanced,align=row",
        "level=IV,seg0_bits=6",
        "level=IV,rounding=trunc",
    ),
}

MIXPERT_LEVELS = ("I", "II", "III", "IV")
#: issue 10's speed targets, as multiples of numpy's matmul in the input dtype
TARGET_F32_PRECISE = 5.0  # most precise float32 mixpert config, n = 2048
TARGET_LEVEL_IV = 4.5  # mixpert level IV, n = 2048
TARGET_F64_PRECISE = 6.0  # most precise mixpert-fp64 config, n = 1024 and 2048


# --- rows --------------------------------------------------------------------------

RunFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, RunStats | None]]


@dataclass(frozen=True)
class Row:
    """One line of a table: a reference computation or one config of a scheme."""

    key: str  #: stable id within its dtype, ``ref:<name>`` or ``<scheme>:<config label>``
    dtype: str  #: the input dtype of its table
    scheme: str
    config: str
    products: int | None  #: low-precision GEMM products the config costs
    work: str  #: the products by precision class, e.g. ``8 int8``
    run: RunFn | None  #: None: not available
    note: str = ""
    reference: bool = False  #: a yardstick (drawn as a line in the plot)
    extra: bool = False  #: from EXTRA_CONFIGS, not the scheme's configs() family
    first: bool = False  #: the scheme's most precise config (configs()[0]), what sites run before tuning


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


def reference_rows(dtype: str) -> list[Row]:
    """Yardsticks that are not schemes (BLAS in the input dtype is the ``native``
    scheme's row): BLAS in the other precision, and, for float32, a sequential sum.
    ``RN(exact)`` is added by :func:`measure` (it needs the reference)."""
    if dtype == "float32":
        return [
            Row("ref:fp32-seq", dtype, "fp32 sequential", "fixed k order, no FMA", 1, "1 fp32",
                lambda a, b: (sequential_fp32(a, b), None), reference=True),
            Row("ref:dgemm", dtype, "float64 BLAS", "numpy, inputs widened, not rounded", 1, "1 fp64",
                lambda a, b: (a.astype(np.float64) @ b.astype(np.float64), None), reference=True),
            Row("ref:RN(exact)", dtype, "RN(exact)", "exact product rounded to float32", None, "-", None,
                reference=True),
        ]
    return [
        Row("ref:sgemm", dtype, "float32 BLAS", "numpy, inputs rounded to float32", 1, "1 fp32",
            lambda a, b: ((a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64), None),
            reference=True),
        Row("ref:RN(exact)", dtype, "RN(exact)", "exact product rounded to float64", None, "-", None,
            reference=True),
    ]


def _work_text(scheme: Scheme, cfg: Config, dtype: str, n: int = 1024) -> str:
    try:
        ops = scheme.work(cfg, n, n, n, np.dtype(dtype)).ops
    except NotImplementedError:
        return "?"
    full = 2.0 * n**3
    parts = [f"{v / full:.3g} {k}" for k, v in ops.items() if v]
    return " + ".join(parts) or "0"


def computes_in_float64(scheme: Scheme) -> bool:
    """Does the scheme offer float64 precision (and so belong in the float64 table)?
    ``native``, a scheme that takes float64 only, or one whose float64 config family
    differs from its float32 one; the others round float64 inputs to float32."""
    f64 = np.dtype(np.float64)
    if f64 not in scheme.dtypes:
        return False
    if scheme.name == "native" or np.dtype(np.float32) not in scheme.dtypes:
        return True
    return list(scheme.configs(np.float64)) != list(scheme.configs(np.float32))


def scheme_rows(dtype: str, only: Sequence[str] | None = None) -> list[Row]:
    """One row per ``dtype`` config of every registered scheme that belongs in the
    ``dtype`` table (its ``configs(dtype)``, and for float32 its ``EXTRA_CONFIGS``),
    the schemes the paper comparison needs first; unregistered expected schemes
    (float32 table), and extra labels a scheme rejects, are listed as "not
    available". ``only`` restricts the rows to those scheme names."""
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
        if np.dtype(dtype) not in s.dtypes or (dtype == "float64" and not computes_in_float64(s)):
            continue
        cfgs = list(s.configs(np.dtype(dtype)))
        family = len(cfgs)
        for label in EXTRA_CONFIGS.get(name, ()) if dtype == "float32" else ():
            try:
                cfg = s.parse_config(label)
            except ValueError as exc:
                rows.append(Row(f"{name}:{label}", dtype, name, label, None, "-", None, f"not available ({exc})"))
                continue
            if cfg not in cfgs:
                cfgs.append(cfg)
        for i, cfg in enumerate(cfgs):
            rows.append(Row(
                f"{name}:{cfg.label}", dtype, name, cfg.label, s.products(cfg), _work_text(s, cfg, dtype),
                lambda a, b, s=s, cfg=cfg: s.run_with_stats(a, b, cfg), reference=name == "native",
                extra=i >= family, first=i == 0,
            ))
    for name in EXPECTED_SCHEMES if dtype == "float32" else ():
        if name not in schemes and (only is None or name in only):
            rows.append(Row(f"{name}:-", dtype, name, "-", None, "-", None, "not available (scheme not registered)"))
    return rows


def all_rows(dtypes: Sequence[str], only: Sequence[str] | None) -> list[Row]:
    """The reference rows and the scheme rows of every table."""
    return [r for d in dtypes for r in reference_rows(d) + scheme_rows(d, only)]


# --- measurement ---------------------------------------------------------------------


def make_inputs(dist: str, n: int, seed: int, dtype: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    """Seeded A, B (n×n) of ``dist`` in ``dtype``; the stream depends only on (seed,
    dist, n) (float32 inputs are the float64 ones rounded), so any subset of sizes
    reproduces the full run's inputs."""
    rng = np.random.default_rng([seed, list(DISTRIBUTIONS).index(dist), n])
    sample = DISTRIBUTIONS[dist][1]
    return sample(rng, (n, n)).astype(dtype), sample(rng, (n, n)).astype(dtype)


def cpu_timed(fn: Callable[[], object], repeats: int) -> tuple[object, float]:
    """``fn()``'s result and its least CPU time (``time.process_time``) over ``repeats`` calls."""
    best = np.inf
    out = None
    for _ in range(max(1, repeats)):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return out, best


def warm_up(rows: Sequence[Row], seed: int) -> None:
    """Run every row once on a tiny input, so JIT compilation (Numba's, on a cold cache:
    tens of seconds for the MixPert driver) is not timed as the first size's run and does
    not make --max-seconds skip the larger sizes."""
    for dtype in {r.dtype for r in rows}:
        a, b = make_inputs("uniform", 8, seed, dtype)
        for row in rows:
            if row.run is not None and row.dtype == dtype:
                try:
                    row.run(a, b)
                except Exception:  # measure() records the failure where it belongs
                    pass


def measure(rows: Sequence[Row], dists: Sequence[str], sizes: Sequence[int], seed: int,
            max_seconds: float, repeats: int = 3) -> list[dict]:
    """Run every row on every (dtype, distribution, size); one record per run, with
    its errors, its CPU seconds and numpy's in the same dtype on the same inputs.

    A row whose run at size n predicts (by n^3 scaling) more than ``max_seconds``
    at the next size is skipped for larger sizes, and the record says so.
    """
    records: list[dict] = []
    last_time: dict[tuple[str, str], tuple[int, float]] = {}
    skip_note: dict[tuple[str, str, str], str] = {}
    warm_up(rows, seed)
    for dtype in dict.fromkeys(r.dtype for r in rows):
        for dist in dists:
            for n in sorted(sizes):
                reps = repeats if n < ONE_REPEAT_FROM else 1
                a, b = make_inputs(dist, n, seed, dtype)
                a64, b64 = a.astype(np.float64), b.astype(np.float64)
                hi, lo = dd_gemm(a64, b64)
                absab = np.abs(a64) @ np.abs(b64)
                _, numpy_secs = cpu_timed(lambda: a @ b, max(NUMPY_REPEATS, reps))
                for row in (r for r in rows if r.dtype == dtype):
                    rec = {"dtype": dtype, "dist": dist, "n": n, "key": row.key, "scheme": row.scheme,
                           "config": row.config, "products": row.products, "error": None, "componentwise": None,
                           "seconds": None, "numpy_seconds": numpy_secs, "ratio": None, "status": "ok", "note": ""}
                    records.append(rec)
                    if row.key == "ref:RN(exact)":
                        rec.update(zip(("error", "componentwise"), dd_errors((hi + lo).astype(dtype), hi, lo, absab)))
                        continue
                    if row.run is None:
                        rec.update(status="unavailable", note=row.note)
                        continue
                    tag = (dtype, dist, row.key)
                    if tag not in skip_note and (dtype, row.key) in last_time:
                        n0, t0 = last_time[(dtype, row.key)]
                        predicted = t0 * (n / n0) ** 3
                        if n > n0 and predicted > max_seconds:
                            skip_note[tag] = (
                                f"skipped from n={n} on: n={n0} took {t0:.1f} s, n={n} predicted {predicted:.0f} s "
                                f"> --max-seconds {max_seconds:g}")
                    if tag in skip_note:
                        rec.update(status="skipped", note=skip_note[tag])
                        continue
                    # numpy timed again right beside the row: a shared machine's load drifts
                    # within a run, and one numpy measurement per size lets that drift into
                    # every ratio of the size
                    _, numpy_secs = cpu_timed(lambda: a @ b, max(NUMPY_REPEATS, reps))
                    rec["numpy_seconds"] = numpy_secs
                    try:
                        # one untimed call first: a size's first call loads the kernels its path
                        # needs (executors compile or load lazily, docs/results/first_use.md), which a
                        # single timed run would count
                        row.run(a, b)
                        (c, stats), secs = cpu_timed(lambda: row.run(a, b), reps)
                    except Exception as exc:  # a scheme bug must show in the table, not hide it
                        rec.update(status="failed", note=f"failed: {type(exc).__name__}: {exc}")
                        progress(f"[{dtype} {dist} n={n}] {row.key}: FAILED {type(exc).__name__}: {exc}")
                        continue
                    last_time[(dtype, row.key)] = (n, secs)
                    frob, comp = dd_errors(c, hi, lo, absab)
                    rec.update(error=frob, componentwise=comp, seconds=secs,
                               ratio=secs / numpy_secs if numpy_secs > 0 else None)
                    if stats is not None:
                        rec.update(fallbacks=stats.fallbacks, units=stats.units,
                                   fallback_unit=stats.fallback_unit, fallback_reason=stats.fallback_reason)
                    if not np.isfinite(frob):
                        rec["note"] = "non-finite result"
                    progress(f"[{dtype} {dist} n={n}] {row.key}: err {frob:.3e} comp {comp:.2e} "
                             f"({secs:.3f} s, {secs / max(numpy_secs, 1e-9):.1f}x numpy)")
    return records


def summarize(records: Sequence[dict], sizes: Sequence[int]) -> dict[tuple[str, str, str], dict]:
    """Per (dtype, dist, row key): errors by size, their mean, the largest
    componentwise error, whether every size was measured, notes of runs that gave
    no error, and fallback/unit totals."""
    out: dict[tuple[str, str, str], dict] = {}
    for rec in records:
        s = out.setdefault((rec["dtype"], rec["dist"], rec["key"]),
                           {"errors": {}, "componentwise": {}, "notes": [], "fallbacks": 0, "units": 0})
        s["fallbacks"] += rec.get("fallbacks", 0)
        s["units"] += rec.get("units", 0)
        if rec["error"] is not None:
            s["errors"][rec["n"]] = rec["error"]
            s["componentwise"][rec["n"]] = rec["componentwise"]
        elif rec["note"] and rec["note"] not in s["notes"]:
            s["notes"].append(rec["note"])
    for s in out.values():
        errs = list(s["errors"].values())
        s["mean"] = float(np.mean(errs)) if errs else None
        s["comp_max"] = max(s["componentwise"].values()) if errs else None
        s["complete"] = len(errs) == len(sizes)
    return out


def ratios(records: Sequence[dict], dtype: str, key: str, n: int) -> list[float]:
    """The row's time over numpy's, one per distribution measured at size ``n``."""
    return [r["ratio"] for r in records
            if r["dtype"] == dtype and r["key"] == key and r["n"] == n and r["ratio"] is not None]


def median_ratio(records: Sequence[dict], dtype: str, key: str, n: int) -> float | None:
    t = ratios(records, dtype, key, n)
    return float(np.median(t)) if t else None


# --- findings --------------------------------------------------------------------------


def mixpert_level_key(level: str) -> str:
    """Row key of a MixPert level (I–IV)."""
    return f"mixpert:level={level}"


def _first(rows: Sequence[Row], dtype: str, scheme: str) -> Row | None:
    return next((r for r in rows if r.dtype == dtype and r.scheme == scheme and r.first and r.run), None)


def _versus(summary: dict, dtype: str, dist: str, key: str, base: str, field: str = "errors") -> str | None:
    """``None`` when ``key`` is at or below ``base`` at every common size, else the
    worst excess, e.g. ``1.8x at n=64``."""
    mine = summary.get((dtype, dist, key), {}).get(field, {})
    ref = summary.get((dtype, dist, base), {}).get(field, {})
    worst = None
    for n in sorted(set(mine) & set(ref)):
        if ref[n] and mine[n] > ref[n]:
            x = mine[n] / ref[n]
            if worst is None or x > worst[0]:
                worst = (x, n)
    return None if worst is None else f"{worst[0]:.2f}x at n={worst[1]}"


def findings(rows: Sequence[Row], records: Sequence[dict], summary: dict, dists: Sequence[str],
             sizes: Sequence[int]) -> list[str]:
    """The comparison points of the paper and of issue 10, stated from the measured numbers."""
    def mean(dist: str, key: str, dtype: str = "float32") -> float | None:
        s = summary.get((dtype, dist, key))
        return s["mean"] if s else None

    out = []
    level_iv = [r.key for r in rows if r.dtype == "float32" and r.key.startswith(mixpert_level_key("IV"))
                and r.run is not None]
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
        fell = [summary[("float32", dist, mixpert_level_key(lv))] for lv in MIXPERT_LEVELS]
        if any(f["fallbacks"] for f in fell):
            text += (f"; {sum(f['fallbacks'] for f in fell)} of {sum(f['units'] for f in fell)} tiles fell back "
                     "(a fallback tile does not depend on the level)")
        out.append(text + ("; ordered I > II, III > IV." if ok else "; NOT ordered I > II, III > IV."))
    seq_u, seq_n = mean("uniform", "ref:fp32-seq"), mean("normal", "ref:fp32-seq")
    if seq_u is not None and seq_n is not None:
        winners = [r.key for r in rows if r.dtype == "float32" and r.products is not None and r.products <= 8
                   and not r.reference and (mean("uniform", r.key) or np.inf) < seq_u
                   and (mean("normal", r.key) or np.inf) < seq_n]
        out.append(f"Configs with <= 8 low-precision products that beat sequential FP32 "
                   f"(uniform {seq_u:.3g}, normal {seq_n:.3g}) on both: "
                   + (", ".join(winners) if winners else "none") + ".")
    # issue 10, item 1: the plan before tuning against float32 BLAS
    native32 = "native:accumulate=blas"
    top = _first(rows, "float32", "mixpert")
    if top is not None:
        for dist in (d for d in dists if d != "wide"):
            worse = _versus(summary, "float32", dist, top.key, native32)
            out.append(f"Most precise float32 mixpert config `{top.config}` on {dist}: "
                       + ("error <= float32 BLAS at every size (target met)." if worse is None
                          else f"error above float32 BLAS, worst {worse} (target missed)."))
        for key, target, what in ((top.key, TARGET_F32_PRECISE, "most precise float32 mixpert config"),
                                  (mixpert_level_key("IV"), TARGET_LEVEL_IV, "mixpert level IV")):
            r = median_ratio(records, "float32", key, 2048)
            if r is not None:
                out.append(f"Time of the {what} (`{key.split(':', 1)[1]}`) at n=2048: {r:.2f}x numpy sgemm "
                           f"(median over distributions; target <= {target:g}x: "
                           + ("met" if r <= target else f"missed by {r / target:.2f}x") + ").")
    # issue 10, item 2: mixpert-fp64's most precise config against dgemm
    top64 = _first(rows, "float64", "mixpert-fp64")
    if top64 is not None:
        for dist in dists:
            worse = _versus(summary, "float64", dist, top64.key, native32, "componentwise")
            comp = summary.get(("float64", dist, top64.key), {}).get("comp_max")
            nat = summary.get(("float64", dist, native32), {}).get("comp_max")
            if comp is None or nat is None:
                continue
            out.append(f"Most precise mixpert-fp64 config `{top64.config}` on {dist}: largest componentwise error "
                       f"{comp:.2e} (dgemm {nat:.2e}); "
                       + ("<= dgemm's at every size." if worse is None else f"above dgemm's, worst {worse}."))
        for n in (n for n in sizes if n in (1024, 2048)):
            r = median_ratio(records, "float64", top64.key, n)
            if r is not None:
                out.append(f"Time of the most precise mixpert-fp64 config at n={n}: {r:.2f}x numpy dgemm "
                           f"(median over distributions; target <= {TARGET_F64_PRECISE:g}x: "
                           + ("met" if r <= TARGET_F64_PRECISE else f"missed by {r / TARGET_F64_PRECISE:.2f}x")
                           + ").")
    return out


# --- report ------------------------------------------------------------------------------


def _fallback_text(records: Sequence[dict], dtype: str, dist: str, key: str) -> str:
    done = [r for r in records if r["dtype"] == dtype and r["dist"] == dist and r["key"] == key and "fallbacks" in r]
    if not done:
        return "-"
    r = max(done, key=lambda r: r["n"])
    text = f"{r['fallbacks']}/{r['units']} {r['fallback_unit']}s (n={r['n']})"
    return text + (f": {r['fallback_reason']}" if r["fallbacks"] and r["fallback_reason"] else "")


def render(rows: Sequence[Row], records: Sequence[dict], sizes: Sequence[int], dists: Sequence[str],
           prov: Sequence[str]) -> str:
    """The Markdown report: per dtype, one error table per distribution and a time
    table (ratios to numpy); then the findings."""
    summary = summarize(records, sizes)
    lines = [*prov, ""]
    for dtype in dict.fromkeys(r.dtype for r in rows):
        mine = [r for r in rows if r.dtype == dtype]
        for dist in dists:
            lines += [f"### {dtype} inputs, {DISTRIBUTIONS[dist][0]}", ""]
            header = ["row", "config", "products", "work", *[f"n={n}" for n in sizes], "mean",
                      "componentwise max", "paper", "fallbacks"]
            table = []
            for row in mine:
                s = summary[(dtype, dist, row.key)]
                cells = [row.scheme, row.config, "-" if row.products is None else str(row.products), row.work]
                cells += [fmt_sci(s["errors"].get(n)) for n in sizes]
                mean = fmt_sci(s["mean"])
                if s["mean"] is not None and not s["complete"]:
                    mean += f" ({len(s['errors'])} of {len(sizes)} sizes)"
                if s["notes"]:
                    mean += " — " + "; ".join(s["notes"])
                paper = PAPER.get(row.key) if dtype == "float32" and dist == "uniform" else None
                cells += [mean, fmt_sci(s["comp_max"]), f"{paper[1]:.3g} ({paper[0]})" if paper else "-",
                          _fallback_text(records, dtype, dist, row.key)]
                table.append(cells)
            lines += markdown_table(header, table) + [""]
        lines += [f"### {dtype} inputs: CPU time / numpy's {dtype} matmul (median over distributions)", ""]
        times = []
        for n_row in [("numpy seconds", None)] + [(r.key, r) for r in mine if r.run is not None]:
            cells = [n_row[0]]
            for n in sizes:
                if n_row[1] is None:
                    t = [r["numpy_seconds"] for r in records if r["dtype"] == dtype and r["n"] == n]
                    cells.append(f"{np.median(t):.4f}" if t else "-")
                else:
                    x = median_ratio(records, dtype, n_row[0], n)
                    cells.append("-" if x is None else f"{x:.2f}")
            times.append(cells)
        lines += markdown_table(["row", *[f"n={n}" for n in sizes]], times) + [""]
    lines += ["### Findings", ""] + [f"- {f}" for f in findings(rows, records, summary, dists, sizes)]
    return "\n".join(lines)


def plot(rows: Sequence[Row], summary: dict, path: pathlib.Path) -> None:
    """Mean error vs low-precision products for float32 inputs, one panel per
    distribution (uniform, normal), one line per scheme through its ``configs()``
    family, extra configs as labelled markers of the same colour; the references as
    horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dists = [d for d in ("uniform", "normal") if any(k[:2] == ("float32", d) for k in summary)]
    fig, axes = plt.subplots(1, len(dists), figsize=(6.5 * len(dists), 5), squeeze=False)
    mine = [r for r in rows if r.dtype == "float32"]
    for ax, dist in zip(axes[0], dists):
        by_scheme: dict[str, list[tuple[int, float, Row]]] = {}
        dashes = iter(["--", ":", "-."] * len(mine))
        for row in mine:
            e = summary[("float32", dist, row.key)]["mean"]
            if e is None:
                continue
            if row.reference:
                ax.axhline(e, ls=next(dashes), lw=1.2, color="gray", label=f"{row.scheme} ({row.config})")
            else:
                by_scheme.setdefault(row.scheme, []).append((row.products, e, row))
        markers = iter("osD^vP*Xh" * len(mine))
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
        ax.set_title(f"float32 inputs, {DISTRIBUTIONS[dist][0]}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"small sizes {QUICK_SIZES}, a few seconds")
    p.add_argument("--sizes", type=int, nargs="+", help=f"matrix sizes (default {FULL_SIZES})")
    p.add_argument("--dists", nargs="+", choices=list(DISTRIBUTIONS), default=list(DEFAULT_DISTS))
    p.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES))
    p.add_argument("--schemes", nargs="+", metavar="NAME",
                   help="only these registered schemes (default: all); the reference rows always run")
    p.add_argument("--repeats", type=int, default=3,
                   help=f"time each run as the best of this many below n={ONE_REPEAT_FROM} (once from there on)")
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
    rows = all_rows(args.dtypes, args.schemes)
    records = measure(rows, args.dists, sizes, args.seed, args.max_seconds, args.repeats)
    text = render(rows, records, sizes, args.dists,
                  provenance(["python", "tools/accuracy.py", *sys.argv[1:]], args.seed)
                  + ["- threads: " + ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in THREAD_VARS)])
    print(text)
    summary = summarize(records, sizes)
    if args.json:
        write_json(args.json, {
            "sizes": sizes, "dists": args.dists, "dtypes": args.dtypes, "seed": args.seed,
            "rows": [{"key": r.key, "dtype": r.dtype, "scheme": r.scheme, "config": r.config,
                      "products": r.products, "work": r.work, "available": r.run is not None or r.key == "ref:RN(exact)",
                      "reference": r.reference, "first": r.first} for r in rows],
            "records": records,
            "means": {f"{t}|{d}|{k}": s["mean"] for (t, d, k), s in summary.items()},
            "findings": findings(rows, records, summary, args.dists, sizes),
            "paper": PAPER,
        })
    if args.write_docs:
        replace_generated_section(DOCS, SECTION, text)
        plot(rows, summary, FIGURE)
        progress(f"accuracy: wrote {DOCS.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
