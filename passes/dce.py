"""``dce``: dead code elimination.

Removes (1) blocks that cannot be reached from their region's entry block and
(2) ops whose results are unused and that write no memory, iteratively, so whole chains
of dead computations go. An op is removable only if its memory effects
(``Operation.memory_effects()``) are at most READ and ALLOC (Pure ops, loads, fresh
allocations), it is not a terminator, and no result is used; everything else (writes,
calls, unregistered ops, terminators, used values) stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from mixjit.ir.core import Block, Operation, Region
from mixjit.ir.rewriting import is_trivially_dead
from mixjit.passes.pass_base import ModulePass
from mixjit.passes.registry import register_pass

__all__ = ["DeadCodeElimination", "is_trivially_dead", "erase_dead_ops", "erase_unreachable_blocks"]


def erase_dead_ops(root: Operation) -> bool:
    """Erase trivially dead ops nested in ``root``, and the ops that become dead as a result.

    Returns True if anything was erased.
    """
    # Reverse pre-order visits users before the values they use, so chains die in one sweep;
    # the worklist revisits operand producers of every erased op for the rest.
    worklist = list(root.walk())
    changed = False
    while worklist:
        op = worklist.pop()
        if op is root or op.erased or not is_trivially_dead(op):
            continue
        nested = list(op.walk())
        inside = {id(o) for o in nested}
        producers = [
            v.defining_op
            for o in nested
            for v in o.operands
            if v.defining_op is not None and id(v.defining_op) not in inside
        ]
        op.erase()
        worklist.extend(producers)
        changed = True
    return changed


def _reachable(region: Region) -> set[int]:
    entry = region.entry
    seen: set[int] = set()
    stack: list[Block] = [entry] if entry is not None else []
    while stack:
        block = stack.pop()
        if id(block) in seen:
            continue
        seen.add(id(block))
        stack.extend(block.successors)
    return seen


def _erase_blocks(blocks: list[Block]) -> None:
    """Erase ``blocks``, none of them reachable; their values may only be used among them."""
    # Dropping every reference first breaks use cycles between unreachable blocks.
    for block in blocks:
        block.drop_all_references()
    for block in blocks:
        block.erase()


def erase_unreachable_blocks(root: Operation) -> bool:
    """Erase the blocks of every region under ``root`` that its entry block cannot reach.

    Returns True if any block was erased.
    """
    changed = False
    for op in list(root.walk()):
        if op.erased:
            continue
        for region in op.regions:
            reachable = _reachable(region)
            dead = [b for b in region.blocks if id(b) not in reachable]
            if dead:
                _erase_blocks(dead)
                changed = True
    return changed


@register_pass
@dataclass(frozen=True)
class DeadCodeElimination(ModulePass):
    """Remove unused side-effect-free ops and blocks unreachable from their region's entry."""

    name = "dce"

    def apply(self, module: Operation) -> None:
        erase_unreachable_blocks(module)
        erase_dead_ops(module)
