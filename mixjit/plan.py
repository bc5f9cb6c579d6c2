"""Site plans: which scheme and config each GEMM site runs, and the plan table: the one owner of
every per-site record (plan, dtype, requested backend, backend choice and device route, device
calls and errors).

A ``SitePlan`` is what a site runs: the scheme and config the plan asks for
(``scheme``, ``config``: a ``Config.label``) and the compiled executor that runs
it (``executor``). Before tuning, a site's plan is the first of its candidate
schemes that accepts the site's dtype, at that scheme's *most precise* config
(``Scheme.default_config``).

The compiled entry (``mixjit.entry``) reads the plan table, one row of
``PLAN_WORDS`` int64 per site: word 0 is the executor code
(``mixjit.entry.EXECUTORS``), the following words that executor's config
parameters (``Scheme.executor_words(config)``); rows are written through
``mixjit.entry.write_plan_row``, which loads the executor when a plan first needs it.
``set_plan`` writes the site's CPU row, or, for a site that runs on a device, that row with the
device executor's code in word 0 (mixjit.device_executor): where it runs is the pure policy
``mixjit.backend_policy.choose`` over the site's requested backend and its plan, asked whenever
the site's plan or backend changes (:func:`set_backend`, :func:`reroute`). One lock guards all
of it, so the row, the recorded choice and the route always agree.

Every scheme declares the compiled executor its sites run (``Scheme.executor``, a
``CompiledExecutor``: the same code ``scheme.run`` runs); a scheme without one
cannot be planned at a site (ValueError). What a scheme must expose to be
dispatched: see docs/frontend.md, "The @mixjit decorator".

The tuner's reference run is one more plan (``reference_plan``): the entry's
``reference`` executor for float32 sites, the most precise ``mixpert-fp64``
config for float64 sites.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from mixjit import backend_policy, device_executor
from mixjit.backend_policy import BackendChoice, check_backend
from mixjit.entry import (
    EXEC_LINALG,
    EXEC_REFERENCE,
    MAX_SITES,
    PLAN_WORDS,
    REFERENCE_EXECUTOR,
    load_executor,
    write_plan_row,
)
from mixjit.passes.tuning.candidates import parse_scheme_spec
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import Config, Scheme, get_scheme

#: the element types of GEMM sites
SITE_DTYPES = ("float32", "float64", "complex64", "complex128")
DEFAULT_SCHEMES: dict[str, tuple[str, ...]] = {dt: catalog.default_schemes("plan", dt) for dt in SITE_DTYPES}
"""Candidate schemes of a site when the user gives none, by the site's dtype (the scheme
catalogue's ``plan`` role: mixjit.runtime.schemes.catalog)."""


@dataclass(frozen=True)
class SitePlan:
    """What one GEMM site runs: ``scheme`` under ``config`` (a label), executed by
    the compiled executor ``executor``; ``note`` says why they differ."""

    scheme: str
    config: str
    executor: str
    note: str = ""

    @property
    def label(self) -> str:
        """``scheme[config]``, plus the executor when it is another scheme."""
        text = f"{self.scheme}[{self.config}]"
        return text if self.executor == self.scheme else f"{text} (runs {self.executor})"


def spec_configs(spec: str, dtype: np.dtype | str) -> tuple[Scheme, list[Config]]:
    """The scheme a ``schemes=`` entry names and the configs it offers for ``dtype``, most
    precise first: a plain name (``"int8"``) its scheme's configs, a spec that fixes fields
    (``"int8{encoding=sf16|pct99}"``, mixjit.passes.tuning.candidates.parse_scheme_spec) those
    configs with the fields set. ValueError names a bad spec, scheme or field."""
    parsed = parse_scheme_spec(spec)
    scheme = get_scheme(parsed.scheme)
    dt = np.dtype(dtype)
    dt = dt if dt in scheme.dtypes else scheme.dtypes[0]  # a spec's fields are checked on any dtype
    base = list(scheme.configs(dt))
    if not parsed.fixed:
        return scheme, base
    # a base config whose own fields conflict with the fixed ones (mixpert's "level=II" on a
    # base given by segments and pairs) is left out; a field or value the scheme refuses on
    # every base (a typo) is an error
    configs: list[Config] = []
    first_error: ValueError | None = None
    for label in parsed.labels([c.label for c in base]):
        try:
            config = scheme.parse_config(label)
        except ValueError as err:
            first_error = first_error or err
            continue
        if config not in configs:
            configs.append(config)
    if not configs:
        raise ValueError(f"mixjit: scheme spec {spec!r}: {first_error}")
    return scheme, configs


def candidate_schemes(schemes: Sequence[str] | None, dtype: np.dtype | str) -> tuple[str, ...]:
    """The candidate schemes of a site of ``dtype``: ``schemes`` when given,
    else ``DEFAULT_SCHEMES``. Each is a scheme name or a spec that fixes config fields
    (:func:`spec_configs`). Unknown names or bad specs raise ValueError (listing known ones)."""
    dt = np.dtype(dtype)
    names = tuple(schemes) if schemes is not None else DEFAULT_SCHEMES[dt.name]
    if not names:
        raise ValueError("mixjit: schemes=() leaves a GEMM site nothing to run; name at least one scheme")
    for name in names:
        spec_configs(name, dt)
    return names


def initial_plan(schemes: Sequence[str] | None, dtype: np.dtype | str) -> SitePlan:
    """The plan of a site before tuning: the first candidate scheme that accepts
    ``dtype``, at its most precise config, run by its compiled executor."""
    dt = np.dtype(dtype)
    names = candidate_schemes(schemes, dt)
    usable = [n for n in names if dt in get_scheme(parse_scheme_spec(n).scheme).dtypes]
    if not usable:
        raise ValueError(f"mixjit: none of the schemes {list(names)} accepts {dt} operands")
    scheme, configs = spec_configs(usable[0], dt)
    if not scheme.runs_at_sites:
        raise ValueError(f"mixjit: scheme {scheme.name!r} has no compiled executor; a site cannot run it")
    config = configs[0] if parse_scheme_spec(usable[0]).fixed else scheme.default_config(dt)
    return SitePlan(scheme.name, config.label, scheme.name)


REFERENCE_CONFIG = "float64-products"
LINALG_SCHEME = "linalg"
"""The scheme of a ``mix.linalg`` site's blocked candidates (runtime/linalg; mixjit.linalg_link)."""


def linalg_native_plan() -> SitePlan:
    """A linalg site's plan before tuning (and its reference): ``native``, the LAPACK call Numba
    makes (the wrapper calls Numba's own ``np.linalg`` when word 0 is ``EXEC_NATIVE``)."""
    native = get_scheme("native")
    return SitePlan(native.name, native.default_config().label, native.name)


def reference_plan(dtype: np.dtype | str) -> SitePlan:
    """What a site runs in the tuner's reference run: exact up to its final rounding.

    float32 and complex64 sites: the entry's reference executor (float64 / complex128 products
    of the operands, accumulated in that precision, rounded once). float64 sites: the most
    precise ``mixpert-fp64`` config (more mantissa bits than float64 carries, certified final
    rounding), since no float64 executor is more precise; complex128 sites: the complex wrapper
    over it (four such products, each part's sum rounded once)."""
    dt = np.dtype(dtype)
    if dt in (np.float32, np.complex64):
        return SitePlan(REFERENCE_EXECUTOR, REFERENCE_CONFIG, REFERENCE_EXECUTOR)
    if dt in (np.float64, np.complex128):
        name = "mixpert-fp64" if dt == np.float64 else "complex"
        config = get_scheme(name).default_config(dt)
        return SitePlan(name, config.label, name)
    raise ValueError(f"mixjit: no reference plan for {dt} sites (GEMM sites are {', '.join(SITE_DTYPES)})")


def plan_words(plan: SitePlan) -> np.ndarray:
    """The plan-table row of ``plan``: executor code, then its config words."""
    if plan.executor in (REFERENCE_EXECUTOR, LINALG_SCHEME):
        row = np.zeros(PLAN_WORDS, dtype=np.int64)
        row[0] = EXEC_REFERENCE if plan.executor == REFERENCE_EXECUTOR else EXEC_LINALG
        return row
    scheme = get_scheme(plan.executor)
    config = scheme.parse_config(plan.config) if plan.executor == plan.scheme else scheme.default_config()
    executor, words = scheme.plan_row(config)
    row = np.zeros(PLAN_WORDS, dtype=np.int64)
    if 1 + len(words) > PLAN_WORDS:
        raise ValueError(f"mixjit: executor {executor.name!r} encodes {len(words)} words, the table has {PLAN_WORDS - 1}")
    row[0] = executor.code
    row[1: 1 + len(words)] = words
    return row


_lock = threading.RLock()
"""Guards every per-site record below: a plan, its row, the backend choice and the route change together."""
_plans: dict[int, SitePlan] = {}
_dtypes: dict[int, np.dtype] = {}
_requested: dict[int, str] = {}
_choices: dict[int, BackendChoice] = {}
_routes: dict[int, device_executor.Route] = {}
_calls: dict[int, Counter] = {}
_errors: dict[int, BaseException] = {}
_warned: set[int] = set()


def set_plan(site: int, plan: SitePlan, dtype: np.dtype | str | None = None) -> None:
    """Make ``site`` run ``plan`` from its next call on, on the backend it asks for (its CPU
    executor, or a device: ``mixjit.backend_policy.choose``). ``dtype``, the site's
    element type (remembered for the site's later plans), lets only that dtype's
    executor compile; unknown, the executor is loaded for float32 and float64."""
    if not 0 <= site < MAX_SITES:
        raise ValueError(f"mixjit: site id {site} is outside [0, {MAX_SITES})")
    row = plan_words(plan)
    with _lock:
        if dtype is not None:
            _dtypes[site] = np.dtype(dtype)
        known = _dtypes.get(site)
        write_plan_row(site, _routed_row(site, plan, row), None if known is None else (known,))
        _plans[site] = plan


def _routed_row(site: int, plan: SitePlan, row: np.ndarray) -> np.ndarray:
    """The row ``site`` runs for ``plan`` (its CPU row ``row``): the same row, or the row with the
    device executor's code in word 0; records the choice and the route (under ``_lock``)."""
    if row[0] == EXEC_LINALG:
        _choices[site] = BackendChoice(_requested.get(site, "auto"), "cpu", "a linalg site's blocked candidates run on the CPU")
        _routes.pop(site, None)
        return row
    choice, dev = backend_policy.choose(_requested.get(site, "auto"), plan, int(row[0]),
                                        _dtypes.get(site, np.dtype(np.float32)))
    _choices[site] = choice
    if dev is None:
        _routes.pop(site, None)
        return row
    load_executor(int(row[0]))  # profiling calls go to it (mixjit.device_executor)
    _routes[site] = device_executor.Route(plan.scheme, plan.config, dev, int(row[0]))
    out = np.array(row, dtype=np.int64)
    out[0] = device_executor_code()
    return out


def get_plan(site: int) -> SitePlan | None:
    """The plan ``site`` runs, or None if it has none."""
    return _plans.get(site)


def request(site: int, backend: str) -> None:
    """Record that ``site`` asks for ``backend``; it applies from the site's next plan."""
    with _lock:
        _requested[site] = check_backend(backend)


def set_backend(site: int, backend: str) -> BackendChoice | None:
    """Make ``site`` ask for ``backend`` and route its current plan again (no recompilation);
    returns what it now runs on (None while it has no plan). On an error (NoDeviceError for
    ``"cuda"`` without a device) the site keeps what it asked for and ran before."""
    check_backend(backend)
    with _lock:
        before = _requested.get(site)
        _requested[site] = backend
        plan = _plans.get(site)
        try:
            if plan is not None:
                set_plan(site, plan)
        except BaseException:
            if before is None:
                _requested.pop(site, None)
            else:
                _requested[site] = before
            raise
        return _choices.get(site)


def reroute(device: Any) -> None:
    """Route again every site whose calls go to ``device`` (after the sites' device changed)."""
    with _lock:
        for site in [s for s, r in _routes.items() if r.device is device]:
            set_plan(site, _plans[site])


def device_executor_code() -> int:
    """The plan code of the device executor, installed in the entry's table the first time."""
    return device_executor.install(_LOG)


def backend_of(site: int) -> BackendChoice | None:
    """What ``site`` runs on and why (None before its first plan)."""
    return _choices.get(site)


def device_calls(site: int) -> dict[str, int]:
    """Where ``site``'s device-executor calls ran: ``{"cuda": n, "cpu: <why>": m}``."""
    with _lock:
        return dict(_calls.get(site, {}))


def last_error(site: int) -> BaseException | None:
    """The last exception the device executor met for ``site`` (a device error it recovered from
    on the CPU, or the one that failed the call with ``STATUS_FAILED``)."""
    return _errors.get(site)


class _DeviceLog:
    """The plan table's side of the device executor (``mixjit.device_executor.DeviceLog``)."""

    def route(self, site: int) -> device_executor.Route | None:
        return _routes.get(site)

    def called(self, site: int, where: str) -> None:
        with _lock:
            _calls.setdefault(site, Counter())[where] += 1

    def failed(self, site: int, error: BaseException, device_error: bool) -> bool:
        with _lock:
            _errors[site] = error
            first = device_error and site not in _warned
            if first:
                _warned.add(site)
            return first


_LOG = _DeviceLog()


@dataclass(frozen=True)
class SiteRecord:
    """What a GEMM candidate is, independent of the process: the function
    holding it, its source location, dtype, the form of the statement and the
    alpha/beta it computes with; ``reason`` says why a candidate was not taken
    (empty for a linked site); ``op``: ``gemm``, or the ``np.linalg`` function of a linalg site."""

    function: str
    loc: str
    dtype: str
    form: str
    alpha: float = 1.0
    beta: float = 0.0
    reason: str = ""
    op: str = "gemm"


@dataclass(frozen=True)
class SiteBlock:
    """The sites of one compilation: the symbol compiled code reads their base
    id from, what each site is, each site's plan, and the candidates not taken.

    Calling it registers the block in this process (fresh ids, plans written to
    the plan table) and links the entry. The frontend calls it when it links a
    compilation, and appends it to Numba's ``reload_init`` so that Numba calls
    it again before cached code that uses the block is loaded."""

    symbol: str
    records: tuple[SiteRecord, ...]
    plans: tuple[SitePlan, ...]
    rejected: tuple[SiteRecord, ...] = ()
    signature: str = ""
    """The argument types of the compilation, ``(array(float64, 2d, C), int64)``: a helper's
    block keeps the helper's own signature inside its callers."""
    backend: str = "auto"
    """What its sites run on (``mixjit.backend_policy.BACKENDS``): the ``backend=`` of ``@mixjit``."""

    def __call__(self) -> int:
        """Register the block (once per process); returns its first site id."""
        from mixjit.entry import register_site_block
        from mixjit.linking import ensure_entry_linked

        ensure_entry_linked()
        base, created = register_site_block(self.symbol, len(self.records))
        if created:
            for i, plan in enumerate(self.plans):
                request(base + i, self.backend)
                set_plan(base + i, plan, self.records[i].dtype)
        return base

    def site_ids(self) -> range:
        """The site ids of the block in this process (registering it if needed)."""
        base = self()
        return range(base, base + len(self.records))
