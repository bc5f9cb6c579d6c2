"""The discardable attributes the Numba importer (``mixjit.importer``) puts on ``py`` ops.

Defined here, below both the importer and the passes that read them, so that passes work on a
``.mix`` dump without importing Numba.
"""

from __future__ import annotations

from mixjit.ir.attributes import StringAttr
from mixjit.ir.core import Operation

__all__ = ["STMT_ATTR", "CALLEE_ATTR", "TARGET_ATTR", "UNDEFINED_ATTR", "stmt_of", "callee_of"]

STMT_ATTR = "py.stmt"
"""The Numba statement an op was imported from: ``"<block label>:<index in the block body>"``."""
CALLEE_ATTR = "py.callee"
"""On ``py.call``: the resolved callee (``"numpy.dot"``, ``"array.transpose"``, ``"mod.helper"``)."""
TARGET_ATTR = "py.target"
"""On ``py.call`` of an imported ``@njit`` helper: the helper's ``func.func`` symbol."""
UNDEFINED_ATTR = "py.undefined"
"""On the ``py.const`` that stands for a value undefined on some path."""


def stmt_of(op: Operation) -> str | None:
    """The op's ``py.stmt`` id, or None."""
    attr = op.attributes.get(STMT_ATTR)
    return attr.value if isinstance(attr, StringAttr) else None


def callee_of(op: Operation) -> str | None:
    """The op's ``py.callee``, or None."""
    attr = op.attributes.get(CALLEE_ATTR)
    return attr.value if isinstance(attr, StringAttr) else None
