"""The options of a ``@mixjit`` function: mixjit's own (``Options``) and the ``@njit`` options it
passes on to Numba (``NUMBA_OPTIONS``, checked by :func:`check_numba_options`).

Apart from the decorator (mixjit.decorator) and the dispatcher (mixjit.dispatcher), as Numba keeps
its options apart from its dispatcher: both read them, and the tuning layer reads ``Options``
through its protocol (mixjit.tuning.protocol).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

from numba.core import types
from numba.core.compiler import Flags
from numba.core.cpu import CPUTargetOptions
from numba.core.options import TargetOptions

from mixjit.cache import cache_tag
from mixjit.numba_types import qualified_name

__all__ = ["Options", "NUMBA_OPTIONS", "check_numba_options"]


@dataclass(frozen=True)
class Options:
    """The options of one @mixjit function (what decides its plans)."""

    error_budget: float | str = 1e-6
    target: str = "h100"
    schemes: tuple[str, ...] | None = None
    cache: bool = False
    tune: str = "first-call"
    metric: Callable[[Any, Any], float] | None = None
    backend: str = "auto"
    eval_timeout: float | None = None
    workers: int | None = None

    def tag(self, targetoptions: dict[str, Any], locals: dict[str, Any] | None = None) -> str:
        """The cache tag: these options plus Numba's target options (``parallel``,
        ``fastmath``, ``error_model``, ``boundscheck`` ...) and ``locals``, which change the
        compiled code and its results while Numba's own cache key leaves them out."""
        return cache_tag({"error_budget": self.error_budget, "target": self.target, "schemes": self.schemes,
                          "backend": self.backend,
                          "targetoptions": _stable_option(targetoptions),
                          "locals": _stable_option(locals or {})})


def _stable_option(value: Any) -> Any:
    """``value`` as JSON-able data with the same text in every process: sets sorted (``fastmath``
    flags; set order follows string hashing, which differs per process), mappings by key,
    callables (``inline=``) by qualified name."""
    if isinstance(value, dict):
        return [[str(k), _stable_option(v)] for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))]
    if isinstance(value, (set, frozenset)):
        return sorted(_stable_option(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_stable_option(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if callable(value) and not isinstance(value, types.Type):
        return qualified_name(value)
    return str(value)


NUMBA_OPTIONS: frozenset[str] = frozenset(
    name for name in dir(CPUTargetOptions) if isinstance(getattr(CPUTargetOptions, name), TargetOptions.Mapping))
"""The ``@njit`` target options ``@mixjit`` passes on to Numba unchanged (Numba's CPU target
options: ``parallel``, ``fastmath``, ``nogil``, ``boundscheck``, ``error_model``, ``inline``,
...); ``cache``, ``locals`` and signatures are taken too. docs/frontend.md has the table."""

_MIXJIT_OPTIONS = ("error_budget", "target", "schemes", "backend", "eval_timeout", "workers")


def check_numba_options(options: dict[str, Any]) -> dict[str, Any]:
    """Check ``options`` as ``@njit`` would and return the target options to compile with.
    ``nopython``/``forceobj`` are ignored with a warning, as ``@njit`` does; unknown names and
    values Numba refuses raise here, at decoration, naming the option."""
    options = dict(options)
    for name in ("nopython", "forceobj"):
        if name in options:
            warnings.warn(f"mixjit: {name} is set for @mixjit and is ignored (mixjit compiles in nopython "
                          "mode, as @njit does)", RuntimeWarning, stacklevel=3)
            del options[name]
    if "pipeline_class" in options:
        raise TypeError("mixjit: pipeline_class is not supported: @mixjit compiles with its own pipeline "
                        "(mixjit.numba_pipeline); use @njit(pipeline_class=...) for a custom one")
    unknown = sorted(set(options) - NUMBA_OPTIONS)
    if unknown:
        raise TypeError(
            f"mixjit: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"@mixjit takes {', '.join(_MIXJIT_OPTIONS)}, cache, locals, signatures and the @njit options "
            f"{', '.join(sorted(n for n in NUMBA_OPTIONS if not n.startswith('_')))}")
    if options.get("error_model", "python") not in ("python", "numpy"):
        raise ValueError(f"mixjit: error_model must be 'python' or 'numpy' (as for @njit), "
                         f"got {options['error_model']!r}")
    try:
        CPUTargetOptions.parse_as_flags(Flags(), {**options, "nopython": True})
    except (KeyError, ValueError, TypeError) as e:
        raise ValueError(f"mixjit: invalid @njit option value ({e})") from e
    return options
