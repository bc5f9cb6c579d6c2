"""First-use cost of mixjit: CPU seconds of a fresh process, with empty and with warm caches.

    python tools/bench_first_use.py [--write]

Each scenario runs in a new Python process whose ``NUMBA_CACHE_DIR`` is a fresh,
empty directory (the *cold* run: every runtime kernel, the run-time entry and the
executors a plan needs compile), then once more in a new process over the same
directory (the *warm* run: everything loads from the disk caches). The figure is
the child's CPU time (``time.process_time``, all its threads) from before
``import mixjit`` to the end of the first call, so a loaded machine inflates it
less than wall time. Scenarios:

* ``gemm``: ``mixjit.gemm(A, B, "mixpert")`` on 64x64 float32 (the MixPert kernel alone);
* ``native_site``: the first call of a ``@mixjit(schemes=("native",))`` function (the
  entry with its built-in executors; no emulation code is compiled or loaded);
* ``cholesky_default_plan``: the first call of examples/cholesky.py's ``cholesky`` on a
  64x64 float64 matrix with its default plan, untuned (``tune="never"``; ``mixpert-fp64``:
  the entry, then the MixPert executor for float64 loaded when the plan is written);
* ``cholesky``: the same call as the example declares it, so first-call tuning included
  (the tuner runs every candidate scheme, loading each executor it tries);
* ``warm_up``: ``mixjit.warm.warm()``, what ``make setup`` runs (``python -m mixjit.warm``).

Each cold run also records where its compile time went (Numba's ``numba:compile``
events: the CPU seconds of each compiled function, its callees included).

``--calls`` measures what the lazy compiles put on a call's way, per call in CPU
microseconds over warm caches, side by side: the small path (mixpert-fp64, 4x4 and
32x32) from a compiled loop linked in and through its address cell
(runtime/jit/lazy_link.py); its direct paths (mixpert level=IV, mixpert-fp64) linked in and
through the address cells ``small_gemm`` calls them by; its loops (level=IV with
balanced digits, which no direct path takes) linked in and through their lazy cell; and
the general path (8x8) from Python and through the sites' trampoline
(runtime/mixpert/lazy.py). Every run measures them.

``--write`` stores the figures in docs/results/first_use.json and the generated sections of
docs/results/first_use.md (a run of some scenarios keeps the others' figures).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import common

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results" / "first_use.json"
DOC = ROOT / "docs" / "results" / "first_use.md"

CHILD = """
import json, sys, time, warnings
t0 = time.process_time()
import numpy as np
from numba.core import event

class CompileProfile(event.Listener):
    # per compiled function (all its specializations): inclusive CPU seconds (its callees'
    # compiles included), exclusive seconds (its own), and of those the seconds of its
    # native_lowering pass (lowering, linking its callees' modules in, LLVM O3 of the linked
    # module, machine code)
    def __init__(self):
        self.open, self.total, self.own, self.lower, self.count = [], {}, {}, {}, {}
    def on_start(self, ev):
        f = ev.data["dispatcher"].py_func
        self.open.append([f.__module__.rsplit(".", 1)[-1] + "." + f.__qualname__, time.process_time(), 0.0, 0.0])
    def on_end(self, ev):
        name, start, nested, lowering = self.open.pop()
        spent = time.process_time() - start
        self.total[name] = self.total.get(name, 0.0) + spent
        self.own[name] = self.own.get(name, 0.0) + spent - nested
        self.lower[name] = self.lower.get(name, 0.0) + lowering
        self.count[name] = self.count.get(name, 0) + 1
        if self.open:
            self.open[-1][2] += spent

class LoweringTimer(event.Listener):
    # the native_lowering pass of the innermost open compile (minus compiles nested in it)
    def __init__(self, profile):
        self.profile, self.start = profile, []
    def on_start(self, ev):
        if ev.data["name"].startswith("native_") and self.profile.open:
            frame = self.profile.open[-1]
            self.start.append((frame, time.process_time(), frame[2]))
    def on_end(self, ev):
        if ev.data["name"].startswith("native_") and self.start:
            frame, start, nested = self.start.pop()
            frame[3] += time.process_time() - start - (frame[2] - nested)

# LLVM's share: module O3 after linking the callees in, and machine code, summed over all libraries
from numba.core import codegen
llvm_s = {"o3": 0.0, "machine_code": 0.0}
def timed(cls, name, key):
    original = getattr(cls, name)
    def run(self, *args):
        start = time.process_time()
        try:
            return original(self, *args)
        finally:
            llvm_s[key] += time.process_time() - start
    setattr(cls, name, run)
timed(codegen.CPUCodeLibrary, "_optimize_final_module", "o3")
timed(codegen.JITCodeLibrary, "_finalize_specific", "machine_code")

profile = CompileProfile()
event.register("numba:compile", profile)
event.register("numba:run_pass", LoweringTimer(profile))
warnings.simplefilter("ignore")
scenario = sys.argv[1]
if scenario == "warm_up":
    import io
    from mixjit.warm import warm
    warm(io.StringIO())
elif scenario == "gemm":
    import mixjit
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    mixjit.gemm(a, a, "mixpert")
elif scenario == "native_site":
    from mixjit import mixjit
    @mixjit(schemes=("native",))
    def f(a, b):
        return a @ b
    a = np.ones((8, 8))
    f(a, a)
elif scenario in ("cholesky", "cholesky_default_plan"):
    from mixjit.demo import load_example
    from mixjit import mixjit
    chol = load_example("cholesky")
    f = chol.cholesky if scenario == "cholesky" else mixjit(tune="never")(chol.cholesky.py_func)
    f(chol.spd_matrix(64), 16)
else:
    raise SystemExit(f"unknown scenario {scenario}")
from mixjit import entry
loaded = [f"{name} ({', '.join(dts)})" for name, dts in sorted(entry.loaded_executor_dtypes().items())]
top = sorted(profile.total, key=profile.total.get, reverse=True)[:12]
own = sorted(profile.own, key=profile.own.get, reverse=True)[:12]
print(json.dumps({"cpu_s": time.process_time() - t0, "executors": loaded,
                  "compiles": [[name, round(profile.total[name], 2), profile.count[name]] for name in top],
                  "own_compiles": [[name, round(profile.own[name], 2), round(profile.lower[name], 2),
                                    profile.count[name]] for name in own],
                  "compile_s": round(sum(profile.own.values()), 2),
                  "lowering_s": round(sum(profile.lower.values()), 2), "functions": len(profile.own),
                  "o3_s": round(llvm_s["o3"], 2), "machine_code_s": round(llvm_s["machine_code"], 2)}))
"""

CALLS_CHILD = """
import json, time
import numpy as np
from numba import njit
from mixjit.runtime.mixpert.paths.direct import direct_gemm
from mixjit.runtime.mixpert.paths.direct64 import direct_gemm64
from mixjit.runtime.mixpert.driver import _small_gemm_unlinked
from mixjit.runtime.mixpert.paths.small import (_direct_gemm64_far, _direct_gemm_far, _small_loops_lazy, small_gemm,
                                                   small_loops_gemm, small_max_work)
from mixjit.runtime.mixpert.lazy import general_gemm, general_gemm_lazy
from mixjit.runtime.schemes.base import get_scheme

params = np.array(get_scheme("mixpert-fp64").default_config(np.float64).words(), dtype=np.int64)
level4 = np.array(get_scheme("mixpert").parse_config("level=IV").words(), dtype=np.int64)
balanced = np.array(get_scheme("mixpert").parse_config("level=IV,digits=balanced").words(), dtype=np.int64)
stats = np.zeros(32, np.int64)
rng = np.random.default_rng(0)

# the small path's direct paths (which small_gemm calls through address cells) and its loops
# (through a lazy cell), each linked into the caller and called the way small_gemm calls it
def loop_of(kernel):
    @njit
    def run(a, b, c, params, stats, calls):
        for _ in range(calls):
            kernel(a, b, c, params, stats)
    return run

direct = {np.float32: (loop_of(direct_gemm), loop_of(_direct_gemm_far)),
          np.float64: (loop_of(direct_gemm64), loop_of(_direct_gemm64_far))}

@njit
def loops_linked(a, b, c, params, stats, calls):
    for _ in range(calls):
        small_loops_gemm(a, b, c, params, stats, small_max_work(params))

@njit
def loops_through_lazy_cell(a, b, c, params, stats, calls):
    for _ in range(calls):
        _small_loops_lazy(a, b, c, params, stats, small_max_work(params))

@njit
def linked(a, b, c, params, stats, calls):
    for _ in range(calls):
        small_gemm(a, b, c, params, stats, small_max_work(params))

@njit
def through_cell(a, b, c, params, stats, calls):
    for _ in range(calls):
        _small_gemm_unlinked(a, b, c, params, stats, small_max_work(params))

@njit
def through_trampoline(a, b, c, params, stats, calls):
    for _ in range(calls):
        general_gemm_lazy(a, b, c, params, stats)

def from_python(a, b, c, params, stats, calls):
    for _ in range(calls):
        general_gemm(a, b, c, params, stats)

def per_call(f, a, calls, params=params):
    c = np.empty_like(a)
    f(a, a, c, params, stats, 2)
    best = float("inf")
    for _ in range(5):
        t = time.process_time()
        f(a, a, c, params, stats, calls)
        best = min(best, (time.process_time() - t) / calls)
    return best * 1e6

def side_by_side(one, other, a, calls, params=params):
    # alternated, best of both orders: the shared machine's load hits both alike
    x, y = per_call(one, a, calls, params), per_call(other, a, calls, params)
    return min(x, per_call(one, a, calls, params)), min(y, per_call(other, a, calls, params))

out = {}
for n in (4, 32):
    a = rng.standard_normal((n, n))
    out[f"small_{n}"] = {"linked_us": per_call(linked, a, 20000 // n), "cell_us": per_call(through_cell, a, 20000 // n)}
for name, dtype, words in (("direct32", np.float32, level4), ("direct64", np.float64, params)):
    for n in (4, 32):
        a = rng.standard_normal((n, n)).astype(dtype)
        x, y = side_by_side(*direct[dtype], a, 20000 // n, words)
        out[f"{name}_{n}"] = {"linked_us": x, "cell_us": y}
for n in (4, 32):
    a = rng.standard_normal((n, n)).astype(np.float32)
    x, y = side_by_side(loops_linked, loops_through_lazy_cell, a, 20000 // n, balanced)
    out[f"loops32_{n}"] = {"linked_us": x, "cell_us": y}
a = rng.standard_normal((8, 8))
out["general_8"] = {"python_us": per_call(from_python, a, 2000), "trampoline_us": per_call(through_trampoline, a, 2000)}
print(json.dumps(out))
"""

SCENARIOS = ("gemm", "native_site", "cholesky_default_plan", "cholesky", "warm_up")


def run_child(scenario: str, cache_dir: str) -> dict:
    """One fresh process running ``scenario`` over the cache directory ``cache_dir``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    proc = subprocess.run([sys.executable, "-c", CHILD, scenario], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"scenario {scenario} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(scenarios: tuple[str, ...]) -> dict:
    """Cold and warm CPU seconds of each scenario, and the executors (with their dtypes) its cold run loaded."""
    out = {}
    for scenario in scenarios:
        with tempfile.TemporaryDirectory(prefix="mixjit-first-use-") as cache_dir:
            cold = run_child(scenario, cache_dir)
            warm = run_child(scenario, cache_dir)
        out[scenario] = {"cold_cpu_s": round(cold["cpu_s"], 2), "warm_cpu_s": round(warm["cpu_s"], 2),
                         "executors_loaded": cold["executors"], "cold_compiles": cold["compiles"],
                         "cold_own_compiles": cold["own_compiles"], "cold_compile_s": cold["compile_s"],
                         "cold_lowering_s": cold["lowering_s"], "cold_functions": cold["functions"],
                         "cold_o3_s": cold["o3_s"], "cold_machine_code_s": cold["machine_code_s"]}
        print(f"{scenario:12s} cold {cold['cpu_s']:7.1f} s CPU   warm {warm['cpu_s']:6.2f} s CPU   "
              f"executors loaded: {', '.join(cold['executors']) or 'none'}", flush=True)
    return out


def table(results: dict) -> str:
    """The Markdown table of ``results`` (what docs/results/first_use.md shows)."""
    rows = [(f"`{name}`", f"{r['cold_cpu_s']:.1f}", f"{r['warm_cpu_s']:.2f}", ", ".join(r["executors_loaded"]) or "none")
            for name, r in results.items()]
    return "\n".join(common.markdown_table(
        ("scenario", "empty caches (CPU s)", "warm caches (CPU s)", "executors loaded"), rows))


def compile_table(results: dict, scenarios: tuple[str, ...] = ("gemm", "cholesky_default_plan")) -> str:
    """The Markdown table of the functions whose compilation cost most in the cold runs of
    ``scenarios`` (inclusive CPU seconds: a function's time includes its callees' compiles)."""
    rows = []
    for name in scenarios:
        for function, seconds, count in results.get(name, {}).get("cold_compiles", [])[:8]:
            rows.append((f"`{name}`", f"`{function}`", f"{seconds:.1f}", str(count)))
    return "\n".join(common.markdown_table(
        ("scenario", "compiled function", "CPU s, with its callees", "specializations"), rows))


def measure_calls() -> dict:
    """Per-call CPU microseconds of what the lazy compiles put on a call's way (``CALLS_CHILD``,
    a fresh process over the default, warm caches, best of five side by side): the small path
    (mixpert-fp64, 4x4 and 32x32), its direct paths and its loops, each linked into a compiled
    caller and called through its (lazy) address cell (runtime/jit/lazy_link.py), and the general
    path (8x8) from Python and through the sites' trampoline (runtime/mixpert/lazy.py)."""
    proc = subprocess.run([sys.executable, "-c", CALLS_CHILD], capture_output=True, text=True, cwd=ROOT,
                          timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"call-cost measurement failed:\n{proc.stderr[-3000:]}")
    out = {name: {k: round(v, 2) for k, v in r.items()} for name, r in
           json.loads(proc.stdout.strip().splitlines()[-1]).items()}
    print(f"calls (CPU us): {out}", flush=True)
    return out


def own_table(results: dict, scenarios: tuple[str, ...] = ("gemm", "cholesky_default_plan")) -> str:
    """The Markdown table of where the cold compile time of ``scenarios`` goes: all compiles
    (exclusive CPU seconds, of which native lowering: lowering, linking the callees' modules in,
    LLVM optimisation of the linked module, machine code), then the functions costing most."""
    rows = []
    for name in scenarios:
        r = results.get(name, {})
        if "cold_compile_s" not in r:
            continue
        llvm = (f" (LLVM O3 {r['cold_o3_s']:.1f}, machine code {r['cold_machine_code_s']:.1f})"
                if "cold_o3_s" in r else "")
        rows.append((f"`{name}`", f"all {r['cold_functions']} compiled functions", f"{r['cold_compile_s']:.1f}",
                     f"{r['cold_lowering_s']:.1f}{llvm}"))
        for function, own, lowering, _count in r["cold_own_compiles"][:6]:
            rows.append((f"`{name}`", f"`{function}`", f"{own:.1f}", f"{lowering:.1f}"))
    return "\n".join(common.markdown_table(
        ("scenario", "compiled function", "CPU s, its own", "of which native lowering"), rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write docs/results/first_use.json and docs/results/first_use.md")
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, help="measure these scenarios; --write keeps "
                        "the other scenarios' figures from docs/results/first_use.json")
    parser.add_argument("--calls", action="store_true", help="measure only the per-call costs of the address "
                        "cell and the trampoline")
    args = parser.parse_args()
    kept = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    calls = measure_calls()
    results = {} if args.calls else measure(tuple(args.only or SCENARIOS))
    if args.write:
        old = kept.get("results", {})
        results = {name: results.get(name, old.get(name)) for name in SCENARIOS if name in results or name in old}
        kept_before = {k: v for k, v in kept.items() if k.startswith("before_")}  # earlier code's profiles, cited by the doc
        common.write_json(RESULTS, {"machine": common.machine_info(), "results": results, "calls": calls,
                                    **kept_before})
        common.replace_generated_section(DOC, "first_use", table(results))
        common.replace_generated_section(DOC, "first_use_compiles", compile_table(results))
        common.replace_generated_section(DOC, "first_use_own", own_table(results))
        common.replace_generated_section(DOC, "first_use_calls", calls_table(calls))


def calls_table(calls: dict) -> str:
    """The Markdown table docs/results/first_use.md shows for the measured per-call costs."""
    rows = [(f"small path, mixpert-fp64, {n}x{n}x{n}", "linked into the caller",
             f"{calls[f'small_{n}']['linked_us']:.2f}", "through its address cell",
             f"{calls[f'small_{n}']['cell_us']:.2f}") for n in (4, 32)]
    for key, label in (("direct32", "direct path, mixpert level=IV"), ("direct64", "direct path, mixpert-fp64"),
                       ("loops32", "small path's loops, mixpert level=IV,digits=balanced")):
        for n in (4, 32):
            r = calls.get(f"{key}_{n}")
            if r:
                cell = "through its lazy cell" if key == "loops32" else "through its address cell"
                rows.append((f"{label}, {n}x{n}x{n}", "linked into the caller", f"{r['linked_us']:.2f}", cell,
                             f"{r['cell_us']:.2f}"))
    g = calls["general_8"]
    rows.append(("general path, mixpert-fp64, 8x8x8", "from Python", f"{g['python_us']:.1f}",
                 "through the trampoline", f"{g['trampoline_us']:.1f}"))
    return "\n".join(common.markdown_table(("call", "one way", "CPU us", "the other way", "CPU us"), rows))


if __name__ == "__main__":
    main()
