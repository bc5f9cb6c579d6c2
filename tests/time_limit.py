"""``within(seconds)``: fail a test block that runs too long instead of hanging the suite.

A SIGALRM timer interrupts pure-Python loops (the hangs these tests guard against); the block
raises ``TimeoutError`` naming what ran too long. Main thread only (pytest and xdist workers
run tests there)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["within"]


@contextmanager
def within(seconds: float, what: str = "the block") -> Iterator[None]:
    def expire(signum, frame):
        raise TimeoutError(f"{what} ran past its {seconds:g} s limit")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
