"""The BLAS calls of the built-in executors: ``native`` (Numba's ``numba_xxgemm`` / gemv / dot
helpers, exactly what ``np.dot`` calls, with ``C = alpha * P + beta * C`` through a temporary
where BLAS cannot write C) and ``reference`` (the float64 product of upcast operands, rounded
once), with the views over foreign memory, layouts and overlap checks they need."""

from __future__ import annotations

import numpy as np
from llvmlite import ir as llir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.np.arrayobj import make_array, populate_array

from mixjit.entry.abi import (
    ENTRY_BLAS_FAILED,
    ENTRY_OK,
    ENTRY_TOO_LARGE,
)
from mixjit.entry.tables import (
    _address,
)
from mixjit.runtime.jit.blas import blas_kind, xxgemm, zero_of


@intrinsic
def _view(typingctx, ptr, rows, cols, s0, s1, dtype):
    """A rows x cols array of ``dtype`` over foreign memory at ``ptr`` with byte
    strides (s0, s1): no owner, no copy."""
    arrty = types.Array(dtype.dtype, 2, "A")
    sig = arrty(ptr, rows, cols, s0, s1, dtype)

    def codegen(context, builder, sig, args):
        data, nrows, ncols, st0, st1, _ = args
        elty = context.get_data_type(arrty.dtype)
        ary = make_array(arrty)(context, builder)
        populate_array(
            ary,
            data=builder.bitcast(data, elty.as_pointer()),
            shape=cgutils.pack_array(builder, [nrows, ncols]),
            strides=cgutils.pack_array(builder, [st0, st1]),
            itemsize=context.get_constant(types.intp, context.get_abi_sizeof(elty)),
            meminfo=None,
        )
        return ary._getvalue()

    return sig, codegen


@intrinsic
def _xxdot(typingctx, k, x, y, out):
    """``out[0, 0] = x . y`` over k unit-stride elements by BLAS dot through Numba's
    ``numba_xxdot`` helper: what ``np.dot`` runs in Numba for a (1, k) @ (k, 1)
    product. Returns the helper's status (0 = done)."""
    sig = types.int32(k, x, y, out)

    def codegen(context, builder, sig, args):
        dtype = sig.args[1].dtype
        xv, yv, ov = (make_array(t)(context, builder, v) for t, v in zip(sig.args[1:], args[1:]))
        intp = context.get_value_type(types.intp)
        i8 = llir.IntType(8)
        voidp = i8.as_pointer()
        fnty = llir.FunctionType(llir.IntType(32), [i8, i8, intp, voidp, voidp, voidp])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxdot")
        n = context.cast(builder, args[0], sig.args[0], types.intp)
        pointers = [builder.bitcast(v.data, voidp) for v in (xv, yv, ov)]
        return builder.call(fn, [blas_kind(dtype), i8(0), n, *pointers])

    return sig, codegen


@intrinsic
def _xxgemv(typingctx, trans, rows, cols, a, lda, x, y):
    """``y = op(a) @ x`` (alpha 1, beta 0) by BLAS gemv through Numba's
    ``numba_xxgemv`` helper, in its column-major terms: ``a`` is rows x cols
    stored column by column with leading dimension ``lda``, op transposes it when
    ``trans`` != 0; x and y have unit stride. Returns the helper's status."""
    sig = types.int32(trans, rows, cols, a, lda, x, y)

    def codegen(context, builder, sig, args):
        dtype = sig.args[3].dtype
        av, xv, yv = (make_array(sig.args[i])(context, builder, args[i]) for i in (3, 5, 6))
        intp = context.get_value_type(types.intp)
        i8 = llir.IntType(8)
        voidp = i8.as_pointer()
        fnty = llir.FunctionType(
            llir.IntType(32), [i8, i8, intp, intp, voidp, voidp, intp, voidp, voidp, voidp])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemv")
        is_t = builder.icmp_signed("!=", args[0], args[0].type(0))
        trans_c = builder.select(is_t, i8(ord("t")), i8(ord("n")))

        def slot(value):
            v = context.get_constant_generic(builder, dtype, value)
            return builder.bitcast(cgutils.alloca_once_value(builder, v), voidp)

        r, c, ld = (context.cast(builder, args[i], sig.args[i], types.intp) for i in (1, 2, 4))
        return builder.call(fn, [
            blas_kind(dtype), trans_c, r, c, slot(1.0 + zero_of(dtype)), builder.bitcast(av.data, voidp), ld,
            builder.bitcast(xv.data, voidp), slot(zero_of(dtype)), builder.bitcast(yv.data, voidp),
        ])

    return sig, codegen


_INT_MAX = 2**31 - 1


@njit
def _blas_layout(rows, cols, s0, s1, isz):
    """How BLAS can read a rows x cols operand with byte strides (s0, s1):
    (0, ld) if stored row by row, (1, ld) if column by column, (-1, 0) if neither
    (negative or non-unit strides: the caller copies it)."""
    if (cols <= 1 or s1 == isz) and (rows <= 1 or (s0 > 0 and s0 % isz == 0)):
        ld = s0 // isz if rows > 1 else max(1, cols)
        if ld >= max(1, cols):
            return 0, ld
    if (rows <= 1 or s0 == isz) and (cols <= 1 or (s1 > 0 and s1 % isz == 0)):
        ld = s1 // isz if cols > 1 else max(1, rows)
        if ld >= max(1, rows):
            return 1, ld
    return -1, 0


# Element loops instead of slice assignment and np.ascontiguousarray: Numba's
# slice-setitem machinery alone costs seconds of compile time.
@njit
def _copy_into(dst, src):
    for i in range(dst.shape[0]):
        for j in range(dst.shape[1]):
            dst[i, j] = src[i, j]


@njit
def _copy_c(x):
    """A C-ordered copy of a 2-D array."""
    out = np.empty(x.shape, x.dtype)
    _copy_into(out, x)
    return out


@njit
def _extent(p, rows, cols, s0, s1, isz):
    """[lo, hi) byte range spanned by a rows x cols operand at address p."""
    lo = p + min(0, (rows - 1) * s0) + min(0, (cols - 1) * s1)
    hi = p + max(0, (rows - 1) * s0) + max(0, (cols - 1) * s1) + isz
    return lo, hi


@njit
def _may_overlap(pc, m, n, cs0, cs1, px, rows, cols, xs0, xs1, isz):
    """False only when the C operand (m x n) and X (rows x cols) share no byte.

    Exact for disjoint address ranges and for two row-major (or two
    column-major) views with one leading stride, such as two column blocks of
    one matrix (``A[i:, :i]`` and ``A[i:, i:]``); conservative otherwise."""
    clo, chi = _extent(pc, m, n, cs0, cs1, isz)
    xlo, xhi = _extent(px, rows, cols, xs0, xs1, isz)
    if chi <= xlo or xhi <= clo:
        return False
    if cs1 == isz and xs1 == isz and cs0 == xs0 and cs0 > 0:
        width_c, width_x, ld = n * isz, cols * isz, cs0
    elif cs0 == isz and xs0 == isz and cs1 == xs1 and cs1 > 0:
        width_c, width_x, ld = m * isz, rows * isz, cs1
    else:
        return True
    d = (px - pc) % ld  # where X's lines start inside C's line period
    return not (width_c <= d and d + width_x <= ld)


@njit
def _native(dt, isz, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
    """C = alpha * A @ B + beta * C over foreign memory by BLAS; an ENTRY_* code."""
    if max(m, n, k) > _INT_MAX:
        return ENTRY_TOO_LARGE
    cv = _view(c, m, n, cs0, cs1, dt)
    if m == 0 or n == 0:
        return ENTRY_OK
    if k == 0:
        _scale(cv, beta)
        return ENTRY_OK
    av = _view(a, m, k, as0, as1, dt)
    bv = _view(b, k, n, bs0, bs1, dt)
    ta, lda = _blas_layout(m, k, as0, as1, isz)
    if ta < 0:
        av = _copy_c(av)
        ta, lda = 0, k
    tb, ldb = _blas_layout(k, n, bs0, bs1, isz)
    if tb < 0:
        bv = _copy_c(bv)
        tb, ldb = 0, n
    tc, ldc = _blas_layout(m, n, cs0, cs1, isz)
    if max(lda, ldb, ldc) > _INT_MAX:
        return ENTRY_TOO_LARGE
    if m == 1 or n == 1:
        status = _native_vector(m, n, k, av, ta, lda, as1 == isz, bv, tb, ldb, bs0 == isz, cv, alpha, beta)
        return ENTRY_OK if status == 0 else ENTRY_BLAS_FAILED
    pc = _address(c)
    direct = (
        tc == 0
        and beta == 0.0
        and not _may_overlap(pc, m, n, cs0, cs1, _address(a), m, k, as0, as1, isz)
        and not _may_overlap(pc, m, n, cs0, cs1, _address(b), k, n, bs0, bs1, isz)
    )
    if direct:
        status = xxgemm(av, bv, cv, ta, lda, tb, ldb, ldc, alpha, 0.0)
    else:
        tmp = np.empty((m, n), dt)
        status = xxgemm(av, bv, tmp, ta, lda, tb, ldb, n, 1.0, 0.0)
        if status == 0:
            _axpby(cv, tmp, alpha, beta)
    return ENTRY_OK if status == 0 else ENTRY_BLAS_FAILED


@njit
def _native_vector(m, n, k, a, ta, lda, a_row_unit, b, tb, ldb, b_col_unit, c, alpha, beta):
    """A product with one row (m == 1) or one column (n == 1) as Numba's ``np.dot``
    computes it (numba/np/linalg.py, ``dot_3_mm``): BLAS dot for (1, k) @ (k, 1),
    gemv otherwise (a BLAS gemm of the same operands may round differently), into a
    temporary; then ``C = alpha * T + beta * C``. A row-by-row operand is read as
    Numba reads a C-ordered one, column by column as an F-ordered one; a vector
    operand without unit stride is copied first, as Numba does."""
    tmp = np.empty((m, n), c.dtype)
    if n == 1:
        y = b if (b_col_unit or k == 1) else _copy_c(b)
        if m == 1:
            x = a if (a_row_unit or k == 1) else _copy_c(a)
            status = _xxdot(k, x, y, tmp)
        elif ta == 0:
            status = _xxgemv(1, k, m, a, lda, y, tmp)
        else:
            status = _xxgemv(0, m, k, a, lda, y, tmp)
    else:
        x = a if (a_row_unit or k == 1) else _copy_c(a)
        if tb == 0:
            status = _xxgemv(0, n, k, b, ldb, x, tmp)
        else:
            status = _xxgemv(1, k, n, b, ldb, x, tmp)
    if status == 0:
        _axpby(c, tmp, alpha, beta)
    return status


@njit
def _axpby(c, t, alpha, beta):
    """c = alpha * t + beta * c element by element, in c's dtype. beta == 0
    overwrites c (NaNs in c do not survive, as in BLAS). With alpha = -1 and
    beta = 1 this is exactly Numba's ``c -= t`` ((-t) + c == c - t in IEEE)."""
    av = c.dtype.type(alpha)
    bv = c.dtype.type(beta)
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            if beta == 0.0:
                c[i, j] = av * t[i, j]
            else:
                c[i, j] = av * t[i, j] + bv * c[i, j]


@njit
def _scale(c, beta):
    """c = beta * c, or zeros when beta == 0 (an empty product, k == 0)."""
    bv = c.dtype.type(beta)
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            c[i, j] = bv * c[i, j] if beta != 0.0 else c.dtype.type(0.0)


def _wide_zeros(x, rows, cols):
    """A new zeroed rows x cols array of ``x``'s widest kind: float64, or complex128 for a complex ``x``.
    Compiled code only (an overload)."""
    raise NotImplementedError("_wide_zeros is called from compiled code only")


@overload(_wide_zeros)
def _wide_zeros_impl(x, rows, cols):
    wide = np.complex128 if isinstance(x.dtype, types.Complex) else np.float64
    return lambda x, rows, cols: np.zeros((rows, cols), wide)


@njit
def _upcast(x):
    """A C-ordered float64 (complex128) copy of a 2-D float (complex) array."""
    out = _wide_zeros(x, x.shape[0], x.shape[1])
    _copy_into(out, x)
    return out


@njit
def _reference(dt, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
    """C = alpha * P + beta * C with P the float64 (complex128) BLAS product of the upcast
    operands, the whole right-hand side in float64 (complex128), rounded once to C's dtype."""
    if max(m, n, k) > _INT_MAX:
        return ENTRY_TOO_LARGE
    cv = _view(c, m, n, cs0, cs1, dt)
    if m == 0 or n == 0:
        return ENTRY_OK
    tmp = _wide_zeros(cv, m, n)
    if k > 0:
        a64 = _upcast(_view(a, m, k, as0, as1, dt))
        b64 = _upcast(_view(b, k, n, bs0, bs1, dt))
        if xxgemm(a64, b64, tmp, 0, k, 0, n, n, 1.0, 0.0) != 0:
            return ENTRY_BLAS_FAILED
    for i in range(m):
        for j in range(n):
            if beta == 0.0:
                cv[i, j] = dt(alpha * tmp[i, j])
            else:
                cv[i, j] = dt(alpha * tmp[i, j] + beta * cv[i, j])  # beta float64: cv widens exactly
    return ENTRY_OK
