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

Beside them, per case, the compiled kernel alone (``mixpert_gemm`` in an ``@njit``
loop, which takes the small-shape path, runtime/mixpert/paths/small.py; the run
fails if it does not) and the general path alone (``multiply_into``, Python-driven, of two
``prepare_operand`` results: what the kernel ran before the small path).

*Steps*: the site's own cost (the site minus the kernel alone: the entry's dispatch and
the executor function), the driver's (the kernel minus the direct path alone), and each
step of the direct path (runtime/mixpert/paths/direct.py) alone in a compiled loop on
its own scratch (``_step32`` / ``_step64``); the rest (scratch views, output scaling and
rounding, statistics) is the difference.

*Threshold*: for square n x n x n GEMMs, the small path's direct path (``small_gemm``
with no size limit) and its loops alone (``small_loops_gemm``) against the general
path, level IV float32 and mixpert-fp64 float64, same data, alternating;
``mixpert.paths.small.SMALL_MAX_WORK_FP32`` / ``_FP64`` are chosen from this table
(the largest measured n^3 where the loops, which every config can reach, are faster).

*Compile* (``--compile``; also part of the default run): the CPU seconds of the
first call of ``small_gemm`` for float32 operands (``mixpert`` level IV) and for
float64 operands (``mixpert-fp64``'s default config), each in a new process over an
empty ``NUMBA_CACHE_DIR``, with the functions costing most (inclusive of their
callees, from Numba's compile events). Where the first use of a scheme takes the
small path, this is what it compiles before the general path is needed.

The targets (site, per call): at most 5x native at 32x32 and 2x at 4x4 for float32
level IV, at most 10x for float64 mixpert-fp64 at 32x32. Results go to
docs/results/small_sites.json and the generated section ``small-sites`` of
docs/results/executor_speed.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: idle BLAS threads would bill CPU time

import numpy as np  # noqa: E402
from common import ROOT, markdown_table, progress, provenance, replace_generated_section, write_json
from numba import njit  # noqa: E402

from mixjit import gemm, mixjit  # noqa: E402
from mixjit.plan import SitePlan, set_plan  # noqa: E402
from mixjit.runtime.mixpert import executor as ex  # noqa: E402
from mixjit.runtime.mixpert.paths import (
    direct,  # noqa: E402
    direct64,  # noqa: E402
)
from mixjit.runtime.mixpert.paths.small import (  # noqa: E402
    SMALL_MAX_WORK_FP32,
    SMALL_MAX_WORK_FP64,
    small_gemm,
    small_loops_gemm,
)
from mixjit.runtime.schemes import get_scheme  # noqa: E402

DOC = ROOT / "docs" / "results" / "executor_speed.md"
JSON = ROOT / "docs" / "results" / "small_sites.json"

#: square sizes of the threshold table
THRESHOLD_SIZES = (8, 16, 32, 48, 64, 80, 96, 128)

#: (case name, size, dtype, scheme, config label or None for the most precise, target ratio at a site or None)
CASES = (
    ("float32 4x4 mixpert level=IV", 4, np.float32, "mixpert", "level=IV", 2.0),
    ("float32 32x32 mixpert level=IV", 32, np.float32, "mixpert", "level=IV", 5.0),
    ("float64 32x32 mixpert-fp64 (most precise)", 32, np.float64, "mixpert-fp64", None, 10.0),
    ("float64 4x4 mixpert-fp64 (most precise)", 4, np.float64, "mixpert-fp64", None, None),  # no target: the profile
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


def _general_loop(a, b, c, params, stats, calls):
    """The general path alone (split, fast / certified / exact paths, step 6), ``calls`` times, from Python: its
    driver is Python (runtime/mixpert/driver.py), so this is what a call of it costs."""
    s = 0
    for _ in range(calls):
        s += ex.multiply_into(ex.prepare_operand(a, False, params), ex.prepare_operand(b, True, params), params, c,
                              stats)
    return s


@njit
def _direct32_loop(a, b, c, params, stats, calls):
    """The float32 direct path alone (runtime/mixpert/paths/direct.py), ``calls`` times."""
    s = 0
    for _ in range(calls):
        s += direct.direct_gemm(a, b, c, params, stats)
    return s


@njit
def _direct64_loop(a, b, c, params, stats, calls):
    """The float64 direct path alone, ``calls`` times."""
    s = 0
    for _ in range(calls):
        s += direct64.direct_gemm64(a, b, c, params, stats)
    return s


@njit
def _small_loop(a, b, c, params, stats, calls):
    """The small path with no size limit (its direct path first), ``calls`` times."""
    s = 0
    for _ in range(calls):
        s += small_gemm(a, b, c, params, stats, 1 << 62)
    return s


@njit
def _loops_loop(a, b, c, params, stats, calls):
    """The small path's loops (no direct path) with no size limit, ``calls`` times."""
    s = 0
    for _ in range(calls):
        s += small_loops_gemm(a, b, c, params, stats, 1 << 62)
    return s


#: steps of the direct paths timed alone by :func:`_step32` / :func:`_step64` (the rest
#: of the direct path's time is the difference)
STEPS32 = ("decode config", "pass 1: exponents", "pass 2: operands", "product")
STEPS64 = ("decode config", "pass 1: exponents", "pass 2: slices", "products", "guarantee check")


@njit
def _step32(a, b, params, calls, step):
    """One step of ``direct_gemm`` (float32 domain) alone, ``calls`` times, on its own
    scratch: 0 decoding the pair set, 1 both operands' exponent pass, 2 both operands'
    alignment and digits, 3 the exact products (float64 prefixes, float32 corner digits)."""
    m, K = a.shape
    n = b.shape[1]
    i1, j1, corner, _ = direct.prefix_pairs(params)
    w = direct.width(params[ex.W_SEGMENTS], params[ex.W_SEG0_BITS], 0)
    sp = direct._splitter(w)
    tk = params[ex.W_TK]
    nkt = (K + tk - 1) // tk
    ag, bg = np.empty((m, nkt), np.int64), np.empty((n, nkt), np.int64)
    aref, aspan, bref, bspan = (np.empty(m, np.int64), np.empty(m, np.int64), np.empty(n, np.int64),
                                np.empty(n, np.int64))
    top, cnt, fl = np.empty(n, np.int32), np.empty(n, np.int64), np.empty((3, n))
    narrow = m * n * K <= direct.NARROW_WORK  # B transposed (n x K), else in its layout (K x n)
    bt = np.empty((n, K), np.float32)
    xa, yb, d = np.empty((m, K)), np.empty((n, K) if narrow else (K, n)), np.empty((m, n))
    xc, yc, dc = np.empty((m, K), np.float32), np.empty(yb.shape, np.float32), np.empty((m, n), np.float32)
    direct._rows_exponents(a, sp, tk, ag)
    direct._b_exponents(b, narrow, sp, tk, bg, top, bt)
    direct._groups(ag, aref, aspan, params[ex.W_TM])
    direct._groups(bg, bref, bspan, params[ex.W_TN])
    direct._rows_operands(a, False, ag, aref, params, i1, xa, xc)
    direct._b_operands(b, narrow, bg, bref, params, j1, yb, yc, fl, cnt, bt)
    s = 0.0
    for _ in range(calls):
        if step == 0:
            s += direct.prefix_pairs(params)[0]
        elif step == 1:
            s += direct._rows_exponents(a, sp, tk, ag) + direct._b_exponents(b, narrow, sp, tk, bg, top, bt)
        elif step == 2:
            s += direct._rows_operands(a, False, ag, aref, params, i1, xa, xc)
            s += direct._b_operands(b, narrow, bg, bref, params, j1, yb, yc, fl, cnt, bt)
        else:
            direct.kept_products(narrow, corner, xa, yb, d, xc, yc, dc)
            s += d[0, 0] + dc[0, 0]
    return s


@njit
def _step64(a, b, params, calls, step):
    """One step of ``direct_gemm64`` (runtime/mixpert/paths/direct64.py) alone, ``calls`` times, on its own scratch: 0
    checking the pair set, 1 both exponent passes, 2 both operands' slices, 3 the slice products (Karatsuba, four calls),
    4 the guarantee: the proof that no output is in doubt (``_surely_certified``), else mixpert_bound's
    fp64_doubtful and recompute, as the direct path runs it."""
    m, K = a.shape
    n = b.shape[1]
    w = direct.width(9, params[ex.W_SEG0_BITS], 0)
    ag, bg = np.empty((m, 1), np.int64), np.empty((n, 1), np.int64)
    top, to_int = np.empty(n, np.int64), np.empty(n)
    aoff, boff = np.empty(m, np.int64), np.empty(n, np.int64)
    a02, a1, asum = np.empty((2 * m, K)), np.empty((m, K)), np.empty((m, K))  # a02: [A0 ; A2]
    a0, a2 = a02[:m], a02[m:]
    b0, b1, b2, bsum = np.empty((K, n)), np.empty((K, n)), np.empty((K, n)), np.empty((K, n))
    p0020, p11, psum, p02 = np.empty((2 * m, n)), np.empty((m, n)), np.empty((m, n)), np.empty((m, n))
    out, stats = np.empty((m, n)), np.zeros(ex.N_STATS, np.int64)
    direct64.direct_gemm64(a, b, out, params, stats)
    direct64._rows_exponents64(a, ag)
    direct64._cols_exponents64(b, bg, top)
    aref, bref = ag[:, 0].copy(), bg[:, 0].copy()
    direct64._row_slices(a, ag, w, False, a0, a1, a2, asum, aoff)
    direct64._col_slices(b, bg, w, False, b0, b1, b2, bsum, boff, to_int)
    s = 0.0
    for _ in range(calls):
        if step == 0:
            s += direct64.slice_pairs(params)
        elif step == 1:
            s += direct64._rows_exponents64(a, ag) + direct64._cols_exponents64(b, bg, top)
        elif step == 2:
            direct64._row_slices(a, ag, w, False, a0, a1, a2, asum, aoff)
            direct64._col_slices(b, bg, w, False, b0, b1, b2, bsum, boff, to_int)
            s += a1[0, 0]
        elif step == 3:
            direct.exact_product(a02, b0, p0020)
            direct.exact_product(a0, b2, p02)
            direct.exact_product(a1, b1, p11)
            direct.exact_product(asum, bsum, psum)
            s += p0020[0, 0]
        else:
            if not direct64._surely_certified(a, b, ag, bg, aref, bref, aoff, boff, params[ex.W_TK], w, out, top):
                s += direct64._check_and_recompute(a, ag, aref, b, bg, bref, params[ex.W_TK], w, out)
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
        if stats[ex.STAT_SMALL_PATH] != 1:
            raise RuntimeError(f"{name}: the kernel did not take the small path")
        _general_loop(a, b, c, params, stats, 1)
        kernel_us = statistics.median(_cpu_per_call(lambda: _kernel_loop(a, b, c, params, stats, site_calls), site_calls)
                                      for _ in range(repeats)) * 1e6
        general_us = statistics.median(_cpu_per_call(lambda: _general_loop(a, b, c, params, stats, site_calls),
                                                     site_calls) for _ in range(repeats)) * 1e6
        steps = {"site: entry and executor function": site["emulated_us"] - kernel_us}
        direct_loop = _direct32_loop if dtype == np.float32 else _direct64_loop
        if direct_loop(a, b, c, params, stats, 1) != ex.OK:
            raise RuntimeError(f"{name}: the direct path did not take the call")
        direct_us = statistics.median(_cpu_per_call(lambda: direct_loop(a, b, c, params, stats, site_calls),
                                                    site_calls) for _ in range(repeats)) * 1e6
        steps["driver (params check, dispatch)"] = kernel_us - direct_us
        steps["direct path"] = direct_us
        step_loop, names = (_step32, STEPS32) if dtype == np.float32 else (_step64, STEPS64)
        for i, step in enumerate(names):
            step_loop(a, b, params, 1, i)
            steps[step] = statistics.median(_cpu_per_call(lambda: step_loop(a, b, params, site_calls, i), site_calls)
                                            for _ in range(repeats)) * 1e6
        steps["rest of the direct path (difference)"] = direct_us - sum(steps[x] for x in names)
        api_calls = max(1, calls // 4)

        def api():
            for _ in range(api_calls):
                gemm(a, b, scheme, label)

        def api_native():
            for _ in range(api_calls):
                a @ b

        via_gemm = _ratio(api, api_native, api_calls, repeats)
        row = {"case": name, "scheme": scheme, "config": label, "size": size, "dtype": np.dtype(dtype).name,
               "target": target, "site": site, "kernel_us": kernel_us, "general_us": general_us, "steps_us": steps, "gemm": via_gemm, "met": None if target is None else site["ratio"] <= target}
        progress(f"  site {site['emulated_us']:.2f} us vs native {site['native_us']:.2f} us: "
                 f"{site['ratio']:.2f}x (target {_target(target)}); gemm {via_gemm['ratio']:.1f}x")
        rows.append(row)
    return rows


def threshold_table(calls: int, repeats: int, seed: int) -> list[dict]:
    """The small path (its direct path: ``small_gemm`` with no size limit) and its
    loops alone (``small_loops_gemm``) against the general path, per square size."""
    rng = np.random.default_rng(seed)
    rows = []
    for dtype, scheme, label in ((np.float32, "mixpert", "level=IV"), (np.float64, "mixpert-fp64", None)):
        cfg = get_scheme(scheme).parse_config(label) if label else get_scheme(scheme).default_config(dtype)
        params = np.asarray(cfg.words(), dtype=np.int64)
        for size in THRESHOLD_SIZES:
            a = rng.standard_normal((size, size)).astype(dtype)
            b = rng.standard_normal((size, size)).astype(dtype)
            c, stats = np.empty((size, size), dtype), np.zeros(ex.N_STATS, np.int64)
            if _small_loop(a, b, c, params, stats, 1) != ex.OK or _loops_loop(a, b, c, params, stats, 1) != ex.OK:
                raise RuntimeError(f"{scheme} {size}: the small path refused well-scaled data")
            _general_loop(a, b, c, params, stats, 1)
            n = max(1, calls * 32**3 // size**3)
            r = _ratio(lambda: _small_loop(a, b, c, params, stats, n), lambda: _general_loop(a, b, c, params, stats, n),
                       n, repeats)
            loops = _ratio(lambda: _loops_loop(a, b, c, params, stats, n),
                           lambda: _general_loop(a, b, c, params, stats, n), n, repeats)
            progress(f"  threshold {scheme} n={size}: direct {r['emulated_us']:.1f} us, loops "
                     f"{loops['emulated_us']:.1f} us, general {r['native_us']:.1f} us")
            rows.append({"scheme": scheme, "config": cfg.label, "size": size, "work": size**3,
                         "small_us": r["emulated_us"], "general_us": r["native_us"], "ratio": r["ratio"],
                         "loops_us": loops["emulated_us"], "loops_ratio": loops["ratio"]})
    return rows


#: the child of :func:`compile_cost`: the first call of small_gemm, timed, with the
#: inclusive compile time of every function (Numba's compile events)
_COMPILE_CHILD = """
import json, sys, time
t0 = time.process_time()
import numpy as np
from numba.core import event

class Profile(event.Listener):
    def __init__(self):
        self.open, self.total = [], {}
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        self.open.append((f.__module__.rsplit(".", 1)[-1] + "." + f.__qualname__, time.process_time()))
    def on_end(self, ev):
        name, start = self.open.pop()
        self.total[name] = self.total.get(name, 0.0) + time.process_time() - start

profile = Profile()
event.register("numba:compile", profile)
from mixjit.runtime.mixpert.paths.small import small_gemm
from mixjit.runtime.schemes import get_scheme
dt = np.dtype(sys.argv[1])
scheme = get_scheme("mixpert" if dt == np.float32 else "mixpert-fp64")
cfg = scheme.parse_config("level=IV") if dt == np.float32 else scheme.default_config(dt)
a = np.random.default_rng(0).standard_normal((8, 8)).astype(dt)
c = np.empty((8, 8), dt)
stats = np.zeros(10, np.int64)
t1 = time.process_time()
status = small_gemm(a, a, c, np.asarray(cfg.words(), np.int64), stats, 1 << 40)
t2 = time.process_time()
top = sorted(profile.total.items(), key=lambda x: -x[1])[:8]
print(json.dumps({"status": int(status), "small_path": int(stats[9]), "first_call_s": t2 - t1,
                  "import_s": t1 - t0, "top": top}))
"""


def compile_cost() -> list[dict]:
    """The cold first call of small_gemm per operand dtype, each in a new process over an
    empty Numba cache directory (CPU seconds of the child)."""
    rows = []
    for dtype in ("float32", "float64"):
        progress(f"compile: small_gemm, {dtype} operands, empty cache")
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            out = subprocess.run([sys.executable, "-c", _COMPILE_CHILD, dtype], env=env, capture_output=True,
                                 text=True, check=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        if row["status"] != 0 or row["small_path"] != 1:
            raise RuntimeError(f"compile: small_gemm did not take the call for {dtype} operands")
        row["dtype"] = dtype
        rows.append(row)
        progress(f"  first call {row['first_call_s']:.1f} s CPU")
    return rows


def _compile_section(rows: list[dict]) -> list[str]:
    return ["", "Compile (first call of `small_gemm` on an empty cache, CPU s; the costliest compiled functions, "
            "each with its callees, so the rows nest):", ""] + markdown_table(
        ["operands", "first call (CPU s)", "costliest compiles (CPU s, inclusive)"],
        [[r["dtype"], f"{r['first_call_s']:.1f}", ", ".join(f"`{n}` {t:.1f}" for n, t in r["top"][1:6])]
         for r in rows])


def _target(target: float | None) -> str:
    return "–" if target is None else f"<= {target:g}x"


def _met(row: dict) -> str:
    if row["target"] is None:
        return "–"
    return "yes" if row["met"] else f"no (missed by {row['site']['ratio'] / row['target']:.2f}x)"


def _section(rows: list[dict], threshold: list[dict], compiles: list[dict], argv: list[str], seed: int) -> str:
    table = markdown_table(
        ["case", "site: emulated / @njit (µs per call)", "ratio", "target", "met",
         "kernel alone, small path (µs)", "general path alone (µs)", "mixjit.gemm / numpy (µs)", "ratio"],
        [[r["case"], f"{r['site']['emulated_us']:.2f} / {r['site']['native_us']:.2f}", f"{r['site']['ratio']:.1f}x",
          _target(r["target"]), _met(r),
          f"{r['kernel_us']:.2f}", f"{r['general_us']:.2f}",
          f"{r['gemm']['emulated_us']:.1f} / {r['gemm']['native_us']:.1f}", f"{r['gemm']['ratio']:.1f}x"]
         for r in rows])
    rest = "rest of the direct path (difference)"
    step_names = [x for x in dict.fromkeys(x for r in rows for x in r["steps_us"]) if x != rest] + [rest]
    steps = markdown_table(["per call (µs)", *step_names],
                           [[r["case"], *[f"{r['steps_us'][x]:.2f}" if x in r["steps_us"] else "–"
                                          for x in step_names]] for r in rows])
    sizes = sorted({t["size"] for t in threshold})
    schemes = list(dict.fromkeys(t["scheme"] for t in threshold))
    cell = {(t["scheme"], t["size"]): t for t in threshold}
    cross = markdown_table(
        ["direct / loops / general path (µs per call; ratios to the general path)", *[f"n={n}" for n in sizes]],
        [[f"{s} {cell[(s, sizes[0])]['config']}",
          *[f"{cell[(s, n)]['small_us']:.1f} / {cell[(s, n)]['loops_us']:.1f} / {cell[(s, n)]['general_us']:.1f} "
            f"({cell[(s, n)]['ratio']:.2f}, {cell[(s, n)]['loops_ratio']:.2f})" for n in sizes]] for s in schemes])
    env = f"- OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, load average at the end: " + \
        ", ".join(f"{x:.2f}" for x in os.getloadavg())
    limit = (f"- small path (direct paths, then loops) taken up to m*n*k = "
             f"{round(SMALL_MAX_WORK_FP32 ** (1 / 3))}^3 (float32 domain), "
             f"{round(SMALL_MAX_WORK_FP64 ** (1 / 3))}^3 (float64 domain)")
    return "\n".join(provenance(argv, seed) + [env, limit, ""] + table + ["", "Steps (the site's own part is the site minus the kernel alone, the driver's the "
             "kernel minus the direct path alone; each step of the direct path timed alone in a compiled loop "
             "on its own scratch):", ""]
                     + steps + ["", "Threshold (square n x n x n):", ""] + cross + _compile_section(compiles))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000, help="GEMMs per timed loop (x10 at 4x4)")
    p.add_argument("--repeats", type=int, default=5, help="alternating timed pairs per case")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/ as it is")
    p.add_argument("--compile", action="store_true", help="only the compile cost (printed; docs/ left as it is)")
    args = p.parse_args(argv)
    if args.compile:
        print("\n".join(_compile_section(compile_cost())))
        return 0
    rows = measure(args.calls, args.repeats, args.seed)
    threshold = threshold_table(args.calls, args.repeats, args.seed)
    compiles = compile_cost()
    section = _section(rows, threshold, compiles,
                       ["python", "tools/bench_small_sites.py", *(argv if argv is not None else sys.argv[1:])], args.seed)
    print(section)
    if not args.no_write:
        write_json(JSON, {"calls": args.calls, "repeats": args.repeats, "seed": args.seed, "cases": rows,
                          "small_max_work": {"fp32": SMALL_MAX_WORK_FP32, "fp64": SMALL_MAX_WORK_FP64},
                          "threshold": threshold, "compile": compiles})
        replace_generated_section(DOC, "small-sites", section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
