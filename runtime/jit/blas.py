"""``acc += x @ y.T`` in float64 through BLAS's dgemm with ``beta = 1``, from compiled code.

``np.dot(x, y.T, out)`` in Numba always writes ``out`` (``beta = 0``), so summing products
in parts (the MixPert wide path's K-panels, runtime/mixpert/paths/wide.py) would need a
second array and a pass adding it: memory and time this spares. It calls the same BLAS
entry Numba's ``np.dot`` calls (``numba_xxgemm`` of Numba's helper library, SciPy's BLAS),
so the dgemm is the one ``np.dot`` runs.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.linalg import ensure_blas

from mixjit.runtime.jit.cache import cached_njit

__all__ = ["gemm_accumulate"]

_CHAR = ir.IntType(8)


@intrinsic
def _dgemm_nt_acc(typingctx, x, y, acc):
    """``numba_xxgemm('d', 't', 'n', n, r, k, 1, y, k, x, k, 1, acc, n)``: row-major
    ``acc (r x n) += x (r x k) @ y (n x k).T`` read as column-major ``accᵀ += y xᵀ``."""
    ensure_blas()
    f64 = types.Array(types.float64, 2, "C")
    if not all(isinstance(t, types.Array) and t.dtype == types.float64 and t.ndim == 2 and t.layout == "C"
               for t in (x, y, acc)):
        return None
    sig = types.int32(x, y, acc)

    def codegen(context, builder, signature, args):
        xa, ya, ca = (context.make_array(f64)(context, builder, v) for v in args)
        intp = context.get_value_type(types.intp)
        void_p = cgutils.voidptr_t
        fnty = ir.FunctionType(ir.IntType(32), [_CHAR, _CHAR, _CHAR, intp, intp, intp, void_p, void_p, intp,
                                                void_p, intp, void_p, void_p, intp])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")
        r, k = cgutils.unpack_tuple(builder, xa.shape, 2)
        n = cgutils.unpack_tuple(builder, ya.shape, 2)[0]
        one = cgutils.alloca_once_value(builder, ir.Constant(ir.DoubleType(), 1.0))
        return builder.call(fn, (
            ir.Constant(_CHAR, ord("d")), ir.Constant(_CHAR, ord("t")), ir.Constant(_CHAR, ord("n")),
            n, r, k, builder.bitcast(one, void_p), builder.bitcast(ya.data, void_p), k,
            builder.bitcast(xa.data, void_p), k, builder.bitcast(one, void_p), builder.bitcast(ca.data, void_p), n))

    return sig, codegen


@cached_njit(nogil=True)
def gemm_accumulate(x, y, acc) -> None:
    """``acc += x @ y.T`` (float64, C-contiguous: ``x`` r x k, ``y`` n x k, ``acc`` r x n)
    by one dgemm with ``beta = 1``. Raises where the shapes disagree or BLAS fails."""
    if x.shape[1] != y.shape[1] or acc.shape[0] != x.shape[0] or acc.shape[1] != y.shape[0]:
        raise ValueError("gemm_accumulate: shapes disagree")
    if x.shape[0] == 0 or y.shape[0] == 0 or x.shape[1] == 0:
        return
    if _dgemm_nt_acc(x, y, acc) != 0:
        raise RuntimeError("gemm_accumulate: BLAS dgemm failed")
