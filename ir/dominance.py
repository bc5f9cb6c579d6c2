"""Block dominance within a region's control-flow graph (edges: the successors of each block's
last op). Blocks unreachable from the entry are treated as dominated by every block, as in LLVM."""

from __future__ import annotations

from mixjit.ir.core import Block, Region


class DominanceInfo:
    """Lazily computes immediate dominators per region (Cooper, Harvey & Kennedy's iterative algorithm)."""

    def __init__(self) -> None:
        self._idom: dict[Region, dict[Block, Block]] = {}

    def _compute(self, region: Region) -> dict[Block, Block]:
        entry = region.entry
        if entry is None:
            return {}
        # Reverse post-order of the reachable blocks (iterative DFS).
        order: list[Block] = []
        seen = {entry}
        stack: list[tuple[Block, int]] = [(entry, 0)]
        while stack:
            block, i = stack.pop()
            succs = [s for s in block.successors if s.parent is region]
            if i < len(succs):
                stack.append((block, i + 1))
                if succs[i] not in seen:
                    seen.add(succs[i])
                    stack.append((succs[i], 0))
            else:
                order.append(block)
        order.reverse()
        number = {b: i for i, b in enumerate(order)}
        preds: dict[Block, list[Block]] = {b: [] for b in order}
        for b in order:
            for s in b.successors:
                if s in preds:
                    preds[s].append(b)
        idom: dict[Block, Block] = {entry: entry}

        def intersect(a: Block, b: Block) -> Block:
            while a is not b:
                while number[a] > number[b]:
                    a = idom[a]
                while number[b] > number[a]:
                    b = idom[b]
            return a

        changed = True
        while changed:
            changed = False
            for b in order[1:]:
                processed = [p for p in preds[b] if p in idom]
                new = processed[0]
                for p in processed[1:]:
                    new = intersect(p, new)
                if idom.get(b) is not new:
                    idom[b] = new
                    changed = True
        return idom

    def idoms(self, region: Region) -> dict[Block, Block]:
        """Immediate dominator of each reachable block (the entry maps to itself)."""
        if region not in self._idom:
            self._idom[region] = self._compute(region)
        return self._idom[region]

    def dominates(self, a: Block, b: Block) -> bool:
        """Whether every path from the entry to ``b`` passes through ``a`` (blocks of one region)."""
        if a is b:
            return True
        if a.parent is not b.parent or b.parent is None:
            return False
        idom = self.idoms(b.parent)
        if b not in idom:
            return True
        while True:
            parent = idom[b]
            if parent is b:
                return False
            if parent is a:
                return True
            b = parent
