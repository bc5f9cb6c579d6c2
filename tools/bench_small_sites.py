"""Per-call cost of small emulated GEMMs, side by side with native ones.

    python tools/bench_small_sites.py            # measure, print, rewrite the docs section
    python tools/bench_small_sites.py --calls 2000 --repeats 5 --no-write

Cases (issue 9, item 4): 4x4 and 32x32 float32 under ``mixpert`` ``level=IV``, and
32x32 float64 under ``mixpert-fp64``'s most precise config. Each case is timed two
ways, in CPU time (``time.process_time``), alternating with its native twin in the
same run, ``--repeats`` times; the median per-call ratio is reported:

* *site*: a ``@mixjit`` function whose loop body is one GEMM (``c = a @ b``; the
  site's plan set to the case's scheme and config), against the same function under
  ``@njit``, both called once for ``--calls`` loop iterations;
* *gemm*: ``mixjit.gemm(a, b, scheme, config)`` called from Python, against
  ``a @ b`` from Python (numpy).

The targets (site, per call): at most 5x native at 32x32 and 2x at 4x4 for float32
level IV, at most 10x for float64 mixpert-fp64 at 32x32. Results go to
docs/small_sites.json and the generated section ``small-sites`` of
docs/executor_speed.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: idle BLAS threads would bill CPU time

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from common import ROOT, markdown_table, progress, provenance, replace_generated_section, write_json
from mixjit import gemm, mixjit  # noqa: E402
from mixjit.plan import SitePlan, set_plan  # noqa: E402
from mixjit.runtime import executor_mixpert as ex  # noqa: E402
from mixjit.runtime.schemes import get_scheme  # noqa: E402

DOC = ROOT / "docs" / "executor_speed.md"
JSON = ROOT / "docs" / "small_sites.json"

#: (case name, size, dtype, scheme, config label or None for the most precise, target ratio at a site)
CASES = (
    ("float32 4x4 mixpert level=IV", 4, np.float32, "mixpert", "level=IV", 2.0),
    ("float32 32x32 mixpert level=IV", 32, np.float32, "mixpert", "level=IV", 5.0),
    ("float64 32x32 mixpert-fp64 (most precise)", 32, np.float64, "mixpert-fp64", None, 10.0),
)


def _loop(a, b, calls):
    s = 0.0
    for _ in range(calls):
        c = a @ b
        s += c[0, 0]
    return s


_native_loop = njit(_loop)
_site_loop = mixjit(schemes=("native",))(_loop)


@njit
def _kernel_loop(a, b, c, params, stats, calls):
    """The compiled MixPert kernel alone (what a site's executor calls), ``calls`` times."""
    s = 0
    for _ in range(calls):
        s += ex.mixpert_gemm(a, b, c, params, stats)
    return s


@njit
def _split_loop(a, b, params, calls):
    """Only the split of both operands (executor_mixpert_split), ``calls`` times."""
    s = 0
    for _ in range(calls):
        s += ex.prepare_operand(a, False, params).fb_tiles + ex.prepare_operand(b, True, params).fb_tiles
    return s


def _cpu_per_call(fn: Callable[[], object], calls: int) -> float:
    t0 = time.process_time()
    fn()
    return (time.process_time() - t0) / calls


def _ratio(emulated: Callable[[], object], native: Callable[[], object], calls: int, repeats: int) -> dict:
    """Median per-call CPU seconds of both and the median of the per-repeat ratios."""
    e, n = [], []
    for _ in range(repeats):
        e.append(_cpu_per_call(emulated, calls))
        n.append(_cpu_per_call(native, calls))
    return {
        "emulated_us": statistics.median(e) * 1e6,
        "native_us": statistics.median(n) * 1e6,
        "ratio": statistics.median(x / y for x, y in zip(e, n)),
    }


def _plan_site(dtype, scheme: str, label: str) -> None:
    ids = [s.id for s in _site_loop.sites if s.taken and np.dtype(s.dtype) == np.dtype(dtype)]
    if len(ids) != 1:
        raise RuntimeError(f"expected one taken {np.dtype(dtype)} site in the loop, found {ids}")
    set_plan(ids[0], SitePlan(scheme, label, scheme))


def measure(calls: int, repeats: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for name, size, dtype, scheme, label, target in CASES:
        label = label or get_scheme(scheme).default_config(dtype).label
        a = rng.standard_normal((size, size)).astype(dtype)
        b = rng.standard_normal((size, size)).astype(dtype)
        progress(f"{name}: compiling and warming up")
        _native_loop(a, b, 1)
        _site_loop(a, b, 1)  # compiles the site with its native plan
        _plan_site(dtype, scheme, label)
        _site_loop(a, b, 1)  # loads the executor
        gemm(a, b, scheme, label)
        if not np.array_equal(get_scheme(scheme).run(a, b, get_scheme(scheme).parse_config(label)),
                              gemm(a, b, scheme, label)):
            raise RuntimeError(f"{name}: scheme.run and mixjit.gemm differ")
        site_calls = calls if size > 4 else calls * 10
        site = _ratio(lambda: _site_loop(a, b, site_calls), lambda: _native_loop(a, b, site_calls), site_calls, repeats)
        params = np.asarray(get_scheme(scheme).parse_config(label).words(), dtype=np.int64)
        c, stats = np.empty((size, size), dtype), np.zeros(ex.N_STATS, np.int64)
        _kernel_loop(a, b, c, params, stats, 1)
        _split_loop(a, b, params, 1)
        kernel_us = statistics.median(_cpu_per_call(lambda: _kernel_loop(a, b, c, params, stats, site_calls), site_calls)
                                      for _ in range(repeats)) * 1e6
        split_us = statistics.median(_cpu_per_call(lambda: _split_loop(a, b, params, site_calls), site_calls)
                                     for _ in range(repeats)) * 1e6
        api_calls = max(1, calls // 4)

        def api():
            for _ in range(api_calls):
                gemm(a, b, scheme, label)

        def api_native():
            for _ in range(api_calls):
                a @ b

        via_gemm = _ratio(api, api_native, api_calls, repeats)
        row = {"case": name, "scheme": scheme, "config": label, "size": size, "dtype": np.dtype(dtype).name,
               "target": target, "site": site, "kernel_us": kernel_us, "split_us": split_us, "gemm": via_gemm, "met": site["ratio"] <= target}
        progress(f"  site {site['emulated_us']:.2f} us vs native {site['native_us']:.2f} us: "
                 f"{site['ratio']:.2f}x (target <= {target:g}x); gemm {via_gemm['ratio']:.1f}x")
        rows.append(row)
    return rows


def _section(rows: list[dict], argv: list[str], seed: int) -> str:
    table = markdown_table(
        ["case", "site: emulated / @njit (µs per call)", "ratio", "target", "met",
         "kernel alone (µs)", "of which operand split (µs)", "mixjit.gemm / numpy (µs)", "ratio"],
        [[r["case"], f"{r['site']['emulated_us']:.2f} / {r['site']['native_us']:.2f}", f"{r['site']['ratio']:.1f}x",
          f"<= {r['target']:g}x", "yes" if r["met"] else f"no (missed by {r['site']['ratio'] / r['target']:.1f}x)",
          f"{r['kernel_us']:.2f}", f"{r['split_us']:.2f}",
          f"{r['gemm']['emulated_us']:.1f} / {r['gemm']['native_us']:.1f}", f"{r['gemm']['ratio']:.1f}x"]
         for r in rows])
    env = f"- OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, load average at the end: " + \
        ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return "\n".join(provenance(argv, seed) + [env, ""] + table)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000, help="GEMMs per timed loop (x10 at 4x4)")
    p.add_argument("--repeats", type=int, default=5, help="alternating timed pairs per case")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/ as it is")
    args = p.parse_args(argv)
    rows = measure(args.calls, args.repeats, args.seed)
    section = _section(rows, ["python", "tools/bench_small_sites.py", *(argv if argv is not None else sys.argv[1:])],
                       args.seed)
    print(section)
    if not args.no_write:
        write_json(JSON, {"calls": args.calls, "repeats": args.repeats, "seed": args.seed, "cases": rows})
        replace_generated_section(DOC, "small-sites", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
