"""Helpers for disk-cache tests: load a function from a source file as a real module,
and damage Numba cache files the ways a crash, a full disk or a stray write would."""

from __future__ import annotations

import importlib.util
import random
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Callable

CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[: len(data) // 2],
    "random": lambda data: random.Random(7).randbytes(max(len(data), 64)),
    "empty": lambda data: b"",
}
"""How a cache file is damaged, by name: cut in half, garbage of a similar size, emptied."""


def load_module(directory: Path, source: str) -> ModuleType:
    """``source`` written to a new file in ``directory`` and imported under a fresh module
    name (registered in ``sys.modules``, as Numba's cache key needs)."""
    name = f"cachetest_{uuid.uuid4().hex[:12]}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def corrupt(cache_dir: Path, suffix: str, how: str) -> Path:
    """Damage the only ``*.<suffix>`` file (``nbi``: the index, ``nbc``: the data) in
    ``cache_dir`` as ``CORRUPTIONS[how]`` says; returns its path."""
    (path,) = Path(cache_dir).glob(f"*.{suffix}")
    path.write_bytes(CORRUPTIONS[how](path.read_bytes()))
    return path
