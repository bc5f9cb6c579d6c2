"""mixjit.linking + mixjit.entry: GEMM sites replaced by calls of the C-ABI entry.

Compiled functions are module-level and shared by the tests (Numba compiles are
the cost here); each test reads the counters of the sites it exercises.
"""

import ctypes
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numba import njit, prange

from mixjit import entry, gemm
from mixjit.entry import blas, executors, tables
from mixjit.linking import (
    LinkError,
    ensure_entry_linked,
    find_sites,
    gemm_alloc,
    link_gemm_call,
    require_symbol,
)
from mixjit.numba_pipeline import make_pipeline
from mixjit.plan import SitePlan, initial_plan, set_plan
from mixjit.runtime.mixpert import executor as ex

# (function name, argument types) -> site ids, in block order.
SITES: dict = {}
# (function name, argument types) -> number of GEMMs find_sites saw.
FOUND: dict = {}
# (function name, argument types) -> detect-gemm's report.
REPORTS: dict = {}


NATIVE = initial_plan(["native"], np.float64)


def _block(name, count):
    """A site block with native plans; returns (symbol, first id)."""
    symbol = f"mixjit_test_sites_{name}_{entry.new_site()}"
    base, created = entry.register_site_block(symbol, count)
    assert created
    for i in range(count):
        set_plan(base + i, NATIVE)
    return symbol, base


def _new_site():
    site = entry.new_site()
    set_plan(site, NATIVE)
    return site


def _linker(take_first_only=False):
    def hook(state):
        found = find_sites(state)
        calls = found.calls
        key = (state.func_id.func_name, state.args)
        FOUND[key] = len(calls)
        REPORTS[key] = found.report
        taken = calls[:1] if take_first_only else calls
        symbol, base = _block(state.func_id.func_name, len(taken))
        SITES[key] = [base + i for i in range(len(taken))]
        for local, call in enumerate(taken):
            link_gemm_call(state, call, symbol, local)
        return bool(taken)

    return hook


LINK_ALL = make_pipeline(_linker())


def sites(fn, *args):
    key = (fn.py_func.__name__, tuple(fn.typeof_pyval(a) for a in args))
    return SITES[key]


def counts(site_ids):
    return [entry.call_count(s) for s in site_ids]


@njit(pipeline_class=LINK_ALL, nogil=True)
def _prod(a, b):
    return a @ b


@njit(pipeline_class=LINK_ALL)
def _dot_forms(a, b, out, out2):
    c = np.dot(a, b)
    np.dot(a, b, out)
    np.dot(c, b.T, out=out2)
    return c


@njit(pipeline_class=make_pipeline(_linker(take_first_only=True)))
def _two_sites(a, b):
    return np.dot(a, b) + a @ b


@njit(pipeline_class=LINK_ALL, parallel=True)
def _batched(x, y):
    out = np.empty((x.shape[0], x.shape[1], y.shape[2]), x.dtype)
    for i in prange(x.shape[0]):
        out[i] = x[i] @ y[i]
    return out


@njit(pipeline_class=LINK_ALL)
def _updates(c, a, b):
    c[1:, 1:] -= a @ b
    c[:1, :] += np.dot(a[:1, :], b[:, :1])  # broadcasts a 1x1 product over a row
    return c


@njit
def _updates_plain(c, a, b):
    c[1:, 1:] -= a @ b
    c[:1, :] += np.dot(a[:1, :], b[:, :1])
    return c


@njit(pipeline_class=LINK_ALL)
def _not_gemms(v, m):
    return np.dot(v, v) + (m @ v).sum() + np.dot(v, m.T).sum()


RNG = np.random.default_rng(1234)


def _operand_cases(dtype):
    """(name, A, B): the operand layouts the entry must handle."""
    a = RNG.standard_normal((7, 5)).astype(dtype)
    b = RNG.standard_normal((5, 6)).astype(dtype)
    big_a = RNG.standard_normal((16, 12)).astype(dtype)
    big_b = RNG.standard_normal((12, 20)).astype(dtype)
    a_f, b_f = np.asfortranarray(a), np.asfortranarray(b)  # transposed storage
    return [
        ("contiguous", a, b),
        ("transposed", a_f, b_f),
        ("c_times_f", a, b_f),
        ("f_times_c", a_f, b),
        ("row_slices", big_a[2:9, 1:6], big_b[3:8, 2:8]),  # unit stride, padded rows
        ("column_slices", np.asfortranarray(big_a)[2:9, 1:6], np.asfortranarray(big_b)[3:8, 2:8]),
        ("strided_negative", big_a[::-2, ::3][:7, :4], big_b[::3, ::-2][:4, :6]),
        ("single_row_col", a[:1], b[:, :1]),
    ]


@pytest.mark.filterwarnings("ignore:'@' is faster on contiguous arrays")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_results_match_numpy_for_all_layouts(dtype):
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    for name, a, b in _operand_cases(dtype):
        got = _prod(a, b)
        assert got.dtype == dtype, name
        np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float64), rtol=rtol, atol=rtol,
                                   err_msg=name)


def test_zero_size_dimensions():
    for m, k, n in [(0, 3, 4), (2, 0, 4), (3, 4, 0)]:
        got = _prod(np.ones((m, k)), np.ones((k, n)))
        assert got.shape == (m, n)
        np.testing.assert_array_equal(got, np.zeros((m, n)))
    # k == 0 must write zeros, not leave the output as it was.
    c = np.full((2, 3), np.nan)
    assert _call_c(_new_site(), np.ones((2, 0)), np.ones((0, 3)), c) == entry.ENTRY_OK
    np.testing.assert_array_equal(c, np.zeros((2, 3)))


def test_each_call_increments_its_site_counter():
    a, b = np.ones((3, 4)), np.ones((4, 2))
    _prod(a, b)
    (site,) = sites(_prod, a, b)
    before = entry.call_count(site)
    for _ in range(5):
        _prod(a, b)
    assert entry.call_count(site) == before + 5


def test_dot_out_forms_are_left_to_numba():
    a = RNG.standard_normal((4, 3))
    b = RNG.standard_normal((3, 3))
    out = np.full((4, 3), np.nan)
    out2 = np.full((4, 3), np.nan)
    c = _dot_forms(a, b, out, out2)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)
    np.testing.assert_allclose(out2, (a @ b) @ b.T, rtol=1e-12)
    ids = sites(_dot_forms, a, b, out, out2)
    assert len(ids) == 1 and counts(ids) == [1]
    key = ("_dot_forms", tuple(_dot_forms.typeof_pyval(x) for x in (a, b, out, out2)))
    assert [r.reason for r in REPORTS[key].rejected] == ["out-argument", "out-argument"]


def test_llvm_calls_entry_and_not_blas():
    a = np.ones((2, 2))
    _prod(a, a)
    llvm_ir = _prod.inspect_llvm(_prod.signatures[0])
    assert re.search(r'call [^\n]*@"?mixjit_gemm_entry"?\(', llvm_ir)
    assert "numba_xxgemm" not in llvm_ir
    # The caller only names the symbol: no process addresses baked into it, so
    # its object code can be cached to disk.
    assert str(tables._COUNTS_ADDR) not in llvm_ir


def test_only_taken_sites_are_replaced():
    a = RNG.standard_normal((3, 3))
    np.testing.assert_allclose(_two_sites(a, a), 2 * (a @ a), rtol=1e-12)
    key = ("_two_sites", (_two_sites.typeof_pyval(a),) * 2)
    assert FOUND[key] == 2
    (site,) = SITES[key]
    assert entry.call_count(site) == 1
    llvm_ir = _two_sites.inspect_llvm(_two_sites.signatures[0])
    assert "mixjit_gemm_entry" in llvm_ir and "numba_xxgemm" in llvm_ir


def test_prange_counts_are_exact():
    x = RNG.standard_normal((257, 4, 5))
    y = RNG.standard_normal((257, 5, 3))
    np.testing.assert_allclose(_batched(x, y), x @ y, rtol=1e-12)
    (site,) = sites(_batched, x, y)
    _batched(x, y)
    assert entry.call_count(site) == 2 * 257


def test_python_threads_counts_are_exact():
    a, b = np.ones((4, 4)), np.ones((4, 4))
    _prod(a, b)
    (site,) = sites(_prod, a, b)
    before = entry.call_count(site)

    def work(_):
        for _ in range(200):
            _prod(a, b)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))
    assert entry.call_count(site) == before + 800


@pytest.mark.filterwarnings("ignore:np.dot\\(\\) is faster on contiguous arrays")
def test_fused_updates_equal_plain_numba_bit_for_bit():
    a = RNG.standard_normal((4, 3))
    b = RNG.standard_normal((3, 5))
    c = RNG.standard_normal((5, 6))
    got = _updates(c.copy(), a, b)
    np.testing.assert_array_equal(got, _updates_plain(c.copy(), a, b))
    ids = sites(_updates, c, a, b)
    assert FOUND[("_updates", tuple(_updates.typeof_pyval(x) for x in (c, a, b)))] == 2
    assert counts(ids) == [1, 1]
    llvm_ir = _updates.inspect_llvm(_updates.signatures[0])
    assert "numba_xxgemm" not in llvm_ir


@njit(pipeline_class=LINK_ALL)
def _product_and_update(c, a, b):
    p = a @ b
    c -= a @ b
    return p, c


@njit
def _product_and_update_plain(c, a, b):
    p = a @ b
    c -= a @ b
    return p, c


def _vector_operands(dtype, layout, m, k, n):
    a = RNG.standard_normal((m, 2 * k)).astype(dtype)[:, ::2]  # 'A': strided rows
    b = RNG.standard_normal((k, n)).astype(dtype)
    if layout == "C":
        a = np.ascontiguousarray(a)
    elif layout == "F":
        a, b = np.asfortranarray(a), np.asfortranarray(b)
    return a, b, RNG.standard_normal((m, n)).astype(dtype)


@pytest.mark.filterwarnings("ignore:'@' is faster on contiguous arrays")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["C", "F", "A"])
def test_native_row_and_column_products_equal_plain_numba_bit_for_bit(dtype, layout):
    # Numba's np.dot runs BLAS dot for (1, k) @ (k, 1) and gemv when m or n is 1;
    # a gemm of the same operands rounds differently, so the native site must
    # follow the same choice.
    for m, k, n in [(1, 37, 1), (1, 37, 9), (9, 37, 1), (1, 1, 1), (5, 1, 1), (1, 1, 5)]:
        a, b, c = _vector_operands(dtype, layout, m, k, n)
        got = _product_and_update(c.copy(), a, b)
        want = _product_and_update_plain(c.copy(), a, b)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w, err_msg=f"{m}x{k}x{n} {layout} {dtype.__name__}")


def test_fused_update_found_with_alpha_beta():
    def record(state):
        record.calls = find_sites(state).calls
        return False

    @njit(pipeline_class=make_pipeline(record))
    def f(c, a, b, d):
        c[:2, :] -= a @ b
        d[:, :] += a @ b
        d += a @ b  # no subscript: not the C[idx] op= form
        t = a @ b
        e = t + 1.0  # t has a use besides the update: not fused
        c -= t
        return e

    x = np.ones((2, 2))
    f(x.copy(), x, x, x.copy())
    assert [(c.alpha, c.beta, c.update is not None) for c in record.calls] == [
        (-1.0, 1.0, True), (1.0, 1.0, True), (1.0, 0.0, False), (1.0, 0.0, False)]


def test_entry_alpha_beta():
    a = RNG.standard_normal((3, 4))
    b = RNG.standard_normal((4, 2))
    c0 = RNG.standard_normal((3, 2))
    for alpha, beta in [(-1.0, 1.0), (2.0, 0.5), (1.0, 1.0)]:
        c = c0.copy()
        assert _call_c(_new_site(), a, b, c, alpha=alpha, beta=beta) == entry.ENTRY_OK
        np.testing.assert_allclose(c, alpha * (a @ b) + beta * c0, rtol=1e-12)
    c = np.full((3, 2), np.nan)  # beta == 0 overwrites, NaN does not survive
    assert _call_c(_new_site(), a, b, c, alpha=1.0, beta=0.0) == entry.ENTRY_OK
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)
    c = c0.copy()  # empty product: c = beta * c
    assert _call_c(_new_site(), a[:, :0], b[:0], c, alpha=1.0, beta=0.5) == entry.ENTRY_OK
    np.testing.assert_array_equal(c, 0.5 * c0)


def test_output_overlapping_an_operand_reads_before_writing():
    buf = RNG.standard_normal((4, 8))
    a, b = buf[:, :4].copy(), RNG.standard_normal((4, 4))
    expect = buf[:, :4] @ b
    out = buf[:, 2:6]  # overlaps the columns a is read from
    assert _call_c(_new_site(), buf[:, :4], b, out) == entry.ENTRY_OK
    np.testing.assert_allclose(buf[:, 2:6], expect, rtol=1e-12)
    assert a.shape == (4, 4)


def test_overlap_test_is_exact_for_column_blocks():
    buf = np.zeros((6, 8))
    isz = buf.itemsize

    def overlap(c, x):
        return blas._may_overlap(c.ctypes.data, *c.shape, *c.strides, x.ctypes.data, *x.shape, *x.strides, isz)

    assert not overlap(buf[2:, 2:], buf[2:, :2])  # Cholesky's A22 and A21: interleaved, disjoint
    assert overlap(buf[2:, 2:], buf[2:, 1:3])
    assert overlap(buf[2:, 2:], buf[:3, :3].T)  # another layout: conservative
    assert not overlap(buf[:2], buf[3:])


def test_vector_products_are_not_gemms():
    # (Numba types no integer or mixed-dtype np.dot / @, so only float
    # matrix-matrix products reach detect-gemm as sites.)
    v = np.arange(3.0)
    m = np.ones((2, 3))
    assert _not_gemms(v, m) == v @ v + (m @ v).sum() + (v @ m.T).sum()
    assert FOUND[("_not_gemms", (_not_gemms.typeof_pyval(v), _not_gemms.typeof_pyval(m)))] == 0


def test_inner_dimension_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match="inner dimensions differ"):
        _prod(np.ones((2, 3)), np.ones((2, 3)))


def test_entry_failure_raises_in_compiled_code():
    a = np.ones((2, 2))
    with pytest.raises(RuntimeError, match="ENTRY_ERRORS"):
        gemm_alloc(a, a, -1)  # a site id the entry refuses


def test_linking_a_call_twice_is_refused():
    def link_twice(state):
        (call,) = find_sites(state).calls
        symbol, _ = _block("twice", 2)
        link_gemm_call(state, call, symbol, 0)
        link_gemm_call(state, call, symbol, 1)
        return True

    @njit(pipeline_class=make_pipeline(link_twice))
    def f(a):
        return a @ a

    with pytest.raises(LinkError, match="already linked"):
        f(np.ones((2, 2)))


def test_require_symbol():
    assert require_symbol(entry.ENTRY_SYMBOL) == ensure_entry_linked() == entry.entry_cfunc().address
    with pytest.raises(LinkError, match="not registered with llvmlite"):
        require_symbol("mixjit_no_such_symbol")


def test_missing_entry_symbol_is_a_python_error_not_a_crash():
    # A fresh process where nothing has registered the entry: emitting the call
    # must raise LinkError instead of letting LLVM kill the process.
    code = textwrap.dedent(
        """
        import numpy as np
        from numba import njit
        from mixjit.linking import LinkError, _call_entry

        @njit
        def f(a, b, c):
            return _call_entry(0, a, b, c, 1.0, 0.0)

        x = np.ones((2, 2))
        try:
            f(x, x, x.copy())
        except LinkError as e:
            print("LinkError:", e)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "LinkError: mixjit: symbol 'mixjit_gemm_entry' is not registered" in proc.stdout


# --- the entry itself, through its C ABI ------------------------------------

def _call_c(site, a, b, c, dtype_code=None, alpha=1.0, beta=0.0):
    m, k = a.shape
    n = b.shape[1]
    code = entry.DTYPE_CODES[a.dtype] if dtype_code is None else dtype_code
    return entry.entry_cfunc().ctypes(
        site, code, m, n, k, alpha, beta,
        ctypes.c_void_p(a.ctypes.data), *a.strides,
        ctypes.c_void_p(b.ctypes.data), *b.strides,
        ctypes.c_void_p(c.ctypes.data), *c.strides,
    )


def test_entry_writes_strided_output_and_leaves_gaps():
    a = RNG.standard_normal((3, 4))
    b = RNG.standard_normal((4, 5))
    buf = np.full((6, 10), -7.0)
    view = buf[::-2, ::2]  # negative row stride, non-unit column stride
    site = _new_site()
    assert _call_c(site, a, b, view) == entry.ENTRY_OK
    np.testing.assert_allclose(view, a @ b, rtol=1e-12)
    untouched = np.ones(buf.shape, bool)
    untouched[::-2, ::2] = False
    assert (buf[untouched] == -7.0).all()
    assert entry.call_count(site) == 1


def test_entry_error_codes():
    a = np.ones((2, 2))
    c = np.zeros((2, 2))
    assert _call_c(-1, a, a, c) == entry.ENTRY_BAD_SITE
    assert _call_c(entry.MAX_SITES, a, a, c) == entry.ENTRY_BAD_SITE
    site = _new_site()
    assert _call_c(site, a, a, c, dtype_code=99) == entry.ENTRY_BAD_DTYPE
    assert _call_c(entry.new_site(), a, a, c) == entry.ENTRY_NO_PLAN  # no plan set
    for code in (99, -1, 62):  # outside the executor table; inside it, but no executor has the code
        unknown = entry.new_site()
        tables._PLANS[unknown, 0] = code  # bypasses write_plan_row, which refuses unknown codes
        assert _call_c(unknown, a, a, c) == entry.ENTRY_BAD_EXECUTOR
    assert (c == 0).all()
    limited = _new_site()  # a call that finds its site's counter at the site's call limit fails
    entry.set_call_limits({limited: entry.call_count(limited) + 1})
    try:
        assert _call_c(limited, a, a, c) == entry.ENTRY_OK and (c == 2).all()
        c[:] = 0
        assert _call_c(limited, a, a, c) == entry.ENTRY_CALL_LIMIT and (c == 0).all()
    finally:
        entry.set_call_limits({limited: 0})
    assert _call_c(limited, a, a, c) == entry.ENTRY_OK
    c[:] = 0
    with pytest.raises(ValueError, match="no compiled executor has plan code 62"):
        entry.write_plan_row(entry.new_site(), (62,))
    declared = {ex_.code: ex_ for ex_ in map(entry.executor_for, entry.EXECUTORS) if ex_.kernel is not None}
    refusals = {entry.executor_status(code, s): (e.name, msg) for code, e in declared.items()
                for s, msg in e.status_messages.items()}
    assert len(refusals) == sum(len(e.status_messages) for e in declared.values())  # no two share a code
    # an executor installed at run time (mixjit.backends' device executor, when a test of tests/gpu
    # ran earlier in this process) adds its refusals under its own plan code
    installed = {status for status in entry.ENTRY_ERRORS if status // entry.STATUS_SPAN in executors._installed}
    assert set(entry.ENTRY_ERRORS) == {entry.ENTRY_BAD_SITE, entry.ENTRY_BAD_DTYPE, entry.ENTRY_TOO_LARGE,
                                       entry.ENTRY_BLAS_FAILED, entry.ENTRY_NO_PLAN, entry.ENTRY_BAD_EXECUTOR,
                                       entry.ENTRY_CALL_LIMIT, *refusals, *installed}
    for code, (name, msg) in refusals.items():  # each refusal names its own executor
        assert entry.ENTRY_ERRORS[code] == f"{name} executor: {msg}"


def test_counter_increment_is_an_atomic_rmw_on_the_counter_symbol():
    # (The entry itself may come from the disk cache, which Numba cannot
    # inspect; its counting intrinsic is checked in a small function instead.)
    @njit
    def bump(site):
        return tables._count_call(site)

    site = entry.new_site()
    assert bump(site) == 0 and bump(site) == 1 and entry.call_count(site) == 2
    llvm_ir = bump.inspect_llvm(bump.signatures[0])
    slot = re.search(rf"(%[.\w]+) = getelementptr inbounds [^\n]*@{entry.COUNTERS_SYMBOL}, [^\n]*i64 %arg.site",
                     llvm_ir)
    assert slot, "no counter slot computed from the counter array"
    assert re.search(rf"atomicrmw add ptr {re.escape(slot.group(1))}, i64 1 monotonic", llvm_ir)
    assert str(tables._COUNTS_ADDR) not in llvm_ir  # reached by symbol: cacheable


def test_entry_loads_from_disk_cache_in_a_new_process():
    entry.entry_cfunc()  # compiled (or loaded) here, so the cache is written
    code = textwrap.dedent(
        """
        import ctypes
        import numpy as np
        from mixjit import entry
        from mixjit.plan import initial_plan, set_plan

        cf = entry.entry_cfunc()
        a = np.arange(6.0).reshape(2, 3)
        c = np.zeros((2, 2))
        site = entry.new_site()
        set_plan(site, initial_plan(["native"], np.float64))
        p = lambda x: ctypes.c_void_p(x.ctypes.data)
        status = cf.ctypes(site, 0, 2, 2, 3, 1.0, 0.0, p(a), *a.strides, p(a.T), *a.T.strides, p(c), *c.strides)
        assert status == 0 and np.allclose(c, a @ a.T), (status, c)
        print("hits", cf._cache_hits, "count", entry.call_count(site), "loaded", *entry.loaded_executors())
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # a native plan loads no emulation executor: the entry holds only the built-in ones
    assert proc.stdout.split() == ["hits", "1", "count", "1", "loaded"]


def test_counters_reject_bad_site_ids():
    with pytest.raises(ValueError, match="outside"):
        entry.call_count(entry.MAX_SITES)


def test_reset_call_counts():
    site = _new_site()
    a = np.ones((1, 1))
    _call_c(site, a, a, np.zeros((1, 1)))
    assert entry.call_count(site) == 1
    entry.reset_call_counts()
    assert entry.call_count(site) == 0


# --- emulated executors behind the entry --------------------------------------

_EMULATED = [(np.float32, "mixpert", "level=IV,tile=4x8x4"), (np.float64, "mixpert-fp64", "segments=7,pairs=sig6,tile=4x8x4")]


@pytest.mark.parametrize("dtype,scheme,label", _EMULATED)
def test_entry_runs_mixpert_bit_for_bit_for_all_layouts(dtype, scheme, label):
    site = entry.new_site()
    set_plan(site, SitePlan(scheme, label, scheme))
    cases = _operand_cases(dtype)
    for name, a, b in cases:
        want = gemm(a, b, scheme, label)
        c = np.full(want.shape, np.nan, dtype)
        assert _call_c(site, a, b, c) == entry.ENTRY_OK
        np.testing.assert_array_equal(c, want, err_msg=name)
    _, a, b = cases[4]
    p = gemm(a, b, scheme, label)
    c0 = RNG.standard_normal(p.shape).astype(dtype)
    for alpha, beta in [(-1.0, 1.0), (2.0, 0.5)]:  # C = alpha*P + beta*C in C's dtype
        c = c0.copy()
        assert _call_c(site, a, b, c, alpha=alpha, beta=beta) == entry.ENTRY_OK
        np.testing.assert_array_equal(c, dtype(alpha) * p + dtype(beta) * c0)
    assert entry.call_count(site) == len(cases) + 2


def test_entry_reports_what_the_mixpert_executor_refuses():
    site = entry.new_site()
    set_plan(site, SitePlan("mixpert-fp64", "tile=1x1x1", "mixpert-fp64"))
    a, b, c = np.array([[1.0, 2.0**-1000]]), np.ones((2, 1)), np.zeros((1, 1))
    status = _call_c(site, a, b, c)
    code = entry.EXECUTORS["mixpert-fp64"]
    assert status == entry.executor_status(code, ex.ERR_SPAN)
    assert entry.ENTRY_ERRORS[status].startswith("mixpert executor:") and "binades" in entry.ENTRY_ERRORS[status]
    f32 = np.ones((1, 2), np.float32)  # a float64-domain plan on a float32 site
    assert _call_c(site, f32, f32.T.copy(), np.zeros((1, 1), np.float32)) == entry.executor_status(code, ex.ERR_PARAMS)


def test_prange_runs_mixpert_sites_bit_for_bit():
    x = RNG.standard_normal((48, 4, 40))
    y = RNG.standard_normal((48, 40, 3))
    _batched(x, y)
    (site,) = sites(_batched, x, y)
    label = "segments=7,pairs=sig6"
    set_plan(site, SitePlan("mixpert-fp64", label, "mixpert-fp64"))
    try:
        before = entry.call_count(site)
        got = _batched(x, y)
        assert entry.call_count(site) == before + 48
    finally:
        set_plan(site, NATIVE)
    for i in range(48):
        np.testing.assert_array_equal(got[i], gemm(x[i], y[i], "mixpert-fp64", label))
