"""A site's executor is compiled (or loaded) for the site's dtype only: a float64 site never
compiles a float32 kernel (issue 9, item 3: first use)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mixjit import entry, plan
from mixjit.plan import initial_plan, set_plan

SITE_OF_ONE_DTYPE = textwrap.dedent(
    """
    import json
    import numpy as np
    import mixjit
    from mixjit import entry, mixjit as mixjit_decorator

    @mixjit_decorator(schemes=("int8",), tune="never")
    def f(a, b):
        return a @ b

    rng = np.random.default_rng(3)
    a = rng.standard_normal((12, 9)).astype(np.float32)
    b = rng.standard_normal((9, 7)).astype(np.float32)
    got = f(a, b)
    want = mixjit.gemm(a, b, "int8")  # untuned, the site runs the most precise config, gemm's default
    try:
        entry.executor_address(entry.EXECUTORS["int8"], entry.DTYPE_F64)
        f64_slot = "filled"
    except ValueError:
        f64_slot = "empty"
    print(json.dumps({"dtypes": entry.loaded_executor_dtypes(), "equal": bool(np.array_equal(got, want)),
                      "f64_slot": f64_slot}))
    """
)


def test_a_float32_site_loads_its_executor_for_float32_only():
    proc = subprocess.run([sys.executable, "-c", SITE_OF_ONE_DTYPE], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"dtypes": {"int8": ["float32"]}, "equal": True, "f64_slot": "empty"}


def test_set_plan_remembers_the_site_dtype_for_later_plans(monkeypatch):
    written = []
    monkeypatch.setattr(plan, "write_plan_row", lambda site, row, dtypes=None: written.append((site, dtypes)))
    site, other = entry.new_site(), entry.new_site()
    set_plan(site, initial_plan(["native"], np.float64), np.float64)
    set_plan(site, initial_plan(["mixpert-fp64"], np.float64))  # the tuner's later plans name no dtype
    set_plan(other, initial_plan(["native"], np.float64))
    assert written == [(site, (np.dtype(np.float64),)), (site, (np.dtype(np.float64),)), (other, None)]


def test_load_executor_names_an_unsupported_dtype():
    with pytest.raises(ValueError, match="float32, float64, complex64 or complex128 GEMMs, not float16"):
        entry.load_executor(entry.EXECUTORS["int8"], [np.float16])
