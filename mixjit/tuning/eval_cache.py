"""Measured plan errors kept on disk, so that re-tuning a program on the same inputs reuses them.

Every program run of a tuning that judges a plan (a candidate alone, a plan the search judges,
speculative runs) measures the plan's error against the reference run. The error depends on the
program, the argument types, the sample inputs, the metric and the executors' code, not on the
budget, the target or the search; so a tuning of the same program on the same inputs with
another budget or target, or after a crashed or interrupted session, can take what an earlier
tuning measured instead of running the program again. The plan chosen is the same as without
the cache: the search judges the same plans in the same order; only where each error comes from
differs. ``f.tune(..., reuse=False)`` measures everything again (and stores nothing).

One file per (program, inputs) key, a JSON-lines file in Numba's cache directory of the function
(``__pycache__`` beside its source, or ``NUMBA_CACHE_DIR``; none for a function without one, e.g.
defined in an interactive session): a header line, then one line per measured plan::

    {"mixjit_evaluations": 1, "key": "<sha256>"}
    {"plan": [[0, "mixpert", "level=IV", "mixpert"], [1, "native", "accumulate=blas", "native"]],
     "error": 2.1e-07, "error_vs_fp64": 2.3e-07, "stopped": ""}

The key hashes the function's source, the argument types, every sample input's dtype, shape and
bytes (scalars by value), the metric (its source and the values its closure holds; none: relative
Frobenius; a metric that reads other state should be tuned with ``reuse=False``), mixjit's version and
the executors' sources (:func:`executors_hash`: the runtime package and the entry): an edited program, other inputs or a changed
executor never meet an old file. A plan is the full plan of every site, by site index (stable
across processes) and scheme, config and executor. Lines appended as errors are measured, so a
crash loses at most the run in progress; a line that does not parse is ignored.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from mixjit.plan import SitePlan

__all__ = ["Measured", "EvaluationCache", "FORMAT_VERSION", "inputs_hash"]

FORMAT_VERSION = 1
#: largest evaluation file read (a tuning of thousands of plans is far below it)
MAX_FILE_BYTES = 64 * 2**20


@dataclass(frozen=True)
class Measured:
    """What one run under a plan measured: its error, its error against float64 (None when not
    asked), why it stopped (empty: it ran to the end)."""

    error: float
    error_vs_fp64: float | None
    stopped: str


def _update(h: Any, value: Any) -> None:
    if isinstance(value, np.ndarray):
        h.update(f"ndarray:{value.dtype.str}:{value.shape}:".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (tuple, list)):
        h.update(f"{type(value).__name__}:{len(value)}:".encode())
        for item in value:
            _update(h, item)
    else:
        h.update(f"{type(value).__name__}:{value!r};".encode())


def inputs_hash(args: Sequence[Any]) -> str:
    """sha256 of the sample inputs: every array's dtype, shape and bytes, other values by repr."""
    h = hashlib.sha256()
    _update(h, tuple(args))
    return h.hexdigest()


def _metric_id(metric: Callable[..., float] | None) -> str:
    """The metric's identity: its name, source, and the values its closure and defaults hold (an
    object whose repr carries its address makes the key differ in every process: no reuse)."""
    if metric is None:
        return "relative-frobenius"
    h = hashlib.sha256()
    try:
        h.update(inspect.getsource(metric).encode())
    except (OSError, TypeError):
        code = getattr(metric, "__code__", None)
        h.update(code.co_code if code is not None else repr(metric).encode())
    cells = tuple(c.cell_contents for c in (getattr(metric, "__closure__", None) or ()) if _has_contents(c))
    _update(h, (cells, getattr(metric, "__defaults__", None) or ()))
    return f"{getattr(metric, '__module__', '')}.{getattr(metric, '__qualname__', '')}:{h.hexdigest()}"


def _has_contents(cell: Any) -> bool:
    try:
        return cell.cell_contents is not _EMPTY
    except ValueError:  # an empty cell
        return False


_EMPTY = object()


@functools.cache
def executors_hash() -> str:
    """A hash of every source the executors' results depend on: the runtime package and the
    entry (computed once per process)."""
    from mixjit import entry
    from mixjit.runtime.jit.source_hash import RUNTIME_ROOT, sources_hash

    files = sorted(RUNTIME_ROOT.rglob("*.py")) + sorted(Path(entry.__file__).parent.glob("*.py"))
    return sources_hash(files, RUNTIME_ROOT.parent)


def _cache_directory(py_func: Callable) -> Path | None:
    from numba.core.caching import FunctionCache

    try:
        return Path(FunctionCache(py_func)._cache_path)
    except RuntimeError:
        return None


class EvaluationCache:
    """The measured errors of one (program, inputs) key: :meth:`get` and :meth:`put` by plan;
    ``reused`` counts the plans whose error an earlier tuning measured (a plan a tuning judges
    twice is not run twice either, but is not counted), ``path`` is its file (None: kept in
    memory only, the function has no cache directory)."""

    def __init__(self, key: str, path: Path | None) -> None:
        self.key = key
        self.path = path
        self.reused = 0
        self._entries: dict[str, Measured] = {}
        self._loaded: set[str] = set()  # plans an earlier tuning measured, not asked for yet
        if path is not None:
            self._load()

    @classmethod
    def for_tuning(cls, py_func: Callable, argtypes: str, args: Sequence[Any],
                   metric: Callable[..., float] | None) -> EvaluationCache:
        """The cache of tuning ``py_func`` for ``argtypes`` on ``args`` with ``metric``."""
        from mixjit import __version__
        from mixjit.tuning.persistence import source_hash

        key = hashlib.sha256(json.dumps([FORMAT_VERSION, __version__, executors_hash(), source_hash(py_func),
                                         argtypes, inputs_hash(args), _metric_id(metric)]).encode()).hexdigest()
        directory = _cache_directory(py_func)
        path = None if directory is None else \
            directory / f"{py_func.__module__}.{py_func.__qualname__}-{key[:16]}.mixevals.jsonl"
        return cls(key, path)

    @staticmethod
    def plan_key(plans: Mapping[int, SitePlan], index: Mapping[int, int]) -> str:
        """A plan (site id -> SitePlan) as the process-independent text it is stored under."""
        return json.dumps(sorted([index[sid], p.scheme, p.config, p.executor] for sid, p in plans.items()))

    def get(self, plan_key: str, fp64: bool) -> Measured | None:
        """What an earlier run measured under the plan (with its float64 error when ``fp64``), or None."""
        found = self._entries.get(plan_key)
        if found is None or (fp64 and found.error_vs_fp64 is None):
            return None
        if plan_key in self._loaded:
            self._loaded.discard(plan_key)
            self.reused += 1
        return found

    def put(self, plan_key: str, measured: Measured) -> None:
        """Keep what a run measured, appended to the file at once (a failure to write is ignored:
        the cache only spares runs)."""
        self._entries[plan_key] = measured
        if self.path is None:
            return
        line = json.dumps({"plan": json.loads(plan_key), "error": measured.error,
                           "error_vs_fp64": measured.error_vs_fp64, "stopped": measured.stopped})
        try:
            new = not self.path.exists()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as out:
                if new:
                    out.write(json.dumps({"mixjit_evaluations": FORMAT_VERSION, "key": self.key}) + "\n")
                out.write(line + "\n")
        except OSError:
            self.path = None  # read-only location: keep measuring in memory

    def _load(self) -> None:
        assert self.path is not None
        try:
            if not self.path.is_file() or os.path.getsize(self.path) > MAX_FILE_BYTES:
                return
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return
        if not lines or _json(lines[0]) != {"mixjit_evaluations": FORMAT_VERSION, "key": self.key}:
            return
        for text in lines[1:]:
            entry = _json(text)
            measured = _measured(entry) if isinstance(entry, dict) else None
            if measured is not None:
                self._entries[json.dumps(entry["plan"])] = measured
        self._loaded = set(self._entries)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _measured(entry: dict) -> Measured | None:
    """The Measured of a stored line, None for a line that is not one (hostile or truncated)."""
    plan, error, vs64, stopped = entry.get("plan"), entry.get("error"), entry.get("error_vs_fp64"), entry.get("stopped")
    if not isinstance(plan, list) or not all(
            isinstance(p, list) and len(p) == 4 and isinstance(p[0], int) and all(isinstance(x, str) for x in p[1:])
            for p in plan):
        return None
    if not _is_error(error) or not (vs64 is None or _is_error(vs64)) or not isinstance(stopped, str):
        return None
    return Measured(float(error), None if vs64 is None else float(vs64), stopped)


def _is_error(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (math.isnan(v) or v >= 0)
