"""DominanceInfo.dominates (answered from dominator-tree intervals) against the definition:
``a`` dominates ``b`` iff ``b`` cannot be reached from the entry once ``a`` is removed;
blocks unreachable from the entry are dominated by every block."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mixjit.ir.core import Block, Region
from mixjit.ir.dialects.test import TerminatorOp
from mixjit.ir.dominance import DominanceInfo


def reachable(edges: dict[int, list[int]], start: int, removed: int | None) -> set[int]:
    seen: set[int] = set()
    stack = [start] if start != removed else []
    while stack:
        b = stack.pop()
        if b in seen:
            continue
        seen.add(b)
        stack.extend(s for s in edges[b] if s != removed)
    return seen


def build(n: int, edges: dict[int, list[int]]) -> list[Block]:
    blocks = [Block() for _ in range(n)]
    region = Region(blocks)
    assert region.entry is blocks[0]
    for i, block in enumerate(blocks):
        block.add_op(TerminatorOp.build(dests=[blocks[s] for s in edges[i]]))
    return blocks


@st.composite
def cfgs(draw: st.DrawFn) -> tuple[int, dict[int, list[int]]]:
    n = draw(st.integers(1, 12))
    edges = {i: draw(st.lists(st.integers(1, n - 1), max_size=3)) if n > 1 else [] for i in range(n)}
    return n, edges


@settings(max_examples=200, deadline=None)
@given(cfgs())
def test_dominates_matches_the_definition(cfg: tuple[int, dict[int, list[int]]]) -> None:
    n, edges = cfg
    blocks = build(n, edges)
    info = DominanceInfo()
    live = reachable(edges, 0, None)
    for a in range(n):
        without_a = reachable(edges, 0, a)
        for b in range(n):
            expected = a == b or b not in live or (b not in without_a)
            assert info.dominates(blocks[a], blocks[b]) == expected, (a, b, edges)


def test_dominance_through_a_chain_of_thousands_of_diamonds() -> None:
    # entry -> (t_i | e_i) -> j_i -> ... : the dominator tree is thousands of blocks deep
    n_diamonds = 3000
    edges: dict[int, list[int]] = {}
    for d in range(n_diamonds):
        head, t, e = 3 * d, 3 * d + 1, 3 * d + 2
        edges[head], edges[t], edges[e] = [t, e], [head + 3], [head + 3]
    last = 3 * n_diamonds
    edges[last] = []
    blocks = build(last + 1, edges)
    info = DominanceInfo()
    assert info.dominates(blocks[0], blocks[last])
    assert not info.dominates(blocks[1], blocks[last])
    assert all(info.dominates(blocks[3 * d], blocks[last]) for d in range(n_diamonds))
