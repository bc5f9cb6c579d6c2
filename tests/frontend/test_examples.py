"""examples/cholesky.py and examples/kmeans.py: sites found, results equal plain
Numba when every site runs native (the examples' default plans run MixPert, so the
default-plan results are checked against float64 references instead)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mixjit import mixjit
from mixjit.demo import load_example


@pytest.mark.filterwarnings("ignore:mixjit. scheme")
def test_cholesky_equals_plain_numba_and_is_accurate(capsys):
    chol = load_example("cholesky")
    errors = chol.main(n=40, block=16)
    assert errors["float64"] < 1e-14 and errors["float32"] < 1e-6
    a = chol.spd_matrix(40, seed=3)
    plain = njit(chol.cholesky.py_func)
    native = mixjit(schemes=["native"])(chol.cholesky.py_func)
    for dtype in (np.float64, np.float32):
        x = a.astype(dtype)
        np.testing.assert_array_equal(native(x, 16), plain(x, 16))
    assert all(c > 0 for c in native.call_counts().values())
    taken = [s for s in chol.cholesky.sites if s.taken]
    assert sorted(s.dtype for s in taken) == ["float32", "float64"]
    assert all(s.form == "c -= a @ b.T" and s.calls > 0 for s in taken)
    assert "sites (id, source line, form, dtype, what it ran, calls):" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:mixjit. scheme")
def test_kmeans_equals_plain_numba_and_is_accurate():
    km = load_example("kmeans")
    errors = km.main(n=200, d=8, k=4, iters=5)
    assert errors["float64"] < 1e-14 and errors["float32"] < 1e-5
    X, C0 = km.blobs(200, 8, 4, seed=1)
    plain = njit(km.kmeans.py_func)
    native = mixjit(schemes=["native"])(km.kmeans.py_func)
    for dtype in (np.float64, np.float32):
        got, want = native(X.astype(dtype), C0.astype(dtype), 5), plain(X.astype(dtype), C0.astype(dtype), 5)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    (s64, s32) = sorted((s for s in km.kmeans.sites if s.taken), key=lambda s: s.dtype, reverse=True)
    assert (s64.form, s64.calls, s32.calls) == ("a @ b.T", 5, 5)  # main() ran 5 iterations per dtype


def test_tiled_cholesky_has_four_dependent_sites_and_is_accurate():
    """The tuner benchmark's Cholesky: potrf -> trsm -> syrk -> gemm, each a taken site."""
    chol = load_example("cholesky_tiled")
    errors = chol.main(n=48, block=16)
    assert errors["float64"] < 1e-13 and errors["float32"] < 1e-5
    f = chol.cholesky_tiled
    key = next(k for k in f.overloads if "float32" in str(k[0]))
    dag = f.dag_for(*key)
    sites = sorted(dag.nodes)
    assert len(sites) == 4
    potrf, trsm, syrk, gemm_ = sites  # source order
    forward = {(u, v) for u, v, d in dag.edges(data=True) if not d.get("carried")}
    assert {(potrf, trsm), (trsm, syrk), (trsm, gemm_), (syrk, gemm_)} <= forward


def test_mlp_layers_form_a_chain_of_sites():
    mlp = load_example("mlp")
    assert mlp.main(size=32, batch=16) < 1e-5
    dag = mlp.mlp.dag
    a, b, c = sorted(dag.nodes)
    assert {(u, v) for u, v in dag.edges} == {(a, b), (b, c)}
