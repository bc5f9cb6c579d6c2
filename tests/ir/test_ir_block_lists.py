"""A block's ops and a region's blocks are linked lists with lazily numbered positions: random
edit sequences against a plain Python list as the model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mixjit.ir.core import Block, Operation, Region
from mixjit.ir.dialects.test import GenericOp

EDITS = st.lists(st.tuples(st.sampled_from(["append", "start", "before", "after", "erase", "detach", "ask"]),
                           st.integers(0, 1000)), max_size=60)


def check_block(block: Block, model: list[Operation]) -> None:
    assert list(block.ops) == model and len(block) == len(model)
    assert block.first_op is (model[0] if model else None) and block.last_op is (model[-1] if model else None)
    for i, op in enumerate(model):
        assert op.parent is block
        assert op.prev_op is (model[i - 1] if i else None)
        assert op.next_op is (model[i + 1] if i + 1 < len(model) else None)


@settings(max_examples=150, deadline=None)
@given(EDITS)
def test_op_lists_follow_a_list_model(edits: list[tuple[str, int]]) -> None:
    block, model = Block(), []
    for kind, k in edits:
        new = GenericOp.build()
        if kind == "append" or (not model and kind in ("before", "after", "erase", "detach", "ask")):
            block.add_op(new)
            model.append(new)
            continue
        i = k % len(model) if model else 0
        if kind == "start":
            block.insert_op_at_start(new)
            model.insert(0, new)
        elif kind == "before":
            block.insert_op_before(new, model[i])
            model.insert(i, new)
        elif kind == "after":
            block.insert_op_after(new, model[i])
            model.insert(i + 1, new)
        elif kind == "erase":
            model.pop(i).erase()
        elif kind == "detach":
            op = model.pop(i).detach()
            assert op.parent is None and op.prev_op is None and op.next_op is None
        else:  # positions and order, asked between edits (renumbering is lazy)
            j = (k // 7) % len(model)
            assert block.index_of(model[i]) == i
            assert model[i].is_before_in_block(model[j]) == (i < j)
        check_block(block, model)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "insert", "erase"]), st.integers(0, 100)), max_size=40))
def test_block_lists_follow_a_list_model(edits: list[tuple[str, int]]) -> None:
    region, model = Region(), []
    for kind, k in edits:
        if kind == "erase" and model:
            model.pop(k % len(model)).erase()
        elif kind == "insert":
            block = Block()
            region.insert_block(k % (len(model) + 1), block)
            model.insert(k % (len(model) + 1), block)
        else:
            model.append(region.add_block(Block()))
        assert list(region.blocks) == model
        assert region.entry is (model[0] if model else None)
        assert all(region.index_of(b) == i and b.parent is region for i, b in enumerate(model))
