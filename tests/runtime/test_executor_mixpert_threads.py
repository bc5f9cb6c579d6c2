"""The MixPert executor's threaded packing and epilogues give the serial bits."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit import gemm
from mixjit.runtime import executor_mixpert as ex
from mixjit.runtime.executor_mixpert_pack import PARALLEL_MIN, _block_operand_threads, block_operand
from mixjit.runtime.executor_mixpert_split import _row_form_threads, row_form
from mixjit.runtime.schemes import get_scheme

RNG = np.random.default_rng(2024)


def test_threaded_row_form_and_block_operand_equal_the_serial_ones():
    x = RNG.standard_normal((300, 520))[:, ::2]  # strided, 300 x 260 >= PARALLEL_MIN
    assert x.size >= PARALLEL_MIN
    for transpose in (False, True):
        for to32 in (False, True):
            np.testing.assert_array_equal(_row_form_threads(x, transpose, to32), row_form(x, transpose, to32))
    params = np.asarray(get_scheme("mixpert").parse_config("level=IV").words(), dtype=np.int64)
    op = ex.prepare(x.astype(np.float32), "A", params).arrays
    rows = np.arange(op.q.shape[0])[::-1].copy()  # any row order
    for i0, i1 in ((0, 0), (0, 1), (1, 2), (0, 2)):
        args = (op.q, op.scale, rows, 3, op.q.shape[1] - 5, i0, i1, int(params[ex.W_SEGMENTS]),
                int(params[ex.W_DIGITS]), int(params[ex.W_TK]))
        np.testing.assert_array_equal(_block_operand_threads(*args), block_operand(*args))


@pytest.mark.parametrize("scheme,label,dtype,shape", [
    ("mixpert", "level=IV", np.float32, (320, 256, 288)),  # A's packing and the epilogue threaded
    ("mixpert-fp64", None, np.float64, (192, 128, 384)),  # epilogue_many threaded
])
def test_a_threaded_gemm_equals_its_serial_row_blocks(scheme, label, dtype, shape):
    """Rows of C from one large call (threaded packing / epilogue) equal the same rows
    computed by small calls (serial), bit for bit: blocks of 64 rows keep A's tiles."""
    m, k, n = shape
    s = get_scheme(scheme)
    cfg = s.parse_config(label) if label else s.default_config(dtype)
    assert 64 % cfg.words()[ex.W_TM] == 0
    a = (RNG.standard_normal((m, k)) * np.exp2(RNG.integers(-6, 6, (m, k)))).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    assert m * n >= PARALLEL_MIN and 64 * n < PARALLEL_MIN and 64 * k < PARALLEL_MIN
    whole = gemm(a, b, scheme, cfg)
    for i0 in range(0, m, 64):
        part = gemm(a[i0:i0 + 64].copy(), b, scheme, cfg)
        np.testing.assert_array_equal(whole[i0:i0 + 64], part, err_msg=f"rows {i0}..{i0 + 63}")


@pytest.mark.parametrize("layer,priority,want", [
    ("workqueue", None, False),  # aborts on nested or concurrent launches
    ("forksafe", None, False),  # may pick workqueue
    ("default", ["workqueue", "tbb", "omp"], False),  # workqueue always loads, so it is chosen
    ("threadsafe", ["workqueue", "nosuchlayer"], False),  # nothing thread-safe loads
])
def test_threads_stay_off_where_the_threading_layer_cannot_nest(monkeypatch, layer, priority, want):
    import numba

    from mixjit.runtime.executor_mixpert_pack import _threads_nest_safely

    monkeypatch.setattr(numba.config, "THREADING_LAYER", layer)
    if priority is not None:
        monkeypatch.setattr(numba.config, "THREADING_LAYER_PRIORITY", priority)
    assert _threads_nest_safely() is want


def test_threads_are_on_with_a_loadable_openmp_or_tbb_layer(monkeypatch):
    import importlib

    import numba

    from mixjit.runtime.executor_mixpert_pack import _threads_nest_safely

    for name in ("omp", "tbb"):
        try:
            importlib.import_module(f"numba.np.ufunc.{name}pool")
        except ImportError:
            continue
        monkeypatch.setattr(numba.config, "THREADING_LAYER", name)
        assert _threads_nest_safely() is True
        monkeypatch.setattr(numba.config, "THREADING_LAYER", "default")
        monkeypatch.setattr(numba.config, "THREADING_LAYER_PRIORITY", [name, "workqueue"])
        assert _threads_nest_safely() is True
        return
    pytest.skip("neither the OpenMP nor the TBB threading layer loads here")


def test_a_site_runs_the_mixpert_executor_loaded_from_the_disk_cache_in_a_new_process():
    """The executor's C function holds parallel regions; loaded from the cache in a fresh
    process (no threading layer started yet) a site call must run, not crash."""
    import subprocess
    import sys
    import textwrap

    from mixjit import entry
    from mixjit.plan import SitePlan, set_plan

    set_plan(entry.new_site(), SitePlan("mixpert", "level=IV", "mixpert"))  # writes the cache
    code = textwrap.dedent(
        """
        import numpy as np
        from mixjit import entry, linking
        from mixjit.plan import SitePlan, set_plan

        linking.ensure_entry_linked()
        site = entry.new_site()
        set_plan(site, SitePlan("mixpert", "level=IV", "mixpert"))
        a = np.full((8, 8), 0.5, np.float32)
        c = linking.gemm_alloc(a, a, site)
        print(c[0, 0], entry._executor_functions[entry.EXECUTORS["mixpert"], entry.DTYPE_F32].cache_hits)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.split() == ["2.0", "1"]
