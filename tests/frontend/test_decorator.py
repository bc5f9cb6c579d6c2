"""@mixjit on a corpus of GEMM styles: every expected site is found and linked,
nothing else is taken, and results equal plain Numba bit for bit (every site
runs ``native``). Functions are module-level and compiled once per signature."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from numba import errors, njit, prange

from mixjit import entry, gemm, mixjit, mixopt
from mixjit.decorator import MixjitDispatcher, MixjitWarning
from mixjit.runtime.schemes.base import get_scheme

NATIVE = dict(schemes=["native"])


def _styles(a, b, c):
    """np.dot, @, transposes, fused -= / +=, a GEMM in a loop, and two
    products that are not GEMMs (a 1-D dot and a matrix-vector product)."""
    x = np.dot(a, b)                    # site: np.dot
    y = a.T @ a                         # site: transposed operand
    c[:2, :] -= a[:2, :] @ b            # site: fused update, alpha = -1
    c[2:, :] += np.dot(a[2:, :], b)     # site: fused update, alpha = +1
    for _ in range(3):
        x = x @ (b.T @ b)               # sites: two GEMMs in a loop
    v = np.dot(a[0], a[0])              # not a GEMM: 1-D dot
    w = a @ b[:, 0]                     # not a GEMM: matrix-vector
    return x, y, c, v, w


styles = mixjit(**NATIVE)(_styles)
styles_plain = njit(_styles)


@mixjit(**NATIVE)
def matmul_style(a, b):
    return np.matmul(a, b) + np.matmul(a.T, a)[:1, :1]


def _batched(x, y):
    out = np.empty((x.shape[0], x.shape[1], y.shape[2]), x.dtype)
    for i in prange(x.shape[0]):
        out[i] = x[i] @ y[i]
    return out


batched = mixjit(parallel=True, **NATIVE)(_batched)
batched_plain = njit(parallel=True)(_batched)


@mixjit(**NATIVE)
def product(a, b):
    return a @ b


RNG = np.random.default_rng(7)


def _operands(dtype):
    a = RNG.standard_normal((5, 4)).astype(dtype)
    b = RNG.standard_normal((4, 6)).astype(dtype)
    c = RNG.standard_normal((5, 6)).astype(dtype)
    return a, b, c


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_styles_equal_plain_numba_and_every_site_is_linked(dtype):
    a, b, c = _operands(dtype)
    got = styles(a, b, c.copy())
    want = styles_plain(a, b, c.copy())
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    name = np.dtype(dtype).name
    mine = [s for s in styles.sites if name in s.signature.split(",")[0]]
    taken = [s for s in mine if s.taken]
    assert sorted(s.form for s in taken) == sorted(
        ["np.dot(a, b)", "a.T @ b", "c -= a @ b", "c += np.dot(a, b)", "a @ b", "a.T @ b"])
    assert all(s.dtype == name and s.plan.executor == "native" for s in taken)
    assert [s.calls for s in sorted(taken, key=lambda s: s.id)] == [1, 1, 1, 1, 3, 3]
    assert sorted(s.reason.split(":")[0] for s in mine if not s.taken) == ["dot-1d", "matrix-vector"]
    fused = {s.form: (s.alpha, s.beta) for s in taken if s.form.startswith("c ")}
    assert fused == {"c -= a @ b": (-1.0, 1.0), "c += np.dot(a, b)": (1.0, 1.0)}


def test_llvm_calls_the_entry_and_blas_only_for_untaken_products():
    a, b, c = _operands(np.float64)
    styles(a, b, c)
    sig = next(s for s in styles.signatures if str(s[0].dtype) == "float64")
    llvm_ir = styles.inspect_llvm(sig)
    assert re.search(r'call [^\n]*@"?mixjit_gemm_entry"?\(', llvm_ir)
    # The matrix-vector product is left to Numba (gemv); no GEMM calls BLAS gemm,
    # while the same function under plain Numba does.
    assert "numba_xxgemm" not in llvm_ir
    assert "numba_xxgemm" in styles_plain.inspect_llvm(sig)


def test_np_matmul_is_a_site():
    a, b, _ = _operands(np.float64)
    got = matmul_style(a, b)
    np.testing.assert_allclose(got, a @ b + (a.T @ a)[:1, :1], rtol=1e-13)
    assert [s.calls for s in matmul_style.sites] == [1, 1]


@pytest.mark.slow  # two parallel compiles (~20 s); tests/frontend/test_linking.py covers prange in CI
def test_prange_sites_count_every_iteration_and_match_plain_numba():
    x = RNG.standard_normal((64, 3, 4))
    y = RNG.standard_normal((64, 4, 2))
    np.testing.assert_array_equal(batched(x, y), batched_plain(x, y))
    (site,) = batched.sites
    before = site.calls
    batched(x, y)
    assert site.calls - before == 64
    assert batched.call_counts() == {site.id: before + 64}


@pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")
def test_views_negative_strides_and_zero_sizes():
    big = RNG.standard_normal((9, 8))
    cases = [
        (big[::2, 1:5], big[1:5, ::-2]),      # non-contiguous, negative stride
        (big[::-1, :3].T, big[::-1, ::-3]),     # transposed view, negative strides both ways
        (np.asfortranarray(big[:4, :4]), big[:4, 2:7]),
    ]
    for a, b in cases:
        np.testing.assert_allclose(product(a, b), a @ b, rtol=1e-13, atol=1e-13)
    for m, k, n in [(0, 3, 2), (3, 0, 2), (3, 2, 0)]:
        got = product(np.ones((m, k)), np.ones((k, n)))
        np.testing.assert_array_equal(got, np.zeros((m, n)))


def test_ir_and_dump_feed_mixopt(tmp_path, capsys):
    a, b = np.ones((2, 3)), np.ones((3, 2))
    raw = product.ir(a, b, raw=True)
    assert '"func.func"' in raw and 'py.binop' in raw and "mix.gemm" not in raw
    assert product.ir("float64[:, :](float64[:, ::1], float64[:, ::1])", raw=True).startswith(raw[:20])
    path = product.dump(tmp_path / "product.mix", a, b, raw=True)
    out = tmp_path / "out.mix"
    assert mixopt.main([str(path), "-p", "detect-gemm,build-dag", "-o", str(out)]) == 0
    assert out.read_text().count('"mix.gemm"') == 1
    product(a, b)
    dag = product.dag
    (site,) = list(dag.nodes)  # one GEMM site, numbered like f.sites / f.call_counts()
    assert site in product.call_counts() and dag.nodes[site]["loop_depth"] == 0


def test_ir_shows_the_sites_after_detection_with_ids_and_plans(tmp_path):
    @mixjit(**NATIVE)
    def two(a, b):
        return a @ b, np.dot(a, b)

    a = np.ones((2, 2))
    before = two.ir(a, a)  # not compiled: detect-gemm's own ids, no plan
    assert re.findall(r'"mix.gemm".*site = (\d+)', before) == ["0", "1"]
    assert "mix.runs" not in before and "py.binop" not in before
    two(a, a)
    after = two.ir(a, a)
    ids = sorted(s.id for s in two.sites)
    shown = [int(i) for i in re.findall(r'"mix.gemm".*site = (\d+)', after)]
    assert sorted(shown) == ids
    assert after.count('mix.runs = {config = "accumulate=blas", executor = "native", scheme = "native"}') == 2
    path = two.dump(tmp_path / "two.mix", a, a)
    assert path.read_text() == after
    out = tmp_path / "out.mix"  # detect-gemm again keeps the ids: mixopt reads the dump as it is
    assert mixopt.main([str(path), "-p", "detect-gemm,build-dag", "-o", str(out)]) == 0
    assert sorted(int(i) for i in re.findall(r'"mix.gemm".*site = (\d+)', out.read_text())) == ids


def test_decorator_forms_and_options():
    def f(a):
        return a @ a

    assert isinstance(mixjit(f), MixjitDispatcher)
    assert isinstance(mixjit(error_budget=1e-3, target="a100", cache=False)(f), MixjitDispatcher)
    with pytest.raises(ValueError, match="unknown GEMM scheme 'nope'"):
        mixjit(schemes=["nope"])(f)
    with pytest.raises(ValueError, match="error_budget"):
        mixjit(error_budget=0)(f)


def test_default_plan_is_the_most_precise_level_and_says_what_runs():
    @mixjit(tune="never")  # the plan before tuning (first-call tuning would choose another)
    def f(a):
        return a @ a

    with warnings.catch_warnings():
        warnings.simplefilter("error", MixjitWarning)  # mixpert-fp64 has an executor: no note
        f(np.eye(2))
    (site,) = f.sites
    most_precise = get_scheme("mixpert-fp64").configs(np.float64)[0].label
    assert (site.plan.scheme, site.plan.config, site.plan.executor) == ("mixpert-fp64", most_precise, "mixpert-fp64")
    assert site.plan.label == f"mixpert-fp64[{most_precise}]"
    assert site.calls == 1

    @mixjit(schemes=["tf32x3"], tune="never")
    def g(a):
        return a @ a

    with warnings.catch_warnings():
        warnings.simplefilter("error", MixjitWarning)  # every scheme has a compiled executor: no note
        g(np.eye(2, dtype=np.float32))
    assert g.sites[0].plan.label == "tf32x3[products=3]"


def _emulated(a, b, s):
    p = a @ b                               # site: A @ B
    q = np.dot(b.T, a.T)                    # site: transposed operands
    s[2:, 2:] -= s[2:, :2] @ s[2:, :2].T    # site: Cholesky's fused trailing update
    return p, q, s


emulated = mixjit(tune="never")(_emulated)  # default schemes, most precise configs (untuned)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_default_schemes_run_mixpert_bit_for_bit(dtype):
    a = RNG.standard_normal((6, 40)).astype(dtype)
    b = RNG.standard_normal((40, 5)).astype(dtype)
    s = RNG.standard_normal((7, 7)).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixjitWarning)
        p, q, s_got = emulated(a, b, s.copy())
    name = np.dtype(dtype).name
    taken = [x for x in emulated.sites if x.taken and x.dtype == name]
    scheme = "mixpert" if dtype == np.float32 else "mixpert-fp64"
    assert len(taken) == 3 and all(x.plan.scheme == x.plan.executor == scheme for x in taken)
    cfg = taken[0].plan.config
    np.testing.assert_array_equal(p, gemm(a, b, scheme, cfg))
    np.testing.assert_array_equal(q, gemm(b.T, a.T, scheme, cfg))
    want = s.copy()
    want[2:, 2:] -= gemm(want[2:, :2], want[2:, :2].T, scheme, cfg)  # C = C - P in the dtype
    np.testing.assert_array_equal(s_got, want)
    assert [x.calls for x in taken] == [1, 1, 1]
    sig = next(k for k in emulated.signatures if str(k[0].dtype) == name)
    llvm_ir = emulated.inspect_llvm(sig)
    assert "mixjit_gemm_entry" in llvm_ir and "numba_xxgemm" not in llvm_ir


def test_function_numba_cannot_compile_gets_a_mixjit_note():
    @mixjit(**NATIVE)
    def bad(a):
        return a @ undefined_name  # noqa: F821

    with pytest.raises(errors.TypingError) as info:
        bad(np.eye(2))
    assert any("make it compile under @njit" in n for n in info.value.__notes__)
    assert bad.signatures == [] and bad.sites == []


def test_unsupported_argument_type_names_the_argument():
    with pytest.raises(TypeError, match=r"argument 'b' of product is an object"):
        product(np.eye(2), object())


def test_no_gemm_warns_and_runs_unchanged():
    @mixjit(**NATIVE)
    def plain(a):
        return a + 1.0

    with pytest.warns(MixjitWarning, match="no GEMM found in .*plain"):
        np.testing.assert_array_equal(plain(np.zeros(3)), np.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain(np.zeros(3))  # compiled already: no second warning
    assert entry.ENTRY_SYMBOL not in plain.inspect_llvm(plain.signatures[0])
