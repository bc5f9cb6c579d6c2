"""Operation traits: class-level facts that passes and the verifier rely on (``op.has_trait(Pure)``).

Memory effects follow MLIR's side-effect model, simplified: an op's ``memory_effects()`` (see
``core.Operation``) is a :class:`MemoryEffects` set. By default it comes from the traits: ``Pure`` is
no effect, ``MemRead`` / ``MemAlloc`` add READ / ALLOC, and an op with none of these may do anything
(READ | WRITE | ALLOC). Ops whose effects depend on their operand types override the method.
"""

from __future__ import annotations

import enum


class MemoryEffects(enum.Flag):
    """What an op may do to memory besides reading its operand values.

    * ``READ``: reads mutable memory (an array element, a list item, an object field);
    * ``WRITE``: writes memory, or anything else observable (calls, I/O, iterator state);
    * ``ALLOC``: its result is a fresh mutable object (a new array, list or iterator).

    Consequences: an op without WRITE may be erased when its results are unused; cse merges
    only ops with no effect at all (anywhere they dominate) or READ alone (only with no op that
    may WRITE between them, see ``passes/cse.py``); an ALLOC result is never merged, since two
    allocations are two objects.
    """

    NONE = 0
    READ = enum.auto()
    WRITE = enum.auto()
    ALLOC = enum.auto()
    UNKNOWN = READ | WRITE | ALLOC


class Trait:
    """Base of traits. Traits are classes, never instantiated; list them in an op's ``traits``."""


class Pure(Trait):
    """No memory effects: an op whose results are unused may be removed, equal ops may be merged
    wherever one dominates the other."""


class MemRead(Trait):
    """Reads memory, writes none (``MemoryEffects.READ``): erasable when unused; two equal ops
    merge only when no op that may write lies between them."""


class MemAlloc(Trait):
    """The result is a fresh mutable object (``MemoryEffects.ALLOC``): erasable when unused,
    never merged with an equal op."""


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
