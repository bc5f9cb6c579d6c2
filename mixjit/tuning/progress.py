"""A progress bar for long tunings (rich, imported only when a bar is shown).

Shown only on a terminal and only once a tuning has run for ``delay`` seconds, so short
tunings (and captured output) stay silent apart from the one summary line. It counts the plans
the search judged and every program run that came back from any worker (profile runs of the
candidates, speculative runs, held-out validation), says how many workers run them and the
best plan so far. The bar is transient: it disappears when the tuning ends.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from mixjit.passes.tuning.judge import SearchProgress


class SearchBar:
    """A ``ProgressCallback`` for ``greedy`` / ``exhaustive`` that also counts program runs
    (:meth:`add_runs`, from every worker of the tuning's pool); call ``close()`` at the end."""

    def __init__(self, label: str, delay: float = 1.0, stream: Any = None, workers: int = 1) -> None:
        self.label = label
        self.delay = delay
        self.stream = stream if stream is not None else sys.stderr
        self.workers = workers
        self.start = time.monotonic()
        self.runs = 0
        self._last: SearchProgress | None = None
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, p: SearchProgress) -> None:
        self._last = p
        self._show()

    def add_runs(self, count: int) -> None:
        """``count`` more program runs came back (from any worker)."""
        self.runs += count
        self._show()

    def _show(self) -> None:
        if self._progress is None:
            if time.monotonic() - self.start < self.delay or not _isatty(self.stream):
                return
            self._open()
        p = self._last
        best = f"best {p.best.error:.2e}" if p is not None and p.best is not None else "none within budget yet"
        self._progress.update(self._task, completed=p.evaluations if p is not None else 0,
                              total=p.total if p is not None else None, best=best, runs=self.runs)

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        workers = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=16), MofNCompleteColumn(),
                                  TextColumn("plans, {task.fields[best]}; {task.fields[runs]} runs on " + workers),
                                  TimeElapsedColumn(),
                                  console=Console(file=self.stream), transient=True)
        self._task = self._progress.add_task(self.label, total=None, best="none within budget yet", runs=self.runs)
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
