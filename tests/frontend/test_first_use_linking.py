"""A fused update ``C[idx] -= A @ B`` at a site: the store of the view updated in place is
dropped for basic indexing (no slice assignment compiled, the same result) and kept where
the load is a copy (advanced indexing)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np

from mixjit import mixjit


@mixjit(schemes=("native",), tune="never")
def _update_rows(c, rows, a, b):
    c[rows] -= a @ b  # advanced indexing: c[rows] is a copy, the store writes it back
    return c


def test_an_update_through_advanced_indexing_still_stores_its_result():
    rng = np.random.default_rng(3)
    c, a, b = rng.standard_normal((6, 4)), rng.standard_normal((3, 5)), rng.standard_normal((5, 4))
    rows = np.array([4, 0, 2])
    want = c.copy()
    want[rows] -= a @ b
    np.testing.assert_array_equal(_update_rows(c.copy(), rows, a, b), want)


SLICED = """
    import json
    import numpy as np
    from numba.core import event
    from mixjit import mixjit

    compiled = []

    class Names(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)
        def on_end(self, ev):
            pass

    @mixjit(schemes=("native",), tune="never")
    def trailing(c, a, b):
        c[2:, 1:] -= a @ b  # basic indexing: the view is updated in place
        return c

    rng = np.random.default_rng(4)
    c, a, b = rng.standard_normal((7, 6)), rng.standard_normal((5, 3)), rng.standard_normal((3, 5))
    want = c.copy()
    want[2:, 1:] -= a @ b
    event.register("numba:compile", Names())
    got = trailing(c.copy(), a, b)
    print(json.dumps({"same": bool(np.array_equal(got, want)),
                      "slice_assignment": any("raise_with_shape_context" in n for n in compiled)}))
"""


def test_an_update_of_a_slice_compiles_no_slice_assignment():
    """In a fresh process (Numba's own helpers are compiled once per process): the function
    compiles without Numba's slice assignment, whose shape check formats its message."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SLICED)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"same": True, "slice_assignment": False}
