"""The contract every GEMM scheme implements.

A *scheme* is one way of computing ``C = A @ B`` (native BLAS, MixPert INT8
emulation, 3xTF32, split INT8/FP16, ...). It owns:

* a family of configs, ordered from most to least precise (``configs()``);
* a CPU executor, ``run(A, B, config)``, that implements the scheme's written
  semantics (docs/numerics.md) bit for bit;
* a description of its cost for the cost model (``work(config, m, n, k)``) and of
  how many low-precision products a config costs (``products(config)``).

Schemes are stateless singletons registered by name (``get_scheme("mixpert")``).
Configs are frozen dataclasses, so they hash, compare and print; ``label`` is the
short stable text form used in IR attributes, plans and reports.
"""

from __future__ import annotations

import dataclasses
import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np

from mixjit.runtime.schemes import catalog


@dataclass(frozen=True)
class Config:
    """Base class of scheme configs. Subclasses add their own frozen fields."""

    @property
    def label(self) -> str:
        """Short stable text form, e.g. ``level=IV`` or ``k_fp16=0.25``."""
        parts = [f"{f.name}={_fmt(getattr(self, f.name))}" for f in dataclasses.fields(self)]
        return ",".join(parts) if parts else "default"


def _fmt(v: Any) -> str:
    if isinstance(v, tuple):
        return "[" + ";".join(_fmt(x) for x in v) + "]"
    return str(v)


@dataclass
class RunStats:
    """What one executor call did, beyond its result.

    ``fallbacks`` counts the units (tiles, rows, whole GEMM...) that left the
    scheme's main path; ``fallback_unit`` and ``fallback_reason`` say what a unit
    is and why it fell back, so that reports never show a bare number.
    """

    fallbacks: int = 0
    units: int = 0
    fallback_unit: str = "tile"
    fallback_reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Work:
    """Cost-model description of one GEMM under one config.

    ``ops`` maps a precision class (``"int8"``, ``"fp16"``, ``"bf16"``, ``"tf32"``,
    ``"fp32"``, ``"fp64"``) to multiply-add pairs counted as 2 flops each (i.e.
    ``2*m*n*k`` per full-size product); ``"int32"`` is INT32 multiply-adds on the
    SIMT cores (vitbit's packed path). ``bytes_moved`` counts the passes over
    memory for packing operands and for the epilogue, in bytes. ``concurrent``: the
    classes run at the same time in one fused kernel (warp-specialised, as vitbit's
    tensor, INT and FP paths), so the cost model takes the slowest, not the sum.
    """

    ops: Mapping[str, float]
    bytes_moved: float
    concurrent: bool = False


BUILTIN_EXECUTOR_CODES = range(0, 4)
"""Plan codes the run-time entry keeps for itself (none, native BLAS, reference)."""

MAX_EXECUTOR_CODE = 63
"""Largest plan code a compiled executor may declare (the entry's table has one slot per code)."""


@dataclass(frozen=True)
class CompiledExecutor:
    """The compiled code a ``@mixjit`` site runs for a scheme: the one place a scheme
    declares it (``Scheme.executor``), read by the run-time entry and the plan table.

    ``kernel(a, b, c, params, stats) -> status`` writes ``C = A @ B`` (``c`` in the
    operands' dtype, any strides, overlapping neither operand: the entry hands it the
    site's C or a temporary; unspecified after a refusal), with
    ``params`` the ``n_words`` int64 config words (``Scheme.executor_words``) and
    ``stats`` ``n_stats`` int64 counters it fills; it returns 0 or a status in
    ``status_messages`` (1..63). ``code`` is word 0 of a plan row, unique per
    executor (several schemes may share one executor, as tf32x3/bf16xn/fp16x2 do).
    ``profile_stats``: the entry adds ``stats`` to the site's statistics while
    profiling (word ``max_stat`` as a maximum); only for an executor whose
    statistics the tuner's profile names (MixPert's). ``kernel=None`` is the
    entry's built-in BLAS executor (``native``)."""

    name: str
    code: int
    kernel: Callable[..., int] | None
    n_words: int = 0
    n_stats: int = 0
    status_messages: Mapping[int, str] = field(default_factory=dict)
    profile_stats: bool = False
    max_stat: int = -1

    def __post_init__(self) -> None:
        builtin = self.kernel is None
        if builtin != (self.code in BUILTIN_EXECUTOR_CODES) or not 0 < self.code <= MAX_EXECUTOR_CODE:
            raise ValueError(
                f"executor {self.name!r}: code {self.code} must be in {BUILTIN_EXECUTOR_CODES[-1] + 1}.."
                f"{MAX_EXECUTOR_CODE} for a compiled kernel (codes 1..3 are the entry's built-ins)")
        bad = [s for s in self.status_messages if not 0 < s <= MAX_EXECUTOR_CODE]
        if bad:
            raise ValueError(f"executor {self.name!r}: status codes {bad} outside 1..{MAX_EXECUTOR_CODE}")


NATIVE_EXECUTOR = CompiledExecutor("native", catalog.plan_code("native"), None)
"""The run-time entry's built-in BLAS executor (scheme ``native``)."""


class Scheme(ABC):
    """A way of computing a GEMM; see the module docstring."""

    #: the compiled executor ``@mixjit`` sites run for this scheme (None: not runnable at sites)
    executor: ClassVar[CompiledExecutor | None] = None

    #: registry name, kebab/lower case: ``"mixpert"``, ``"tf32x3"``
    name: ClassVar[str]
    #: one-line description shown by listings
    summary: ClassVar[str]
    #: input dtypes the executor accepts
    dtypes: ClassVar[tuple[np.dtype, ...]] = (np.dtype(np.float32), np.dtype(np.float64))

    @abstractmethod
    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        """All named configs for inputs of ``dtype``, most precise first."""

    def default_config(self, dtype: np.dtype | type = np.float32) -> Config:
        """The most precise config: what a site runs before tuning."""
        return self.configs(dtype)[0]

    @abstractmethod
    def parse_config(self, text: str) -> Config:
        """Inverse of ``Config.label``; raises ValueError naming the bad part."""

    @abstractmethod
    def run_with_stats(
        self, a: np.ndarray, b: np.ndarray, config: Config
    ) -> tuple[np.ndarray, RunStats]:
        """CPU executor. ``a`` (m×k) and ``b`` (k×n) are validated 2-D arrays of one
        dtype in ``self.dtypes`` (any strides); returns C (m×n, same dtype)."""

    def prepare_a(self, a: np.ndarray, config: Config) -> Any:
        """Prepare A once for several GEMMs under ``config``; ``run`` accepts the result
        in place of A. Schemes with a costly operand split override this; the default
        keeps the array as it is, so every scheme accepts prepared operands."""
        return a

    def prepare_b(self, b: np.ndarray, config: Config) -> Any:
        """Prepare B once for several GEMMs under ``config`` (see :meth:`prepare_a`)."""
        return b

    def run(self, a: np.ndarray, b: np.ndarray, config: Config) -> np.ndarray:
        """Run the CPU executor and return only C."""
        return self.run_with_stats(a, b, config)[0]

    def executor_words(self, config: Config) -> tuple[int, ...]:
        """``config`` as the ``executor.n_words`` int64 words its kernel reads (a plan row's words 1..)."""
        return tuple(int(w) for w in config.words())  # type: ignore[attr-defined]

    @property
    def runs_at_sites(self) -> bool:
        """Can ``@mixjit`` sites run this scheme (a compiled executor of its own or, for a
        wrapper, of the schemes it wraps)?"""
        return self.executor is not None

    def plan_row(self, config: Config) -> tuple[CompiledExecutor, tuple[int, ...]]:
        """What a site of ``config`` runs: the compiled executor (word 0 of its plan row is
        that executor's code) and the words after the code: this scheme's executor and its
        :meth:`executor_words`. A wrapper names the executor of the scheme it wraps (the
        complex wrapper: the real scheme's, with the form first)."""
        if self.executor is None:
            raise ValueError(f"mixjit: scheme {self.name!r} has no compiled executor; a site cannot run it")
        words = self.executor_words(config)
        if len(words) != self.executor.n_words:
            raise ValueError(f"mixjit: scheme {self.name!r} encodes {len(words)} config words, its executor "
                             f"{self.executor.name!r} reads {self.executor.n_words}; fix its executor_words()")
        return self.executor, words

    @abstractmethod
    def products(self, config: Config) -> int:
        """Number of full-size low-precision GEMM products ``config`` costs."""

    @abstractmethod
    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        """Cost-model description of an m×n×k GEMM under ``config``."""


_REGISTRY: dict[str, Scheme] = {}
_LOADED: set[str] = set()
"""The families (mixjit.runtime.schemes.catalog) whose modules are imported."""


def register(scheme_cls: type[Scheme]) -> type[Scheme]:
    """Class decorator: instantiate and register a scheme under its ``name``, which its
    family's catalogue entry must list (mixjit.runtime.schemes.catalog)."""
    name = scheme_cls.name
    if name in _REGISTRY:
        raise ValueError(f"scheme {name!r} is registered twice ({scheme_cls.__qualname__})")
    family = catalog.family_of(name)
    if family is None or name not in family.schemes:
        raise ValueError(f"scheme {name!r} ({scheme_cls.__module__}) is in no family of the scheme catalogue: "
                         "add it to its Family's schemes (mixjit.runtime.schemes.catalog)")
    _REGISTRY[name] = scheme_cls()
    return scheme_cls


def _load_family(family: catalog.Family) -> None:
    """Import the modules of ``family`` once (they register its schemes)."""
    if family.name in _LOADED:
        return
    for module in family.modules:
        importlib.import_module(module)
    missing = [s for s in family.schemes if s not in _REGISTRY]
    if missing:
        raise ValueError(f"scheme family {family.name!r}: its modules {family.modules} register no scheme "
                         f"named {missing}; fix the catalogue entry or the modules")
    _LOADED.add(family.name)


def forget_family(name: str) -> None:
    """Forget the loaded schemes of a family removed from the catalogue (a test's temporary family)."""
    family = catalog.FAMILIES.get(name)
    schemes = family.schemes if family is not None else ()
    for scheme in schemes:
        _REGISTRY.pop(scheme, None)
    _LOADED.discard(name)


def get_scheme(name: str) -> Scheme:
    """Look up a scheme by name, loading its family on first need; the error lists the known names."""
    family = catalog.family_of(name)
    if family is not None:
        _load_family(family)
    try:
        return _REGISTRY[name]
    except KeyError:
        aliases = catalog.alias_table()
        if name in aliases:
            target, label = aliases[name]
            raise ValueError(
                f"{name!r} names one config of scheme {target!r}; use resolve_scheme({name!r}), "
                f"or get_scheme({target!r}) with config {label!r}"
            ) from None
        known = ", ".join(catalog.scheme_names())
        raise ValueError(f"unknown GEMM scheme {name!r}; known schemes: {known}") from None


def resolve_scheme(name: str) -> tuple[Scheme, Config | None]:
    """A scheme name or alias -> (scheme, the config the alias fixes, or None)."""
    aliases = catalog.alias_table()
    if name in aliases:
        target, label = aliases[name]
        scheme = get_scheme(target)
        return scheme, scheme.parse_config(label)
    return get_scheme(name), None


def scheme_aliases() -> dict[str, tuple[str, str]]:
    """Every alias: name -> (scheme name, config label)."""
    return catalog.alias_table()


def compiled_executors() -> dict[str, CompiledExecutor]:
    """The compiled executor of every scheme that declares one, by scheme name; raises
    ValueError when two different executors claim one code."""
    out = {name: s.executor for name, s in all_schemes().items() if s.executor is not None}
    by_code: dict[int, CompiledExecutor] = {}
    for name, ex in out.items():
        if by_code.setdefault(ex.code, ex) is not ex:
            raise ValueError(f"executor code {ex.code} is claimed by {by_code[ex.code].name!r} and {ex.name!r} "
                             f"(scheme {name!r}); give each CompiledExecutor its own code")
    return out


def all_schemes() -> dict[str, Scheme]:
    """Every scheme of the catalogue, by name, in catalogue order (loads every family)."""
    for family in catalog.families():
        _load_family(family)
    return {name: _REGISTRY[name] for family in catalog.families() for name in family.schemes}
