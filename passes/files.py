"""Writing files only where asked: a name from untrusted input (a dump's ``mix.kernel`` ``file``)
must be a plain file name, and every write is atomic in the target's directory and never follows
a symlink planted at the target or at a temporary name.

Used by ``mixopt --emit-dir`` (passes/emit_cuda.py) and by plan files (mixjit/tuning/persistence.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["plain_name_problem", "write_atomic"]

#: longest file name most file systems accept
MAX_NAME = 255


def plain_name_problem(name: str) -> str | None:
    """Why ``name`` is not a plain file name to create inside a directory (absolute, with a
    directory part or ``..``, empty, too long, a NUL), or None when it is one."""
    if not name or name in (".", ".."):
        return "it is empty or a directory name"
    if "\0" in name:
        return "it holds a NUL character"
    if os.path.isabs(name) or "/" in name or "\\" in name:
        return "it is a path, not a plain file name (no '/', '\\' or absolute paths)"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME:
        return f"it is longer than {MAX_NAME} bytes"
    return None


def write_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically: into a new temporary file created exclusively
    (``mkstemp``: O_CREAT|O_EXCL, never an existing file or symlink) in the same directory, then
    renamed over ``path``; a symlink at ``path`` is replaced, never followed. OSError (with the
    temporary file removed) when the directory cannot be written or ``path`` is a directory."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name[:200]}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return p
