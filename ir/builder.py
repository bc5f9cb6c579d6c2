"""Builder: creates ops at an insertion point (end of a block, before or after an op)."""

from __future__ import annotations

from typing import Any, TypeVar

from mixjit.ir.core import Block, IRError, Operation
from mixjit.ir.location import Location, UnknownLoc

OpT = TypeVar("OpT", bound=Operation)


class Builder:
    """Inserts ops before ``anchor`` in ``block`` (at the end when ``anchor`` is None). Successive
    inserts keep their order. ``loc`` is given to created ops that do not set one."""

    def __init__(self, block: Block, anchor: Operation | None = None, loc: Location = UnknownLoc) -> None:
        if anchor is not None and anchor.parent is not block:
            raise IRError(f"insertion anchor '{anchor.name}' is not in the given block")
        self.block = block
        self.anchor = anchor
        self.loc = loc

    @classmethod
    def at_end(cls, block: Block, loc: Location = UnknownLoc) -> "Builder":
        return cls(block, None, loc)

    @classmethod
    def at_start(cls, block: Block, loc: Location = UnknownLoc) -> "Builder":
        return cls(block, block.first_op, loc)

    @classmethod
    def before(cls, op: Operation, loc: Location = UnknownLoc) -> "Builder":
        if op.parent is None:
            raise IRError(f"cannot build before '{op.name}': it is not in a block")
        return cls(op.parent, op, loc)

    @classmethod
    def after(cls, op: Operation, loc: Location = UnknownLoc) -> "Builder":
        if op.parent is None:
            raise IRError(f"cannot build after '{op.name}': it is not in a block")
        return cls(op.parent, op.next_op, loc)

    def insert(self, op: OpT) -> OpT:
        """Insert ``op`` at the insertion point."""
        if self.anchor is not None and self.anchor.parent is not self.block:
            raise IRError(f"insertion anchor '{self.anchor.name}' was moved or erased")
        if not op.loc.is_known:
            op.loc = self.loc
        if self.anchor is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.anchor)
        return op

    def create(self, op_class: type[OpT], **kwargs: Any) -> OpT:
        """``op_class.build(**kwargs)`` inserted at the insertion point."""
        op = op_class.build(**kwargs)
        assert isinstance(op, op_class)
        return self.insert(op)
