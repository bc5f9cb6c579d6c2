"""What the tuning layer may ask of a compiled ``@mixjit`` function.

``mixjit.tuning`` never imports the decorator or the dispatcher, and reads none of their private
attributes: it takes any object with the members of :class:`TunableFunction`
(``mixjit.dispatcher.MixjitDispatcher`` has them). The dispatcher calls down into the tuning
layer (first-call tuning, ``f.tune``, ``f.report``); the tuning layer calls back only through
this protocol, so the user layer imports one way.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    from mixjit.plan import SiteBlock
    from mixjit.sites import NotLinked

__all__ = ["TuningOptions", "TunableFunction"]


class TuningOptions(Protocol):
    """The options of a function that decide its tuning (``mixjit.options.Options``)."""

    @property
    def error_budget(self) -> float | str: ...
    @property
    def target(self) -> str: ...
    @property
    def schemes(self) -> tuple[str, ...] | None: ...
    @property
    def tune(self) -> str: ...
    @property
    def metric(self) -> Callable[[Any, Any], float] | None: ...
    @property
    def eval_timeout(self) -> float | None: ...
    @property
    def workers(self) -> int | None: ...


class TunableFunction(Protocol):
    """A compiled function the tuner can tune.

    ``overloads`` are Numba's compiled results by argument types (``entry_point``: the compiled
    callable a tuning runs); ``compile`` compiles a signature; ``site_blocks`` are the site
    blocks (and records of compilations that run as plain Numba) of one compiled signature,
    its callees' included; ``imported`` is the function imported to mix IR after a pass
    pipeline, with the process site ids of its compiled code. ``tuning_lock`` serialises the
    function's tunings and first calls; ``tuning_state`` belongs to the tuning layer (None until
    it first records something). Sample arguments are resolved by ``mixjit.arguments``, which
    asks Numba's dispatcher interface (``typeof_pyval``, argument folding)."""

    py_func: Callable[..., Any]
    tuning_lock: threading.RLock
    tuning_state: Any

    @property
    def mixjit_options(self) -> TuningOptions: ...
    @property
    def overloads(self) -> Mapping[tuple, Any]: ...

    def compile(self, sig: Any) -> Any: ...
    def site_blocks(self, key: tuple) -> "list[SiteBlock | NotLinked]": ...
    def imported(self, spec: Sequence[Any], raw: bool = False, pipeline: str = "detect-gemm") -> Any: ...
