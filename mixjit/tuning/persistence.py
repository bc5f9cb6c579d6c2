"""Tuned plans as JSON files: what each site runs, and what the plan was made for.

A plan file (``*.mixplan.json``, editable by hand)::

    {"mixjit_plan": 1, "function": "cholesky", "source_hash": "<sha256 of the source>",
     "argtypes": "(array(float32, 2d, C), int64)", "target": "h100", "error_budget": 1e-06,
     "error": 3.1e-07, "modeled_time_s": 0.0012, "native_modeled_time_s": 0.0031,
     "within_budget": true, "native_error": 4.2e-07,
     "sites": [{"index": 0, "function": "cholesky", "loc": "chol.py:41", "form": "c -= a @ b.T",
                "dtype": "float32", "scheme": "mixpert", "config": "level=III",
                "error": 2.0e-07, "modeled_time_s": 0.0012}]}

``error_budget`` is a number or ``"native"`` (no less accurate than native: the budget is
``NATIVE_MARGIN`` times ``native_error``, native's measured error; ``mixjit.tuning.native_budget``).
Sites are matched by ``index`` (their order among the signature's sites), and a plan is only
applied when every site fits: same count, same function, location, form and dtype, a scheme
that accepts the dtype and has a compiled executor, a config the scheme parses. Times are
*modeled* (cost model), never measured. The default location is Numba's cache directory of
the function (``__pycache__`` beside its source, or ``NUMBA_CACHE_DIR``), one file per
signature, target and budget.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mixjit import entry
from mixjit.plan import SitePlan
from mixjit.runtime.schemes.base import get_scheme
from mixjit.tuning.native_budget import is_native, native_budget

__all__ = ["PlanSite", "TunedPlan", "PlanFileError", "FORMAT_VERSION", "source_hash", "default_plan_path",
           "load_plan", "save_plan"]

FORMAT_VERSION = 1


class PlanFileError(ValueError):
    """A plan (file) that cannot be applied; the message names the problem."""


@dataclass(frozen=True)
class PlanSite:
    """What one site runs under a plan, with the site-alone error and modeled time it was chosen with."""

    index: int
    function: str
    loc: str
    form: str
    dtype: str
    scheme: str
    config: str
    error: float | None = None
    modeled_time_s: float | None = None

    def site_plan(self) -> SitePlan:
        return SitePlan(self.scheme, self.config, self.scheme)


@dataclass(frozen=True)
class TunedPlan:
    """A whole plan of one compiled signature (see the module docstring)."""

    function: str
    source_hash: str
    argtypes: str
    target: str
    error_budget: float | str
    """What the plan was tuned for: a number, or ``"native"`` (``mixjit.tuning.native_budget``)."""
    sites: tuple[PlanSite, ...]
    error: float | None = None
    modeled_time_s: float | None = None
    native_modeled_time_s: float | None = None
    within_budget: bool = True
    native_error: float | None = None
    """The program's error with every site native, on the tuning sample (None: not measured)."""

    @property
    def budget(self) -> float:
        """The error budget as a number: ``error_budget``, or for ``"native"`` the value it had
        on the tuning sample (``native_budget(native_error)``)."""
        return native_budget(self.native_error) if is_native(self.error_budget) else float(self.error_budget)

    @property
    def modeled_speedup(self) -> float | None:
        """Modeled time with every site native / modeled time of this plan."""
        if not self.modeled_time_s or self.native_modeled_time_s is None:
            return None
        return self.native_modeled_time_s / self.modeled_time_s

    def to_json(self) -> str:
        d = {"mixjit_plan": FORMAT_VERSION, **asdict(self)}
        d["sites"] = [asdict(s) for s in self.sites]
        return json.dumps(_finite(d), indent=2, allow_nan=False) + "\n"

    @staticmethod
    def from_json(text: str) -> "TunedPlan":
        """Parse a plan file's text; PlanFileError names what is wrong."""
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise PlanFileError(f"not valid JSON ({e})") from None
        if not isinstance(d, dict):
            raise PlanFileError("not a mixjit plan (the top level is not an object)")
        if d.get("mixjit_plan") != FORMAT_VERSION:
            raise PlanFileError(f"format version {d.get('mixjit_plan')!r}, this mixjit reads {FORMAT_VERSION}")
        try:
            sites = tuple(PlanSite(**_fields(s, PlanSite, f"sites[{i}]")) for i, s in enumerate(_list(d, "sites")))
            top = _fields({k: v for k, v in d.items() if k not in ("mixjit_plan", "sites")}, TunedPlan, "plan")
            plan = TunedPlan(**top, sites=sites)
        except TypeError as e:
            raise PlanFileError(str(e)) from None
        _check_types(plan)
        return plan


def _finite(x: Any) -> Any:
    """``x`` with non-finite floats as null (JSON has no Inf or NaN)."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _list(d: dict, key: str) -> list:
    v = d.get(key)
    if not isinstance(v, list):
        raise PlanFileError(f"'{key}' must be a list, got {type(v).__name__}")
    return v


def _fields(d: Any, cls: type, where: str) -> dict:
    if not isinstance(d, dict):
        raise PlanFileError(f"{where} must be an object")
    names = {f for f in cls.__dataclass_fields__ if f != "sites"}
    unknown = sorted(set(d) - names)
    if unknown:
        raise PlanFileError(f"{where}: unknown field(s) {unknown}")
    return d


def _check_types(plan: TunedPlan) -> None:
    for name in ("function", "source_hash", "argtypes", "target"):
        if not isinstance(getattr(plan, name), str):
            raise PlanFileError(f"'{name}' must be a string")
    if is_native(plan.error_budget):
        if not isinstance(plan.native_error, (int, float)) or not math.isfinite(plan.native_error) \
                or plan.native_error < 0:
            raise PlanFileError("'error_budget' is 'native', which needs 'native_error' (native's measured error, "
                                f"a finite number >= 0), got {plan.native_error!r}")
    elif not isinstance(plan.error_budget, (int, float)) or not plan.error_budget > 0:
        raise PlanFileError(f"'error_budget' must be a positive number or 'native', got {plan.error_budget!r}")
    if plan.native_error is not None and not isinstance(plan.native_error, (int, float)):
        raise PlanFileError(f"'native_error' must be a number or null, got {plan.native_error!r}")
    for s in plan.sites:
        for name in ("function", "loc", "form", "dtype", "scheme", "config"):
            if not isinstance(getattr(s, name), str):
                raise PlanFileError(f"site {s.index}: '{name}' must be a string")
        if not isinstance(s.index, int):
            raise PlanFileError(f"site index {s.index!r} must be an integer")


def source_hash(py_func: Callable) -> str:
    """sha256 of the function's source text (of its bytecode when the source is not available)."""
    try:
        data = inspect.getsource(py_func).encode()
    except (OSError, TypeError):
        data = py_func.__code__.co_code
    return hashlib.sha256(data).hexdigest()


def default_plan_path(py_func: Callable, argtypes: str, target: str, budget: float | str) -> Path | None:
    """Where the plan of one signature, target and budget lives by default: Numba's cache
    directory of ``py_func``. None when Numba has no cache location for it (e.g. a function
    defined in an interactive session)."""
    from numba.core.caching import FunctionCache

    try:
        directory = Path(FunctionCache(py_func)._cache_path)
    except RuntimeError:
        return None
    key = hashlib.sha256(json.dumps([argtypes, target, budget if is_native(budget) else repr(float(budget))]
                                    ).encode()).hexdigest()[:16]
    return directory / f"{py_func.__module__}.{py_func.__qualname__}-{key}.mixplan.json"


def save_plan(plan: TunedPlan, path: str | Path) -> Path:
    """Write ``plan`` to ``path`` (directories created); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(plan.to_json())
    tmp.replace(p)
    return p


def load_plan(path: str | Path) -> TunedPlan:
    """Read a plan file; PlanFileError names the problem (unreadable, not JSON, bad fields)."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise PlanFileError(f"cannot read it ({e})") from None
    return TunedPlan.from_json(text)


def check_fits(plan: TunedPlan, qualname: str, argtypes: str, records: Sequence[Any]) -> list[SitePlan]:
    """The site plans of ``plan`` for a signature whose sites are ``records`` (``SiteRecord``, in
    index order), or PlanFileError saying why it does not fit."""
    if plan.function != qualname:
        raise PlanFileError(f"it is the plan of {plan.function!r}, not {qualname!r}")
    if plan.argtypes != argtypes:
        raise PlanFileError(f"it was made for argument types {plan.argtypes}, not {argtypes}")
    if len(plan.sites) != len(records):
        raise PlanFileError(f"it has {len(plan.sites)} sites, the function has {len(records)}")
    out = []
    for want, (i, rec) in zip(sorted(plan.sites, key=lambda s: s.index), enumerate(records)):
        if want.index != i:
            raise PlanFileError(f"site indices must be 0..{len(records) - 1}, found {want.index}")
        for name in ("function", "loc", "form", "dtype"):
            if getattr(want, name) != getattr(rec, name):
                raise PlanFileError(
                    f"site {i}: {name} is {getattr(want, name)!r} in the plan, {getattr(rec, name)!r} in the function")
        try:
            scheme = get_scheme(want.scheme)
            scheme.parse_config(want.config)
        except ValueError as e:
            raise PlanFileError(f"site {i}: {e}") from None
        if np.dtype(rec.dtype) not in scheme.dtypes:
            raise PlanFileError(f"site {i}: scheme {want.scheme!r} does not accept {rec.dtype} operands")
        if want.scheme not in entry.EXECUTORS:
            raise PlanFileError(
                f"site {i}: scheme {want.scheme!r} has no compiled executor (compiled: {sorted(entry.EXECUTORS)})")
        for name in ("error", "modeled_time_s"):
            v = getattr(want, name)
            if v is not None and (not isinstance(v, (int, float)) or (isinstance(v, float) and math.isnan(v))):
                raise PlanFileError(f"site {i}: '{name}' must be a number or null, got {v!r}")
        out.append(want.site_plan())
    return out
