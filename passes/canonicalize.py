"""``canonicalize``: greedy simplification to a canonical form.

Applies, until nothing changes: every op's ``fold()`` hook (constant folding such as
``2 * 3 -> 6``, identities such as ``x + 0 -> x``; folded constants are materialized
by the op's dialect), every op class's ``canonicalization_patterns()`` (e.g. the cf
branches: constant ``cf.cond_br`` -> ``cf.br``, merging a block into its single
predecessor), erasure of unused ops that write no memory, and erasure of unreachable blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

from mixjit.ir.core import IRError, Operation
from mixjit.ir.rewriting import apply_patterns_greedily
from mixjit.passes.dce import erase_unreachable_blocks
from mixjit.passes.pass_base import ModulePass, OptionError, option
from mixjit.passes.registry import register_pass

__all__ = ["Canonicalize"]


@register_pass
@dataclass(frozen=True)
class Canonicalize(ModulePass):
    """Fold constants, apply canonicalization patterns, and erase dead ops and unreachable blocks."""

    name = "canonicalize"
    max_iterations: int = option(10, "sweeps over the IR before giving up (patterns that undo each other)")

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise OptionError(
                f"option 'max-iterations' of pass '{self.name}' must be at least 1, got {self.max_iterations}",
                "max-iterations",
                0,
            )

    def apply(self, module: Operation) -> None:
        for _ in range(self.max_iterations):
            apply_patterns_greedily(module, (), max_iterations=self.max_iterations)
            # Folding a branch can cut blocks off; erasing them can enable more merges.
            if not erase_unreachable_blocks(module):
                return
        raise IRError(
            f"canonicalize did not converge within {self.max_iterations} iteration{'' if self.max_iterations == 1 else 's'} "
            "(raise max-iterations, or patterns may undo each other)"
        )
