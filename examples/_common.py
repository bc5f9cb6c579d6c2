"""What every example shares: its command-line flags, tuning a copy of its ``@mixjit``
function for those flags, the FP64 run it is judged against, and the printed report.

Each example (``python examples/<name>.py --size N --budget B --target T``) tunes its
program on one input (seed ``--seed``), checks the plan on another (seed ``--seed + 2``),
runs it on a held-out input (seed ``--seed + 1``) and prints, through ``report``: the GEMM
sites and their DAG, the tuned plan (``f.report()``), the relative Frobenius error of the
output against the same program run in FP64 (plain Numba, inputs upcast), the example's
application metric, and the speedup the cost model predicts on the target, labelled
"modeled" (no GPU runs here).
"""

from __future__ import annotations

import argparse
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from mixjit import mixjit
from mixjit.passes.tuning.candidates import parse_scheme_spec, split_scheme_specs
from mixjit.report import dag_report, sites_report
from mixjit.runtime.model.hardware import HARDWARE
from mixjit.runtime.schemes.base import all_schemes
from mixjit.tuning import TunedPlan
from mixjit.tuning.outputs import relative_frobenius  # paper Eq. 10, in float64

__all__ = ["ExampleResult", "Flags", "parse_flags", "spd_matrix", "backward_error", "tuned", "relative_or_mismatch",
           "relative_frobenius", "run_fp64", "upcast", "report"]

DTYPES = ("float32", "float64", "complex64", "complex128")


@dataclass(frozen=True)
class Flags:
    """The flags every example takes (plus its own, in ``extra``)."""

    size: int
    budget: float
    target: str
    dtype: str
    seed: int
    schemes: tuple[str, ...] | None
    extra: dict[str, Any]


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _budget(text: str) -> float:
    value = float(text)
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a positive finite number (e.g. 1e-6), got {text}")
    return value


def parse_flags(doc: str, argv: Sequence[str] | None, *, size: int, size_help: str, budget: float,
                target: str, dtype: str, extra: Sequence[tuple[str, type, Any, str]] = ()) -> Flags:
    """Parse ``argv`` (None: ``sys.argv[1:]``) into ``Flags``. ``size`` etc. are the example's
    defaults; ``extra`` adds its own integer/float flags as ``(name, type, default, help)``.
    Bad values exit with argparse's usage message, naming the flag."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--size", type=_positive_int, default=size, help=size_help)
    parser.add_argument("--budget", type=_budget, default=budget,
                        help="error budget of the tuner: the plan's error against the reference run, by the "
                             "example's tuning metric")
    parser.add_argument("--target", choices=sorted(HARDWARE), default=target,
                        help="GPU the plan is tuned for (its times are modeled, not measured)")
    parser.add_argument("--dtype", choices=DTYPES, default=dtype, help="dtype the program runs in")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the tuning input (validation input: seed + 2; held-out run: seed + 1)")
    parser.add_argument("--schemes", default=None,
                        help="comma-separated candidate schemes of every site, each a name or a spec "
                             "name{field=value|value,...} "
                             "(default: the tuner's FP32-class-or-better set, docs/tuning.md)")
    for name, kind, default, help_text in extra:
        parser.add_argument(f"--{name}", type=_positive_int if kind is int else kind, default=default,
                            help=help_text)
    args = vars(parser.parse_args(argv))
    names = args.pop("schemes")
    try:
        schemes = split_scheme_specs(names) if names else None
        runnable = {name for name, s in all_schemes().items() if s.runs_at_sites}
        unknown = sorted({parse_scheme_spec(spec).scheme for spec in schemes or ()} - runnable)
    except ValueError as exc:
        parser.error(f"--schemes: {exc}")
    if unknown:
        parser.error(f"--schemes: {', '.join(unknown)} not known; "
                     f"schemes a site can run: {', '.join(sorted(runnable))}")
    common = {k: args.pop(k) for k in ("size", "budget", "target", "dtype", "seed")}
    return Flags(**common, schemes=schemes, extra=args)


def spd_matrix(n: int, seed: int = 0) -> np.ndarray:
    """A well-conditioned symmetric positive definite float64 matrix."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    return x @ x.T / n + np.eye(n)


def backward_error(a: np.ndarray, L: np.ndarray) -> float:
    """``||A - L L^T||_F / ||A||_F`` in float64: how far a Cholesky factor ``L`` is from factoring ``a``."""
    a, L = a.astype(np.float64), L.astype(np.float64)
    return float(np.linalg.norm(a - L @ L.T) / np.linalg.norm(a))


def tuned(fn: Any, flags: Flags, inputs: Callable[[int], tuple],
          metric: Callable[[Any, Any], float] | None = None) -> Any:
    """A fresh ``@mixjit`` copy of ``fn`` (a ``@mixjit`` function or plain Python function) for
    the flags' budget, target and schemes (and ``metric``, per output, in place of the relative
    Frobenius error), tuned on ``inputs(seed)`` and validated on ``inputs(seed + 2)``: a plan
    that breaks the budget there is tightened (docs/frontend_tuning.md). ``inputs(seed + 1)`` is
    left for the example's held-out run. A copy, so the module's own decorated function keeps
    its defaults for other callers. The tuner's one-line summary goes to stderr."""
    py_func = getattr(fn, "py_func", fn)
    f = mixjit(error_budget=flags.budget, target=flags.target, schemes=flags.schemes, tune="explicit",
               metric=metric)(py_func)
    # fp64=False: the examples measure against FP64 themselves, on the held-out input
    f.tune(*inputs(flags.seed), validate=[inputs(flags.seed + 2)], fp64=False)
    return f


def relative_or_mismatch(out: Any, ref: Any) -> float:
    """Tuning metric for programs with integer outputs (labels, neighbour indices): the relative
    Frobenius error for floating-point outputs; for integer ones the share of the entries of
    ``ref`` missing from the same row of ``out`` (order within a row ignored; a 1-D output is
    one entry per row). A label that changes, or a neighbour that drops out, costs
    ``1 / ref.size``, not its numeric distance: index values carry no magnitude."""
    out, ref = np.asarray(out), np.asarray(ref)
    if ref.dtype.kind not in "iub":
        return relative_frobenius(out, ref)
    rows_out, rows_ref = out.reshape(len(out), -1), ref.reshape(len(ref), -1)
    missing = sum(len(set(r.tolist()) - set(o.tolist())) for o, r in zip(rows_out, rows_ref))
    return missing / max(rows_ref.size, 1)


def upcast(args: Sequence[Any]) -> tuple[Any, ...]:
    """``args`` with every floating-point array converted to float64 and every complex one to
    complex128 (others unchanged)."""
    wide = {"f": np.float64, "c": np.complex128}
    return tuple(a.astype(wide[a.dtype.kind]) if isinstance(a, np.ndarray) and a.dtype.kind in wide else a
                 for a in args)


@functools.lru_cache(maxsize=None)
def _plain_numba(py_func: Callable) -> Callable:
    from numba import njit

    return njit(py_func)


def run_fp64(fn: Any, args: Sequence[Any]) -> Any:
    """The program ``fn`` run in FP64 under plain Numba (no mixjit), on ``args`` upcast to float64:
    what each example's error and application metric are measured against."""
    return _plain_numba(getattr(fn, "py_func", fn))(*upcast(args))


@dataclass(frozen=True)
class ExampleResult:
    """What an example's ``main()`` found on its held-out input; ``function`` is the tuned
    ``@mixjit`` copy that ran (its ``sites``, ``dag``, ``report()``)."""

    function: Any
    plan: TunedPlan
    error_vs_fp64: float
    metric_name: str
    metric: float
    metric_goal: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def schemes(self) -> tuple[str, ...]:
        """The scheme of each site of the tuned plan, in site order."""
        return tuple(s.scheme for s in self.plan.sites)

    @property
    def modeled_speedup(self) -> float | None:
        """The cost model's speedup of the plan against every site native on the target (modeled)."""
        return self.plan.modeled_speedup


def report(title: str, f: Any, error: float, metric_name: str, metric: float, metric_goal: str,
           **details: Any) -> ExampleResult:
    """Print the example's report (see the module docstring) and return it as an ``ExampleResult``
    (``details``: what else the example found, e.g. HPL-AI's residual history)."""
    plan = f.plan
    print(f"== {title} ==")
    print(sites_report(f))
    print(dag_report(f))
    print("tuned plan:")
    print(f.report())
    print(f"error vs FP64 (held-out input): {error:.3e}  (relative Frobenius, ||y - y64||_F / ||y64||_F)")
    print(f"{metric_name}: {metric:.6g}  (goal: {metric_goal})")
    speedup = plan.modeled_speedup
    print(f"modeled speedup on {plan.target} vs every site native: "
          + (f"{speedup:.2f}x" if speedup is not None else "n/a")
          + "  (modeled by mixjit's cost model, not measured: no GPU ran)")
    return ExampleResult(f, plan, error, metric_name, metric, metric_goal, details)
