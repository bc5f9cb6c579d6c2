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

from collections import ChainMap
from dataclasses import dataclass
from typing import Hashable

from mixjit.ir.core import Block, Operation, Region
from mixjit.ir.dominance import DominanceInfo
from mixjit.ir.traits import IsolatedFromAbove, IsTerminator, MemoryEffects
from mixjit.passes.pass_base import ModulePass
from mixjit.passes.registry import register_pass

__all__ = ["CommonSubexpressionElimination", "eliminate_common_subexpressions"]

_Scope = ChainMap  # op key -> the first op with that key visible here


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

    def region(self, region: Region, scope: _Scope) -> None:
        idoms = self.dominance.idoms(region)
        children: dict[Block, list[Block]] = {}
        for block in region.blocks:  # region order keeps the walk deterministic
            parent = idoms.get(block)
            if parent is not None and parent is not block:
                children.setdefault(parent, []).append(block)
        if region.entry is not None and region.entry in idoms:
            self.block_tree(region.entry, children, scope)

    def replace(self, op: Operation, existing: Operation) -> None:
        for old, new in zip(op.results, existing.results):
            old.replace_all_uses_with(new)
        op.erase()
        self.changed = True

    def block_tree(self, root: Block, children: dict[Block, list[Block]], scope: _Scope) -> None:
        stack = [(root, scope)]
        while stack:
            block, outer = stack.pop()
            inner = outer.new_child()
            self.block(block, inner)
            stack.extend((child, inner) for child in reversed(children.get(block, [])))

    def block(self, block: Block, scope: _Scope) -> None:
        loads: dict[Hashable, Operation] = {}  # READ-only ops since the last op that may write
        for op in block.ops:
            effects = op.memory_effects()
            key = _key(op) if effects in (MemoryEffects.NONE, MemoryEffects.READ) else None
            if key is not None:
                visible = scope if effects == MemoryEffects.NONE else loads
                existing = visible.get(key)
                if existing is not None:
                    self.replace(op, existing)
                    continue
                visible[key] = op
            elif _may_write(op):
                loads.clear()
            nested = _Scope() if op.has_trait(IsolatedFromAbove) else scope  # loads stay per block
            for region in op.regions:
                self.region(region, nested.new_child())


def _may_write(op: Operation) -> bool:
    """``op``, or an op nested in it, may write memory."""
    return any(MemoryEffects.WRITE in o.memory_effects() for o in op.walk())


def eliminate_common_subexpressions(root: Operation) -> bool:
    """Run CSE on everything nested in ``root``; True if any op was replaced."""
    cse = _CSE()
    for region in root.regions:
        cse.region(region, _Scope())
    return cse.changed


@register_pass
@dataclass(frozen=True)
class CommonSubexpressionElimination(ModulePass):
    """Replace ops without memory effects by equivalent dominating ops, loads by equal earlier loads."""

    name = "cse"

    def apply(self, module: Operation) -> None:
        eliminate_common_subexpressions(module)
