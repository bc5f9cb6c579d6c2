"""builtin dialect: ``builtin.module``, the top of every parsed file, and symbol lookup."""

from __future__ import annotations

from typing import Iterable

from mixjit.ir.attributes import StringAttr, SymbolRefAttr
from mixjit.ir.core import Block, Operation, Region
from mixjit.ir.opdef import opt_prop, region
from mixjit.ir.traits import IsolatedFromAbove, NoTerminator, SingleBlock, SymbolTable
from mixjit.ir.verifier import VerifyError


class ModuleOp(Operation):
    """A list of top-level ops (functions) in one block; a symbol table."""

    name = "builtin.module"
    body = region()
    sym_name = opt_prop(StringAttr)
    traits = (NoTerminator, IsolatedFromAbove, SingleBlock, SymbolTable)

    @classmethod
    def from_ops(cls, ops: Iterable[Operation] = ()) -> "ModuleOp":
        """A module whose single block holds ``ops``."""
        return cls(regions=[Region([Block(ops)])])

    @property
    def block(self) -> Block:
        return self.body.block

    def verify_(self) -> None:
        if len(self.body.blocks) != 1:
            raise VerifyError(f"must have one block in its body, has {len(self.body.blocks)}")
        if self.body.block.args:
            raise VerifyError("body block may not have arguments")
        seen: set[str] = set()
        for op in self.body.block.ops:
            sym = op.properties.get("sym_name")
            if isinstance(sym, StringAttr):
                if sym.value in seen:
                    raise VerifyError(f"redefinition of symbol '@{sym.value}'", at=op)
                seen.add(sym.value)


def lookup_symbol(from_op: Operation, ref: "SymbolRefAttr | str") -> Operation | None:
    """The op named ``ref`` in the nearest enclosing symbol table (``@a::@b`` descends), or None."""
    parts = [ref] if isinstance(ref, str) else [ref.root, *ref.nested]
    table: Operation | None = from_op if from_op.has_trait(SymbolTable) else from_op.parent_op
    while table is not None and not table.has_trait(SymbolTable):
        table = table.parent_op
    found: Operation | None = None
    for part in parts:
        if table is None or not table.regions or len(table.regions[0].blocks) != 1:
            return None
        found = next(
            (op for op in table.regions[0].blocks[0].ops if op.properties.get("sym_name") == StringAttr(part)),
            None,
        )
        table = found
    return found
