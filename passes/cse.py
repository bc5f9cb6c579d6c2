"""``cse``: common subexpression elimination.

Two ops are equivalent when they have the same name, operands, properties,
attributes and result types (locations do not matter). An op without regions and
without memory effects (``Operation.memory_effects()`` is NONE: Pure ops, array views)
is replaced by an equivalent op that dominates it: earlier in the same block, in a
dominating block (walking each region's dominator tree), or in an enclosing region.
An op whose only effect is READ (a load) is replaced only by an equivalent op earlier
in the same block with no op between them that may write memory (an op whose effects,
or those of any op nested in it, include WRITE): a simple, conservative rule. Ops that
allocate or write are never merged. Scopes do not cross ops that are IsolatedFromAbove
(functions). Blocks unreachable from their region's entry are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from mixjit.ir.core import Block, Operation, Region
from mixjit.ir.dominance import DominanceInfo
from mixjit.ir.traits import IsolatedFromAbove, IsTerminator, MemoryEffects
from mixjit.passes.pass_base import ModulePass
from mixjit.passes.registry import register_pass

__all__ = ["CommonSubexpressionElimination", "eliminate_common_subexpressions"]

_ABSENT = object()


class _ScopedTable:
    """Op key -> the first op with that key visible here, with scopes that end by undoing
    the entries made since they began (like MLIR's ScopedHashTable): lookups are O(1) however
    deep the dominator tree, where a chain of dicts would search every enclosing scope."""

    def __init__(self) -> None:
        self.entries: dict[Hashable, Operation] = {}
        self._undo: list[tuple[Hashable, object]] = []

    def get(self, key: Hashable) -> Operation | None:
        return self.entries.get(key)

    def __setitem__(self, key: Hashable, op: Operation) -> None:
        self._undo.append((key, self.entries.get(key, _ABSENT)))
        self.entries[key] = op

    def mark(self) -> int:
        """The current scope depth, to :meth:`undo_to` when the scope ends."""
        return len(self._undo)

    def undo_to(self, mark: int) -> None:
        """Forget every entry made since ``mark``."""
        while len(self._undo) > mark:
            key, previous = self._undo.pop()
            if previous is _ABSENT:
                del self.entries[key]
            else:
                self.entries[key] = previous  # type: ignore[assignment]


def _key(op: Operation) -> Hashable | None:
    """What makes ``op`` equivalent to another, or None if it may not be merged."""
    if not op.results or op.regions or op.has_trait(IsTerminator):
        return None
    return (
        op.name,
        tuple(id(v) for v in op.operands),
        tuple(sorted(op.properties.items())),
        tuple(sorted(op.attributes.items())),
        op.result_types,
    )


class _CSE:
    def __init__(self) -> None:
        self.dominance = DominanceInfo()
        self.changed = False

    def region(self, region: Region, table: _ScopedTable) -> None:
        """Visit the blocks in a depth-first walk of the dominator tree, each block seeing the
        entries of the blocks that dominate it (and of the enclosing regions)."""
        idoms = self.dominance.idoms(region)
        entry = region.entry
        if entry is None or entry not in idoms:
            return
        children: dict[Block, list[Block]] = {}
        for block in region.blocks:  # region order keeps the walk deterministic
            parent = idoms.get(block)
            if parent is not None and parent is not block:
                children.setdefault(parent, []).append(block)
        stack: list[tuple[Block, bool]] = [(entry, False)]
        marks: list[int] = []
        while stack:
            block, leaving = stack.pop()
            if leaving:
                table.undo_to(marks.pop())
                continue
            marks.append(table.mark())
            self.block(block, table)
            stack.append((block, True))
            stack.extend((child, False) for child in reversed(children.get(block, [])))

    def replace(self, op: Operation, existing: Operation) -> None:
        for old, new in zip(op.results, existing.results):
            old.replace_all_uses_with(new)
        op.erase()
        self.changed = True

    def block(self, block: Block, table: _ScopedTable) -> None:
        loads: dict[Hashable, Operation] = {}  # READ-only ops since the last op that may write
        for op in block.ops:
            effects = op.memory_effects()
            key = _key(op) if effects in (MemoryEffects.NONE, MemoryEffects.READ) else None
            if key is not None:
                visible = table if effects == MemoryEffects.NONE else loads
                existing = visible.get(key)
                if existing is not None:
                    self.replace(op, existing)
                    continue
                visible[key] = op
            elif _may_write(op):
                loads.clear()
            if not op.regions:
                continue
            inner = _ScopedTable() if op.has_trait(IsolatedFromAbove) else table  # loads stay per block
            for region in op.regions:
                mark = inner.mark()
                self.region(region, inner)
                inner.undo_to(mark)


def _may_write(op: Operation) -> bool:
    """``op``, or an op nested in it, may write memory."""
    if not op.regions:
        return MemoryEffects.WRITE in op.memory_effects()
    return any(MemoryEffects.WRITE in o.memory_effects() for o in op.walk())


def eliminate_common_subexpressions(root: Operation) -> bool:
    """Run CSE on everything nested in ``root``; True if any op was replaced."""
    cse = _CSE()
    for region in root.regions:
        cse.region(region, _ScopedTable())
    return cse.changed


@register_pass
@dataclass(frozen=True)
class CommonSubexpressionElimination(ModulePass):
    """Replace ops without memory effects by equivalent dominating ops, loads by equal earlier loads."""

    name = "cse"

    def apply(self, module: Operation) -> None:
        eliminate_common_subexpressions(module)
