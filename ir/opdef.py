"""Declarative op definitions (in the style of xDSL's IRDL).

An op is a subclass of :class:`~mixjit.ir.core.Operation` with a ``name`` and definitions::

    class GemmOp(Operation):
        name = "mix.gemm"
        a = operand(ArrayType)
        b = operand(ArrayType)
        c = opt_operand(ArrayType)
        out = result(ArrayType)
        trans_a = prop(BoolAttr, default=BoolAttr(False))
        traits = (Pure,)

        def verify_(self) -> None: ...

Declaring it registers it and turns each definition into an accessor (``op.a`` is the Value,
``op.c`` is a Value or None, variadic definitions give tuples, ``op.trans_a`` the Attribute or its
default). ``GemmOp.build(a=x, b=y, out=t, site=0)`` creates one. Ops are stored generically (flat
operand/result lists), so the text format stays MLIR's generic syntax; when an op has more than one
optional/variadic operand (result) group, the ``operandSegmentSizes`` (``resultSegmentSizes``)
property records the group sizes, as in MLIR.

Constraints: ``None`` (anything), a Type/Attribute subclass (isinstance), a Type instance (equality),
or a tuple of these (any of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from mixjit.ir.attributes import Attribute, DenseArrayAttr, SymbolRefAttr, to_attr
from mixjit.ir.core import Block, IRError, Operation, Region, Value, register_op
from mixjit.ir.location import UnknownLoc
from mixjit.ir.traits import Trait
from mixjit.ir.types import Type, i32

Constraint = Any  # None | type | Type | tuple
SINGLE, OPTIONAL, VARIADIC = "single", "optional", "variadic"
OPERAND_SEGMENTS = "operandSegmentSizes"
RESULT_SEGMENTS = "resultSegmentSizes"


def satisfies(constraint: Constraint, value: Any) -> bool:
    """Whether a type or attribute meets a constraint."""
    if constraint is None:
        return True
    if isinstance(constraint, tuple):
        return any(satisfies(c, value) for c in constraint)
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    return bool(constraint == value)


def describe(constraint: Constraint) -> str:
    """A constraint in words, for "must be ..." messages."""
    if constraint is None:
        return "anything"
    if isinstance(constraint, tuple):
        return " or ".join(describe(c) for c in constraint)
    if isinstance(constraint, type):
        return getattr(constraint, "constraint_name", constraint.__name__)
    return f"'{constraint}'"


@dataclass
class _Def:
    kind: str = SINGLE
    constraint: Constraint = None
    name: str = ""
    index: int = 0
    group: str = ""  # "operands" | "results" | "regions" | "successors"

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, op: Operation | None, owner: type) -> Any:
        if op is None:
            return self
        items = getattr(op, self.group)
        definition = type(op).op_def
        if definition is not None and self.group in definition.all_single and len(items) == definition.counts[self.group]:
            return items[self.index]  # the common case: every definition of the group is one item
        segment = items[_segments(op, self.group)[self.index]]
        if self.kind == SINGLE:
            return segment[0]
        if self.kind == OPTIONAL:
            return segment[0] if segment else None
        return segment


def operand(constraint: Constraint = None) -> Any:
    """A required operand."""
    return _Def(SINGLE, constraint, group="operands")


def opt_operand(constraint: Constraint = None) -> Any:
    """An optional operand (the accessor gives None when absent)."""
    return _Def(OPTIONAL, constraint, group="operands")


def var_operand(constraint: Constraint = None) -> Any:
    """Zero or more operands (the accessor gives a tuple)."""
    return _Def(VARIADIC, constraint, group="operands")


def result(constraint: Constraint = None) -> Any:
    return _Def(SINGLE, constraint, group="results")


def var_result(constraint: Constraint = None) -> Any:
    return _Def(VARIADIC, constraint, group="results")


def region() -> Any:
    return _Def(SINGLE, group="regions")


def var_region() -> Any:
    return _Def(VARIADIC, group="regions")


def successor() -> Any:
    return _Def(SINGLE, group="successors")


def var_successor() -> Any:
    return _Def(VARIADIC, group="successors")


@dataclass
class PropDef:
    """A property (``<{...}>``, inherent) or, with ``discardable=True``, an attribute (``{...}``)."""

    constraint: Constraint = None
    default: Attribute | None = None
    optional: bool = False
    coerce: Callable[[Any], Attribute] | None = None
    discardable: bool = False
    name: str = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @property
    def required(self) -> bool:
        return self.default is None and not self.optional

    def _dict(self, op: Operation) -> dict[str, Attribute]:
        return op.attributes if self.discardable else op.properties

    def __get__(self, op: Operation | None, owner: type) -> Any:
        if op is None:
            return self
        return self._dict(op).get(self.name, self.default)

    def __set__(self, op: Operation, value: Any) -> None:
        if value is None:
            self._dict(op).pop(self.name, None)
        else:
            self._dict(op)[self.name] = self.to_attr(value)

    def to_attr(self, value: Any) -> Attribute:
        if self.coerce is not None and not isinstance(value, Attribute):
            return self.coerce(value)
        return to_attr(value)


def _symbol_coerce(value: Any) -> Attribute:
    return SymbolRefAttr(value) if isinstance(value, str) else to_attr(value)


def prop(
    constraint: Constraint = None,
    *,
    default: Attribute | None = None,
    optional: bool = False,
    coerce: Callable[[Any], Attribute] | None = None,
) -> Any:
    """A property. Required unless it has a default or ``optional=True``. ``coerce`` turns plain
    Python values given to ``build``/assignment into the attribute (default: ``to_attr``; a
    SymbolRefAttr property takes a str)."""
    if coerce is None and constraint is SymbolRefAttr:
        coerce = _symbol_coerce
    return PropDef(constraint, default, optional, coerce)


def opt_prop(constraint: Constraint = None, *, coerce: Callable[[Any], Attribute] | None = None) -> Any:
    return prop(constraint, optional=True, coerce=coerce)


def attr(constraint: Constraint = None, *, default: Attribute | None = None, optional: bool = True) -> Any:
    """A discardable attribute the op understands (stored in ``op.attributes``)."""
    d = prop(constraint, default=default, optional=optional)
    d.discardable = True
    return d


@dataclass
class OpDefinition:
    """The collected definitions of one op class."""

    name: str
    operands: list[_Def] = field(default_factory=list)
    results: list[_Def] = field(default_factory=list)
    regions: list[_Def] = field(default_factory=list)
    successors: list[_Def] = field(default_factory=list)
    props: list[PropDef] = field(default_factory=list)
    #: filled by finish(): the groups whose definitions are all SINGLE (no segment arithmetic
    #: needed), the number of definitions per group, and the inherent property names
    all_single: frozenset[str] = frozenset()
    counts: dict[str, int] = field(default_factory=dict)
    inherent: frozenset[str] = frozenset()

    def finish(self) -> None:
        """Precompute what every access and verification of the op's instances asks."""
        groups = ("operands", "results", "regions", "successors")
        self.all_single = frozenset(g for g in groups if all(d.kind == SINGLE for d in self.group(g)))
        self.counts = {g: len(self.group(g)) for g in groups}
        self.inherent = frozenset(self.inherent_names)

    def group(self, group: str) -> list[_Def]:
        return getattr(self, group)

    @staticmethod
    def needs_segments(defs: Sequence[_Def]) -> bool:
        return sum(d.kind != SINGLE for d in defs) > 1

    @property
    def inherent_names(self) -> set[str]:
        names = {p.name for p in self.props if not p.discardable}
        if self.needs_segments(self.operands):
            names.add(OPERAND_SEGMENTS)
        if self.needs_segments(self.results):
            names.add(RESULT_SEGMENTS)
        return names


_SEGMENT_PROP = {"operands": OPERAND_SEGMENTS, "results": RESULT_SEGMENTS}


def segment_sizes(op: Operation, group: str) -> list[int]:
    """How many of ``op``'s operands/results/regions/successors each definition covers.
    IRError (with a message naming the mismatch) when the op does not fit its definition."""
    sizes = _segment_sizes(op, group)
    if isinstance(sizes, str):
        raise IRError(f"'{op.name}' op {sizes}")
    return sizes


def _segment_sizes(op: Operation, group: str) -> list[int] | str:
    """The sizes, or a message saying why the op does not fit its definition."""
    definition = type(op).op_def
    assert definition is not None
    defs = definition.group(group)
    n = len(getattr(op, group))
    if group in definition.all_single and n == len(defs):
        return [1] * n
    what = group[:-1]
    if definition.needs_segments(defs):
        prop_name = _SEGMENT_PROP.get(group)
        attr_value = op.properties.get(prop_name) if prop_name else None
        if not isinstance(attr_value, DenseArrayAttr) or len(attr_value.value) != len(defs):
            return f"needs property {prop_name} = array<i32: ...> with {len(defs)} entries"
        sizes = list(attr_value.value)
        for d, s in zip(defs, sizes):
            if s < 0 or (d.kind == SINGLE and s != 1) or (d.kind == OPTIONAL and s > 1):
                return f"{prop_name}: {s} is not a valid size for {d.kind} {what} '{d.name}'"
        if sum(sizes) != n:
            return f"{prop_name} adds up to {sum(sizes)} but the op has {n} {group}"
        return sizes
    fixed = sum(d.kind == SINGLE for d in defs)
    rest = n - fixed
    flexible = [d for d in defs if d.kind != SINGLE]
    if rest < 0 or (not flexible and rest != 0) or (flexible and flexible[0].kind == OPTIONAL and rest > 1):
        if not flexible:
            expected = f"{fixed}"
        elif flexible[0].kind == OPTIONAL:
            expected = f"{fixed} or {fixed + 1}"
        else:
            expected = f"at least {fixed}"
        return f"expects {expected} {group}, got {n}"
    return [1 if d.kind == SINGLE else rest for d in defs]


def _slices(sizes: list[int]) -> list[slice]:
    slices, start = [], 0
    for size in sizes:
        slices.append(slice(start, start + size))
        start += size
    return slices


def _segments(op: Operation, group: str) -> list[slice]:
    return _slices(segment_sizes(op, group))


def declare_op(cls: type[Operation]) -> None:
    """Collect ``cls``'s definitions (inherited ones first), check its traits, register it."""
    definition = OpDefinition(cls.name)
    seen: set[str] = set()
    for klass in reversed(cls.__mro__):
        for attr_name, value in vars(klass).items():
            if attr_name in seen:
                continue
            if isinstance(value, _Def):
                seen.add(attr_name)
                defs = definition.group(value.group)
                value.index = len(defs)
                defs.append(value)
            elif isinstance(value, PropDef):
                seen.add(attr_name)
                definition.props.append(value)
    for t in cls.traits:
        if not (isinstance(t, type) and issubclass(t, Trait)):
            raise TypeError(f"{cls.__name__}.traits must hold Trait subclasses, got {t!r}")
    definition.finish()
    cls.op_def = definition
    register_op(cls)


_MISSING = object()


def build_op(cls: type[Operation], kwargs: dict[str, Any]) -> Operation:
    """Implementation of ``Operation.build`` (see there)."""
    definition = cls.op_def
    if definition is None:
        raise IRError(f"{cls.__name__} is not a declared op; use Operation(name, operands=..., ...)")
    kwargs = dict(kwargs)
    loc = kwargs.pop("loc", UnknownLoc)
    attributes = dict(kwargs.pop("attributes", None) or {})

    def take(d: _Def, check: Callable[[Any], bool], what: str) -> list[Any]:
        value = kwargs.pop(d.name, _MISSING)
        if value is _MISSING and d.group == "results" and isinstance(d.constraint, Type):
            value = d.constraint  # a fixed result type need not be spelled out
        if value is _MISSING and d.group == "regions":
            value = Region() if d.kind == SINGLE else []
        if d.kind == SINGLE:
            if value is _MISSING:
                raise TypeError(f"{cls.__name__}.build() needs {d.name}= (a {what})")
            items = [value]
        elif d.kind == OPTIONAL:
            items = [] if value is _MISSING or value is None else [value]
        else:
            items = [] if value is _MISSING else list(value)
        for item in items:
            if not check(item):
                raise TypeError(f"{cls.__name__}.build(): {d.name}= must be a {what}, got {item!r}")
        return items

    groups: dict[str, list[Any]] = {}
    sizes: dict[str, list[int]] = {}
    checks = {
        "operands": (lambda v: isinstance(v, Value), "Value"),
        "results": (lambda v: isinstance(v, Type), "Type"),
        "regions": (lambda v: isinstance(v, Region), "Region"),
        "successors": (lambda v: isinstance(v, Block), "Block"),
    }
    for group, (check, what) in checks.items():
        groups[group], sizes[group] = [], []
        for d in definition.group(group):
            items = take(d, check, what)
            groups[group].extend(items)
            sizes[group].append(len(items))
    properties: dict[str, Attribute] = {}
    for p in definition.props:
        value = kwargs.pop(p.name, None)
        if value is None:
            if p.required:
                raise TypeError(f"{cls.__name__}.build() needs {p.name}= (a {describe(p.constraint)})")
            continue
        (attributes if p.discardable else properties)[p.name] = p.to_attr(value)
    for group, prop_name in _SEGMENT_PROP.items():
        if definition.needs_segments(definition.group(group)):
            properties[prop_name] = DenseArrayAttr(i32, sizes[group])
    if kwargs:
        raise TypeError(f"{cls.__name__}.build() got unexpected keyword(s): {', '.join(sorted(kwargs))}")
    return cls(
        operands=groups["operands"],
        result_types=groups["results"],
        properties=properties,
        attributes=attributes,
        regions=groups["regions"],
        successors=groups["successors"],
        loc=loc,
    )


def structural_errors(op: Operation) -> list[str]:
    """What is wrong with ``op`` against its class's definition: counts, operand/result types,
    properties present and of the right kind, no unknown properties. Empty when it fits."""
    definition = type(op).op_def
    if definition is None:
        return []
    errors: list[str] = []
    for group in ("operands", "results", "regions", "successors"):
        sizes = _segment_sizes(op, group)
        if isinstance(sizes, str):
            errors.append(sizes)
            continue
        slices = _slices(sizes)
        if group not in ("operands", "results"):
            continue
        items = getattr(op, group)
        for d, sl in zip(definition.group(group), slices):
            for i in range(*sl.indices(len(items))):
                t = items[i].type
                if not satisfies(d.constraint, t):
                    errors.append(f"{group[:-1]} #{i} ('{d.name}') must be {describe(d.constraint)}, got '{t}'")
    inherent = definition.inherent
    for p in definition.props:
        where = op.attributes if p.discardable else op.properties
        if p.name not in where:
            if p.required:
                errors.append(f"missing required property '{p.name}' ({describe(p.constraint)})")
        elif not satisfies(p.constraint, where[p.name]):
            kind = "attribute" if p.discardable else "property"
            errors.append(f"{kind} '{p.name}' must be {describe(p.constraint)}, got {where[p.name]}")
    for key in op.properties:
        if key not in inherent and not type(op).open_properties:
            errors.append(f"unknown property '{key}' (known: {', '.join(sorted(inherent)) or 'none'})")
    return errors
