"""The compiled BLAS gemm call: :func:`xxgemm`, ``c = alpha * a @ b + beta * c`` through the BLAS
entry Numba's ``np.dot`` calls (``numba_xxgemm`` of Numba's helper library, SciPy's BLAS), so the
gemm is the one ``np.dot`` runs, with the transposition flags, leading dimensions and ``beta``
that ``np.dot`` does not expose.

Its users: the entry's built-in ``native`` and ``reference`` executors (mixjit/entry/blas.py,
``beta = 0``) and :func:`gemm_accumulate` (``beta = 1``): summing products in parts (the MixPert
wide path's K-panels, runtime/mixpert/paths/wide.py) with ``np.dot(x, y.T, out)`` would need a
second array and a pass adding it, memory and time this spares.
"""

from __future__ import annotations

from llvmlite import ir as llir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array
from numba.np.linalg import ensure_blas

from mixjit.runtime.jit.cache import cached_njit

__all__ = ["xxgemm", "gemm_accumulate", "blas_kind", "zero_of"]

_KINDS = {types.float64: "d", types.float32: "s", types.complex128: "z", types.complex64: "c"}


def blas_kind(dtype):
    """Numba's BLAS helpers' kind character for a float or complex dtype, as an LLVM i8."""
    return llir.IntType(8)(ord(_KINDS[dtype]))


def zero_of(dtype):
    """0 as a Python value of ``dtype``'s kind (a constant of a complex type needs a complex)."""
    return 0j if isinstance(dtype, types.Complex) else 0.0


@intrinsic
def xxgemm(typingctx, a, b, c, trans_a, ld_a, trans_b, ld_b, ld_c, alpha, beta):
    """BLAS ``c = alpha * a @ b + beta * c`` on row-major-addressed 2-D arrays of one float or
    complex dtype through Numba's ``numba_xxgemm`` helper (column-major BLAS computing
    ``c^T = b^T a^T``). ``trans_x`` is 0 when x is stored row by row (pass x^T as is), 1 when
    stored column by column; ``ld_x`` the matching leading dimension in elements. ``beta = 0``
    never reads ``c``. Returns BLAS's status (0 = done)."""
    ensure_blas()
    if not all(isinstance(t, types.Array) and t.ndim == 2 and t.dtype in _KINDS for t in (a, b, c)) \
            or len({a.dtype, b.dtype, c.dtype}) != 1:
        return None
    sig = types.int32(a, b, c, trans_a, ld_a, trans_b, ld_b, ld_c, alpha, beta)

    def codegen(context, builder, sig, args):
        dtype = sig.args[0].dtype
        av, bv, cv = (make_array(t)(context, builder, v) for t, v in zip(sig.args[:3], args[:3]))
        ta, lda, tb, ldb, ldc, alpha_arg, beta_arg = args[3:]
        m, k = cgutils.unpack_tuple(builder, av.shape)
        n = cgutils.unpack_tuple(builder, bv.shape)[1]
        i8, voidp = llir.IntType(8), llir.IntType(8).as_pointer()
        intp = context.get_value_type(types.intp)
        fnty = llir.FunctionType(
            llir.IntType(32),
            [i8, i8, i8, intp, intp, intp, voidp, voidp, intp, voidp, intp, voidp, voidp, intp],
        )
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")

        def trans_char(flag):
            is_t = builder.icmp_signed("!=", flag, flag.type(0))
            return builder.select(is_t, i8(ord("t")), i8(ord("n")))

        def slot(value, ty):
            return builder.bitcast(cgutils.alloca_once_value(builder, context.cast(builder, value, ty, dtype)), voidp)

        return builder.call(fn, [
            blas_kind(dtype), trans_char(tb), trans_char(ta), n, m, k,
            slot(alpha_arg, sig.args[-2]), builder.bitcast(bv.data, voidp), ldb,
            builder.bitcast(av.data, voidp), lda,
            slot(beta_arg, sig.args[-1]), builder.bitcast(cv.data, voidp), ldc,
        ])

    return sig, codegen


@cached_njit(nogil=True)
def gemm_accumulate(x, y, acc) -> None:
    """``acc += x @ y.T`` (float64, C-contiguous: ``x`` r x k, ``y`` n x k, ``acc`` r x n)
    by one dgemm with ``beta = 1``. Raises where the shapes disagree or BLAS fails."""
    if x.shape[1] != y.shape[1] or acc.shape[0] != x.shape[0] or acc.shape[1] != y.shape[0]:
        raise ValueError("gemm_accumulate: shapes disagree")
    if x.shape[0] == 0 or y.shape[0] == 0 or x.shape[1] == 0:
        return
    k = x.shape[1]
    if xxgemm(x, y.T, acc, 0, k, 1, k, acc.shape[1], 1.0, 1.0) != 0:
        raise RuntimeError("gemm_accumulate: BLAS dgemm failed")
