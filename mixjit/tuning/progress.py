"""A progress line for long searches: tqdm when installed, else a plain stderr line.

Shown only on a terminal and only once a search has run for ``delay`` seconds, so short
tunings (and captured output) stay silent apart from the one summary line.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from mixjit.passes.tuning.judge import SearchProgress


class SearchBar:
    """A ``ProgressCallback`` for ``greedy`` / ``exhaustive``; call ``close()`` at the end."""

    def __init__(self, label: str, delay: float = 1.0, stream: Any = None) -> None:
        self.label = label
        self.delay = delay
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self._bar: Any = None
        self._plain = False

    def __call__(self, p: SearchProgress) -> None:
        if self._bar is None and not self._plain:
            if time.monotonic() - self.start < self.delay or not _isatty(self.stream):
                return
            self._open(p.total)
        best = f"best {p.best.error:.2e}" if p.best is not None else "none within budget yet"
        if self._bar is not None:
            self._bar.total = p.total
            self._bar.n = p.evaluations
            self._bar.set_postfix_str(best, refresh=True)
        else:
            total = f"/~{p.total}" if p.total else ""
            self.stream.write(f"\r{self.label}: {p.evaluations}{total} plans, {best}   ")
            self.stream.flush()

    def _open(self, total: int | None) -> None:
        try:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=self.label, unit="plan", file=self.stream, leave=False)
        except ImportError:
            self._plain = True

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._plain:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
