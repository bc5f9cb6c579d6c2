"""The verifier: structural checks of IR, reported as located diagnostics.

Checks, for every op nested in the verified one: operand/result/region/successor counts, operand and
result types, and properties against the op's definition; SSA dominance (a value is used after its
definition in the same block, in a block its definition dominates, or in a region nested inside,
never across an IsolatedFromAbove boundary); terminators at the end of blocks (and only there);
successors only on terminators, within the same region, with as many operands of the right types
as the target block has arguments; the entry block is no branch target; then each op's ``verify_``
hook. Ops of unregistered dialects get the generic checks only.
"""

from __future__ import annotations

from mixjit.ir.core import Block, BlockArgument, Operation, Region, Value
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.dominance import DominanceInfo
from mixjit.ir.location import Location
from mixjit.ir.opdef import structural_errors
from mixjit.ir.traits import IsolatedFromAbove, IsTerminator, NoTerminator, SingleBlock


class VerifyError(Exception):
    """Raised by an op's ``verify_`` hook; the verifier turns it into a diagnostic at the op (or at
    ``at``, another op the problem is better shown at, e.g. a duplicate symbol)."""

    def __init__(self, message: str, at: Operation | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.at = at


def op_location(op: Operation) -> Location:
    """Where to report a problem with ``op``: its place in the parsed ``.mix`` text when known
    (the text the user can fix), else its source location."""
    if op.text_loc is not None:
        return op.text_loc
    return op.loc


def op_diagnostic(op: Operation, message: str, at: Operation | None = None) -> Diagnostic:
    """An error about ``op``, prefixed ``'name' op``, located at ``at`` or ``op`` (see
    :func:`op_location`)."""
    return Diagnostic.error(f"'{op.name}' op {message}", op_location(at or op))


def block_label(block: Block) -> str:
    """``^bbN`` as the printer numbers it (N: position in the region)."""
    if block.parent is None:
        return "^<detached block>"
    return f"^bb{block.parent.index_of(block)}"


class _Verifier:
    def __init__(self) -> None:
        self.dominance = DominanceInfo()
        self.diagnostics: list[Diagnostic] = []

    def report(self, op: Operation, message: str, at: Operation | None = None) -> None:
        self.diagnostics.append(op_diagnostic(op, message, at))

    def run(self, root: Operation) -> None:
        for op in root.walk():
            self.verify_op(op)

    def verify_op(self, op: Operation) -> None:
        errors = structural_errors(op)
        for message in errors:
            self.report(op, message)
        registered = type(op).op_def is not None
        if op.successors:
            if registered and not op.has_trait(IsTerminator):
                self.report(op, "has successors but is not a terminator")
            self.verify_successors(op, check_operands=not errors)
        for i, value in enumerate(op.operands):
            problem = self.dominance_problem(op, value)
            if problem:
                self.report(op, f"operand #{i} {problem}")
        for index, region in enumerate(op.regions):
            self.verify_region(op, index, region, registered)
        if registered and not errors:
            try:
                op.verify_()
            except VerifyError as e:
                self.report(op, e.message, e.at)
            except Exception as e:  # a bug in a hook must not turn into a traceback for the user
                self.report(op, f"internal error in {type(op).__name__}.verify_: {type(e).__name__}: {e}")

    def verify_successors(self, op: Operation, check_operands: bool) -> None:
        for i, block in enumerate(op.successors):
            if block.parent is None or block.parent is not op.parent_region:
                self.report(op, f"successor #{i} is not a block of the op's own region")
                continue
            passed = op.successor_operands(i) if check_operands else None
            if passed is None:
                continue
            if len(passed) != len(block.args):
                label = block_label(block)  # O(blocks): only when reporting
                self.report(
                    op, f"branch to {label} passes {len(passed)} operand(s) but the block has {len(block.args)} argument(s)"
                )
                continue
            for k, (value, arg) in enumerate(zip(passed, block.args)):
                if value.type != arg.type:
                    self.report(
                        op, f"branch operand #{k} to {block_label(block)} has type '{value.type}' but the block argument has '{arg.type}'"
                    )

    def verify_region(self, op: Operation, index: int, region: Region, registered: bool) -> None:
        blocks = region.blocks
        if op.has_trait(SingleBlock) and len(blocks) > 1:
            self.report(op, f"region #{index} must have at most one block, has {len(blocks)}")
        if blocks and blocks[0].predecessors:
            self.report(blocks[0].predecessors[0], f"branches to the entry block of region #{index} of '{op.name}'")
        needs_terminator = registered and not op.has_trait(NoTerminator)
        for block in blocks:
            ops = block.ops
            for inner in ops[:-1]:
                if inner.has_trait(IsTerminator):
                    self.report(inner, "is a terminator and must be the last op of its block")
            if not needs_terminator:
                continue
            last = ops[-1] if ops else None
            if last is None:
                self.report(op, f"block {block_label(block)} in region #{index} is empty (it needs a terminator)")
            elif type(last).op_def is not None and not last.has_trait(IsTerminator):
                self.report(last, f"is the last op of block {block_label(block)} but is not a terminator")

    def dominance_problem(self, user: Operation, value: Value) -> str | None:
        """Why ``value`` may not be used by ``user`` (None when the use is fine)."""
        def_block = value.parent_block
        if def_block is None or def_block.parent is None:
            return "uses a value that is not defined in any region (its op was detached or erased)"
        def_region = def_block.parent
        anchor: Operation = user  # ancestor of user (or user) in def_region
        while anchor.parent_region is not def_region:
            parent_op = anchor.parent_op
            if parent_op is None:
                return "does not dominate this use (it is defined in a region that does not enclose the use)"
            if parent_op.has_trait(IsolatedFromAbove):
                return f"uses a value defined outside the isolated region of '{parent_op.name}'"
            anchor = parent_op
        if anchor.parent is def_block:
            if isinstance(value, BlockArgument):
                return None
            def_op = value.defining_op
            assert def_op is not None
            if def_op is anchor:
                return "is a result of the op itself (or of its enclosing op)"
            if anchor.is_before_in_block(def_op):
                return "does not dominate this use (it is defined later in the block)"
            return None
        assert anchor.parent is not None
        if not self.dominance.dominates(def_block, anchor.parent):
            return f"does not dominate this use (block {block_label(def_block)} does not dominate {block_label(anchor.parent)})"
        return None


def verify_diagnostics(op: Operation) -> list[Diagnostic]:
    """All problems found in ``op`` and its nested ops (empty when valid)."""
    verifier = _Verifier()
    verifier.run(op)
    return verifier.diagnostics


def verify(op: Operation) -> None:
    """Raise DiagnosticError listing every problem found in ``op`` and its nested ops."""
    diagnostics = verify_diagnostics(op)
    if diagnostics:
        raise DiagnosticError(diagnostics)


__all__ = ["VerifyError", "verify", "verify_diagnostics", "op_location", "op_diagnostic", "block_label"]
