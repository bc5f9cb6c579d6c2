"""``make demo``: two example programs under ``@mixjit``, next to plain ``@njit``, on one screen.

    python -m mixjit.demo [--quick] [--repeats N] [--out DIR]

For each example (examples/cholesky.py, examples/kmeans.py) it prints the GEMM
sites mixjit found (source line and form), their DAG, what each site ran (its
plan label in ``f.sites``) and how often in one run of the program, the error of
the result against the same program run in FP64 next to the same program under
plain ``@njit`` in float32 and float64 (BLAS), and the time per call. Then it
dumps the function's mix IR (``f.dump``) and runs ``mixopt -p detect-gemm,build-dag
--print-ir-after-all --timing`` on it: one summary line on the terminal, the full
output in a file whose path is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from mixjit import mixopt
from mixjit.decorator import MixjitWarning
from mixjit.report import aligned, dag_report, short_path, sites_report
from mixjit.tuning.outputs import relative_frobenius

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PIPELINE = "detect-gemm,build-dag"
DTYPES = (np.float64, np.float32)
METRIC = ("error: relative Frobenius error ||y - y_ref||_F / ||y_ref||_F of the program's output y,\n"
          "       y_ref = the same program under @njit in float64 on the same inputs (upcast to float64)")


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


@dataclass(frozen=True)
class Case:
    """One example program: ``fn`` (a ``@mixjit`` function) called with ``args``
    (float arrays in float64; each run casts them to its dtype); ``output`` picks
    from its result the array ``output_name`` the error is measured on."""

    name: str
    title: str
    fn: Any
    args: tuple
    output: Callable[[Any], np.ndarray]
    output_name: str


def cases(quick: bool = False) -> list[Case]:
    """The demo's examples, at small sizes when ``quick`` (for tests)."""
    chol, km = load_example("cholesky"), load_example("kmeans")
    n, block = (40, 16) if quick else (96, 32)
    kn, d, k, iters = (200, 8, 4, 3) if quick else (512, 16, 8, 10)
    X, C0 = km.blobs(kn, d, k)
    return [
        Case("cholesky", f"blocked Cholesky (examples/cholesky.py), n={n}, block={block}",
             chol.cholesky, (chol.spd_matrix(n), block), lambda L: L, "L"),
        Case("kmeans", f"k-means (examples/kmeans.py), n={kn}, d={d}, k={k}, iters={iters}",
             km.kmeans, (X, C0, iters), lambda result: result[0], "C, the centroids"),
    ]


def cast(args: tuple, dtype: Any) -> tuple:
    """``args`` with every float array converted to ``dtype`` (others unchanged)."""
    return tuple(a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a for a in args)


def best_time(fn: Callable, args: tuple, repeats: int) -> float:
    """The shortest wall time of ``repeats`` calls ``fn(*args)`` (call it once before)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def timed(fn: Callable, args: tuple) -> tuple[Any, float]:
    """``fn(*args)`` and its wall time."""
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


@dataclass
class Row:
    """One dtype's errors (against the FP64 run) and times per call."""

    dtype: str
    err_mixjit: float
    err_njit: float
    t_mixjit: float
    t_njit: float


@dataclass
class CaseResult:
    """What ``run_case`` found: site and DAG reports (with each site's calls in one
    run of the program), the rows, the first calls' times and any warnings."""

    sites: str
    dag: str
    rows: list[Row]
    first_mixjit: float
    first_njit: float
    warnings: list[str]


def run_case(case: Case, repeats: int) -> CaseResult:
    """Run ``case`` under ``@mixjit`` and plain ``@njit`` in each of ``DTYPES``."""
    from numba import njit

    plain = njit(case.fn.py_func)
    before = case.fn.call_counts()
    with warnings.catch_warnings(record=True) as caught:  # printed with the example
        warnings.simplefilter("always", MixjitWarning)
        runs, first_mixjit, first_njit = {}, 0.0, 0.0
        for dtype in DTYPES:
            args = cast(case.args, dtype)
            got, t_mixjit = timed(case.fn, args)
            base, t_njit = timed(plain, args)
            first_mixjit, first_njit = first_mixjit + t_mixjit, first_njit + t_njit
            ref = plain(*cast(args, np.float64))  # the FP64 run on the same (upcast) inputs
            runs[dtype] = (args, case.output(got), case.output(base), case.output(ref))
        one_run = {site: n - before.get(site, 0) for site, n in case.fn.call_counts().items()}
        sites, dag = sites_report(case.fn, one_run), dag_report(case.fn)
    rows = []
    for dtype, (args, got, base, ref) in runs.items():
        rows.append(Row(np.dtype(dtype).name, relative_frobenius(got, ref), relative_frobenius(base, ref),
                        best_time(case.fn, args, repeats), best_time(plain, args, repeats)))
    notes = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    return CaseResult(sites, dag, rows, first_mixjit, first_njit, notes)


def _error(e: float) -> str:
    return "0 (equal)" if e == 0.0 else f"{e:.2e}"


def _seconds(t: float) -> str:
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    return f"{t * 1e3:.2f} ms" if t < 1.0 else f"{t:.2f} s"


def results_table(result: CaseResult) -> list[str]:
    """The error / time table of one example: a row per dtype."""
    rows = [["dtype", "error @mixjit", "error @njit", "time @mixjit", "time @njit"]]
    for r in result.rows:
        njit_err = "(is y_ref)" if r.dtype == "float64" else _error(r.err_njit)
        rows.append([r.dtype, _error(r.err_mixjit), njit_err, _seconds(r.t_mixjit), _seconds(r.t_njit)])
    return aligned(rows, gap="   ")


def mixopt_step(case: Case, out_dir: Path) -> tuple[int, str, Path]:
    """Dump ``case.fn``'s IR for its first signature to ``<out_dir>/<name>.mix`` and run
    ``mixopt -p PIPELINE --print-ir-after-all --timing`` on it. Returns mixopt's exit
    status, a one-line summary and the path of the file holding its full output."""
    from mixjit.ir.dialects.mix import GemmOp
    from mixjit.ir.parser import parse_module

    dump = case.fn.dump(out_dir / f"{case.name}.mix", *case.fn.signatures[0], raw=True)  # mixopt detects
    argv = [str(dump), "-p", PIPELINE, "--print-ir-after-all", "--timing", "--source-dir", str(EXAMPLES)]
    result, log = io.StringIO(), io.StringIO()
    status = mixopt.main(argv, stdout=result, stderr=log)
    path = out_dir / f"{case.name}.mixopt.txt"
    path.write_text(f"$ mixopt {' '.join(argv)}\n\n{log.getvalue()}// Result:\n{result.getvalue()}")
    if status != 0:
        return status, f"mixopt failed (exit {status}); see the file below", path
    module = parse_module(result.getvalue(), str(dump))
    gemms = [op for op in module.walk() if isinstance(op, GemmOp)]
    ops = sum(1 for _ in module.walk())
    found = "; ".join(
        f"alpha={op.alpha.value}, beta={op.beta.value}, "
        f"loop depth {op.attributes['mix.loop_depth'].value if 'mix.loop_depth' in op.attributes else '?'}"
        for op in gemms)
    return status, f"{ops} ops, {len(gemms)} mix.gemm ({found or 'none'})", path


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


def build_arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mixjit.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small problem sizes (seconds, not minutes)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per measurement (default 5)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for the IR dumps and mixopt output (default: a new temporary folder)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns 0, or the first nonzero mixopt exit status."""
    args = build_arg_parser().parse_args(argv)
    if args.repeats < 1:
        print("demo: --repeats must be at least 1", file=sys.stderr)
        return 2
    try:
        examples = cases(args.quick)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    out_dir = args.out if args.out is not None else Path(tempfile.mkdtemp(prefix="mixjit-demo-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    print("mixjit demo: the GEMMs of two Numba programs under @mixjit, next to the same programs under @njit")
    print(METRIC)
    print(f"time: wall, best of {args.repeats} calls after a warm-up call, measured on this CPU")
    print("note: mixjit's sites run its CPU executor, a bit-exact simulator of each scheme's GPU arithmetic "
          "(docs/numerics.md), not a GPU kernel: its times are no GPU figures")
    print(entry_line())
    status = 0
    for number, case in enumerate(examples, 1):
        result = run_case(case, args.repeats)
        print(f"\n== {number}. {case.title}; y = {case.output_name} ==")
        print(result.sites)
        print(result.dag)
        print("\n".join(results_table(result)))
        print(f"first calls (compile + run, both dtypes, wall): @mixjit {_seconds(result.first_mixjit)}, "
              f"@njit {_seconds(result.first_njit)}")
        for note in result.warnings:
            print(f"warning: {note}")
        code, summary, path = mixopt_step(case, out_dir)
        status = status or code
        print(f"mixopt {case.name}.mix -p {PIPELINE}: {summary}")
        print(f"  full IR after each pass, with timing: {short_path(str(path))}")
    return status


if __name__ == "__main__":
    sys.exit(main())
