"""``canonicalize``: greedy simplification to a canonical form.

Applies, until nothing changes: every op's ``fold()`` hook (constant folding such as
``2 * 3 -> 6``, identities such as ``x + 0 -> x``; folded constants are materialized
by the op's dialect), every op class's ``canonicalization_patterns()``, the cf branch
patterns (constant ``cf.cond_br`` -> ``cf.br``, merging a block into its single
predecessor), erasure of unused Pure ops, and erasure of unreachable blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

from mixjit.ir.core import IRError, Operation
from mixjit.ir.rewriting import apply_patterns_greedily
from mixjit.passes.cf_patterns import CF_PATTERNS
from mixjit.passes.dce import erase_unreachable_blocks
from mixjit.passes.pass_base import ModulePass, option
from mixjit.passes.registry import register_pass

__all__ = ["Canonicalize"]


@register_pass
@dataclass(frozen=True)
class Canonicalize(ModulePass):
    """Fold constants, apply canonicalization patterns, and erase dead ops and unreachable blocks."""

    name = "canonicalize"
    max_iterations: int = option(10, "sweeps over the IR before giving up (patterns that undo each other)")

    def apply(self, module: Operation) -> None:
        for _ in range(self.max_iterations):
            apply_patterns_greedily(module, CF_PATTERNS, max_iterations=self.max_iterations)
            # Folding a branch can cut blocks off; erasing them can enable more merges.
            if not erase_unreachable_blocks(module):
                return
        raise IRError(
            f"canonicalize did not converge in {self.max_iterations} iterations; "
            "raise max-iterations or look for patterns that undo each other"
        )
