"""What the @mixjit dispatcher's tuning methods do: first-call tuning, ``f.tune``, ``f.plan``,
``f.use_plan``, ``f.save_plan``, ``f.report``. The dispatcher delegates here
(mixjit/dispatcher.py keeps only thin methods).

Per dispatcher, a ``TuningState`` remembers each signature's plan and tuning result, and
plans given by ``use_plan`` before their signature was compiled.
"""

from __future__ import annotations

import math
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from mixjit.arguments import resolve_arguments
from mixjit.plan import get_plan, set_plan
from mixjit.runtime.jit.warning import MixjitWarning
from mixjit.tuning.driver import (
    TuneResult,
    argtypes_text,
    check_budget,
    check_metric,
    current_plan_error,
    signature_of,
    signature_sites,
    tune,
)
from mixjit.tuning.native_budget import budget_text, slowdown_advice, slows_down
from mixjit.tuning.outputs import Metric, check_finite
from mixjit.tuning.persistence import (
    PlanFileError,
    TunedPlan,
    check_fits,
    default_plan_path,
    load_plan,
    save_plan,
    source_hash,
)
from mixjit.tuning.protocol import TunableFunction

__all__ = ["TUNE_MODES", "TuningState", "PlanCheck", "check_budget", "check_metric", "on_new_signature",
           "tune_function", "check_plan", "current_plan", "use_plan", "save_current_plan", "state_of"]

TUNE_MODES = ("first-call", "explicit", "never")
"""``tune=`` values: tune on the first call's arguments, only through ``f.tune``, or never
(every site runs its most precise config)."""


@dataclass
class TuningState:
    plans: dict[tuple, TunedPlan] = field(default_factory=dict)
    results: dict[tuple, TuneResult] = field(default_factory=dict)
    pending: list[tuple[TunedPlan, str]] = field(default_factory=list)
    last: tuple | None = None


def state_of(f: TunableFunction) -> TuningState:
    """``f``'s tuning state, made on first use (``TunableFunction.tuning_state``)."""
    if f.tuning_state is None:
        f.tuning_state = TuningState()
    return f.tuning_state


def _warn(message: str) -> None:
    warnings.warn(message, MixjitWarning, stacklevel=4)


def _plan_path(f: TunableFunction, key: tuple, plan: TunedPlan | None = None) -> Path | None:
    """The default plan file of ``key`` for the decorator's target and budget, or for
    ``plan``'s own (``f.tune(budget=..., target=...)`` may differ from the decorator's)."""
    o = f.mixjit_options
    target, budget = (o.target, o.error_budget) if plan is None else (plan.target, plan.error_budget)
    return default_plan_path(f.py_func, argtypes_text(key), target, budget)


def _apply(f: TunableFunction, key: tuple, plan: TunedPlan) -> None:
    """Apply ``plan`` to the signature ``key`` (PlanFileError when it does not fit its sites)."""
    sites = signature_sites(f, key)
    site_plans = check_fits(plan, f.py_func.__qualname__, argtypes_text(key), [s.record for s in sites])
    for s, p in zip(sites, site_plans):
        set_plan(s.id, p)
    state = state_of(f)
    state.plans[key] = plan
    state.last = key


def _load_saved(f: TunableFunction, key: tuple, path: Path, args: Sequence[Any] = ()) -> bool:
    """Apply the plan file at ``path`` to ``key`` if it fits and is current, and (given the call's
    ``args``) if its error measured on them is within its budget: ``f.plan`` then holds that
    measured error, never the file's claim. One warning otherwise, and the sites keep their plans."""
    o = f.mixjit_options
    if path.is_dir():  # no plan to load; saving one there fails with its own warning (_record)
        return False
    try:
        plan = load_plan(path)
        if plan.source_hash != source_hash(f.py_func):
            raise PlanFileError("it is outdated: the function's source changed since it was made")
        if plan.target != o.target or plan.error_budget != o.error_budget:
            raise PlanFileError(f"it was made for target {plan.target!r} and budget "
                                f"{budget_text(plan.error_budget)}, the function asks for {o.target!r} and "
                                f"{budget_text(o.error_budget)}")
        _apply_measured(f, key, plan, args)
        return True
    except PlanFileError as e:
        _warn(f"mixjit: plan file {path} not used: {e}; "
              + ("re-tuning" if o.tune == "first-call" else "the most precise plan runs until f.tune(...)"))
        return False


def _apply_measured(f: TunableFunction, key: tuple, plan: TunedPlan, args: Sequence[Any]) -> None:
    """Apply ``plan`` to ``key`` and (given the call's ``args``) record it with its error measured
    on them (``_measured``), so that ``f.plan`` never holds a stale claim. On PlanFileError (it
    does not fit, or breaks its budget there) the sites keep the plans they had."""
    before = {s.id: get_plan(s.id) for s in signature_sites(f, key)}
    try:
        _apply(f, key, plan)
        if args:
            state_of(f).plans[key] = _measured(f, key, plan, args)
    except PlanFileError:
        for sid, site_plan in before.items():
            if site_plan is not None:
                set_plan(sid, site_plan)
        state_of(f).plans.pop(key, None)
        raise


def _measured(f: TunableFunction, key: tuple, plan: TunedPlan, args: Sequence[Any]) -> TunedPlan:
    """``plan`` (applied to ``key``) with its program error measured on ``args`` (a file's recorded
    error may have been edited); PlanFileError when that error is above the plan's budget."""
    sample = resolve_arguments(f, args)  # the call's arguments as Numba folded them (defaults)
    args = sample.values
    try:
        check_finite(args, sample.names, f.py_func.__qualname__)
    except ValueError:
        return replace(plan, error=None)  # Inf/NaN arguments: nothing to measure on, and no claim either
    try:
        error = current_plan_error(f, key, args, f.mixjit_options.metric)
    except Exception as e:  # the program or the metric failed under the plan
        raise PlanFileError(f"re-checking it on this call's arguments failed ({type(e).__name__}: {e})") from None
    if not error <= plan.error_budget:
        claim = f"{plan.error:.2e}" if plan.error is not None else "none"
        raise PlanFileError(f"its error on this call's arguments is {error:.2e}, above its budget "
                            f"{plan.error_budget:g} (the file records {claim})")
    return replace(plan, error=error, within_budget=True)


def _has_choice(f: TunableFunction, key: tuple) -> bool:
    """Does any site of ``key`` have more than one candidate (else there is nothing to tune)?"""
    o = f.mixjit_options
    return any(len(s.candidates(o.schemes, (), o.target)) > 1 for s in signature_sites(f, key))


def on_new_signature(f: TunableFunction, key: tuple, args: Sequence[Any]) -> None:
    """Called by the dispatcher when a Python call compiled ``key``: apply a plan given by
    ``use_plan`` (its error measured on ``args``, as a saved plan's is), else (unless ``tune="never"``) one saved for it, else (``tune="first-call"``)
    tune on ``args``. A failure
    of the tuner never fails the user's call: it warns and the most precise plan runs."""
    o = f.mixjit_options
    if not signature_sites(f, key):
        return
    state = state_of(f)
    for plan, origin in list(state.pending):
        if plan.argtypes == argtypes_text(key):
            state.pending.remove((plan, origin))
            try:
                _apply_measured(f, key, plan, args)
                return
            except PlanFileError as e:
                _warn(f"mixjit: {origin} not used: {e}")
    if o.tune == "never":
        return
    path = _plan_path(f, key)
    if path is not None and (path.exists() or path.is_symlink()) and _load_saved(f, key, path, args):
        return
    if o.tune != "first-call" or not _has_choice(f, key):
        return
    try:
        result = tune(f, args, fp64=False)
    except ValueError as e:  # NaN/Inf in the first call's arguments, ...
        _warn(f"{e}. Not tuned: the most precise plan runs; call f.tune(*sample_args) to tune")
        return
    except Exception as e:
        _warn(f"mixjit: tuning {f.py_func.__qualname__} failed ({type(e).__name__}: {e}); "
              "the most precise plan runs")
        return
    _record(f, key, result)


def _record(f: TunableFunction, key: tuple, result: TuneResult) -> None:
    state = state_of(f)
    state.results[key] = result
    state.plans[key] = result.plan
    state.last = key
    print(result.summary(), file=sys.stderr)
    advice = slowdown_advice(result.qualname, result.native_error, result.budget, result.plan.error_budget,
                             result.plan)
    if not result.plan.within_budget:
        err = result.plan.error
        what = f"{err:.2e}" if err is not None and math.isfinite(err) else "not finite"
        _warn(f"mixjit: no plan of {result.qualname} meets error budget {result.budget:g} "
              f"(best: {what}{', on held-out inputs' if result.validation else ''}); it runs the most "
              "precise plan, which exceeds the budget" + (f". {advice.removeprefix('mixjit: ')}" if advice else ""))
    elif advice and slows_down(result.plan):  # one warning: the budget makes the program slower than native
        _warn(advice)
    for note in result.notes:
        if "interrupted" in note or "held-out" in note:
            print(f"mixjit: {note}", file=sys.stderr)
    path = _plan_path(f, key, result.plan)
    if f.mixjit_options.cache and path is not None:
        try:
            save_plan(result.plan, path)
        except OSError as e:
            _warn(f"mixjit: the plan of {result.qualname} is not saved to {path} ({e.strerror or e}); it "
                  "runs in this process only")


def tune_function(f: TunableFunction, args: Sequence[Any], *, validate: Sequence[Sequence[Any]] = (), search: str = "greedy",
                  budget: float | str | None = None, target: str | None = None, metric: Metric | None = None,
                  margin: float = 0.0, max_evals: int | None = None, fp64: bool = True,
                  eval_timeout: float | None = None, workers: int | None = None, executor: Any = None,
                  kws: dict[str, Any] | None = None, reuse: bool = True) -> TuneResult:
    """``f.tune(*args, ..., **kws)``: tune the signature of ``args`` / ``kws`` now (see
    ``mixjit.tuning.driver``); ``budget`` / ``target`` (None: the decorator's ``error_budget`` /
    ``target``) for this tuning."""
    result = tune(f, args, validate=validate, search=search, budget=budget, target=target, metric=metric,
                  margin=margin, max_evals=max_evals, fp64=fp64, eval_timeout=eval_timeout, workers=workers,
                  executor=executor, kws=kws, reuse=reuse)
    _record(f, signature_of(f, args, kws), result)
    return result


@dataclass(frozen=True)
class PlanCheck:
    """A plan's error on inputs it was not tuned on (``f.check_plan``), against its budget."""

    error: float
    budget: float

    @property
    def within_budget(self) -> bool:
        return self.error <= self.budget


def check_plan(f: TunableFunction, args: Sequence[Any], metric: Metric | None = None,
               kws: dict[str, Any] | None = None) -> PlanCheck:
    """``f.check_plan(*args, **kws)``: the error of the plan the signature of ``args`` / ``kws``
    (resolved as a call resolves them: ``mixjit.arguments``) runs, on them against their reference
    run, by ``metric`` (None: the decorator's ``metric``, else the
    relative Frobenius error), with a ``MixjitWarning`` when it is above the plan's budget. The
    tuner meets a budget on its samples and ``validate=`` inputs only; this measures any other
    input. ValueError when the signature has no tuned or given plan, or ``args`` hold Inf/NaN."""
    qualname = f.py_func.__qualname__
    sample = resolve_arguments(f, args, kws)
    key, args = sample.key, sample.values
    plan = state_of(f).plans.get(key)
    if plan is None or key not in f.overloads:
        raise ValueError(f"mixjit: {qualname}{argtypes_text(key)} has no plan to check; tune it first "
                         "(f.tune(*sample_args), or a call with tune='first-call') or give one with f.use_plan")
    check_metric(metric)
    check_finite(args, sample.names, f"{qualname} (check_plan)")
    check = PlanCheck(current_plan_error(f, key, args, metric or f.mixjit_options.metric), plan.budget)
    if not check.within_budget:
        _warn(f"mixjit: the plan of {qualname} has error {check.error:.2e} on these inputs, above its budget "
              f"{check.budget:g}: the tuner meets the budget on its samples and validate= inputs, not on every "
              "input; tune again with inputs like these in f.tune(..., validate=[...])")
    return check


def current_plan(f: TunableFunction) -> TunedPlan | None:
    """The plan of the signature tuned or given a plan last (None before any)."""
    state = state_of(f)
    return state.plans.get(state.last) if state.last is not None else None


def last_result(f: TunableFunction) -> TuneResult | None:
    state = state_of(f)
    return state.results.get(state.last) if state.last is not None else None


def use_plan(f: TunableFunction, plan_or_path: TunedPlan | str | Path) -> TunedPlan:
    """Run ``plan_or_path`` (a TunedPlan or a plan file) for its signature: now if that signature
    is compiled, else when it compiles. PlanFileError (a ValueError) names the file and why it
    does not fit."""
    origin = "given plan"
    if isinstance(plan_or_path, (str, Path)):
        origin = f"file {plan_or_path}"
        try:
            plan = load_plan(plan_or_path)
        except PlanFileError as e:
            raise PlanFileError(f"mixjit: plan file {plan_or_path}: {e}") from None
    elif isinstance(plan_or_path, TunedPlan):
        plan = plan_or_path
    else:
        raise TypeError(f"mixjit: use_plan takes a TunedPlan or a path, got {type(plan_or_path).__name__}")
    for key in list(f.overloads):
        if argtypes_text(key) == plan.argtypes:
            try:
                _apply(f, key, plan)
            except PlanFileError as e:
                raise PlanFileError(f"mixjit: {origin} does not fit {f.py_func.__qualname__}: {e}") from None
            return plan
    state_of(f).pending.append((plan, origin))
    return plan


def save_current_plan(f: TunableFunction, path: str | Path | None = None) -> Path:
    """Write ``f.plan`` to ``path`` (default: beside Numba's cache of the function)."""
    state = state_of(f)
    plan = current_plan(f)
    if plan is None:
        raise ValueError(f"mixjit: {f.py_func.__qualname__} has no plan yet; call it or f.tune(*args) first")
    if path is None:
        path = _plan_path(f, state.last, plan)
        if path is None:
            raise ValueError(f"mixjit: Numba has no cache directory for {f.py_func.__qualname__}; pass a path")
    return save_plan(plan, path)
