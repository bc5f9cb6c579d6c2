"""Sample arguments of a ``@mixjit`` function, resolved as its Numba dispatcher resolves a call.

Numba folds a call before it looks up or compiles a signature: keyword arguments take their
parameter's place, and a parameter left to its default is typed ``types.Omitted(default)``
(``def f(a, b, n=3)`` called as ``f(a, b)`` compiles ``(array, array, omitted(default=3))``).
Every API that takes sample arguments (``f.tune``, ``validate=``, ``f.check_plan``, ``f.ir``,
``f.dump``, ``f.dag_for``, first-call tuning) resolves them here, so that each names the
signature a call with the same arguments runs.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from numba.core import sigutils, types
from numba.core.dispatcher import OmittedArg
from numba.core.typing import Signature
from numba.core.typing.templates import fold_arguments

__all__ = ["SampleArguments", "resolve_arguments", "resolve_spec"]


@dataclass(frozen=True)
class SampleArguments:
    """One call's arguments, folded as the dispatcher folds them.

    ``key``: the overload key (``types.Omitted(default)`` for a parameter left to its default);
    ``values``: one value per parameter, defaults filled in (what a compiled entry point takes);
    ``names``: the parameter names, in the same order."""

    key: tuple[types.Type, ...]
    values: tuple[Any, ...]
    names: tuple[str, ...]


def _bind_error(f: Any, args: Sequence[Any], kws: Mapping[str, Any], error: str) -> TypeError:
    qualname = f.py_func.__qualname__
    given = f"{len(args)} positional" + (f", keywords {', '.join(kws)}" if kws else "")
    return TypeError(f"mixjit: the sample arguments ({given}) do not fit {qualname}{inspect.signature(f.py_func)}: "
                     f"{error}; pass them as you would call the function")


def resolve_arguments(f: Any, args: Sequence[Any], kws: Mapping[str, Any] | None = None) -> SampleArguments:
    """``args`` / ``kws`` of a call of the dispatcher ``f`` resolved as the call resolves them (see
    the module docstring). Arguments the dispatcher already folded (``OmittedArg`` for a default,
    as its ``_compile_for_args`` receives them) are taken as they are. TypeError when they do
    not bind to the function's parameters."""
    kws = dict(kws or {})
    pysig = inspect.signature(f.py_func)

    def normal(index: int, param: Any, value: Any) -> Any:
        return value

    def default(index: int, param: Any, value: Any) -> Any:
        return OmittedArg(value)

    def star(index: int, param: Any, values: tuple) -> Any:
        return tuple(values)

    try:
        pysig.bind(*args, **kws)
    except TypeError as e:
        raise _bind_error(f, args, kws, str(e)) from None
    folded = fold_arguments(pysig, tuple(args), kws, normal, default, star)
    params = list(pysig.parameters.values())
    key: list[types.Type] = []
    values: list[Any] = []
    for value in folded:
        if isinstance(value, OmittedArg):
            key.append(types.Omitted(value.value))
            values.append(value.value)
        else:  # a ``*args`` parameter holds its tuple, typed as the dispatcher types it
            key.append(f.typeof_pyval(value))
            values.append(value)
    return SampleArguments(tuple(key), tuple(values), tuple(p.name for p in params))


def resolve_spec(f: Any, spec: Sequence[Any], kws: Mapping[str, Any] | None = None
                 ) -> tuple[tuple[types.Type, ...], types.Type | None]:
    """The argument types (and the return type, if given) of what ``f.ir(...)`` accepts, folded as
    a call folds them: example argument values (with ``kws``), Numba types, or one signature
    (``"float64[:, :](float64[:, :])"`` or a ``numba.core.typing.Signature``). Parameters the
    types leave out get ``types.Omitted(default)``, as the dispatcher gives them."""
    if len(spec) == 1 and isinstance(spec[0], (str, Signature)) and not kws:
        argtypes, return_type = sigutils.normalize_signature(spec[0])
        return _fold_types(f, tuple(argtypes)), return_type
    if spec and all(isinstance(s, types.Type) for s in spec) and not kws:
        return _fold_types(f, tuple(spec)), None
    return resolve_arguments(f, spec, kws).key, None


def _fold_types(f: Any, argtypes: tuple[types.Type, ...]) -> tuple[types.Type, ...]:
    """``argtypes`` with ``types.Omitted(default)`` for the trailing parameters they leave out
    (TypeError when they do not fit the parameters)."""
    try:
        inspect.signature(f.py_func).bind(*argtypes)
    except TypeError as e:
        raise _bind_error(f, argtypes, {}, str(e)) from None
    return tuple(f._compiler.fold_argument_types(argtypes, {})[1])
