"""The examples' programs as code: sites found, results equal plain Numba when every site runs
native, the DAGs of the multi-site ones, and each example runnable as a script with the common
flags. Their application metrics under tuned plans: tests/examples/test_examples_apps.py."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from numba import njit

from mixjit import mixjit
from mixjit.demo import EXAMPLES, load_example

NAMES = ("cholesky", "cholesky_tiled", "kmeans", "knn", "mlp", "hpl_ai", "correlation")


@pytest.mark.filterwarnings("ignore:mixjit. scheme")
def test_cholesky_native_plan_equals_plain_numba():
    chol = load_example("cholesky")
    a = chol.spd_matrix(40, seed=3)
    plain = njit(chol.cholesky.py_func)
    native = mixjit(schemes=["native"])(chol.cholesky.py_func)
    for dtype in (np.float64, np.float32):
        x = a.astype(dtype)
        np.testing.assert_array_equal(native(x, 16), plain(x, 16))
    taken = [s for s in native.sites if s.taken]
    assert sorted(s.dtype for s in taken) == ["float32", "float64"]
    assert all(s.form == "c -= a @ b.T" and s.calls > 0 for s in taken)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:mixjit. scheme")
def test_kmeans_native_plan_equals_plain_numba():
    km = load_example("kmeans")
    X, C0 = km.blobs(200, 8, 4, seed=1)
    plain = njit(km.kmeans.py_func)
    native = mixjit(schemes=["native"])(km.kmeans.py_func)
    for dtype in (np.float64, np.float32):
        got, want = native(X.astype(dtype), C0.astype(dtype), 5), plain(X.astype(dtype), C0.astype(dtype), 5)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    (s64, s32) = sorted((s for s in native.sites if s.taken), key=lambda s: s.dtype, reverse=True)
    assert (s64.form, s64.calls, s32.calls) == ("a @ b.T", 5, 5)


def test_tiled_cholesky_has_four_dependent_sites_and_is_accurate():
    """The tuner benchmark's Cholesky: potrf -> trsm -> syrk -> gemm, each a taken site."""
    chol = load_example("cholesky_tiled")
    f = mixjit(tune="never")(chol.cholesky_tiled_py)
    a = chol.spd_matrix(48)
    for dtype, tol in ((np.float64, 1e-13), (np.float32, 1e-5)):
        L = f(a.astype(dtype), 16)
        assert np.linalg.norm(L - np.linalg.cholesky(a)) / np.linalg.norm(np.linalg.cholesky(a)) < tol
    dag = f.dag_for(*next(k for k in f.overloads if "float32" in str(k[0])))
    sites = sorted(dag.nodes)
    assert len(sites) == 4
    potrf, trsm, syrk, gemm_ = sites  # source order
    forward = {(u, v) for u, v, d in dag.edges(data=True) if not d.get("carried")}
    assert {(potrf, trsm), (trsm, syrk), (trsm, gemm_), (syrk, gemm_)} <= forward


def test_mlp_layers_form_a_chain_of_sites():
    mlp = load_example("mlp")
    f = mixjit(tune="never")(mlp.mlp_forward)
    args = mlp.network(32, 16)
    y64 = mlp.mlp_forward(*(x.astype(np.float64) for x in args))  # plain Python + NumPy in float64
    assert np.linalg.norm(f(*args) - y64) / np.linalg.norm(y64) < 1e-5
    a, b, c = sorted(f.dag.nodes)
    assert {(u, v) for u, v in f.dag.edges} == {(a, b), (b, c)}


def test_hpl_ai_lu_and_refinement_solve_the_system():
    """The LU without pivoting equals the textbook one, and FP64 refinement from float32 factors passes HPL."""
    hpl = load_example("hpl_ai")
    a, b = hpl.hpl_matrix(64, seed=2)
    lu = mixjit(tune="never")(hpl.lu)
    LU = lu(a, 16)
    L, U = np.tril(LU, -1) + np.eye(64), np.triu(LU)
    assert np.linalg.norm(L @ U - a) / np.linalg.norm(a) < 1e-14
    x, residuals = hpl.refine(a, b, lu(a.astype(np.float32), 16))
    assert residuals[0] > hpl.PASS_MARK > residuals[-1]
    assert hpl.scaled_residual(a, x, b) == residuals[-1]


@pytest.mark.parametrize("name", NAMES)
def test_each_example_runs_as_a_script_with_the_common_flags(name):
    done = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--help"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    for flag in ("--size", "--budget", "--target", "--dtype", "--seed", "--schemes"):
        assert flag in done.stdout


def test_a_bad_budget_is_refused_naming_the_flag():
    done = subprocess.run([sys.executable, str(EXAMPLES / "knn.py"), "--budget", "0"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "--budget" in done.stderr and "positive" in done.stderr
