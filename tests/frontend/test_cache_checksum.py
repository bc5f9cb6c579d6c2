"""A damaged but readable cache data file of a user's ``@mixjit(cache=True)`` function (one
flipped byte) is detected by its checksum before anything loads it (issue 26, Why 7): the run
warns, recompiles and returns the right result, where it crashed (SIGSEGV, SIGABRT, an LLVM
bitcode error) or ran the damaged code. Each run is a fresh process over one shared cache."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from fresh_processes import run_in_fresh_processes  # noqa: E402

MODULE = """
from mixjit import mixjit

@mixjit(cache=True, schemes=["native"])
def f(a, b):
    c = a @ b
    return c + 1.0
"""

RUN = """
import json, warnings
import numpy as np
from mixjit.cache import CacheFileWarning
import checksum_module as m

a = np.arange(12.0).reshape(3, 4) / 7
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ok = bool(np.array_equal(m.f(a, a.T), a @ a.T + 1.0))
print(json.dumps({"ok": ok, "hits": sum(m.f.stats.cache_hits.values()),
                  "warnings": [str(w.message) for w in caught if issubclass(w.category, CacheFileWarning)]}))
"""

FRACTIONS = (0.0, 0.01, 0.35, 0.7, 0.995)
"""Where a byte is flipped, as a fraction of the data file's length: its start (the checksum
header), its first bytes, the middle of the pickled result and the compiled code near its end."""


def test_a_flipped_byte_in_the_cache_data_is_detected_and_recompiled(tmp_path):
    flipped: list[Path] = []

    def flip(run: int) -> None:
        if run > len(FRACTIONS):
            return  # the last run loads what the one before rewrote
        (path,) = (tmp_path / "cache").rglob("mixjit-checksum_module.f-*.nbc")
        data = bytearray(path.read_bytes())
        data[min(int(FRACTIONS[run - 1] * len(data)), len(data) - 1)] ^= 0x5A
        path.write_bytes(bytes(data))
        flipped.append(path)

    runs = run_in_fresh_processes(tmp_path, "checksum_module", MODULE, RUN, runs=len(FRACTIONS) + 2, between=flip)
    first, damaged, last = runs[0], runs[1:-1], runs[-1]
    assert first["ok"] and first["hits"] == 0 and not first["warnings"]
    for fraction, path, run in zip(FRACTIONS, flipped, damaged):
        assert run["ok"], f"wrong result after a flip at {fraction:.0%}"
        assert run["hits"] == 0, f"the damaged file (flip at {fraction:.0%}) was loaded"
        assert len(run["warnings"]) == 1 and str(path) in run["warnings"][0], (fraction, run["warnings"])
        assert "checksum" in run["warnings"][0]
    assert last["ok"] and last["hits"] == 1 and not last["warnings"], "the recompiled code was not cached again"
