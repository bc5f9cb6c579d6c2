"""Operation traits: class-level facts that passes and the verifier rely on (``op.has_trait(Pure)``)."""

from __future__ import annotations


class Trait:
    """Base of traits. Traits are classes, never instantiated; list them in an op's ``traits``."""


class Pure(Trait):
    """No side effects: an op whose results are unused may be removed, equal ops may be merged."""


class IsTerminator(Trait):
    """Must be the last op of its block; only terminators may have successors."""


class ConstantLike(Trait):
    """No operands; its single result is the ``value`` property (see ``core.constant_value``)."""


class Commutative(Trait):
    """The order of the (two) operands does not matter."""


class NoTerminator(Trait):
    """The blocks of the op's regions need not end with a terminator (builtin.module, test ops)."""


class IsolatedFromAbove(Trait):
    """Ops inside the regions may not use values defined outside (e.g. func.func); value numbering
    in the printer restarts inside such an op."""


class SingleBlock(Trait):
    """Each region of the op holds at most one block."""


class SymbolTable(Trait):
    """The op's region defines symbols (ops with a ``sym_name`` property) looked up by SymbolRefAttr."""
