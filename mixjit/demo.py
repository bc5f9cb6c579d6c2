"""``make demo``: two Numba programs tuned end to end under ``@mixjit``, then re-tuned offline with ``mixopt``.

    python -m mixjit.demo [--quick] [--out DIR]

For each example (examples/cholesky.py, examples/kmeans.py, both in float64) it
wraps the example's function in ``@mixjit(error_budget=..., target=...)``, tunes it
on a sample input with a held-out input for validation (``f.tune``), prints the
tuner's report (``f.report()``, every time and speedup in it *modeled* for the
target GPU), runs the tuned plan on an input the tuner never saw and prints its
error against the same program in FP64 and the program's own metric (backward error
of the factorization, agreement of the cluster assignments). Then, from the tuned
function's IR dump alone (``f.dump``), ``mixopt`` re-tunes it offline under a tighter
budget (``-p "build-dag,tune{...}" --report``) and emits the CUDA source of the plan
the program runs (``-p "emit-cuda{arch=sm_90}" --emit-dir``).

Both examples are tuned for an NVIDIA Jetson AGX Orin, whose FP64 rate is 1/64 of its
FP32 rate: emulating FP64 (or FP32, where the budget allows) on its INT8 tensor cores
is modeled faster than native FP64 already at these CPU-friendly sizes, so the tuner
has real choices. On an H100 at these sizes the cost model picks native everywhere
(docs/tuning.md, "Sizes"). Everything is written under ``--out`` (default
``results/demo``): the reports, the Pareto plots, the plan files, the dumps, mixopt's
output and the CUDA sources.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from mixjit import mixopt
from mixjit.decorator import MixjitWarning, mixjit
from mixjit.report import short_path, sites_report
from mixjit.tuning.outputs import relative_frobenius

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TARGET = "jetson-agx-orin"
TARGET_WHY = "an NVIDIA Jetson AGX Orin (FP64 at 1/64 of its FP32 rate; INT8 tensor cores)"
ARCH = "sm_90"
DEFAULT_OUT = Path("results") / "demo"
INPUTS = ("sample", "held_out", "unseen")
"""The inputs of an example: the sample it is tuned on, the held-out input the plan is
validated on, and an input the tuner never sees, on which the tuned plan then runs."""


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` once per process (as ``mixjit_example_<name>``),
    so its ``@mixjit`` functions compile once however many callers use them."""
    module_name = f"mixjit_example_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"demo: {path} not found; run `make demo` from a source checkout")
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def assignment_metric(out: Any, ref: Any) -> float:
    """k-means' error for the tuner: for the labels (an integer output), the fraction of
    points assigned to another cluster than in the reference run; for the centroids,
    the relative Frobenius error. A budget of 1e-2 then means "at least 99% of the
    points keep their cluster, and the centroids move by at most 1%"."""
    out, ref = np.asarray(out), np.asarray(ref)
    if out.dtype.kind in "iub":
        return float(np.mean(out != ref)) if out.size else 0.0
    return relative_frobenius(out, ref)


@dataclass(frozen=True)
class Example:
    """One example program under ``@mixjit``: ``fn`` (tuned explicitly) and its inputs
    ``inputs[kind]`` for each ``kind`` of ``INPUTS``, generated with the random seed
    ``seeds[kind]`` (``why_sample`` says why that sample). ``output`` picks from a result
    the array ``output_name`` whose error against FP64 is shown; ``application`` turns
    (inputs, result, FP64 result) into the program's own metric, one line."""

    name: str
    title: str
    fn: Any
    seeds: dict[str, int]
    inputs: dict[str, tuple]
    why_sample: str
    output: Callable[[Any], np.ndarray]
    output_name: str
    application: Callable[[tuple, Any, Any], str]
    offline_budget: float

    @property
    def budget(self) -> float:
        return self.fn.mixjit_options.error_budget

    @property
    def target(self) -> str:
        return self.fn.mixjit_options.target


def _backward_error(args: tuple, L: np.ndarray, L64: np.ndarray) -> str:
    a = np.asarray(args[0], np.float64)

    def err(f: np.ndarray) -> float:
        f = np.asarray(f, np.float64)
        return float(np.linalg.norm(a - f @ f.T) / np.linalg.norm(a))

    return f"backward error ||A - L L^T||_F / ||A||_F: {err(L):.2e} (FP64 run: {err(L64):.2e})"


def _agreement(args: tuple, result: tuple, result64: tuple) -> str:
    labels, labels64 = result[1], result64[1]
    same = int(np.sum(labels == labels64))
    return (f"cluster assignments agree with the FP64 run on {same / labels.size:.2%} of the points "
            f"({same}/{labels.size})")


def build_examples(quick: bool = False) -> list[Example]:
    """The demo's examples (fresh ``@mixjit`` functions each call), at small sizes when ``quick``."""
    chol, km = load_example("cholesky"), load_example("kmeans")
    n, block = (192, 64) if quick else (256, 64)
    kn, d, k, iters = (1024, 32, 16, 4) if quick else (2048, 64, 32, 8)
    cholesky = mixjit(error_budget=1e-6, target=TARGET, tune="explicit")(chol.cholesky.py_func)
    kmeans = mixjit(error_budget=1e-2, target=TARGET, tune="explicit", metric=assignment_metric)(km.kmeans.py_func)
    chol_seeds = dict(zip(INPUTS, (0, 1, 2)))
    km_seeds = dict(zip(INPUTS, (1, 0, 2)))
    return [
        Example("cholesky", f"blocked Cholesky (examples/cholesky.py), n={n}, block={block}, float64",
                cholesky, chol_seeds, {kind: (chol.spd_matrix(n, seed), block) for kind, seed in chol_seeds.items()},
                "", lambda L: L, "L", _backward_error, offline_budget=1e-12),
        Example("kmeans", f"k-means (examples/kmeans.py), n={kn}, d={d}, k={k}, {iters} Lloyd iterations, float64",
                kmeans, km_seeds, {kind: (*km.blobs(kn, d, k, seed), iters) for kind, seed in km_seeds.items()},
                "near-ties between clusters, where too coarse a GEMM flips assignments: the tuner must see "
                "them to avoid them", lambda result: result[0], "C, the centroids",
                _agreement, offline_budget=1e-3),
    ]


def cast(args: tuple, dtype: Any) -> tuple:
    """``args`` with every float array converted to ``dtype`` (others unchanged)."""
    return tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args)


@dataclass
class Outcome:
    """What one example did: the report, the run on the unseen input, the files written."""

    report: str
    sites: str
    error: float
    error_float32: float
    application: str
    native_time: float | None
    files: dict[str, Path]
    warnings: list[str]


def tune_and_run(ex: Example, out_dir: Path) -> Outcome:
    """Tune ``ex.fn`` on its sample (validated on the held-out input), write the report, the
    Pareto plot and the plan file, then run the tuned plan on the unseen input next to the
    same program under plain ``@njit`` in float64 (the FP64 run) and in float32."""
    from numba import njit

    plain = njit(ex.fn.py_func)
    files = {"report": out_dir / f"{ex.name}.report.txt", "pareto": out_dir / f"{ex.name}.pareto.png",
             "plan": out_dir / f"{ex.name}.mixplan.json"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MixjitWarning)
        ex.fn.tune(*ex.inputs["sample"], validate=[ex.inputs["held_out"]])
        report = ex.fn.report(plot=files["pareto"])
        files["report"].write_text(report + "\n", encoding="utf-8")
        ex.fn.save_plan(files["plan"])
        unseen = ex.inputs["unseen"]
        before = ex.fn.call_counts()
        got = ex.fn(*unseen)
        one_run = {site: n - before.get(site, 0) for site, n in ex.fn.call_counts().items()}
        ref = plain(*unseen)
        got32 = plain(*cast(unseen, np.float32))
    notes = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught
                               if issubclass(w.category, MixjitWarning)))
    return Outcome(report, sites_report(ex.fn, one_run), relative_frobenius(ex.output(got), ex.output(ref)),
                   relative_frobenius(ex.output(got32), ex.output(ref)), ex.application(unseen, got, ref),
                   ex.fn.plan.native_modeled_time_s, files, notes)


def run_mixopt(argv: list[str], log_path: Path) -> tuple[int, str, str]:
    """``mixopt argv`` in this process; its command line, stderr and result IR go to ``log_path``.
    Returns the exit status, the result IR and stderr."""
    result, log = io.StringIO(), io.StringIO()
    status = mixopt.main(argv, stdout=result, stderr=log)
    log_path.write_text(f"$ mixopt {' '.join(map(short_path, argv))}\n\n{log.getvalue()}\n// Result:\n"
                        f"{result.getvalue()}", encoding="utf-8")
    return status, result.getvalue(), log.getvalue()


def retune_offline(ex: Example, dump: Path, out_dir: Path, native_time: float | None) -> tuple[int, str, Path]:
    """``mixopt dump -p "build-dag,tune{budget=offline_budget,target=...}" --report``: re-tune
    from the profiles in the dump, no program run. Returns the status, a one-line summary
    (each site's new plan, the modeled program error and modeled speedup) and the log file."""
    from mixjit.ir.attributes import DictAttr
    from mixjit.ir.parser import parse_module
    from mixjit.passes.tuning.plan_attr import PLAN_ATTR, TUNING_ATTR, SitePlan
    from mixjit.passes.tuning.sites import gemm_sites

    pipeline = f"build-dag,tune{{budget={ex.offline_budget:g},target={ex.target}}}"
    log_path = out_dir / f"{ex.name}.retune.txt"
    status, text, _ = run_mixopt([str(dump), "-p", pipeline, "--report", "-o", "-"], log_path)
    if status != 0:
        return status, f"mixopt failed (exit {status}); see the file below", log_path
    module = parse_module(text, str(dump))
    plans = [f"site {site} -> {SitePlan.from_attr(site, op.attributes[PLAN_ATTR]).label}"
             for site, op in gemm_sites(module).items() if PLAN_ATTR in op.attributes]
    tuning = module.attributes[TUNING_ATTR]
    assert isinstance(tuning, DictAttr)  # the tune pass writes it
    error, modeled = tuning["error"].value, tuning["modeled_time"].value
    speedup = f", modeled speedup {native_time / modeled:.2f}x vs native" if native_time and modeled else ""
    fits = "within" if tuning["within_budget"].value else "EXCEEDS"
    return status, (f"{'; '.join(plans)}; modeled program error {error:.2e} ({fits} budget "
                    f"{ex.offline_budget:g}){speedup}"), log_path


def emit_cuda(ex: Example, dump: Path, out_dir: Path) -> tuple[int, str, Path]:
    """``mixopt dump -p "emit-cuda{arch=ARCH}" --emit-dir DIR``: the CUDA sources of the plan
    the program runs (``mix.runs`` in the dump). Returns the status, a one-line summary and
    the folder (sources, manifest.json and mixopt's log)."""
    from mixjit.passes.emit_cuda import MANIFEST

    emit_dir = out_dir / "cuda" / ex.name
    emit_dir.mkdir(parents=True, exist_ok=True)
    argv = [str(dump), "-p", f"emit-cuda{{arch={ARCH}}}", "--emit-dir", str(emit_dir), "-o", "-"]
    status, _, log = run_mixopt(argv, emit_dir / "mixopt.txt")
    if status != 0:
        return status, f"mixopt failed (exit {status}); see {short_path(str(emit_dir / 'mixopt.txt'))}", emit_dir
    kernels = json.loads((emit_dir / MANIFEST).read_text())["kernels"]
    made = ", ".join(f"{k['file']} ({k['scheme']}[{k['config']}], sites {k['sites']})" for k in kernels)
    kept = log.count("keeps its CPU executor")
    summary = f"{len(kernels)} kernel(s)" + (f": {made}" if made else "")
    if kept:
        summary += f"; {kept} site(s) without a CUDA kernel keep their CPU executor (see mixopt.txt)"
    return status, summary, emit_dir


def entry_line() -> str:
    """Load (or, on a first run, compile) the run-time entry and say which and how long."""
    from mixjit.entry import entry_cfunc

    start_wall, start_cpu = time.perf_counter(), time.process_time()
    cfunc = entry_cfunc()
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    if cfunc.cache_hits:
        return f"run-time entry (the compiled executors): loaded from its disk cache in {wall:.1f} s"
    where = getattr(getattr(cfunc, "_cache", None), "_cache_path", "its __pycache__")
    return (f"run-time entry (the compiled executors): compiled in {wall:.0f} s ({cpu:.0f} s CPU); "
            f"first run only, cached in {short_path(str(where))}")


def show(number: int, ex: Example, out_dir: Path) -> int:
    """Run one example end to end and print its section; returns the first nonzero mixopt status."""
    print(f"\n== {number}. {ex.title} ==")
    print(f"@mixjit(error_budget={ex.budget:g}, target={ex.target!r}"
          + (", metric=assignment_metric" if ex.fn.mixjit_options.metric else "") + ")")
    print(f"f.tune(sample, validate=[held_out]): seeds {ex.seeds['sample']} and {ex.seeds['held_out']}"
          + (f"; the sample has {ex.why_sample}" if ex.why_sample else ""))
    outcome = tune_and_run(ex, out_dir)
    print(outcome.report)
    print(f"run on an input the tuner never saw (seed {ex.seeds['unseen']}):")
    print("\n".join("  " + line for line in outcome.sites.splitlines()))
    print(f"  error of {ex.output_name} vs the FP64 run (relative Frobenius): {outcome.error:.2e}; "
          f"the same program in float32 (@njit): {outcome.error_float32:.2e}")
    print(f"  {outcome.application}")
    for note in outcome.warnings:
        print(f"  warning: {note}")
    dump = ex.fn.dump(out_dir / f"{ex.name}.mix", *ex.inputs["sample"])
    print(f"mixopt on the dump {short_path(str(dump))} (offline: no program run):")
    status, summary, path = retune_offline(ex, dump, out_dir, outcome.native_time)
    print(f"  tune{{budget={ex.offline_budget:g}}}: {summary}")
    code, emitted, emit_dir = emit_cuda(ex, dump, out_dir)
    print(f"  emit-cuda{{arch={ARCH}}} (the plan it runs): {emitted}")
    files = [outcome.files["report"], outcome.files["pareto"], outcome.files["plan"], path, emit_dir]
    print("  files: " + ", ".join(short_path(str(p)) for p in files))
    return status or code


def build_arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mixjit.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller problem sizes (for tests)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"folder for the reports, plots, plans, dumps and CUDA sources (default: {DEFAULT_OUT})")
    return parser


def run_demo(examples: Sequence[Example], out_dir: Path) -> int:
    """Print the demo of ``examples``, writing its files under ``out_dir``; returns 0, or the
    first nonzero mixopt exit status."""
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    print("mixjit demo: float64 Numba programs tuned under @mixjit, run, and re-tuned offline with mixopt")
    print(f"target: {TARGET_WHY}; every time and speedup printed is modeled for it by the cost model, "
          "none is measured on a GPU")
    print("error: relative Frobenius error against the reference run (the tuner) or the same program in "
          "FP64 (@njit), unless named otherwise")
    print("sites run mixjit's CPU executors, bit-exact simulators of each scheme's GPU arithmetic (docs/numerics.md)")
    print(entry_line())
    status = 0
    for number, ex in enumerate(examples, 1):
        code = show(number, ex, out_dir)
        status = status or code
    print(f"\nwritten under {short_path(str(out_dir.resolve()))}/ ; demo took {time.perf_counter() - start:.0f} s")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mixjit.demo``: returns 0, or the first nonzero mixopt exit status."""
    args = build_arg_parser().parse_args(argv)
    try:
        examples = build_examples(args.quick)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    return run_demo(examples, args.out)


if __name__ == "__main__":
    sys.exit(main())
