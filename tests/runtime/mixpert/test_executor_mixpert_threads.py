"""The MixPert executor's threaded packing and epilogues give the serial bits, and the
decision to thread follows the work and the thread count."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from mixjit.runtime.mixpert import pack
from mixjit.runtime.mixpert.pack import REGION_COST_NS, _block_operand_threads, block_operand, threads_pay
from mixjit.runtime.mixpert.pair_blocks import SPAN_RESERVE, plan_block_array
from mixjit.runtime.mixpert.paths.fast import fast_path_threads
from mixjit.runtime.mixpert.segments import width
from mixjit.runtime.mixpert.split import _row_form_threads, prepare_operand, row_form
from mixjit.runtime.mixpert.words import W_DIGITS, W_SEG0_BITS, W_SEGMENTS, W_TK, kept_pairs
from mixjit.runtime.schemes import get_scheme

RNG = np.random.default_rng(2024)


def _words(scheme: str, label: str | None, dtype) -> np.ndarray:
    s = get_scheme(scheme)
    cfg = s.parse_config(label) if label else s.default_config(dtype)
    return np.asarray(cfg.words(), dtype=np.int64)


def test_threaded_row_form_and_block_operand_equal_the_serial_ones():
    x = RNG.standard_normal((300, 520))[:, ::2]  # strided, 300 x 260: not a multiple of the tiles
    for transpose in (False, True):
        for to32 in (False, True):
            want = np.asarray(x.T if transpose else x, dtype=np.float32 if to32 else np.float64).astype(np.float64)
            np.testing.assert_array_equal(row_form(x, transpose, to32), want)
            for out_dtype in (np.float64, np.float32) if to32 else (np.float64,):  # float32: a call's row form
                threaded = np.full(want.shape, np.nan, dtype=out_dtype)
                _row_form_threads(threaded, x, transpose, to32)
                np.testing.assert_array_equal(threaded, want)
    params = _words("mixpert", "level=IV", np.float32)
    op = prepare_operand(x.astype(np.float32), False, params)
    rows = np.arange(op.q.shape[0])[::-1].copy()  # any row order
    for i0, i1 in ((0, 0), (0, 1), (1, 2), (0, 2)):
        args = (op.q, op.scale, rows, 3, op.q.shape[1] - 5, i0, i1, int(params[W_SEGMENTS]),
                int(params[W_DIGITS]), int(params[W_TK]))
        threaded = np.full((rows.shape[0], args[4] - args[3]), np.nan)
        _block_operand_threads(threaded, *args)
        np.testing.assert_array_equal(threaded, block_operand(*args))


@pytest.mark.parametrize("scheme,label,dtype,shape,spread,blocks_wanted", [
    ("mixpert", "level=IV", np.float32, (203, 256, 77), 0, 2),  # two blocks: epilogue
    ("mixpert", "segments=4,pairs=sig6,align=row", np.float32, (203, 256, 77), 2, 3),  # float32 epilogue_many
    ("mixpert-fp64", None, np.float64, (150, 128, 96), 6, 6),  # epilogue_many, packs shared by blocks
])
def test_the_threaded_fast_path_equals_the_serial_one(scheme, label, dtype, shape, spread, blocks_wanted):
    """Every combination of threaded steps gives the serial bits (rows not a multiple of
    the epilogue's row chunks)."""
    m, k, n = shape
    params = _words(scheme, label, dtype)
    tiles = np.arange(k) // 32  # k-tiles of A scaled apart: spans of `spread` bits
    a = (RNG.standard_normal((m, k)) * np.exp2(spread * (tiles % 2))).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    pa, pb = prepare_operand(a, False, params), prepare_operand(b, True, params)
    blocks, ok = plan_block_array(kept_pairs(params), params[W_SEGMENTS], params[W_SEG0_BITS], k, params[W_DIGITS],
                                  min(pa.span.max() + pb.span.max(), SPAN_RESERVE))
    assert ok and blocks.shape[0] == blocks_wanted
    w1 = width(params[W_SEGMENTS], params[W_SEG0_BITS], params[W_DIGITS]) - 1
    to32 = dtype == np.float32

    def run(ta: bool, tb: bool, te: bool) -> np.ndarray:
        out = np.full((m, n), np.nan)
        fast_path_threads(pa.q, pa.scale, pb.q, pb.scale, blocks, pa.ref - w1, pb.ref - w1, params, out, to32,
                          ta, tb, te)
        return out

    serial = run(False, False, False)
    assert not np.isnan(serial).any()
    for flags in ((True, True, True), (True, False, False), (False, True, False), (False, False, True)):
        np.testing.assert_array_equal(run(*flags), serial, err_msg=f"threads (A, B, epilogue) = {flags}")


def test_threads_pay_follows_the_work_and_the_thread_count():
    """Threads where t threads save at least REGION_COST_NS of a step's serial work,
    never with one thread set."""
    t = numba.get_num_threads()
    assert not threads_pay(0)
    if t > 1:
        least = -(-REGION_COST_NS * t // (t - 1))  # smallest work that saves REGION_COST_NS
        assert not threads_pay(least - 1)
        assert threads_pay(least) is pack.THREADS
    numba.set_num_threads(1)
    try:
        assert not threads_pay(REGION_COST_NS * 1000)
    finally:
        numba.set_num_threads(t)


@pytest.mark.parametrize("layer,priority,want", [
    ("workqueue", None, False),  # aborts on nested or concurrent launches
    ("forksafe", None, False),  # may pick workqueue
    ("default", ["workqueue", "tbb", "omp"], False),  # workqueue always loads, so it is chosen
    ("threadsafe", ["workqueue", "nosuchlayer"], False),  # nothing thread-safe loads
])
def test_threads_stay_off_where_the_threading_layer_cannot_nest(monkeypatch, layer, priority, want):
    import numba

    from mixjit.runtime.mixpert.pack import _threads_nest_safely

    monkeypatch.setattr(numba.config, "THREADING_LAYER", layer)
    if priority is not None:
        monkeypatch.setattr(numba.config, "THREADING_LAYER_PRIORITY", priority)
    assert _threads_nest_safely() is want


def test_threads_are_on_with_a_loadable_openmp_or_tbb_layer(monkeypatch):
    import importlib

    import numba

    from mixjit.runtime.mixpert.pack import _threads_nest_safely

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
        from mixjit.entry import executors
        from mixjit.plan import SitePlan, set_plan

        linking.ensure_entry_linked()
        site = entry.new_site()
        set_plan(site, SitePlan("mixpert", "level=IV", "mixpert"))
        a = np.full((8, 8), 0.5, np.float32)
        c = linking.gemm_alloc(a, a, site)
        print(c[0, 0], executors._executor_functions[entry.EXECUTORS["mixpert"], entry.DTYPE_F32].cache_hits)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    assert proc.stdout.split() == ["2.0", "1"]
