"""The pass base class and typed pass options.

A pass is a small frozen dataclass (xDSL style): a kebab-case ``name`` class
attribute, a docstring whose first line is the one-line summary, and one dataclass
field per option. Options are typed with ``int``, ``float``, ``bool``, ``str`` or a
list of ``int``/``float``/``str`` (``list[int]`` or ``tuple[int, ...]``); the
pipeline parser turns the option text into those types and reports mistakes.

    @register_pass
    @dataclass(frozen=True)
    class Tune(ModulePass):
        '''Choose a precision for every GEMM within an error budget.'''
        name = "tune"
        budget: float = option(1e-6, "relative Frobenius error budget")
        target: str = option("h100", "hardware to tune for")

        def apply(self, module):
            ...

A pass that reports remarks or warnings (MLIR's ``emitRemark``) overrides ``run(module,
context)`` instead and emits them through ``context`` (a :class:`PassContext`); the pass
manager collects them. Errors are not emitted: they are raised (``DiagnosticError``) and
fail the pass.

A pass gets cached analyses (:mod:`mixjit.passes.analysis`) through ``context.analysis(T)`` and
declares what it keeps valid in ``preserved_analyses`` (default: nothing; ``ALL_ANALYSES`` for a
pass that only adds attributes no analysis reads).

``run`` (or ``apply``) may return a :class:`PassResult` (torch.fx's ``PassResult``): whether the
pass changed the module and a pass-specific payload (``tune``: the search it ran). Returning
None, as most passes do, means "no payload, and the module may have changed". The pass manager
collects one result per pass, in order (``PassManager.run_with_results``).
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from mixjit.ir.diagnostics import Diagnostic, Severity
from mixjit.ir.location import Location
from mixjit.passes.analysis import Analysis, AnalysisManager

__all__ = ["ModulePass", "PassContext", "PassResult", "OptionInfo", "OptionError", "option", "is_kebab_case"]

_SCALAR_TYPES: dict[type, str] = {int: "int", float: "float", bool: "bool", str: "str"}
_KEBAB = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")
_DECIMAL_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?|inf|nan)")


def is_kebab_case(text: str) -> bool:
    """True for names such as ``dce`` or ``detect-gemm``."""
    return _KEBAB.fullmatch(text) is not None


def option(default: Any = dataclasses.MISSING, help: str = "") -> Any:
    """Declare a pass option with a default and a help text shown by ``--list-passes``.

    List defaults are copied for each pass instance, so mutable defaults are safe. A pass
    that restricts an option's range checks it in ``__post_init__`` and raises
    ``OptionError(message, option_name, 0)``, which the pipeline parser points at.
    """
    metadata = {"help": help}
    if isinstance(default, (list, tuple)):
        frozen = tuple(default)
        factory = (lambda: list(frozen)) if isinstance(default, list) else (lambda: frozen)
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


class OptionError(ValueError):
    """An option of a pass was unknown, missing or of the wrong type.

    ``option`` names the offending option (None when the error is about the pass as
    a whole); ``value_index`` is the index of the offending value in a list option
    (0 for a scalar), or None when the error is about the option as a whole.
    """

    def __init__(
        self, message: str, option: str | None = None, value_index: int | None = None
    ) -> None:
        super().__init__(message)
        self.option = option
        self.value_index = value_index


@dataclass(frozen=True)
class OptionInfo:
    """One typed option of a pass, derived from a dataclass field."""

    name: str  # as written in a pipeline: kebab-case
    field_name: str  # the dataclass field
    element_type: type  # int, float, bool or str
    container: type | None  # None for a scalar option, list or tuple for a list option
    default: Any  # dataclasses.MISSING when the option is required
    help: str

    @property
    def type_name(self) -> str:
        """``float``, ``list of int`` ... as used in messages and ``--list-passes``."""
        scalar = _SCALAR_TYPES[self.element_type]
        return f"list of {scalar}" if self.container is not None else scalar

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    def convert(self, pass_name: str, values: list[str]) -> Any:
        """Turn the option's text value(s) into the option's type, or raise OptionError."""
        if self.container is None:
            if len(values) != 1:
                raise OptionError(
                    f"option '{self.name}' of pass '{pass_name}' expects {self.type_name}, "
                    f"got a list '{','.join(values)}'",
                    self.name,
                    1,
                )
            return self._convert_one(pass_name, values[0], 0)
        return self.container(self._convert_one(pass_name, v, i) for i, v in enumerate(values))

    def _convert_one(self, pass_name: str, text: str, index: int) -> Any:
        kind = self.element_type
        try:
            if kind is bool:
                if text in ("true", "false"):
                    return text == "true"
                raise ValueError(text)
            if kind is int:
                if not _DECIMAL_INT.fullmatch(text):  # int() would also take "1_0" and "٣"
                    raise ValueError(text)
                return int(text)
            if kind is float:
                if not _FLOAT.fullmatch(text):
                    raise ValueError(text)
                return float(text)
            return text
        except ValueError:
            expected = "bool (true or false)" if kind is bool else _SCALAR_TYPES[kind]
            raise OptionError(
                f"option '{self.name}' of pass '{pass_name}' expects {expected}, got '{text}'",
                self.name,
                index,
            ) from None

    def format_value(self, value: Any) -> str:
        """The pipeline text for ``value`` (inverse of ``convert``)."""
        items = list(value) if self.container is not None else [value]
        return ",".join(_format_scalar(v) for v in items)


def _format_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        if value and re.fullmatch(r"[^\s,{}=\"]+", value):
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def _option_infos(cls: type) -> tuple[OptionInfo, ...]:
    hints = typing.get_type_hints(cls)
    infos = []
    for f in dataclasses.fields(cls):
        element, container = _classify(cls, f.name, hints[f.name])
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        infos.append(
            OptionInfo(
                name=f.name.replace("_", "-"),
                field_name=f.name,
                element_type=element,
                container=container,
                default=default,
                help=f.metadata.get("help", ""),
            )
        )
    return tuple(infos)


def _classify(cls: type, field_name: str, hint: Any) -> tuple[type, type | None]:
    if hint in _SCALAR_TYPES:
        return hint, None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list and len(args) == 1 and args[0] in _SCALAR_TYPES and args[0] is not bool:
        return args[0], list
    if (
        origin is tuple
        and len(args) == 2
        and args[1] is Ellipsis
        and args[0] in _SCALAR_TYPES
        and args[0] is not bool
    ):
        return args[0], tuple
    raise TypeError(
        f"option '{field_name}' of pass class {cls.__name__} has type {hint!r}; "
        "use int, float, bool, str, list[int|float|str] or tuple[int|float|str, ...]"
    )


class PassContext:
    """What the pass manager gives a pass besides the module: a sink for located remarks and
    warnings, and the run's cached analyses. The manager makes one per run; nothing is global."""

    def __init__(self, sink: Callable[[Diagnostic], None], analyses: AnalysisManager | None = None) -> None:
        self._sink = sink
        self.analyses = analyses

    def analysis(self, analysis: type[Analysis]) -> Any:
        """The result of ``analysis`` on the module being run (MLIR's ``getAnalysis``): cached by
        the pass manager, computed on the first request."""
        if self.analyses is None:
            raise RuntimeError(
                f"no analysis manager: this PassContext was made without one, so analysis "
                f"'{analysis.name}' cannot be requested; run the pass through a PassManager")
        return self.analyses.get(analysis)

    def cached_analysis(self, analysis: type[Analysis]) -> Any | None:
        """The cached result of ``analysis`` (an earlier pass computed it and nothing since
        invalidated it), or None; never computes."""
        return None if self.analyses is None else self.analyses.cached(analysis)

    def emit(self, diagnostic: Diagnostic) -> None:
        """Report a remark or a warning (with its notes). Errors fail a pass: raise them as a
        ``DiagnosticError`` instead."""
        if diagnostic.severity not in (Severity.REMARK, Severity.WARNING):
            raise ValueError(
                f"a pass emits only remarks and warnings, got {diagnostic.severity.value} "
                f"'{diagnostic.message}'; raise DiagnosticError to fail the pass"
            )
        self._sink(diagnostic)

    def remark(self, message: str, loc: Location, notes: Iterable[Diagnostic] = ()) -> None:
        """Emit ``file:line:col: remark: message``."""
        self.emit(Diagnostic(Severity.REMARK, message, loc, tuple(notes)))

    def warning(self, message: str, loc: Location, notes: Iterable[Diagnostic] = ()) -> None:
        """Emit ``file:line:col: warning: message``."""
        self.emit(Diagnostic(Severity.WARNING, message, loc, tuple(notes)))


PayloadT = TypeVar("PayloadT")


@dataclass(frozen=True)
class PassResult(Generic[PayloadT]):
    """What one run of a pass returned (torch.fx's ``PassResult``): whether it changed the module,
    and what it has to tell its caller beyond the IR (``tune``: its search), or None.

    ``modified`` is False only when the pass says it left the module as it was: a pass that returns
    None is taken to have changed it (the pass manager cannot tell without comparing the IR)."""

    modified: bool = True
    payload: PayloadT | None = None

    @classmethod
    def of(cls, pass_: ModulePass, returned: object) -> PassResult[Any]:
        """What ``pass_.run`` returned, as a PassResult: None becomes ``PassResult()`` (may have
        changed the module, no payload); anything else but a PassResult is a TypeError."""
        if returned is None:
            return PassResult()
        if not isinstance(returned, PassResult):
            raise TypeError(f"pass '{pass_.name}' returned a {type(returned).__name__}: run() and apply() "
                            "return None or a PassResult(modified, payload)")
        return returned


@dataclass(frozen=True)
class ModulePass:
    """Base class of all passes: subclass as a frozen dataclass and override ``apply`` (or
    ``run``, to emit remarks and warnings)."""

    name: ClassVar[str]
    preserved_analyses: ClassVar[Any] = ()
    """The analyses (classes) this pass keeps valid, or ``ALL_ANALYSES``; the pass manager drops
    every other cached analysis after the pass runs. The default, nothing, is always safe."""

    def apply(self, module: Any) -> PassResult[Any] | None:
        """Transform ``module`` (a ``builtin.module`` op) in place; None, or a :class:`PassResult`."""
        raise NotImplementedError(f"pass '{self.name}' does not implement apply()")

    def run(self, module: Any, context: PassContext) -> PassResult[Any] | None:
        """What the pass manager calls: ``apply(module)`` unless a pass overrides it to emit
        remarks or warnings through ``context``. None, or a :class:`PassResult`."""
        return self.apply(module)

    @classmethod
    def summary(cls) -> str:
        """The one-line description: the first line of the class docstring."""
        doc = cls.__doc__ or ""
        # @dataclass writes "Name(field: type, ...)" when a class has no docstring.
        if doc.startswith(cls.__name__ + "("):
            return ""
        return doc.strip().splitlines()[0].strip() if doc.strip() else ""

    @classmethod
    def options(cls) -> tuple[OptionInfo, ...]:
        """The typed options of this pass, in declaration order."""
        return _option_infos(cls)

    @classmethod
    def from_options(cls, values: dict[str, list[str]]) -> ModulePass:
        """Build the pass from option texts (``{"budget": ["1e-6"]}``), checking each."""
        infos = {info.name: info for info in cls.options()}
        kwargs: dict[str, Any] = {}
        for key, texts in values.items():
            info = infos.get(key)
            if info is None:
                raise OptionError(unknown_option_message(cls.name, key, list(infos)), key)
            kwargs[info.field_name] = info.convert(cls.name, texts)
        missing = [i.name for i in infos.values() if i.required and i.field_name not in kwargs]
        if missing:
            raise OptionError(
                f"pass '{cls.name}' requires option(s) {', '.join(missing)}: "
                f"write e.g. {cls.name}{{{missing[0]}=...}}"
            )
        return cls(**kwargs)

    def pipeline_spec(self) -> str:
        """The pipeline text that builds this pass, with its non-default options."""
        parts = []
        for info in self.options():
            value = getattr(self, info.field_name)
            if info.required or value != info.default:
                parts.append(f"{info.name}={info.format_value(value)}")
        return f"{self.name}{{{','.join(parts)}}}" if parts else self.name


def unknown_option_message(pass_name: str, key: str, valid: list[str]) -> str:
    """``pass 'tune' has no option 'budgt'; did you mean 'budget'? ...``."""
    message = f"pass '{pass_name}' has no option '{key}'"
    close = difflib.get_close_matches(key, valid, n=3)
    if close:
        message += "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    if valid:
        message += f" (valid options: {', '.join(valid)})"
    else:
        message += f" (pass '{pass_name}' takes no options)"
    return message
