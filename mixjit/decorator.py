"""``@mixjit``: compile a function with Numba and run its GEMMs through mixjit.

``@mixjit`` / ``@mixjit(error_budget=1e-6, target="h100", schemes=None, backend="auto", **njit_options)`` /
``@mixjit("float64[:, :](float64[:, :])", ...)`` checks its options (mixjit.options) and wraps a
function in a ``MixjitDispatcher`` (mixjit.dispatcher), as Numba's ``decorators.py`` wraps one in
its dispatcher. Every ``@njit`` option keeps its meaning (``parallel``, ``fastmath``, ``cache``,
``locals``, explicit signatures, ...). Tuning (``tune=``, ``metric=``, ``f.tune(*args)``, ``f.plan``,
``f.use_plan``, ``f.save_plan``, ``f.report``) is mixjit.tuning's: docs/frontend_tuning.md.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Sequence

import numpy as np
from numba.core import sigutils
from numba.core.registry import CPUDispatcher

from mixjit import backends
from mixjit.dispatcher import MixjitDispatcher
from mixjit.options import Options, check_numba_options
from mixjit.plan import candidate_schemes
from mixjit.runtime.jit.warning import MixjitWarning  # defined in a leaf: runtime warnings derive from it

__all__ = ["mixjit", "MixjitDispatcher", "MixjitWarning"]


def mixjit(
    fn: Callable | str | Sequence[Any] | None = None,
    *,
    error_budget: float | str = 1e-6,
    target: str = "h100",
    schemes: Sequence[str] | None = None,
    cache: bool = False,
    tune: str = "first-call",
    metric: Callable[[Any, Any], float] | None = None,
    backend: str = "auto",
    eval_timeout: float | None = None,
    workers: int | None = None,
    locals: dict[str, Any] | None = None,
    **numba_options: Any,
) -> Any:
    """Compile ``fn`` with Numba (nopython) and run its GEMMs through mixjit.

    ``error_budget``: the relative Frobenius error the tuner may spend, or ``"native"``: no less
    accurate than the program's native run (``mixjit.tuning.native_budget``);
    ``target``: the hardware the plans are tuned for; ``schemes``: the candidate
    schemes of every site, most wanted first (default: the initial plan runs the first of
    ``mixjit.plan.DEFAULT_SCHEMES`` by dtype, and the tuner chooses among the
    FP32-class-or-better emulations, ``mixjit.tuning.profiling.TUNING_DEFAULT_SCHEMES``:
    ``mixpert`` and ``native``, plus ``mixpert-fp64`` and ``ozaki2`` for float64; error-tolerant
    schemes such as ``int8``, ``split``, ``dfp``, ``vitbit`` only when named here);
    ``cache``: cache compiled code on disk (apart from plain Numba's);
    ``tune``: ``"first-call"`` (tune on the first call's arguments), ``"explicit"`` (only
    ``f.tune(...)``) or ``"never"`` (every site runs its most precise config); ``metric``:
    ``metric(out, ref) -> float`` per output in place of the relative Frobenius error (also for
    the report's error against the whole program in float64);
    ``backend``: where the sites run, ``"auto"`` (a CUDA device where one exists and has a kernel
    for the site's config, else the CPU executor), ``"cpu"`` or ``"cuda"`` (raises without a
    device): chosen at run time, ``f.sites[i].backend`` says which and why (mixjit.backends);
    ``eval_timeout``: seconds one program run of a tuning may take before it is stopped and
    counted over budget (None: 10x the reference run plus 3 s; docs/frontend_tuning.md);
    ``workers``: how many worker processes a tuning runs the program on at once (the profile runs
    and the exhaustive search; None: one per core; 1: one run at a time), with the same plan;
    ``locals`` and every other ``@njit`` option (``parallel``, ``fastmath``, ``nogil``,
    ``boundscheck``, ``error_model``, ``inline``, ...: ``NUMBA_OPTIONS``) as ``@njit`` takes them.

    Applied to an ``@njit`` function, it keeps that function's options (those given here win).
    Use as ``@mixjit``, ``@mixjit(...)``, or with signatures as ``@njit`` takes them
    (``@mixjit("float64[:, :](float64[:, :])")``, a list of signatures): they compile at
    decoration and other argument types are refused, as with ``@njit``."""
    sigs = None
    if isinstance(fn, list) or (fn is not None and sigutils.is_signature(fn)):
        sigs, fn = (list(fn) if isinstance(fn, list) else [fn]), None
    from mixjit.tuning.api import TUNE_MODES, check_budget, check_metric
    from mixjit.tuning.workers import check_eval_timeout, check_workers

    error_budget = check_budget(error_budget, "error_budget")
    eval_timeout = check_eval_timeout(eval_timeout, "eval_timeout")
    workers = check_workers(workers, "workers")
    if tune not in TUNE_MODES:
        raise ValueError(f"mixjit: tune={tune!r}; choose one of {', '.join(map(repr, TUNE_MODES))}")
    check_metric(metric)
    from mixjit.runtime.model.hardware import get_hardware

    get_hardware(target)
    if schemes is not None:
        schemes = tuple(schemes)
        candidate_schemes(schemes, np.float64)
    backends.check_backend(backend)
    if backend == "cuda":
        backends.require_device()
    options = Options(error_budget, target, schemes, bool(cache), tune, metric, backend, eval_timeout, workers)
    targetoptions = check_numba_options(numba_options)

    def wrap(func: Callable) -> MixjitDispatcher:
        own_options, own_locals = targetoptions, locals
        if isinstance(func, CPUDispatcher):  # mixjit(an @njit function): its options, then ours
            own_options = {**{k: v for k, v in func.targetoptions.items() if k != "nopython"}, **targetoptions}
            own_locals = {**(func.locals or {}), **(locals or {})}
            func = func.py_func
        if not inspect.isfunction(func):
            raise TypeError(f"@mixjit decorates a Python function, got {type(func).__name__}")
        disp = MixjitDispatcher(func, options, own_options, locals=own_locals)
        if sigs is not None:
            from numba.core import typeinfer

            with typeinfer.register_dispatcher(disp):
                for sig in sigs:
                    disp.compile(sig)
            disp.disable_compile()
        return disp

    return wrap(fn) if fn is not None else wrap
