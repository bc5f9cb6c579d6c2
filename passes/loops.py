"""Loops and post-dominators of a region's control-flow graph.

Loops: retreating edges, loop bodies and loop depths.
A depth-first search from the entry block finds the *retreating* edges (to a block still on the
DFS stack). Removing them leaves an acyclic graph, which the ``build-dag`` pass uses to tell
dependences within one iteration from loop-carried ones. Each retreating edge ``t -> h`` closes
a loop with header ``h`` whose body is ``h`` plus the blocks that reach ``t`` without passing
through ``h`` (the natural loop when the CFG is reducible, as Python code's always is). A block's
loop depth is the number of distinct loop headers whose loop contains it.

Post-dominators (for control dependence in ``build-dag``): block ``p`` post-dominates ``b`` when
every path from ``b`` to an exit of the region (a block without successors) passes through
``p``. :func:`immediate_post_dominators` gives each block's nearest strict post-dominator, or
None when there is none (branches to two different exits, or no path to an exit at all).
"""

from __future__ import annotations

from dataclasses import dataclass

from mixjit.ir.core import Block, Region

__all__ = ["LoopInfo", "analyze_loops", "immediate_post_dominators"]

Edge = tuple[Block, Block]


@dataclass
class LoopInfo:
    """The loop structure of one region (blocks unreachable from the entry are left out)."""

    order: list[Block]
    """Reachable blocks in reverse post-order."""
    retreating: set[Edge]
    """Edges whose removal makes the CFG acyclic (the back edges of reducible code)."""
    loops: dict[Block, set[Block]]
    """Loop header -> the blocks of its loop (all back edges to that header merged)."""

    def depth(self, block: Block) -> int:
        """How many loops contain ``block`` (0 outside any loop)."""
        return len(self.loops_containing(block))

    def loops_containing(self, block: Block | None) -> frozenset[Block]:
        """The headers of the loops that contain ``block`` (none for no block: a detached op's)."""
        return frozenset(h for h, body in self.loops.items() if block in body)


def _successors(block: Block, region: Region) -> list[Block]:
    return [s for s in block.successors if s.parent is region]


def analyze_loops(region: Region) -> LoopInfo:
    """Find the loops of ``region`` (see the module docstring)."""
    entry = region.entry
    if entry is None:
        return LoopInfo([], set(), {})
    postorder: list[Block] = []
    retreating: set[Edge] = set()
    on_stack = {entry}
    seen = {entry}
    stack: list[tuple[Block, int]] = [(entry, 0)]
    while stack:
        block, i = stack.pop()
        succs = _successors(block, region)
        if i < len(succs):
            stack.append((block, i + 1))
            succ = succs[i]
            if succ in on_stack:
                retreating.add((block, succ))
            elif succ not in seen:
                seen.add(succ)
                on_stack.add(succ)
                stack.append((succ, 0))
        else:
            on_stack.discard(block)
            postorder.append(block)
    preds: dict[Block, list[Block]] = {b: [] for b in postorder}
    for b in postorder:
        for s in _successors(b, region):
            preds[s].append(b)
    loops: dict[Block, set[Block]] = {}
    for tail, header in retreating:
        body = loops.setdefault(header, {header})
        work = [tail]
        while work:
            b = work.pop()
            if b in body:
                continue
            body.add(b)
            work.extend(preds[b])
    return LoopInfo(postorder[::-1], retreating, loops)


def immediate_post_dominators(info: LoopInfo, region: Region) -> dict[Block, Block | None]:
    """Each reachable block's immediate post-dominator (None: only the virtual exit after it)."""
    blocks = info.order
    succs = {b: _successors(b, region) for b in blocks}
    exits = [b for b in blocks if not succs[b]]
    # Blocks that reach an exit; the others (endless loops) have no post-dominator but themselves.
    preds: dict[Block, list[Block]] = {b: [] for b in blocks}
    for b in blocks:
        for s in succs[b]:
            preds[s].append(b)
    live, work = set(exits), list(exits)
    while work:
        for p in preds[work.pop()]:
            if p not in live:
                live.add(p)
                work.append(p)
    pdom: dict[Block, frozenset[Block]] = {b: frozenset(live) if b in live else frozenset([b]) for b in blocks}
    for b in exits:
        pdom[b] = frozenset([b])
    changed = True
    while changed:
        changed = False
        for b in reversed(blocks):  # post-order: successors first, mostly
            if b not in live or not succs[b]:
                continue
            new = frozenset([b]).union(frozenset.intersection(*(pdom[s] for s in succs[b] if s in live)))
            if new != pdom[b]:
                pdom[b], changed = new, True
    # The strict post-dominators of a block form a chain; the nearest has the most of its own.
    return {b: max(pdom[b] - {b}, key=lambda p: len(pdom[p]), default=None) for b in blocks}
