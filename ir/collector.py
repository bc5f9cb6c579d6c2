"""Pausing Python's cyclic garbage collector around IR work that builds or rewrites large graphs.

Ops, values and blocks point at each other, so a function of 100,000 ops is a few million
objects in reference cycles. While a parse or a pass runs, the collector's generational
passes keep scanning that live graph and find little to free (a parse frees nothing; a pass
frees the ops it erased). Pausing it for the duration saves a third of the time at that size
(docs/results/ir_scale.md); the garbage a pass leaves is collected once the collector resumes.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["paused_collector"]


@contextmanager
def paused_collector() -> Iterator[None]:
    """Disable the cyclic collector inside the block, and restore its state however it ends
    (nested uses are fine: only the outermost one that found it enabled re-enables it)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
