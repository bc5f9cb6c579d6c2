"""Inspect built cubins: SASS instruction mix and per-kernel resource usage.

Uses ``cuobjdump`` (nvcc's bin directory, or the nvidia-cuda-cuobjdump wheel). The checks the
backend relies on: each GEMM's main loop contains its tensor-core MMA, the opcode its target runs
(runtime/cuda/desc.py's ``TARGETS`` table, read through each desc's ``main_loop_mma``: e.g.
``IMMA.16832.S8.S8`` for the INT8 families on every target), and no FP32 FMA main loop
(``FFMA``) remains in an emulated kernel; registers, shared memory and spills per kernel come
from ``cuobjdump -res-usage``.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ToolNotFound", "Resources", "find_tool", "sass_by_kernel", "opcode_counts", "resource_usage"]


class ToolNotFound(RuntimeError):
    """cuobjdump is not installed."""


def find_tool(name: str = "cuobjdump") -> str:
    """Path of ``cuobjdump`` / ``nvdisasm``: PATH, next to nvcc, or the pip wheel."""
    found = shutil.which(name)
    if found:
        return found
    nvcc = shutil.which("nvcc")
    candidates = [os.path.join(os.path.dirname(os.path.realpath(nvcc)), name)] if nvcc else []
    for entry in sys.path:
        candidates += glob.glob(os.path.join(entry, "nvidia", "*", "bin", name))
    for path in candidates:
        if os.path.exists(path):
            return path
    raise ToolNotFound(f"cuda: {name} not found: install it with `pip install mixjit[cuda]` "
                       f"(nvidia-cuda-{name}) or put the CUDA toolkit's bin directory on PATH")


def _run(args: list[str]) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


_FUNCTION = re.compile(r"^\s*Function : (\S+)", re.M)
_OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def sass_by_kernel(cubin: Path) -> dict[str, str]:
    """The SASS text of each kernel in ``cubin``."""
    text = _run([find_tool(), "-sass", str(cubin)])
    parts = _FUNCTION.split(text)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def opcode_counts(sass: str) -> Counter[str]:
    """Occurrences of each SASS opcode (with modifiers, e.g. ``IMMA.16832.S8.S8``)."""
    return Counter(_OPCODE.findall(sass))


@dataclass(frozen=True)
class Resources:
    """Per-kernel resource usage as ptxas allotted it."""

    kernel: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    local_bytes: int

    @property
    def spills(self) -> bool:
        """Local memory is the spill space (the kernels use no local arrays of their own)."""
        return self.local_bytes > 0


_RES = re.compile(r"Function (\S+):\s*\n?\s*REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")


def resource_usage(cubin: Path) -> dict[str, Resources]:
    """Registers, static shared memory, stack and local (spill) bytes of each kernel."""
    text = _run([find_tool(), "-res-usage", str(cubin)])
    return {m[1]: Resources(m[1], int(m[2]), int(m[4]), int(m[3]), int(m[5])) for m in _RES.finditer(text)}
