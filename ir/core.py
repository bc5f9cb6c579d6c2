"""The IR core: values, operations, blocks and regions, with use-def chains kept by the core.

A :class:`Value` is an :class:`OpResult` or a :class:`BlockArgument`; every operand slot of an
:class:`Operation` is recorded in its value's ``uses``. Passes never edit use lists by hand: they call
``set_operand``, ``replace_all_uses_with``, ``erase`` (refused while results are used) and so on.

Concrete ops are declared as subclasses of :class:`Operation` with a ``name = "dialect.op"`` and
operand/result/property definitions (see :mod:`mixjit.ir.opdef`); declaring one registers it, and
:func:`get_op_class` finds it by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator, Mapping, NamedTuple, Sequence, TypeVar, cast

from mixjit.ir.attributes import Attribute
from mixjit.ir.location import Location, UnknownLoc
from mixjit.ir.traits import ConstantLike, IsTerminator, MemAlloc, MemoryEffects, MemRead, Pure, Trait
from mixjit.ir.types import Type

if TYPE_CHECKING:
    from mixjit.ir.opdef import OpDefinition
    from mixjit.ir.rewriting import RewritePattern


_Op = TypeVar("_Op", bound="Operation")


class IRError(Exception):
    """Misuse of the IR API (erasing a used value, inserting an op that already has a parent, ...)."""


class Use(NamedTuple):
    """Operand slot ``index`` of ``operation`` refers to the value whose ``uses`` hold this."""

    operation: "Operation"
    index: int  # type: ignore[assignment]  # the operand slot; shadows tuple.index on purpose


class Value:
    """An SSA value: an op result or a block argument. Compared by identity."""

    __slots__ = ("type", "name_hint", "_uses", "__weakref__")

    def __init__(self, type: Type, name_hint: str | None = None) -> None:
        if not isinstance(type, Type):
            raise TypeError(f"a value's type must be a Type, got {type!r}")
        self.type = type
        #: Preferred printed name (``%a``); the printer falls back to numbers and uniquifies clashes.
        self.name_hint = name_hint
        # An insertion-ordered dict used as a set: adding and removing a use are O(1), so values
        # with thousands of uses (a function argument, a shared constant) stay cheap to edit.
        self._uses: dict[Use, None] = {}

    @property
    def uses(self) -> list[Use]:
        """A snapshot of the uses, in the order they were made."""
        return list(self._uses)

    @property
    def has_uses(self) -> bool:
        return bool(self._uses)

    @property
    def users(self) -> list["Operation"]:
        """The distinct operations using this value, in use order."""
        seen: dict[int, Operation] = {}
        for use in self._uses:
            seen.setdefault(id(use.operation), use.operation)
        return list(seen.values())

    def replace_all_uses_with(self, new_value: "Value") -> None:
        """Make every use of this value use ``new_value`` instead."""
        if not isinstance(new_value, Value):
            raise TypeError(f"replace_all_uses_with needs a Value, got {new_value!r}")
        if new_value is self:
            return
        for use in list(self._uses):
            use.operation.set_operand(use.index, new_value)

    @property
    def owner(self) -> "Operation | Block":
        raise NotImplementedError

    @property
    def defining_op(self) -> "Operation | None":
        """The op producing this value, or None for block arguments."""
        return None

    @property
    def parent_block(self) -> "Block | None":
        """The block in which this value is defined (None for a result of a detached op)."""
        raise NotImplementedError


class OpResult(Value):
    """Result ``index`` of ``op``."""

    __slots__ = ("op", "index")

    def __init__(self, type: Type, op: "Operation", index: int, name_hint: str | None = None) -> None:
        super().__init__(type, name_hint)
        self.op = op
        self.index = index

    @property
    def owner(self) -> "Operation":
        return self.op

    @property
    def defining_op(self) -> "Operation":
        return self.op

    @property
    def parent_block(self) -> "Block | None":
        return self.op.parent

    def __repr__(self) -> str:
        return f"<OpResult #{self.index} of {self.op.name}: {self.type}>"


class BlockArgument(Value):
    """Argument ``index`` of ``block``."""

    __slots__ = ("block", "index")

    def __init__(self, type: Type, block: "Block", index: int, name_hint: str | None = None) -> None:
        super().__init__(type, name_hint)
        self.block = block
        self.index = index

    @property
    def owner(self) -> "Block":
        return self.block

    @property
    def parent_block(self) -> "Block":
        return self.block

    def __repr__(self) -> str:
        return f"<BlockArgument #{self.index}: {self.type}>"


_OP_REGISTRY: dict[str, type["Operation"]] = {}


def register_op(cls: type["Operation"]) -> None:
    """Register a declared op class under its ``name`` (done automatically when it is declared)."""
    existing = _OP_REGISTRY.get(cls.name)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise IRError(f"op name {cls.name!r} is declared twice ({existing.__qualname__} and {cls.__qualname__})")
    _OP_REGISTRY[cls.name] = cls


_dialects_loaded = False


def _load_dialects() -> None:
    global _dialects_loaded
    if not _dialects_loaded:  # asked once per parsed op: skip the import statement after the first
        import mixjit.ir.dialects  # noqa: F401  (importing registers every dialect's ops)

        _dialects_loaded = True


def get_op_class(name: str) -> type["Operation"] | None:
    """The declared class for op ``name`` ("dialect.op"), or None if no dialect declares it."""
    _load_dialects()
    return _OP_REGISTRY.get(name)


def registered_ops() -> dict[str, type["Operation"]]:
    """All declared ops by name."""
    _load_dialects()
    return dict(_OP_REGISTRY)


class Operation:
    """An operation. Generic (``Operation(name="x.y", ...)``) or an instance of a declared op class.

    ``properties`` are the op's inherent attributes (printed ``<{...}>``); ``attributes`` are
    discardable extra attributes (printed ``{...}``). ``loc`` is the source location (Python code);
    ``text_loc`` is where the op was read from a ``.mix`` file, if it was parsed.
    """

    #: "dialect.op"; declared classes set it as a class attribute.
    name: str
    traits: ClassVar[tuple[type[Trait], ...]] = ()
    _trait_cache: ClassVar[dict[type[Trait], bool]]  # per class, set by has_trait
    #: Filled in for declared op classes (see mixjit.ir.opdef).
    op_def: ClassVar["OpDefinition | None"] = None
    #: Declared ops accept only their declared properties unless this is True (test ops).
    open_properties: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("name"), str):
            from mixjit.ir.opdef import declare_op

            declare_op(cls)

    def __init__(
        self,
        name: str | None = None,
        *,
        operands: Sequence[Value] = (),
        result_types: Sequence[Type] = (),
        properties: Mapping[str, Attribute] | None = None,
        attributes: Mapping[str, Attribute] | None = None,
        regions: Sequence["Region"] = (),
        successors: Sequence["Block"] = (),
        loc: Location = UnknownLoc,
        result_names: Sequence[str | None] | None = None,
    ) -> None:
        if name is None:
            name = getattr(type(self), "name", None)
            if not isinstance(name, str):
                raise IRError("a generic Operation needs a name: Operation('dialect.op', ...)")
        elif type(self).op_def is not None and name != type(self).name:
            raise IRError(f"{type(self).__name__} is '{type(self).name}', cannot be created as '{name}'")
        self.name = name
        self.parent: Block | None = None
        # Neighbours in the parent block's doubly linked op list, and the position number that
        # orders ops within it (see Block); kept by Block, never set elsewhere.
        self._prev_op: Operation | None = None
        self._next_op: Operation | None = None
        self._order = 0
        self.loc = loc
        self.text_loc: Location | None = None
        self._erased = False
        self.properties: dict[str, Attribute] = _check_attr_dict(properties, "properties")
        self.attributes: dict[str, Attribute] = _check_attr_dict(attributes, "attributes")
        self._operands: list[Value] = []
        self.operands = operands
        names = list(result_names) if result_names is not None else [None] * len(result_types)
        if len(names) != len(result_types):
            raise IRError(f"{len(names)} result names given for {len(result_types)} results")
        self.results: tuple[OpResult, ...] = tuple(
            OpResult(t, self, i, n) for i, (t, n) in enumerate(zip(result_types, names))
        )
        self._regions: list[Region] = []
        for region in regions:
            self.add_region(region)
        self._successors: list[Block] = []
        for block in successors:
            self._append_successor(block)

    @classmethod
    def build(cls: type[_Op], **kwargs: Any) -> _Op:
        """Keyword constructor for declared ops: one keyword per definition (operands take Values,
        results take Types, properties take Attributes or plain Python values, regions take Regions,
        successors take Blocks), plus ``loc`` and ``attributes``. See mixjit.ir.opdef."""
        from mixjit.ir.opdef import build_op

        return cast(_Op, build_op(cls, kwargs))  # an instance of cls (build_op constructs it)

    # -- operands -------------------------------------------------------------------------------
    @property
    def operands(self) -> tuple[Value, ...]:
        return tuple(self._operands)

    @operands.setter
    def operands(self, values: Sequence[Value]) -> None:
        values = list(values)
        for v in values:
            if not isinstance(v, Value):
                raise TypeError(f"operands of '{self.name}' must be Values, got {v!r}")
        self._drop_operand_uses()
        self._operands = values
        for i, v in enumerate(values):
            v._uses[Use(self, i)] = None

    def set_operand(self, index: int, value: Value) -> None:
        """Make operand ``index`` refer to ``value`` (updating both values' uses)."""
        if not isinstance(value, Value):
            raise TypeError(f"operands of '{self.name}' must be Values, got {value!r}")
        old = self._operands[index]
        index = index % len(self._operands)
        del old._uses[Use(self, index)]
        self._operands[index] = value
        value._uses[Use(self, index)] = None

    def _drop_operand_uses(self) -> None:
        for i, v in enumerate(self._operands):
            del v._uses[Use(self, i)]
        self._operands = []

    # -- results ----------------------------------------------------------------------------------
    @property
    def result(self) -> OpResult:
        """The single result (IRError when the op has zero or several)."""
        if len(self.results) != 1:
            raise IRError(f"'{self.name}' has {len(self.results)} results; use .results")
        return self.results[0]

    @property
    def result_types(self) -> tuple[Type, ...]:
        return tuple(r.type for r in self.results)

    # -- regions and successors -------------------------------------------------------------------
    @property
    def regions(self) -> tuple["Region", ...]:
        return tuple(self._regions)

    def add_region(self, region: "Region") -> "Region":
        if region.parent is not None:
            raise IRError("region already belongs to an operation; detach it or create a new Region")
        region.parent = self
        self._regions.append(region)
        return region

    @property
    def successors(self) -> tuple["Block", ...]:
        return tuple(self._successors)

    def _append_successor(self, block: "Block") -> None:
        if not isinstance(block, Block):
            raise TypeError(f"successors of '{self.name}' must be Blocks, got {block!r}")
        block._pred_uses.append((self, len(self._successors)))
        self._successors.append(block)

    def set_successor(self, index: int, block: "Block") -> None:
        """Make successor ``index`` branch to ``block``."""
        old = self._successors[index]
        index = index % len(self._successors)
        old._pred_uses.remove((self, index))
        self._successors[index] = block
        block._pred_uses.append((self, index))

    def _drop_successor_uses(self) -> None:
        for i, b in enumerate(self._successors):
            b._pred_uses.remove((self, i))
        self._successors = []

    def successor_operands(self, index: int) -> tuple[Value, ...] | None:
        """The values passed to successor ``index``'s block arguments, or None if this op does not
        say (generic ops). Branch op classes override this."""
        return None

    # -- position ---------------------------------------------------------------------------------
    @property
    def parent_region(self) -> "Region | None":
        return self.parent.parent if self.parent is not None else None

    @property
    def parent_op(self) -> "Operation | None":
        region = self.parent_region
        return region.parent if region is not None else None

    @property
    def next_op(self) -> "Operation | None":
        """The op after this one in its block (None at the end or outside a block); O(1)."""
        return self._next_op

    @property
    def prev_op(self) -> "Operation | None":
        """The op before this one in its block (None at the start or outside a block); O(1)."""
        return self._prev_op

    def is_before_in_block(self, other: "Operation") -> bool:
        """Whether this op comes before ``other``, both in the same block (IRError otherwise).
        Amortized O(1): positions are renumbered only after an insertion into the block."""
        block = self.parent
        if block is None or other.parent is not block:
            raise IRError(f"is_before_in_block: '{self.name}' and '{other.name}' are not in one block")
        block._ensure_order()
        return self._order < other._order

    def is_ancestor_of(self, other: "Operation") -> bool:
        """True if ``other`` is this op or nested (at any depth) in its regions."""
        op: Operation | None = other
        while op is not None:
            if op is self:
                return True
            op = op.parent_op
        return False

    # -- traits and hooks -------------------------------------------------------------------------
    @classmethod
    def has_trait(cls, trait: type[Trait]) -> bool:
        # Asked for every op by every pass: answered once per (class, trait) from a per-class cache.
        cache = cls.__dict__.get("_trait_cache")
        if cache is None:
            cache = {}
            cls._trait_cache = cache
        found = cache.get(trait)
        if found is None:
            found = cache[trait] = any(issubclass(t, trait) for t in cls.traits)
        return found

    def memory_effects(self) -> MemoryEffects:
        """What this op may do to memory (see ``traits.MemoryEffects``). The default reads the
        traits: ``Pure`` is NONE, ``MemRead``/``MemAlloc`` add READ/ALLOC, none of them is UNKNOWN.
        Ops whose effects depend on their operand or result types override this."""
        if self.has_trait(Pure):
            return MemoryEffects.NONE
        effects = MemoryEffects.NONE
        if self.has_trait(MemRead):
            effects |= MemoryEffects.READ
        if self.has_trait(MemAlloc):
            effects |= MemoryEffects.ALLOC
        return effects if effects else MemoryEffects.UNKNOWN

    def verify_(self) -> None:
        """Op-specific checks, run by the verifier after the structural ones pass. Raise
        ``VerifyError(message)`` (mixjit.ir.verifier) to report a problem."""

    def fold(self) -> "list[Attribute | Value] | None":
        """Constant-fold or simplify: one Attribute (a constant) or Value per result, or None when
        nothing folds. Returning the op's own results means it was updated in place."""
        return None

    @classmethod
    def canonicalization_patterns(cls) -> "list[RewritePattern]":
        """Rewrite patterns the canonicalizer applies to this op kind."""
        return []

    # -- mutation ---------------------------------------------------------------------------------
    def detach(self) -> "Operation":
        """Remove from the parent block, keeping operands and uses (to move the op elsewhere)."""
        if self.parent is not None:
            self.parent._remove(self)
        return self

    def erase(self) -> None:
        """Delete the op and everything nested in it. Refused (IRError) while a result is used
        outside the op; uses the op makes of other values are dropped."""
        if self._erased:
            raise IRError(f"'{self.name}' was already erased")
        subtree = list(self.walk()) if self._regions else [self]
        inside = {id(o) for o in subtree}
        for o in subtree:
            for r in o.results:
                outside = [u for u in r._uses if id(u.operation) not in inside]
                if outside:
                    where = "" if o is self else f" (of nested '{o.name}')"
                    raise IRError(
                        f"cannot erase '{self.name}': result #{r.index}{where} still has {len(outside)} use(s), "
                        f"first by '{outside[0].operation.name}'; replace or erase the users first"
                    )
        _drop_references(subtree)
        self.detach()
        for o in subtree:
            o._erased = True

    @property
    def erased(self) -> bool:
        return self._erased

    # -- traversal --------------------------------------------------------------------------------
    def walk(self, post_order: bool = False) -> Iterator["Operation"]:
        """This op and every nested op, pre-order (or post-order). Blocks are snapshotted, so the
        walk tolerates erasing the op just yielded."""
        stack: list[tuple[Operation, bool]] = [(self, False)]
        while stack:
            op, expanded = stack.pop()
            if expanded or not op._regions:  # most ops have no regions: nothing to expand
                yield op
                continue
            if not post_order:
                yield op
            else:
                stack.append((op, True))
            children = [child for region in op._regions for block in region._iter_blocks() for child in block._iter_ops()]
            stack.extend((child, False) for child in reversed(children))

    # -- copying ----------------------------------------------------------------------------------
    def clone(self, value_map: "dict[Value, Value] | None" = None) -> "Operation":
        """A deep copy (regions included) that is not inserted anywhere. Operands defined outside the
        op keep referring to the same values unless ``value_map`` maps them; on return
        ``value_map`` (if given) also maps every value of the original to its copy."""
        mapping: dict[Value, Value] = value_map if value_map is not None else {}
        block_map: dict[Block, Block] = {}
        defined: set[Value] = set()
        for op in self.walk():
            defined.update(op.results)
            for region in op._regions:
                for block in region._iter_blocks():
                    defined.update(block._args)
        fixups: list[tuple[Operation, int, Value]] = []
        new = self._clone_one(mapping, block_map, defined, fixups)
        for op, i, old in fixups:
            op.set_operand(i, mapping[old])
        return new

    def _clone_one(
        self,
        mapping: dict[Value, Value],
        block_map: "dict[Block, Block]",
        defined: set[Value],
        fixups: list[tuple["Operation", int, Value]],
    ) -> "Operation":
        regions = []
        for region in self._regions:
            new_region = Region()
            for block in region._iter_blocks():
                new_block = Block(arg_types=[a.type for a in block._args], arg_names=[a.name_hint for a in block._args])
                block_map[block] = new_block
                mapping.update(zip(block._args, new_block._args))
                new_region.add_block(new_block)
            regions.append(new_region)
        operands, pending = [], []
        for i, v in enumerate(self._operands):
            if v in mapping:
                operands.append(mapping[v])
            else:
                operands.append(v)
                if v in defined:
                    pending.append((i, v))
        new = type(self).__new__(type(self))
        Operation.__init__(
            new,
            self.name,
            operands=operands,
            result_types=[r.type for r in self.results],
            properties=self.properties,
            attributes=self.attributes,
            regions=regions,
            successors=[block_map.get(b, b) for b in self._successors],
            loc=self.loc,
            result_names=[r.name_hint for r in self.results],
        )
        new.text_loc = self.text_loc
        fixups.extend((new, i, v) for i, v in pending)
        mapping.update(zip(self.results, new.results))
        for region in self._regions:
            for block in region._iter_blocks():
                target = block_map[block]
                for op in block._iter_ops():
                    target.add_op(op._clone_one(mapping, block_map, defined, fixups))
        return new

    # -- checks and text --------------------------------------------------------------------------
    def verify(self) -> None:
        """Run the verifier on this op (and everything nested); raises DiagnosticError."""
        from mixjit.ir.verifier import verify

        verify(self)

    def __str__(self) -> str:
        from mixjit.ir.printer import print_op

        return print_op(self)

    def __repr__(self) -> str:
        return f"<{self.name} op at {id(self):#x}>"


def _check_attr_dict(items: Mapping[str, Attribute] | None, what: str) -> dict[str, Attribute]:
    result = dict(items or {})
    for k, v in result.items():
        if not isinstance(k, str) or not isinstance(v, Attribute):
            raise TypeError(f"{what} must map str -> Attribute, got {k!r}: {v!r}")
    return result


def _drop_references(ops: Iterable[Operation]) -> None:
    for o in ops:
        o._drop_operand_uses()
        o._drop_successor_uses()


class Block:
    """A list of operations with typed arguments (the SSA replacement for phi nodes)."""

    def __init__(
        self,
        ops: Iterable[Operation] = (),
        arg_types: Iterable[Type] = (),
        arg_names: Iterable[str | None] | None = None,
    ) -> None:
        self.parent: Region | None = None
        # neighbours in the parent region's doubly linked block list (kept by Region)
        self._prev_block: Block | None = None
        self._next_block: Block | None = None
        self._args: list[BlockArgument] = []
        # A doubly linked list (Operation._prev_op/_next_op), so inserting and erasing are O(1)
        # however long the block. Positions (Operation._order) are numbered lazily: _ordered
        # says they increase along the list (kept by removals, lost by insertions), _numbered
        # that they are exactly 0, 1, 2, ... (lost by both).
        self._first: Operation | None = None
        self._last: Operation | None = None
        self._len = 0
        self._ordered = True
        self._numbered = True
        self._pred_uses: list[tuple[Operation, int]] = []
        arg_types = list(arg_types)
        names = list(arg_names) if arg_names is not None else [None] * len(arg_types)
        for t, n in zip(arg_types, names, strict=True):
            self.add_arg(t, n)
        self.add_ops(ops)

    # -- arguments --------------------------------------------------------------------------------
    @property
    def args(self) -> tuple[BlockArgument, ...]:
        return tuple(self._args)

    def add_arg(self, type: Type, name_hint: str | None = None) -> BlockArgument:
        return self.insert_arg(len(self._args), type, name_hint)

    def insert_arg(self, index: int, type: Type, name_hint: str | None = None) -> BlockArgument:
        """Insert a new argument at ``index`` (the predecessors' branches must then pass one more value)."""
        if not 0 <= index <= len(self._args):
            raise IRError(f"argument index {index} out of range for a block with {len(self._args)} arguments")
        arg = BlockArgument(type, self, index, name_hint)
        self._args.insert(index, arg)
        self._renumber_args()
        return arg

    def erase_arg(self, arg: "BlockArgument | int") -> None:
        """Remove an argument; refused (IRError) while it is used."""
        index = arg if isinstance(arg, int) else arg.index
        if isinstance(arg, BlockArgument) and (arg.block is not self or self._args[index] is not arg):
            raise IRError("erase_arg: the argument belongs to another block")
        target = self._args[index]
        if target._uses:
            raise IRError(
                f"cannot erase block argument #{index}: it still has {len(target._uses)} use(s), "
                f"first by '{next(iter(target._uses)).operation.name}'"
            )
        del self._args[index]
        self._renumber_args()

    def _renumber_args(self) -> None:
        for i, a in enumerate(self._args):
            a.index = i

    # -- operations -------------------------------------------------------------------------------
    def _iter_ops(self) -> Iterator[Operation]:
        """The ops in order, lazily; tolerates erasing the op just yielded (not its successor)."""
        op = self._first
        while op is not None:
            following = op._next_op
            yield op
            op = following

    @property
    def ops(self) -> tuple[Operation, ...]:
        """A snapshot of the operations, in order."""
        return tuple(self._iter_ops())

    def __iter__(self) -> Iterator[Operation]:
        return iter(tuple(self._iter_ops()))

    def __len__(self) -> int:
        return self._len

    @property
    def first_op(self) -> Operation | None:
        return self._first

    @property
    def last_op(self) -> Operation | None:
        return self._last

    def _ensure_order(self) -> None:
        if not self._ordered or not self._numbered:
            for i, o in enumerate(self._iter_ops()):
                o._order = i
            self._ordered = self._numbered = True

    def index_of(self, op: Operation) -> int:
        """Position of ``op`` in this block (amortized O(1) between mutations)."""
        if op.parent is not self:
            raise IRError(f"'{op.name}' is not in this block")
        if not self._numbered:
            self._ensure_order()
        return op._order

    def _insert(self, op: Operation, before: Operation | None) -> Operation:
        """Link ``op`` in front of ``before`` (at the end when None)."""
        if not isinstance(op, Operation):
            raise TypeError(f"blocks hold Operations, got {op!r}")
        if op.parent is not None:
            raise IRError(f"'{op.name}' is already in a block; detach() it first")
        if op._erased:
            raise IRError(f"'{op.name}' was erased and cannot be inserted")
        after = self._last if before is None else before._prev_op
        op._prev_op, op._next_op = after, before
        if after is None:
            self._first = op
        else:
            after._next_op = op
        if before is None:
            self._last = op
            # appending after a numbered last op keeps the numbering exact (the parser's case)
            op._order = after._order + 1 if after is not None else 0
        else:
            before._prev_op = op
            self._ordered = self._numbered = False
        op.parent = self
        self._len += 1
        return op

    def _remove(self, op: Operation) -> None:
        if op.parent is not self:
            raise IRError(f"'{op.name}' is not in this block")
        before, after = op._prev_op, op._next_op
        if before is None:
            self._first = after
        else:
            before._next_op = after
        if after is None:
            self._last = before
        else:
            after._prev_op = before
            self._numbered = False
        op._prev_op = op._next_op = None
        op.parent = None
        self._len -= 1

    def add_op(self, op: Operation) -> Operation:
        """Append ``op`` (which must not be in a block yet)."""
        return self._insert(op, None)

    def add_ops(self, ops: Iterable[Operation]) -> None:
        for op in ops:
            self.add_op(op)

    def insert_op_before(self, new_op: Operation, existing: Operation) -> Operation:
        if existing.parent is not self:
            raise IRError(f"'{existing.name}' is not in this block")
        return self._insert(new_op, existing)

    def insert_op_after(self, new_op: Operation, existing: Operation) -> Operation:
        if existing.parent is not self:
            raise IRError(f"'{existing.name}' is not in this block")
        return self._insert(new_op, existing._next_op)

    def insert_op_at_start(self, op: Operation) -> Operation:
        return self._insert(op, self._first)

    @property
    def terminator(self) -> Operation | None:
        """The last op if it is a terminator (IsTerminator trait), else None."""
        last = self.last_op
        return last if last is not None and last.has_trait(IsTerminator) else None

    # -- control flow -----------------------------------------------------------------------------
    @property
    def predecessors(self) -> list[Operation]:
        """The distinct ops that branch here (in the order they were linked)."""
        seen: dict[int, Operation] = {}
        for op, _ in self._pred_uses:
            seen.setdefault(id(op), op)
        return list(seen.values())

    @property
    def successors(self) -> tuple["Block", ...]:
        """The successors of the last op."""
        last = self.last_op
        return last.successors if last is not None else ()

    @property
    def parent_op(self) -> Operation | None:
        return self.parent.parent if self.parent is not None else None

    def walk(self, post_order: bool = False) -> Iterator[Operation]:
        """Every op in this block and nested in it."""
        for op in tuple(self._iter_ops()):
            yield from op.walk(post_order)

    def drop_all_references(self) -> None:
        """Make every op in this block (nested ones included) drop its operands and successors.

        The ops stay in place, now referring to nothing: this is how a group of blocks whose
        values use each other in a cycle (unreachable loops) is taken apart before erasing them.
        Values defined here may still be used elsewhere; ``erase`` refuses while they are."""
        _drop_references(self.walk())

    def erase(self) -> None:
        """Remove the block and its ops from its region. Refused (IRError) while it is a branch
        target or its values are used outside it."""
        if self._pred_uses:
            raise IRError(f"cannot erase a block that is still the successor of '{self._pred_uses[0][0].name}'")
        subtree = list(self.walk())
        inside = {id(o) for o in subtree}
        for v in [*self._args, *(r for o in subtree for r in o.results)]:
            for u in v._uses:
                if id(u.operation) not in inside:
                    raise IRError(f"cannot erase block: a value defined in it is still used by '{u.operation.name}'")
        _drop_references(subtree)
        for o in subtree:
            o._erased = True
        if self.parent is not None:
            self.parent._unlink(self)

    def __repr__(self) -> str:
        return f"<Block with {len(self._args)} args, {self._len} ops at {id(self):#x}>"


class Region:
    """A list of blocks owned by an operation (a function body, a loop body...).

    The blocks form a doubly linked list (like a block's ops), so erasing one of a function's
    thousands of blocks is O(1)."""

    def __init__(self, blocks: Iterable[Block] = ()) -> None:
        self.parent: Operation | None = None
        self._first_block: Block | None = None
        self._last_block: Block | None = None
        self._nblocks = 0
        for b in blocks:
            self.add_block(b)

    def _iter_blocks(self) -> Iterator[Block]:
        """The blocks in order, lazily; tolerates erasing the block just yielded."""
        block = self._first_block
        while block is not None:
            following = block._next_block
            yield block
            block = following

    @property
    def blocks(self) -> tuple[Block, ...]:
        return tuple(self._iter_blocks())

    @property
    def block(self) -> Block:
        """The single block (IRError if the region has zero or several)."""
        if self._nblocks != 1:
            raise IRError(f"region has {self._nblocks} blocks, expected exactly one")
        assert self._first_block is not None
        return self._first_block

    @property
    def entry(self) -> Block | None:
        return self._first_block

    def add_block(self, block: Block) -> Block:
        return self._link(block, None)

    def insert_block(self, index: int, block: Block) -> Block:
        """Insert ``block`` at position ``index`` (O(index); ``add_block`` appends in O(1))."""
        before = self._first_block
        for _ in range(max(0, min(index, self._nblocks))):
            assert before is not None
            before = before._next_block
        return self._link(block, before)

    def _link(self, block: Block, before: Block | None) -> Block:
        if block.parent is not None:
            raise IRError("block already belongs to a region")
        after = self._last_block if before is None else before._prev_block
        block._prev_block, block._next_block = after, before
        if after is None:
            self._first_block = block
        else:
            after._next_block = block
        if before is None:
            self._last_block = block
        else:
            before._prev_block = block
        block.parent = self
        self._nblocks += 1
        return block

    def _unlink(self, block: Block) -> None:
        before, after = block._prev_block, block._next_block
        if before is None:
            self._first_block = after
        else:
            before._next_block = after
        if after is None:
            self._last_block = before
        else:
            after._prev_block = before
        block._prev_block = block._next_block = None
        block.parent = None
        self._nblocks -= 1

    def index_of(self, block: Block) -> int:
        """Position of ``block`` (O(blocks): for messages, not for loops)."""
        for i, b in enumerate(self._iter_blocks()):
            if b is block:
                return i
        raise IRError("block is not in this region")

    def walk(self, post_order: bool = False) -> Iterator[Operation]:
        for block in tuple(self._iter_blocks()):
            yield from block.walk(post_order)

    def drop_all_references(self) -> None:
        """``Block.drop_all_references`` for every block of the region."""
        for block in self._iter_blocks():
            block.drop_all_references()

    def __repr__(self) -> str:
        return f"<Region with {self._nblocks} blocks at {id(self):#x}>"


def constant_value(value: Value) -> Attribute | None:
    """The constant a value holds if it is the result of a ConstantLike op, else None."""
    op = value.defining_op
    if op is not None and op.has_trait(ConstantLike):
        return op.properties.get("value")
    return None
