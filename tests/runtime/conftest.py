"""The runtime tests' shared helpers (reference implementations ``reference_*.py``, cache-file
damage ``cache_files.py``, fresh-process runs ``fresh_processes.py``) live here, beside the folder
of each runtime package's tests: put this folder on ``sys.path`` for them."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
