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
from mixjit.passes.files import write_atomic
from mixjit.plan import LINALG_SCHEME, SitePlan
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
        """Parse a plan file's text; PlanFileError names what is wrong (never another error, for
        any text: deep nesting, huge numbers and wrong types included)."""
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise PlanFileError(f"not valid JSON ({e})") from None
        except (ValueError, RecursionError) as e:  # a 5000-digit integer; nesting deeper than Python's stack
            raise PlanFileError(f"not a plan: {type(e).__name__}: {str(e)[:200]}") from None
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


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_types(plan: TunedPlan) -> None:
    for name in ("function", "source_hash", "argtypes", "target"):
        if not isinstance(getattr(plan, name), str):
            raise PlanFileError(f"'{name}' must be a string")
    if is_native(plan.error_budget):
        if not _is_number(plan.native_error) or not 0 <= plan.native_error < math.inf:
            raise PlanFileError("'error_budget' is 'native', which needs 'native_error' (native's measured error, "
                                f"a finite number >= 0), got {plan.native_error!r}")
    elif not _is_number(plan.error_budget) or not 0 < plan.error_budget < math.inf:
        raise PlanFileError(f"'error_budget' must be a positive number or 'native', got {plan.error_budget!r}")
    for name in ("error", "modeled_time_s", "native_modeled_time_s", "native_error"):
        v = getattr(plan, name)
        if v is not None and (not _is_number(v) or not v >= 0):
            raise PlanFileError(f"'{name}' must be a non-negative number or null, got {v!r}")
    if not isinstance(plan.within_budget, bool):
        raise PlanFileError(f"'within_budget' must be true or false, got {plan.within_budget!r}")
    for s in plan.sites:
        if not isinstance(s.index, int) or isinstance(s.index, bool) or s.index < 0:
            raise PlanFileError(f"site index {s.index!r} must be a non-negative integer")
        for name in ("function", "loc", "form", "dtype", "scheme", "config"):
            if not isinstance(getattr(s, name), str):
                raise PlanFileError(f"site {s.index}: '{name}' must be a string")
        for name in ("error", "modeled_time_s"):
            v = getattr(s, name)
            if v is not None and (not _is_number(v) or not v >= 0):
                raise PlanFileError(f"site {s.index}: '{name}' must be a non-negative number or null, got {v!r}")


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


def _check_linalg_site(i: int, want: PlanSite, rec: Any) -> None:
    """PlanFileError unless ``want`` is a plan an np.linalg site can run: ``native`` (its LAPACK
    call), or ``linalg[...]`` whose GEMM scheme accepts the site's dtype and runs at sites."""
    from mixjit.runtime.linalg.config import LinalgConfig

    if want.scheme not in ("native", LINALG_SCHEME):
        raise PlanFileError(f"site {i}: {rec.form} is an np.linalg site; its plan is native or "
                            f"{LINALG_SCHEME}[block=...,gemm=...,refine=...], not {want.scheme!r}")
    try:
        if want.scheme == "native":
            get_scheme("native").parse_config(want.config)
            return
        config = LinalgConfig.parse(want.config)
    except ValueError as e:
        raise PlanFileError(f"site {i}: {e}") from None
    gemm = get_scheme(config.gemm_scheme)
    if np.dtype(rec.dtype) not in gemm.dtypes or not gemm.runs_at_sites:
        raise PlanFileError(f"site {i}: the products' scheme {config.gemm_scheme!r} cannot run {rec.dtype} products "
                            "at a site")


#: largest plan file read (a plan of thousands of sites is well below it)
MAX_PLAN_BYTES = 16 * 2**20


def save_plan(plan: TunedPlan, path: str | Path) -> Path:
    """Write ``plan`` to ``path`` (directories created) atomically, never through a symlink
    (passes/files.py ``write_atomic``); returns the path. OSError when it cannot be written
    (e.g. a directory at ``path``)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(p, plan.to_json())


def load_plan(path: str | Path) -> TunedPlan:
    """Read a plan file; PlanFileError names the problem (not a regular file, unreadable, too
    large, not JSON, bad fields)."""
    p = Path(path)
    try:
        if not p.is_file():  # a directory, a FIFO (whose read would block), a dangling link
            raise PlanFileError("it is not a regular file" if p.exists() else "it does not exist")
        with p.open("rb") as handle:
            data = handle.read(MAX_PLAN_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanFileError(f"cannot read it ({e})") from None
    if len(data) > MAX_PLAN_BYTES:
        raise PlanFileError(f"it is larger than {MAX_PLAN_BYTES} bytes, not a plan")
    return TunedPlan.from_json(text)


def check_fits(plan: TunedPlan, qualname: str, argtypes: str, records: Sequence[Any]) -> list[SitePlan]:
    """The site plans of ``plan`` for a signature whose sites are ``records`` (``SiteRecord``, in
    index order), or PlanFileError saying why it does not fit."""
    _check_types(plan)
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
        if getattr(rec, "op", "gemm") != "gemm":  # an np.linalg site: native or a blocked candidate
            _check_linalg_site(i, want, rec)
            out.append(want.site_plan())
            continue
        if want.scheme == LINALG_SCHEME:
            raise PlanFileError(f"site {i}: {rec.form} is a GEMM site; scheme {LINALG_SCHEME!r} is for np.linalg sites")
        try:
            scheme = get_scheme(want.scheme)
            scheme.parse_config(want.config)
        except ValueError as e:
            raise PlanFileError(f"site {i}: {e}") from None
        if np.dtype(rec.dtype) not in scheme.dtypes:
            raise PlanFileError(f"site {i}: scheme {want.scheme!r} does not accept {rec.dtype} operands")
        if not scheme.runs_at_sites:
            raise PlanFileError(
                f"site {i}: scheme {want.scheme!r} has no compiled executor (compiled: {sorted(entry.EXECUTORS)})")
        out.append(want.site_plan())
    return out
