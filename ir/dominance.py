"""Block dominance within a region's control-flow graph (edges: the successors of each block's
last op). Blocks unreachable from the entry are treated as dominated by every block, as in LLVM."""

from __future__ import annotations

from mixjit.ir.core import Block, Region


class DominanceInfo:
    """Lazily computes immediate dominators per region (Cooper, Harvey & Kennedy's iterative algorithm)."""

    def __init__(self) -> None:
        self._idom: dict[Region, dict[Block, Block]] = {}
        self._intervals: dict[Region, dict[Block, tuple[int, int]]] = {}

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

    def _tree_intervals(self, region: Region) -> dict[Block, tuple[int, int]]:
        """(entry, exit) times of each reachable block in a depth-first walk of the dominator
        tree: ``a`` dominates ``b`` iff ``a``'s interval contains ``b``'s, an O(1) test however
        deep the tree (a function of many if/else diamonds is thousands deep)."""
        if region not in self._intervals:
            idom = self.idoms(region)
            children: dict[Block, list[Block]] = {}
            for block, parent in idom.items():
                if parent is not block:
                    children.setdefault(parent, []).append(block)
            intervals: dict[Block, tuple[int, int]] = {}
            clock = 0
            entry = region.entry
            stack: list[tuple[Block, int]] = [(entry, -1)] if entry is not None and entry in idom else []
            while stack:
                block, start = stack.pop()
                if start >= 0:
                    intervals[block] = (start, clock)
                    clock += 1
                    continue
                stack.append((block, clock))
                clock += 1
                stack.extend((child, -1) for child in children.get(block, ()))
            self._intervals[region] = intervals
        return self._intervals[region]

    def dominates(self, a: Block, b: Block) -> bool:
        """Whether every path from the entry to ``b`` passes through ``a`` (blocks of one region)."""
        if a is b:
            return True
        if a.parent is not b.parent or b.parent is None:
            return False
        intervals = self._tree_intervals(b.parent)
        inner = intervals.get(b)
        if inner is None:
            return True
        outer = intervals.get(a)
        return outer is not None and outer[0] < inner[0] and inner[1] < outer[1]
