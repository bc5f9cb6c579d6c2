"""A corpus of real Numba functions for the frontend tests, with what detect-gemm must find.

Each :class:`Case` is a function in Numba's nopython subset, the argument types to import it
for, the GEMM sites detect-gemm must create (in site order), the reason codes of the
candidates it must reject (in op order) and example arguments (``example(rng)``) to run it
with. Styles covered: ``@``, ``np.dot``, ``np.matmul``, ``.T`` / ``np.transpose`` /
``.transpose()``, fused in-place slice updates (dynamic and static subscripts), loops and loop
nests, float32 and float64, ``parallel=True`` with ``prange``, ``@njit`` helper callees (one
level and a chain three deep), unary operators (``-``, ``+``, ``~``, ``not``), negative slice
bounds and steps, tuples of arrays (arguments, results, subscripts), global arrays and scalars,
closures, published-style kernels (ridge regression, an LSTM layer, finite-element assembly,
point-cloud augmentation), and the candidates that must not match (1-D dot products, matrix-vector products,
complex dtypes, ``out=``). Numba does not type integer or mixed-dtype matrix products at all,
so those rejections are tested on hand-written IR instead.

Every case must run under ``@mixjit`` with the results of ``@njit`` (test_corpus_runs.py).
Importing is slow (Numba's type inference), so :func:`imported` compiles each case once per
process; :func:`fresh_module` parses a new copy of its IR for tests that transform it.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from numba import njit, prange, types
from numba.core.errors import NumbaPerformanceWarning

from mixjit.importer import ImportedModule, import_function
from mixjit.ir.parser import parse_module

F64 = types.Array(types.float64, 2, "C")
F32 = types.Array(types.float32, 2, "C")
V64 = types.Array(types.float64, 1, "C")
C128 = types.Array(types.complex128, 2, "C")
INT = types.int64
PAIR64 = types.UniTuple(F64, 2)
F64_3D = types.Array(types.float64, 3, "C")
I64_2D = types.Array(types.int64, 2, "C")
FLOAT = types.float64


@dataclass(frozen=True)
class Site:
    """An expected ``mix.gemm``: dtype, transposes, and (for fused updates) alpha/beta."""

    dtype: str
    trans_a: bool = False
    trans_b: bool = False
    alpha: float = 1.0
    beta: float = 0.0
    fused: bool = False


@dataclass(frozen=True)
class Case:
    fn: Callable
    argtypes: tuple
    sites: tuple[Site, ...] = ()
    rejected: tuple[str, ...] = ()
    example: Callable[[np.random.Generator], tuple] | None = None
    """Arguments of ``argtypes``' types and compatible shapes, from a random generator."""


# -- positive cases ----------------------------------------------------------------------------
def mm_at(A, B):
    return A @ B


def mm_dot(A, B):
    return np.dot(A, B)


def mm_matmul(A, B):
    return np.matmul(A, B)


def mm_transposes(A, B):
    X = A.T @ B
    Y = np.dot(A, np.transpose(B))
    Z = A.transpose() @ B.T
    return X + Y + Z


def update_sub(C, A, B, k):
    C[k:, :] -= A @ B
    return C


def update_add_static(C, A, B):
    C[:, 0:2] += np.dot(A, B.T)
    return C


def cholesky_blocked(A, nb):
    """Right-looking blocked Cholesky: returns lower-triangular L with L @ L.T == A."""
    n = A.shape[0]
    L = A.copy()
    for k in range(0, n, nb):
        e = min(k + nb, n)
        Lkk = np.linalg.cholesky(L[k:e, k:e])
        L[k:e, k:e] = Lkk
        if e < n:
            L[e:, k:e] = L[e:, k:e] @ np.linalg.inv(Lkk).T
            P = L[e:, k:e]
            L[e:, e:] -= P @ P.T
    for i in range(n - 1):
        L[i, i + 1:] = 0.0
    return L


def mlp3(X, W1, W2, W3):
    H1 = np.maximum(X @ W1, np.zeros_like(X[:, :1]))
    H2 = np.maximum(H1 @ W2, np.zeros_like(X[:, :1]))
    return H2 @ W3


def kmeans(X, C, iters):
    """Lloyd's k-means with the distance and centroid steps written as GEMMs; updates C."""
    n = X.shape[0]
    k = C.shape[0]
    for _ in range(iters):
        G = X @ C.T
        cc = np.empty(k)
        for j in range(k):
            cc[j] = np.dot(C[j], C[j])
        labels = np.empty(n, np.int64)
        counts = np.zeros(k)
        for i in range(n):
            labels[i] = np.argmin(cc - 2.0 * G[i])
            counts[labels[i]] += 1.0
        M = np.zeros((k, n))
        for i in range(n):
            M[labels[i], i] = 1.0
        S = M @ X
        for j in range(k):
            if counts[j] > 0:
                C[j] = S[j] / counts[j]
    return C


def power_nest(A, X, outer, inner):
    for _ in range(outer):
        for _ in range(inner):
            X = A @ X
        X = X / np.sqrt(np.sum(X * X))
    return X


@njit(parallel=True)
def blocks_prange(X, W, bs):
    nb = X.shape[0] // bs
    Y = np.empty((X.shape[0], W.shape[1]), X.dtype)
    for b in prange(nb):
        Y[b * bs:(b + 1) * bs, :] = X[b * bs:(b + 1) * bs, :] @ W
    return Y


@njit
def _helper_product(A, B):
    return A @ B


def uses_helper(A, B):
    return _helper_product(A, B) + 1.0


# -- constructs that once crashed the importer or the linker ---------------------------------
def unary_ops(A, B, k):
    """Every unary operator, negative slice bounds and negated calls (issue 7, item 1)."""
    P = -(A @ B)
    ny, nx = A[0, 0], A[0, 1]
    normal = np.array([ny, -nx])
    centred = A[:, :-k] + (-np.mean(A))
    flags = (~k, not k, +k)
    return P, normal, centred, flags


@njit
def _neg_helper(A, k):
    return -(A @ A)[:, :-k]


def unary_in_helper(A, k):
    return _neg_helper(A, k) + 1.0


def negative_slices(A, B, k):
    X = A[:-k, :] @ B[:, :-k]
    Y = A[:, :-2] @ B[:-2, :]
    Z = A[::-1, :] @ B[:, ::-2]
    return X, Y, Z


def tuple_of_arrays(pair):
    a, b = pair
    t = (a, b.T)
    return a @ b, b.T @ a.T, t[0] @ t[1]


_W_GLOBAL = np.linspace(-1.0, 1.0, 16).reshape(4, 4)
_SCALE = 0.5


def uses_globals(A):
    """A global array (Numba freezes it into a read-only constant) and a global scalar."""
    return (A @ _W_GLOBAL) * _SCALE - np.dot(_W_GLOBAL, A.T).T


def _make_closure(W, shift):
    def closure(A):
        return _helper_product(A, W) + shift * (A @ W.T)

    return closure


closure_over_array = _make_closure(np.linspace(0.0, 1.0, 16).reshape(4, 4), 2.0)


@njit
def _chain3(A, B):
    return A @ B


@njit
def _chain2(A, B):
    return _chain3(A, B) @ B.T


@njit
def _chain1(A, B):
    return _chain2(A, B) - A @ B


def helper_chain(A, B):
    return _chain1(A, B) @ B + A @ B


# -- published-style scientific kernels (ridge regression, RNN, finite elements, point clouds) --
def ridge(X, Y, lam):
    """Ridge regression by the normal equations, with its residual norm."""
    d = X.shape[1]
    G = X.T @ X + lam * np.eye(d)
    W = np.linalg.solve(G, X.T @ Y)
    r = Y - X @ W
    return W, np.sqrt(np.sum(r * r)) / -(-1.0)  # noqa: B002 (a double negation the importer must keep)


@njit
def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm(xs, h0, c0, Wx, Wh, b):
    """An LSTM layer over T steps (gates sliced from one GEMM pair, negative bounds included)."""
    T = xs.shape[0]
    H = h0.shape[1]
    h, c = h0.copy(), c0.copy()
    out = np.empty((T, h0.shape[0], H))
    for t in range(T):
        gates = xs[t] @ Wx + h @ Wh + b
        i = _sigmoid(gates[:, :H])
        f = _sigmoid(gates[:, H:2 * H])
        o = _sigmoid(gates[:, 2 * H:3 * H])
        g = np.tanh(gates[:, -H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        out[t] = h
    return out, (h, c)


def fem_assemble(nodes, elems, D):
    """Global stiffness matrix of linear triangles (plane elasticity): Ke = B^T D B * area."""
    n = nodes.shape[0]
    K = np.zeros((2 * n, 2 * n))
    for e in range(elems.shape[0]):
        i, j, k = elems[e, 0], elems[e, 1], elems[e, 2]
        x1, y1 = nodes[i, 0], nodes[i, 1]
        x2, y2 = nodes[j, 0], nodes[j, 1]
        x3, y3 = nodes[k, 0], nodes[k, 1]
        area = 0.5 * abs((x2 - x1) * (y3 - y1) - (x3 - x1) * (y2 - y1))
        b = np.array([y2 - y3, y3 - y1, y1 - y2])
        cc = np.array([x3 - x2, x1 - x3, x2 - x1])
        B = np.zeros((3, 6))
        for a in range(3):
            B[0, 2 * a] = b[a]
            B[1, 2 * a + 1] = cc[a]
            B[2, 2 * a] = cc[a]
            B[2, 2 * a + 1] = b[a]
        B /= 2.0 * area
        Ke = B.T @ D @ B * area
        dofs = np.array([2 * i, 2 * i + 1, 2 * j, 2 * j + 1, 2 * k, 2 * k + 1])
        for a in range(6):
            for q in range(6):
                K[dofs[a], dofs[q]] += Ke[a, q]
    return K


def augment(pts, theta, scale, shift):
    """Point-cloud augmentation: rotate, scale, shift, flip, centre, a 2-D normal."""
    c, s = np.cos(theta), np.sin(theta)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    out = scale * (pts @ R.T) + shift
    flipped = out[::-1, :]
    centred = out - out.sum(axis=0) / out.shape[0]
    ny, nx = centred[0, 1], centred[0, 0]
    normal = np.array([ny, -nx])
    return out, flipped, centred[:, :-1], normal, ~np.int64(3) < 0, not theta


# -- negative cases ----------------------------------------------------------------------------
def dot_1d(x, y):
    return np.dot(x, y) + x @ y


def matvec(A, x):
    return A @ x + np.dot(x, A)


def complex_mm(A, B):
    return np.dot(A, B)


def complex_conj_t(W, X):
    return np.conj(W).T @ X + W.conj().T @ X  # conjugations stay Numba's, the transposes fold


def dot_out(A, B, C):
    np.dot(A, B, C)
    return C


def _arrays(rng, *shapes, dtype=np.float64):
    return tuple(rng.standard_normal(shape).astype(dtype) for shape in shapes)


def _spd(rng, n):
    M = rng.standard_normal((n, n))
    return M @ M.T + n * np.eye(n)


f64 = Site("f64")
CASES: dict[str, Case] = {
    "mm_at": Case(mm_at, (F64, F64), (f64,), example=lambda r: _arrays(r, (5, 4), (4, 3))),
    "mm_dot": Case(mm_dot, (F32, F32), (Site("f32"),), example=lambda r: _arrays(r, (5, 4), (4, 3), dtype=np.float32)),
    "mm_matmul": Case(mm_matmul, (F64, F64), (f64,), example=lambda r: _arrays(r, (5, 4), (4, 3))),
    "mm_transposes": Case(
        mm_transposes, (F64, F64),
        (Site("f64", trans_a=True), Site("f64", trans_b=True), Site("f64", trans_a=True, trans_b=True)),
        example=lambda r: _arrays(r, (4, 4), (4, 4)),
    ),
    "update_sub": Case(update_sub, (F64, F64, F64, INT), (Site("f64", alpha=-1.0, beta=1.0, fused=True),),
                       example=lambda r: _arrays(r, (6, 5), (4, 3), (3, 5)) + (2,)),
    "update_add_static": Case(
        update_add_static, (F32, F32, F32), (Site("f32", trans_b=True, alpha=1.0, beta=1.0, fused=True),),
        example=lambda r: _arrays(r, (4, 5), (4, 3), (2, 3), dtype=np.float32),
    ),
    "cholesky_blocked": Case(
        cholesky_blocked, (F64, INT),
        (Site("f64", trans_b=True), Site("f64", trans_b=True, alpha=-1.0, beta=1.0, fused=True)),
        example=lambda r: (_spd(r, 8), 3),
    ),
    "mlp3": Case(mlp3, (F32, F32, F32, F32), (Site("f32"),) * 3,
                 example=lambda r: _arrays(r, (5, 4), (4, 4), (4, 4), (4, 3), dtype=np.float32)),
    "kmeans": Case(kmeans, (F64, F64, INT), (Site("f64", trans_b=True), f64), rejected=("dot-1d",),
                   example=lambda r: (lambda X: (X, X[:3].copy(), 2))(r.standard_normal((10, 3)))),
    "power_nest": Case(power_nest, (F64, F64, INT, INT), (f64,),
                       example=lambda r: _arrays(r, (4, 4), (4, 2)) + (2, 2)),
    "blocks_prange": Case(blocks_prange, (F32, F32, INT), (Site("f32"),),
                          example=lambda r: _arrays(r, (8, 3), (3, 2), dtype=np.float32) + (2,)),
    "uses_helper": Case(uses_helper, (F64, F64), (f64,), example=lambda r: _arrays(r, (3, 4), (4, 2))),
    "unary_ops": Case(unary_ops, (F64, F64, INT), (f64,), example=lambda r: _arrays(r, (4, 3), (3, 5)) + (1,)),
    "unary_in_helper": Case(unary_in_helper, (F64, INT), (f64,), example=lambda r: _arrays(r, (4, 4)) + (2,)),
    "negative_slices": Case(negative_slices, (F64, F64, INT), (f64,) * 3,
                            example=lambda r: _arrays(r, (5, 6), (6, 5)) + (1,)),
    "tuple_of_arrays": Case(tuple_of_arrays, (PAIR64,), (f64, Site("f64", trans_a=True, trans_b=True), f64),
                            example=lambda r: (_arrays(r, (4, 4), (4, 4)),)),
    "uses_globals": Case(uses_globals, (F64,), (f64, Site("f64", trans_b=True)),
                         example=lambda r: _arrays(r, (3, 4))),
    "closure_over_array": Case(closure_over_array, (F64,), (Site("f64", trans_b=True), f64),
                               example=lambda r: _arrays(r, (3, 4))),
    "helper_chain": Case(helper_chain, (F64, F64), (f64, f64, f64, Site("f64", trans_b=True), f64), example=lambda r: _arrays(r, (4, 4), (4, 4))),
    "ridge": Case(ridge, (F64, F64, FLOAT), (Site("f64", trans_a=True), Site("f64", trans_a=True), f64),
                  example=lambda r: _arrays(r, (20, 4), (20, 2)) + (0.1,)),
    "lstm": Case(lstm, (F64_3D, F64, F64, F64, F64, V64), (f64, f64),
                 example=lambda r: _arrays(r, (5, 3, 4)) + (np.zeros((3, 6)), np.zeros((3, 6)))
                 + _arrays(r, (4, 24), (6, 24), (24,))),
    "fem_assemble": Case(fem_assemble, (F64, I64_2D, F64), (Site("f64", trans_a=True), f64),
                         example=lambda r: (r.random((6, 2)), np.array([[0, 1, 2], [1, 3, 2], [2, 3, 4], [3, 5, 4]]),
                                            np.eye(3))),
    "augment": Case(augment, (F64, FLOAT, FLOAT, V64), (Site("f64", trans_b=True),),
                    example=lambda r: _arrays(r, (7, 3)) + (0.3, 1.5) + _arrays(r, (3,))),
    "dot_1d": Case(dot_1d, (V64, V64), rejected=("dot-1d", "dot-1d"), example=lambda r: _arrays(r, (5,), (5,))),
    "matvec": Case(matvec, (F64, V64), rejected=("matrix-vector", "matrix-vector"),
                   example=lambda r: _arrays(r, (4, 4), (4,))),
    "complex_mm": Case(complex_mm, (C128, C128), (Site("complex<f64>"),),
                       example=lambda r: tuple(x + 1j * x for x in _arrays(r, (3, 3), (3, 3)))),
    "complex_conj_t": Case(complex_conj_t, (C128, C128), (Site("complex<f64>", trans_a=True),) * 2,
                           example=lambda r: tuple(x - 2j * x[::-1] for x in _arrays(r, (4, 3), (4, 2)))),
    "dot_out": Case(dot_out, (F64, F64, F64), rejected=("out-argument",),
                    example=lambda r: _arrays(r, (3, 4), (4, 2)) + (np.zeros((3, 2)),)),
}


@functools.cache
def imported(name: str) -> ImportedModule:
    """The case imported once per process (with its helpers); do not transform its module."""
    case = CASES[name]
    with warnings.catch_warnings():  # '@' on non-contiguous views: Numba's performance hint
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        return import_function(case.fn, *case.argtypes)


def fresh_module(name: str) -> Any:
    """A new copy of the case's imported module, safe to transform."""
    return parse_module(imported(name).text(), f"{name}.mix")
