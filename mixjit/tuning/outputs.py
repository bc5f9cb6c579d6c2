"""What a run of a @mixjit function produces, and how far one run is from another.

The *outputs* of a run are the arrays and scalars it returns (tuples and lists
flattened, in order) plus every argument array it writes: an in-place Cholesky
returns nothing and writes its argument. Which arguments are written is decided
once, on the reference run, by comparing each argument array with its copy.

The default metric is the relative Frobenius error of each output against the
reference, ``||x - r||_F / ||r||_F`` in float64 (paper Eq. 10), maximised over the
outputs. A user metric ``metric(out, ref) -> float`` replaces the per-output
measure (it is still maximised over outputs).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from mixjit.runtime.jit.cache import cached_njit

Metric = Callable[[Any, Any], float]


@dataclass(frozen=True)
class Output:
    """One output of a run: ``name`` says where it came from (``return[0]``, ``arg 'L'``)."""

    name: str
    value: np.ndarray


def check_finite(args: Sequence[Any], names: Sequence[str], qualname: str) -> None:
    """Refuse sample inputs holding Inf or NaN: their errors are not defined (ValueError
    naming the argument)."""
    for name, value in zip(names, args):
        for where, x in _leaves(value, name):
            if isinstance(x, np.ndarray) and x.dtype.kind in "fc" and not np.isfinite(x).all():
                bad = "NaN" if np.isnan(x).any() else "Inf"
                raise ValueError(
                    f"mixjit: tuning input {where} of {qualname} contains {bad}; the error of a plan is "
                    "not defined on it. Tune on finite sample inputs (f.tune(*args))")
            if isinstance(x, (float, complex, np.floating, np.complexfloating)) and not np.isfinite(x):
                raise ValueError(
                    f"mixjit: tuning input {where} of {qualname} is {x}; tune on finite sample inputs")


def copy_args(args: Sequence[Any]) -> tuple[Any, ...]:
    """A deep copy of the arrays in ``args`` (same memory order), so a run cannot change them."""
    return tuple(_copy(a) for a in args)


def _copy(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.array(x, copy=True, order="K")
    if isinstance(x, tuple):
        return type(x)(*map(_copy, x)) if hasattr(x, "_fields") else tuple(map(_copy, x))
    if isinstance(x, list):
        return [_copy(v) for v in x]
    return x


def _leaves(x: Any, name: str):
    """(name, value) of every array or scalar inside ``x`` (tuples and lists flattened)."""
    if isinstance(x, (tuple, list)):
        for i, v in enumerate(x):
            yield from _leaves(v, f"{name}[{i}]")
    else:
        yield name, x


def written_arguments(before: Sequence[Any], after: Sequence[Any], names: Sequence[str]) -> tuple[str, ...]:
    """Names of the argument arrays a run changed (NaNs in the same places count as equal)."""
    written = []
    for name, b, a in zip(names, before, after):
        for (where, x), (_, y) in zip(_leaves(b, f"arg {name!r}"), _leaves(a, f"arg {name!r}")):
            if isinstance(x, np.ndarray) and not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
                written.append(where)
    return tuple(written)


def collect(result: Any, args_after: Sequence[Any], names: Sequence[str], written: Sequence[str]) -> list[Output]:
    """The outputs of a run: what it returned, then the argument arrays in ``written``."""
    out = []
    if result is not None:
        for where, x in _leaves(result, "return"):
            out.append(Output(where, _as_array(x, where)))
    wanted = set(written)
    for name, value in zip(names, args_after):
        for where, x in _leaves(value, f"arg {name!r}"):
            if where in wanted:
                out.append(Output(where, x))
    return out


def _as_array(x: Any, where: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (numbers.Number, np.generic)):
        return np.asarray(x)
    raise TypeError(
        f"mixjit: the tuner cannot compare output {where} ({type(x).__name__}); return arrays, scalars or "
        "tuples of them, or pass metric=callable(out, ref) -> float")


def relative_frobenius(out: Any, ref: Any) -> float:
    """``||out - ref||_F / ||ref||_F`` in float64 (0 when both are zero, Inf when only ``ref``
    is zero or ``out`` is not finite where ``ref`` is). A complex output is also measured part
    by part, the largest of the three errors counting: a plan that keeps the whole's norm but
    loses the imaginary parts (Gauss's 3-product form on parts of very different sizes,
    docs/numerics.md "Complex products") is over a budget the whole alone would let it meet."""
    x = np.asarray(out)
    r = np.asarray(ref)
    if x.shape != r.shape:
        raise ValueError(f"mixjit: an output has shape {x.shape} under one plan and {r.shape} under the reference")
    x, r = _measurable(x), _measurable(r)
    if x.dtype.kind == "c" or r.dtype.kind == "c":
        return max(_relative(x, r), _relative(x.real, r.real), _relative(x.imag, r.imag))
    return _relative(x, r)


_MEASURED_AS_IS = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}


def _measurable(x: np.ndarray) -> np.ndarray:
    """``x`` if :func:`_squared_norms` takes its dtype, else as float64 (complex128 if complex)."""
    if x.dtype in _MEASURED_AS_IS:
        return x
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def _relative(x: np.ndarray, r: np.ndarray) -> float:
    """:func:`relative_frobenius` of two arrays of one shape (dtypes ``_MEASURED_AS_IS``)."""
    num2, den2 = _squared_norms(np.ravel(x), np.ravel(r))
    num, den = math.sqrt(num2), math.sqrt(den2)
    if num == 0.0:
        return 0.0
    if not math.isfinite(num) or den == 0.0:
        return math.inf
    return num / den


@cached_njit(nogil=True)
def _squared_norms(x: np.ndarray, r: np.ndarray) -> tuple[float, float]:
    """``(sum |x - r|^2, sum |r|^2)`` in float64 over the elements, in one pass without
    temporaries (an output of a real program is large: a run's error must cost little beside
    the run). Equal elements count no difference, equal infinities and NaN against NaN
    included; a non-finite element of ``r`` counts nothing in its norm."""
    num = 0.0
    den = 0.0
    for i in range(x.size):
        xi = x[i] * 1.0  # float64 or complex128
        ri = r[i] * 1.0
        if not (xi == ri or (np.isnan(xi) and np.isnan(ri))):
            d = xi - ri
            num += d.real * d.real + d.imag * d.imag
        if np.isfinite(ri):
            den += ri.real * ri.real + ri.imag * ri.imag
    return num, den


def program_error(outs: Sequence[Output], refs: Sequence[Output], metric: Metric | None = None) -> float:
    """The error of a run against a reference run: the metric of each output, maximised."""
    if [o.name for o in outs] != [r.name for r in refs]:
        raise ValueError(
            f"mixjit: a run's outputs {[o.name for o in outs]} differ from the reference's {[r.name for r in refs]}")
    measure = metric or relative_frobenius
    name = getattr(measure, "__qualname__", repr(measure))
    worst = 0.0
    for o, r in zip(outs, refs):
        try:
            got = measure(o.value, r.value)
            e = float(got)
        except Exception as err:
            raise ValueError(f"mixjit: the error metric {name} failed on output {o.name} "
                             f"({type(err).__name__}: {err}); it must return a number >= 0") from err
        if math.isnan(e) or e < 0:
            raise ValueError(f"mixjit: the error metric returned {got!r} for output {o.name} (metric {name}); it "
                             "must return a number >= 0")
        worst = max(worst, e)
    return worst
