"""Unmodified Numba code under mixjit: ``patch_numba`` compiles ``numba.njit`` / ``numba.jit``
functions as ``@mixjit`` ones, and ``python -m mixjit run`` (mixjit.__main__) does it for a script.

Inside ``with mixjit.patch_numba(error_budget=..., target=..., schemes=...) as patched:``, every
function decorated with ``numba.njit`` or ``numba.jit`` (nopython, Numba's default) is compiled by
``mixjit.mixjit`` with those options and its own Numba options (``parallel``, ``cache``,
``fastmath``, ``locals``, signatures ...), so its GEMMs are linked and tuned on its first call, as
ozIMMU's ``LD_PRELOAD`` or cuBLAS's emulation switch do for a whole process. What mixjit cannot take
stays with Numba: ``jit(forceobj=True)`` / ``jit(nopython=False)`` are object-mode code, and a
function with a Numba option mixjit does not accept (``pipeline_class``, private options) compiles
as plain Numba with a ``MixjitWarning`` naming the option. A function whose GEMMs mixjit cannot
link runs as plain Numba with the usual warning. ``patched.functions`` lists what the block
compiled; ``patched.report()`` is one report for all of them.

The patch replaces the attributes ``numba.njit``, ``numba.jit`` and their originals in
``numba.core.decorators``, so code that looks them up inside the block (``import numba``,
``from numba import njit``) gets mixjit; functions decorated before the block are left alone.
One patch at a time per process.
"""

from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from mixjit.decorator import mixjit
from mixjit.dispatcher import MixjitDispatcher
from mixjit.runtime.jit.warning import MixjitWarning

__all__ = ["patch_numba", "Patched"]

_active_lock = threading.Lock()
_active: list["Patched"] = []


@dataclass
class Patched:
    """What one ``patch_numba`` block compiled as ``@mixjit`` functions, in decoration order."""

    options: dict[str, Any]
    functions: list[MixjitDispatcher] = field(default_factory=list)

    def report(self) -> str:
        """One report for every function the block compiled and that ran: its tuning's table
        (``f.report()``) when it was tuned, else its sites (mixjit.report.sites_report)."""
        from mixjit.report import sites_report

        parts = []
        for f in self.functions:
            if not f.signatures:
                continue  # never called
            name = f"{f.py_func.__module__}.{f.py_func.__qualname__}"
            try:
                body = f.report()
            except ValueError:  # not tuned: its sites say what ran
                body = sites_report(f)
            parts.append(f"== {name}\n{body}")
        called = sum(1 for f in self.functions if f.signatures)
        head = (f"mixjit: {len(self.functions)} Numba function(s) compiled as @mixjit, {called} called "
                f"(error_budget={self.options['error_budget']}, target={self.options['target']}); "
                "times and speedups are modeled")
        return "\n\n".join([head, *parts])


_NOT_OURS = ("numba", "llvmlite", "mixjit")
"""Packages whose own ``njit`` functions stay with Numba: Numba compiles some of its NumPy support
with ``njit`` when first needed, which may happen inside a patch."""


def _plain_reason(kws: dict[str, Any], is_jit: bool) -> str | None:
    """Why a decoration stays with Numba, or None when mixjit takes it."""
    if kws.get("forceobj") or (is_jit and kws.get("nopython") is False):
        return "object mode"
    from mixjit.options import NUMBA_OPTIONS

    known = NUMBA_OPTIONS | {"cache", "locals", "nopython", "forceobj"}
    unknown = sorted(set(kws) - known)
    if unknown:
        return f"option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (not taken by @mixjit)"
    return None


def _decorator(original: Callable[..., Any], patched: Patched, is_jit: bool) -> Callable[..., Any]:
    """A stand-in for ``numba.njit`` / ``numba.jit`` that compiles with ``mixjit`` (see the module
    docstring); the original for what mixjit does not take."""

    def decorate(*args: Any, **kws: Any) -> Any:
        reason = _plain_reason(kws, is_jit)
        if reason is not None:
            if reason != "object mode":
                warnings.warn(f"mixjit: a numba.{original.__name__} function with {reason} runs as plain Numba",
                              MixjitWarning, stacklevel=2)
            return original(*args, **kws)
        options = {k: v for k, v in kws.items() if k not in ("nopython", "forceobj")}
        function_given = bool(args) and callable(args[0]) and not isinstance(args[0], str)
        signatures = () if function_given else args[:1]  # a signature or a list of them

        def wrap(func: Any) -> Any:
            module = getattr(func, "__module__", None) or ""
            if module.split(".")[0] in _NOT_OURS:
                return original(*signatures, **kws)(func)
            disp = mixjit(*signatures, **patched.options, **options)(func)
            patched.functions.append(disp)
            return disp

        return wrap(args[0]) if function_given else wrap

    decorate.__name__ = original.__name__
    decorate.__doc__ = f"numba.{original.__name__}, compiling as @mixjit (mixjit.patch_numba)."
    return decorate


@contextmanager
def patch_numba(error_budget: float | str = 1e-6, target: str = "h100", schemes: Sequence[str] | None = None,
                tune: str = "first-call", **options: Any) -> Iterator[Patched]:
    """Compile the ``numba.njit`` / ``numba.jit`` functions decorated inside the block as
    ``@mixjit`` functions with these options (``mixjit.mixjit``'s: ``metric``, ``backend``,
    ``eval_timeout`` too); yields a :class:`Patched` listing them. Options are checked here,
    before anything is patched. RuntimeError when a patch is already active."""
    import numba
    import numba.core.decorators as decorators

    chosen = dict(error_budget=error_budget, target=target, schemes=schemes, tune=tune, **options)
    own = {"error_budget", "target", "schemes", "tune", "metric", "backend", "eval_timeout", "workers"}
    stray = sorted(set(options) - own)
    if stray:
        raise TypeError(f"mixjit: patch_numba takes mixjit's options ({', '.join(sorted(own))}), not "
                        f"{', '.join(map(repr, stray))}; a function's Numba options stay on its decorator")
    mixjit(**chosen)  # checks every option now (ValueError / TypeError naming it)
    patched = Patched(chosen)
    with _active_lock:
        if _active:
            raise RuntimeError("mixjit: patch_numba is already active in this process; one patch at a time")
        _active.append(patched)
        saved = {(mod, name): getattr(mod, name) for mod in (numba, decorators) for name in ("njit", "jit")}
        for name in ("njit", "jit"):
            stand_in = _decorator(getattr(decorators, name), patched, is_jit=name == "jit")
            setattr(numba, name, stand_in)
            setattr(decorators, name, stand_in)
    try:
        yield patched
    finally:
        with _active_lock:
            for (mod, name), original in saved.items():
                setattr(mod, name, original)
            _active.remove(patched)
