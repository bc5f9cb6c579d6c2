"""Accuracy of complex GEMMs under the complex wrapper (runtime/complex/), complex64 and
complex128, next to numpy's complex matmul (cgemm/zgemm).

For square n×n×n complex GEMMs and several part distributions, each row's result C is
compared with the exact product R (a double-double GEMM of the parts,
tools/accuracy_reference.py: Re R = [Ar, -Ai]·[Br; Bi], Im R = [Ar, Ai]·[Bi; Br], both exact to
far below 2^-100 of their |·||·| sums):

* relative Frobenius error ``||C - R||_F / ||R||_F`` over both parts;
* componentwise error ``max |Re C - Re R| / (|Ar||Br| + |Ai||Bi|)`` and the same for Im C with
  ``|Ar||Bi| + |Ai||Br|``, the larger of the two (each part against its own error scale, so
  an imaginary part lost to cancellation shows);
* the relative Frobenius error of Im C alone (where form 3 differs from form 4);
* the distance from numpy's result, ``||C - C_numpy||_F / ||C_numpy||_F``.

Rows: ``numpy`` (np.matmul in the operands' complex dtype: cgemm/zgemm), ``RN(exact)`` (each part
of R correctly rounded: the best any scheme can return), and complex configs: by default form 4
and form 3 over the most precise config of the catalogue's default real scheme for the parts
(mixpert for complex64, mixpert-fp64 for complex128; form 4 over it is the wrapper's most
precise config); with ``--all-schemes``, every real scheme's most precise config in both forms
and its cheapest in form 4. Distributions: parts uniform [-1, 1), standard normal, and wide
ones whose imaginary parts are 2^20 times the real parts (``wide-up``), 2^-20 times
(``wide-down``), or 2^20 in A and 2^-20 in B (``wide-opposite``). A second table, "form 3
against form 4", isolates the forms' difference at n = 256 over correctly rounded real products
(bf16xn products=9 for float32 parts, native dgemm for float64). CPU seconds
(``time.process_time``) are printed next to numpy's. The checks of issue 24 are evaluated and
stated (PASS / FAIL, with the numbers), never hidden.

Usage:
    python tools/accuracy_complex.py [--quick] [--sizes 256 512 1024] [--large] [--all-schemes]
                                     [--dists ...] [--seed S] [--json PATH] [--write-docs]

``--write-docs`` rewrites the generated section of docs/results/accuracy_complex.md and
docs/results/accuracy_complex.json.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Callable, Sequence

import numpy as np
from accuracy_ozaki2 import cpu_timed
from accuracy_reference import dd_gemm
from common import ROOT, fmt_sci, markdown_table, progress, provenance, replace_generated_section, write_json

from mixjit.runtime.complex import COMPLEX, FORMS, ComplexConfig, working_dtype
from mixjit.runtime.schemes import catalog, get_scheme

FULL_SIZES = (256, 512, 1024)
LARGE_SIZE = 2048
QUICK_SIZES = (32, 64)
STUDY_SIZE = 256
DEFAULT_SEED = 20261129
DTYPES = (np.dtype(np.complex64), np.dtype(np.complex128))
DOCS = ROOT / "docs" / "results" / "accuracy_complex.md"
DOCS_JSON = ROOT / "docs" / "results" / "accuracy_complex.json"
SECTION = "accuracy-complex"
LARGE_SECTION = "accuracy-complex-2048"
"""The section ``--large-only`` writes: n = 2048 alone, the default configs (a run of every scheme's
configs and five distributions at 2048 takes hours: the cheapest mixpert-fp64 config recomputes
most outputs on normal data)."""

#: the real products of the form study: correctly rounded (bf16x9) or BLAS (dgemm) ones
STUDY_REAL = {np.dtype(np.float32): ("bf16xn", "products=9"), np.dtype(np.float64): ("native", "accumulate=blas")}

#: name -> (description, (log2 of Im/Re for A, for B), parts sampler)
Sampler = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]
_UNIFORM: Sampler = lambda rng, s: rng.uniform(-1.0, 1.0, s)  # noqa: E731
DISTRIBUTIONS: dict[str, tuple[str, tuple[int, int], Sampler]] = {
    "uniform": ("parts uniform [-1, 1)", (0, 0), _UNIFORM),
    "normal": ("parts standard normal", (0, 0), lambda rng, s: rng.standard_normal(s)),
    "wide-up": ("imaginary parts 2^20 × the real parts (uniform)", (20, 20), _UNIFORM),
    "wide-down": ("imaginary parts 2^-20 × the real parts (uniform)", (-20, -20), _UNIFORM),
    "wide-opposite": ("imaginary parts 2^20 × (A), 2^-20 × (B) the real parts (uniform)", (20, -20), _UNIFORM),
}
DEFAULT_DISTS = ("uniform", "normal", "wide-up")


def make_inputs(dist: str, n: int, cdt: np.dtype, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded complex A, B (n×n) of ``dist`` in ``cdt``; the stream depends only on (seed, dist, n)."""
    rng = np.random.default_rng([seed, list(DISTRIBUTIONS).index(dist), n])
    _, spreads, sample = DISTRIBUTIONS[dist]
    out = []
    for spread in spreads:
        x = np.empty((n, n), dtype=cdt)
        x.real = sample(rng, (n, n))
        x.imag = np.ldexp(sample(rng, (n, n)), spread)
        out.append(x)
    return out[0], out[1]


class Exact:
    """The exact product's parts (double-double hi + lo) and each part's |·||·| error scale."""

    def __init__(self, a: np.ndarray, b: np.ndarray) -> None:
        ar, ai, br, bi = (np.ascontiguousarray(x, dtype=np.float64) for x in (a.real, a.imag, b.real, b.imag))
        self.re = dd_gemm(np.hstack([ar, -ai]), np.vstack([br, bi]))
        self.im = dd_gemm(np.hstack([ar, ai]), np.vstack([bi, br]))
        xa, xb = np.hstack([np.abs(ar), np.abs(ai)]), np.vstack([np.abs(br), np.abs(bi)])
        self.scale_re = xa @ xb
        self.scale_im = xa @ np.vstack([np.abs(bi), np.abs(br)])

    def rounded(self, cdt: np.dtype) -> np.ndarray:
        """Each part of the exact product rounded to the parts' dtype."""
        c = np.empty(self.scale_re.shape, dtype=cdt)
        c.real, c.imag = self.re[0] + self.re[1], self.im[0] + self.im[1]
        return c

    def errors(self, c: np.ndarray) -> dict[str, float]:
        """Frobenius (both parts), componentwise (max over parts), Frobenius of Re C and of Im C alone."""
        d_re = (c.real.astype(np.float64) - self.re[0]) - self.re[1]
        d_im = (c.imag.astype(np.float64) - self.im[0]) - self.im[1]
        norm_re, norm_im = np.linalg.norm(self.re[0]), np.linalg.norm(self.im[0])
        frob = float(np.hypot(np.linalg.norm(d_re), np.linalg.norm(d_im)) / np.hypot(norm_re, norm_im))
        comp = max(_worst(d_re, self.scale_re), _worst(d_im, self.scale_im))
        return {"frobenius": frob, "componentwise": comp, "re_frobenius": float(np.linalg.norm(d_re) / norm_re),
                "im_frobenius": float(np.linalg.norm(d_im) / norm_im)}


def _worst(d: np.ndarray, scale: np.ndarray) -> float:
    nz = scale > 0
    return float(np.max(np.abs(d[nz]) / scale[nz])) if nz.any() else 0.0


def complex_rows(cdt: np.dtype, all_schemes: bool) -> list[ComplexConfig]:
    """The complex configs measured for ``cdt``: the default real scheme's most precise config in
    both forms; with ``all_schemes`` every real scheme's most precise (both forms) and cheapest
    (form 4) config."""
    w = working_dtype(cdt)
    names = [s for f in catalog.families() for s in f.schemes if np.dtype(w) in get_scheme(s).dtypes
             and w.name in f.dtypes] if all_schemes else [None]
    rows: list[ComplexConfig] = []
    for name in names:
        configs = COMPLEX.configs(cdt, real=name)
        first, last = configs[0].real_config, configs[-1].real_config  # the real scheme's most precise, cheapest
        wanted = [(form, first) for form in FORMS] + ([(4, last)] if all_schemes else [])
        for form, real_config in wanted:
            cfg = next(c for c in configs if (c.form, c.real_config) == (form, real_config))
            if cfg not in rows:
                rows.append(cfg)
    return rows


def measure(sizes: Sequence[int], dists: Sequence[str], seed: int, all_schemes: bool) -> list[dict]:
    """One record per (dtype, dist, n, row)."""
    records = []
    for cdt in DTYPES:
        rows = complex_rows(cdt, all_schemes)
        for dist in dists:
            warm_a, warm_b = make_inputs(dist, 16, cdt, seed)
            for cfg in rows:  # compile (or load) the executors' paths for this data before anything is timed
                COMPLEX.run(warm_a, warm_b, cfg)
            for n in sizes:
                a, b = make_inputs(dist, n, cdt, seed)
                exact = Exact(a, b)
                c_np, t_np = cpu_timed(lambda: a @ b)
                runs: list[tuple[str, Callable[[], np.ndarray]]] = [
                    ("numpy", lambda: c_np), ("RN(exact)", lambda: exact.rounded(cdt))]
                runs += [(cfg.label, lambda cfg=cfg: COMPLEX.run(a, b, cfg)) for cfg in rows]
                for key, run in runs:
                    c, secs = cpu_timed(run)
                    rec = {"dtype": cdt.name, "dist": dist, "n": n, "row": key,
                           **exact.errors(c), "vs_numpy": _distance(c, c_np),
                           "cpu_seconds": t_np if key == "numpy" else (None if key == "RN(exact)" else secs)}
                    records.append(rec)
                    progress(f"[{cdt.name} {dist} n={n}] {key}: frob {rec['frobenius']:.3e} "
                             f"comp {rec['componentwise']:.3e} im {rec['im_frobenius']:.3e}")
    return records


def _distance(c: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(c.astype(np.complex128) - ref) / np.linalg.norm(ref.astype(np.complex128)))


def form_study(seed: int) -> list[dict]:
    """Form 3 against form 4 over correctly rounded (float32) or BLAS (float64) real products,
    n = STUDY_SIZE, every distribution: Re C is the same in both forms, Im C differs."""
    out = []
    for cdt in DTYPES:
        name, label = STUDY_REAL[working_dtype(cdt)]
        real = get_scheme(name).parse_config(label)
        for dist in DISTRIBUTIONS:
            a, b = make_inputs(dist, STUDY_SIZE, cdt, seed)
            exact = Exact(a, b)
            errs = {form: exact.errors(COMPLEX.run(a, b, ComplexConfig(form, name, real))) for form in FORMS}
            out.append({"dtype": cdt.name, "dist": dist, "real": f"{name} {label}",
                        **{f"form{f}_{k}": v for f in FORMS for k, v in errs[f].items()}})
            progress(f"[form study {cdt.name} {dist}] Im error form 4 {errs[4]['im_frobenius']:.3e}, "
                     f"form 3 {errs[3]['im_frobenius']:.3e}")
    return out


def checks(records: Sequence[dict]) -> list[dict]:
    """Issue 24's accuracy checks: the most precise complex64 config at least as accurate as
    numpy's cgemm (Frobenius and componentwise) on uniform and normal data; the most precise
    complex128 config as accurate as zgemm componentwise (every distribution measured)."""
    out = []
    for cdt, dists, metrics in ((DTYPES[0], ("uniform", "normal"), ("frobenius", "componentwise")),
                                (DTYPES[1], tuple(DISTRIBUTIONS), ("componentwise",))):
        top = COMPLEX.default_config(cdt).label
        for r in records:
            if r["dtype"] != cdt.name or r["row"] != top or r["dist"] not in dists:
                continue
            native = next(x for x in records if x["row"] == "numpy" and x["dtype"] == r["dtype"]
                          and x["dist"] == r["dist"] and x["n"] == r["n"])
            for metric in metrics:
                out.append({"dtype": cdt.name, "dist": r["dist"], "n": r["n"], "config": top, "metric": metric,
                            "value": r[metric], "numpy": native[metric], "pass": r[metric] <= native[metric]})
    return out


def render(records: Sequence[dict], study: Sequence[dict], verdicts: Sequence[dict], sizes: Sequence[int],
           dists: Sequence[str], prov: Sequence[str]) -> str:
    """Markdown: the checks, per dtype and distribution the error table, then the form study."""
    lines = [*prov, "", "#### Checks (issue 24)", ""]
    for v in verdicts:
        lines.append(f"- {'PASS' if v['pass'] else 'FAIL'}: {v['dtype']} {v['dist']} n={v['n']}, `{v['config']}` "
                     f"{v['metric']} {fmt_sci(v['value'])} {'<=' if v['pass'] else '>'} numpy {fmt_sci(v['numpy'])}")
    lines.append("")
    big = max(sizes)
    for cdt in DTYPES:
        for dist in dists:
            recs = [r for r in records if r["dtype"] == cdt.name and r["dist"] == dist]
            if not recs:
                continue
            lines += [f"#### {cdt.name}, {DISTRIBUTIONS[dist][0]}", ""]
            header = ["row", *[f"Frobenius n={n}" for n in sizes], f"componentwise n={big}",
                      f"Im Frobenius n={big}", f"vs numpy n={big}", f"CPU s n={big}", "× numpy"]
            table = []
            t_np = next(r for r in recs if r["row"] == "numpy" and r["n"] == big)["cpu_seconds"]
            for key in dict.fromkeys(r["row"] for r in recs):
                by_n = {r["n"]: r for r in recs if r["row"] == key}
                r = by_n[big]
                t = r["cpu_seconds"]
                table.append([f"`{key}`" if key.startswith("form=") else key,
                              *[fmt_sci(by_n[n]["frobenius"]) for n in sizes], fmt_sci(r["componentwise"]),
                              fmt_sci(r["im_frobenius"]), fmt_sci(r["vs_numpy"]),
                              "-" if t is None else f"{t:.3f}",
                              "-" if t is None or key == "numpy" or t_np <= 0 else f"{t / t_np:.1f}"])
            lines += markdown_table(header, table) + [""]
    lines += [f"#### Form 3 against form 4 (n = {STUDY_SIZE}; relative Frobenius error of Im C, of Re C and of C)", ""]
    lines += markdown_table(
        ["dtype", "data", "real products", "Im C form 4", "Im C form 3", "form 3 / form 4", "Re C form 4",
         "C form 4", "C form 3"],
        [[s["dtype"], DISTRIBUTIONS[s["dist"]][0], s["real"], fmt_sci(s["form4_im_frobenius"]),
          fmt_sci(s["form3_im_frobenius"]), f"{s['form3_im_frobenius'] / s['form4_im_frobenius']:.3g}",
          fmt_sci(s["form4_re_frobenius"]), fmt_sci(s["form4_frobenius"]), fmt_sci(s["form3_frobenius"])] for s in study])
    return "\n".join(lines + [""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help=f"small sizes {QUICK_SIZES}")
    p.add_argument("--sizes", type=int, nargs="+", help=f"matrix sizes (default {FULL_SIZES})")
    p.add_argument("--large", action="store_true", help=f"also n = {LARGE_SIZE}")
    p.add_argument("--large-only", action="store_true",
                   help=f"n = {LARGE_SIZE} alone; --write-docs then writes the {LARGE_SECTION} section and "
                        f"{DOCS_JSON.with_name(DOCS_JSON.stem + '_2048.json').relative_to(ROOT)}")
    p.add_argument("--all-schemes", action="store_true",
                   help="every real scheme's most precise (both forms) and cheapest (form 4) config")
    p.add_argument("--dists", nargs="+", choices=list(DISTRIBUTIONS), default=list(DEFAULT_DISTS))
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--json", type=str, help="also write every record as JSON here")
    p.add_argument("--write-docs", action="store_true",
                   help=f"rewrite the {SECTION} section of {DOCS.relative_to(ROOT)} and {DOCS_JSON.relative_to(ROOT)}")
    args = p.parse_args(argv)
    if args.write_docs and args.quick:
        p.error("--write-docs needs a full run; quick numbers do not go into the docs")
    sizes = (LARGE_SIZE,) if args.large_only else \
        tuple(sorted(set(args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)) | ({LARGE_SIZE} if args.large else set())))
    section = LARGE_SECTION if args.large_only else SECTION
    docs_json = DOCS_JSON.with_name(DOCS_JSON.stem + "_2048.json") if args.large_only else DOCS_JSON
    records = measure(sizes, args.dists, args.seed, args.all_schemes)
    study = form_study(args.seed)
    verdicts = checks(records)
    text = render(records, study, verdicts, sizes, args.dists,
                  provenance(["python", "tools/accuracy_complex.py", *sys.argv[1:]], args.seed))
    print(text)
    data = {"sizes": sizes, "dists": args.dists, "seed": args.seed, "records": records, "form_study": study,
            "checks": verdicts}
    for path in ([pathlib.Path(args.json)] if args.json else []) + ([docs_json] if args.write_docs else []):
        write_json(path, data)
    if args.write_docs:
        replace_generated_section(DOCS, section, text)
        progress(f"accuracy_complex: wrote the {section} section of {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
