"""Pattern rewriting: RewritePattern, PatternRewriter and a greedy worklist driver with folding.

A pattern's ``match_and_rewrite(op, rewriter)`` returns True if it changed the IR, and changes IR
only through the rewriter (so the driver knows what to revisit). :func:`apply_patterns_greedily`
also folds ops (``Operation.fold``; constants are materialized by the dialect's registered
materializer) and erases unused ops that write no memory (see :func:`is_trivially_dead`).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from mixjit.ir.attributes import Attribute
from mixjit.ir.core import IRError, Operation, Value
from mixjit.ir.location import Location
from mixjit.ir.traits import ConstantLike, IsTerminator, MemoryEffects
from mixjit.ir.types import Type

#: dialect name -> function making a constant op for (attribute, type, loc), or None if it cannot.
Materializer = Callable[[Attribute, Type, Location], "Operation | None"]
_MATERIALIZERS: dict[str, Materializer] = {}


def register_constant_materializer(dialect: str, materializer: Materializer) -> None:
    """Let folds of ``dialect``'s ops produce constants (e.g. arith makes arith.constant)."""
    _MATERIALIZERS[dialect] = materializer


def materialize_constant(op: Operation, attr: Attribute, type: Type) -> Operation:
    """A constant op for a folded result of ``op``: its own dialect's materializer, else arith's."""
    from mixjit.ir.core import _load_dialects

    _load_dialects()
    dialect = op.name.split(".", 1)[0]
    for name in (dialect, "arith"):
        maker = _MATERIALIZERS.get(name)
        made = maker(attr, type, op.loc) if maker else None
        if made is not None:
            return made
    raise IRError(f"cannot materialize constant {attr} of type {type} for a fold of '{op.name}'")


class RewritePattern:
    """Base class of rewrite patterns. Set ``root_name`` to only be offered ops of that name;
    higher ``benefit`` patterns are tried first."""

    root_name: str | None = None
    benefit: int = 1

    def match_and_rewrite(self, op: Operation, rewriter: "PatternRewriter") -> bool:
        raise NotImplementedError


class PatternRewriter:
    """The only way patterns change IR; records what changed so the driver can revisit it."""

    def __init__(self) -> None:
        self.changed = False
        #: ops that were inserted or changed: the driver revisits them and their users
        self.touched: list[Operation] = []
        #: producers of an erased op's operands (they may have become dead): revisited alone,
        #: not with their users, so erasing each of a shared constant's thousand users does
        #: not requeue the other users every time
        self.revisit: list[Operation] = []
        self.erased: list[Operation] = []

    def _touch(self, op: Operation) -> None:
        self.changed = True
        self.touched.append(op)

    def _touch_users(self, value: Value) -> None:
        self.changed = True
        self.touched.extend(use.operation for use in value._uses)

    def insert_op_before(self, new_op: Operation, anchor: Operation) -> Operation:
        if anchor.parent is None:
            raise IRError(f"cannot insert before '{anchor.name}': it is not in a block")
        anchor.parent.insert_op_before(new_op, anchor)
        self._touch(new_op)
        return new_op

    def insert_op_after(self, new_op: Operation, anchor: Operation) -> Operation:
        if anchor.parent is None:
            raise IRError(f"cannot insert after '{anchor.name}': it is not in a block")
        anchor.parent.insert_op_after(new_op, anchor)
        self._touch(new_op)
        return new_op

    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        self._touch_users(old)
        old.replace_all_uses_with(new)

    def replace_op(self, op: Operation, new: "Sequence[Value] | Operation") -> None:
        """Replace ``op``'s results by ``new`` (values, or the results of an op that the caller
        inserted) and erase ``op``."""
        values = new.results if isinstance(new, Operation) else tuple(new)
        if len(values) != len(op.results):
            raise IRError(f"replace_op: '{op.name}' has {len(op.results)} results, got {len(values)} replacements")
        for old_value, new_value in zip(op.results, values):
            self.replace_all_uses_with(old_value, new_value)
        self.erase_op(op)

    def erase_op(self, op: Operation) -> None:
        """Erase ``op`` (refused while its results are used); its operands' producers are revisited."""
        producers = [v.defining_op for v in op.operands if v.defining_op is not None]
        op.erase()
        self.changed = True
        self.erased.append(op)
        self.revisit.extend(p for p in producers if p is not None)

    def modify_op(self, op: Operation, change: Callable[[], None]) -> None:
        """Run ``change`` (which edits ``op`` in place: operands, properties) and revisit ``op``."""
        change()
        self._touch(op)


def is_trivially_dead(op: Operation) -> bool:
    """An op inside a block, not a terminator, that writes no memory (its effects are at most READ
    and ALLOC, see ``traits.MemoryEffects``) and whose results have no uses: erasing it changes
    nothing observable."""
    return (
        not any(r._uses for r in op.results)  # cheapest and most often decisive: first
        and op.parent is not None
        and not op.has_trait(IsTerminator)
        and MemoryEffects.WRITE not in op.memory_effects()
    )


def _try_fold(op: Operation, rewriter: PatternRewriter) -> bool:
    folded = op.fold()
    if folded is None:
        return False
    if len(folded) != len(op.results):
        raise IRError(f"'{op.name}'.fold() returned {len(folded)} values for {len(op.results)} results")
    if all(v is r for v, r in zip(folded, op.results)):
        rewriter._touch(op)  # folded in place
        return True
    if op.has_trait(ConstantLike) and all(isinstance(v, Attribute) for v in folded):
        return False  # a constant folding to its own value
    values: list[Value] = []
    for item, result in zip(folded, op.results):
        if isinstance(item, Attribute):
            const = materialize_constant(op, item, result.type)
            if const.results and const.results[0].name_hint is None:
                const.results[0].name_hint = result.name_hint  # keep `%six` as `%six`
            rewriter.insert_op_before(const, op)
            values.append(const.results[0])
        else:
            values.append(item)
    rewriter.replace_op(op, values)
    return True


def apply_patterns_greedily(
    root: Operation,
    patterns: Iterable[RewritePattern],
    max_iterations: int = 10,
    fold: bool = True,
    erase_dead: bool = True,
    max_rewrites: int | None = None,
) -> bool:
    """Apply ``patterns`` (and folding, and dead-op erasure) to the ops nested in ``root`` until
    nothing changes. Returns whether anything changed. Raises IRError when the IR has not
    settled after ``max_iterations`` sweeps (the limit may be too small, or patterns undo each
    other) or after ``max_rewrites`` changes in one sweep (default 100 per op plus 1000; that
    many means patterns undo each other)."""
    ordered = sorted(patterns, key=lambda p: -p.benefit)
    by_name: dict[str | None, list[RewritePattern]] = {}
    for p in ordered:
        by_name.setdefault(p.root_name, []).append(p)
    # the patterns offered to an op, by (class, name): benefit order, computed once per kind
    offered: dict[tuple[type, str], list[RewritePattern]] = {}
    changed_any = False
    for _ in range(max_iterations):
        worklist = [op for op in root.walk(post_order=True) if op is not root]
        worklist.reverse()  # pop() from the end visits in post-order
        queued = {id(op) for op in worklist}
        budget = max_rewrites if max_rewrites is not None else 100 * len(worklist) + 1000
        changed = False
        while worklist:
            op = worklist.pop()
            queued.discard(id(op))
            if op.erased or not root.is_ancestor_of(op) or op is root:
                continue
            rewriter = PatternRewriter()
            if erase_dead and is_trivially_dead(op):
                rewriter.erase_op(op)
            elif not (fold and _try_fold(op, rewriter)):
                kind = (type(op), op.name)
                candidates = offered.get(kind)
                if candidates is None:
                    mine = [*by_name.get(op.name, []), *by_name.get(None, []), *type(op).canonicalization_patterns()]
                    candidates = offered[kind] = sorted(mine, key=lambda p: -p.benefit)
                for pattern in candidates:
                    if pattern.match_and_rewrite(op, rewriter):
                        if not rewriter.changed:
                            raise IRError(f"{type(pattern).__name__} reported a change but made none through the rewriter")
                        break
            if not rewriter.changed:
                continue
            changed = True
            budget -= 1
            if budget < 0:
                raise IRError("pattern application did not settle (rewrite budget exhausted); patterns undo each other")
            for touched in rewriter.touched:
                for candidate in (touched, *[use.operation for r in touched.results for use in r._uses]):
                    if not candidate.erased and id(candidate) not in queued:
                        worklist.append(candidate)
                        queued.add(id(candidate))
            for candidate in rewriter.revisit:
                if not candidate.erased and id(candidate) not in queued:
                    worklist.append(candidate)
                    queued.add(id(candidate))
        changed_any |= changed
        if not changed:
            return changed_any
    raise IRError(
        f"pattern application did not converge within {max_iterations} iteration{'' if max_iterations == 1 else 's'} "
        "(raise max-iterations, or patterns may undo each other)"
    )
