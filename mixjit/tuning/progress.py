"""A progress bar for long searches (rich, imported only when a bar is shown).

Shown only on a terminal and only once a search has run for ``delay`` seconds, so short
tunings (and captured output) stay silent apart from the one summary line. The bar is
transient: it disappears when the search ends.
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
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, p: SearchProgress) -> None:
        if self._progress is None:
            if time.monotonic() - self.start < self.delay or not _isatty(self.stream):
                return
            self._open()
        best = f"best {p.best.error:.2e}" if p.best is not None else "none within budget yet"
        self._progress.update(self._task, completed=p.evaluations, total=p.total, best=best)

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("plans, {task.fields[best]}"), TimeElapsedColumn(),
                                  console=Console(file=self.stream), transient=True)
        self._task = self._progress.add_task(self.label, total=None, best="")
        self._progress.start()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
