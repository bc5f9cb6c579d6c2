"""Arrays for per-call scratch without a heap allocation, for compiled kernels.

A small GEMM costs a few microseconds, and every ``np.empty`` in its call adds an NRT
allocation and release (tens of nanoseconds each), and every ``reshape`` of a
scratch buffer adds seconds of compile time (its error path formats a message).
These intrinsics cost neither:

* :func:`stack_array` ``(count, dtype)``: a 1-D array of ``count`` elements (an
  integer constant) in the calling function's stack frame. It lives as long as that
  call: pass it to callees, never return it or keep it beyond the call.
* :func:`carve` ``(buf, offset, rows, cols)``: the C-ordered ``rows x cols`` view of
  ``buf[offset : offset + rows * cols]`` (a 1-D C-ordered array); it keeps ``buf``
  alive like a slice does.
* :func:`any_layout` ``(x)``: the same 2-D array typed with layout ``"A"`` (any
  strides), so that a kernel called with a C-ordered temporary in one place and a
  strided view in another compiles once.
* :func:`c_layout` ``(x)``: the same array typed with layout ``"C"``, for a caller
  that has checked (:func:`is_c_contiguous`) that a strided-typed array (a site's
  operand view) is C-ordered: loops over it then vectorise.
"""

from __future__ import annotations

from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, register_jitable
from numba.np.arrayobj import make_array, populate_array

__all__ = ["stack_array", "carve", "any_layout", "c_layout", "is_c_contiguous"]


@intrinsic
def stack_array(typingctx, count, dtype):
    """A 1-D array of ``count`` (a compile-time integer) ``dtype`` elements on the caller's
    stack (uninitialised; allocated once in the function's entry block, so a loop or an
    inlined call does not grow the stack)."""
    if not isinstance(count, types.IntegerLiteral) or not isinstance(dtype, (types.NumberClass, types.DType)):
        return None  # Numba retries with the literal value of a constant count
    arrty = types.Array(dtype.dtype, 1, "C")

    def codegen(context, builder, sig, args):
        n = count.literal_value
        elty = context.get_data_type(arrty.dtype)
        data = cgutils.alloca_once(builder, elty, size=n)
        itemsize = context.get_abi_sizeof(elty)
        ary = make_array(arrty)(context, builder)
        populate_array(
            ary,
            data=data,
            shape=cgutils.pack_array(builder, [context.get_constant(types.intp, n)]),
            strides=cgutils.pack_array(builder, [context.get_constant(types.intp, itemsize)]),
            itemsize=context.get_constant(types.intp, itemsize),
            meminfo=None,
        )
        return ary._getvalue()

    return arrty(count, dtype), codegen


@intrinsic
def carve(typingctx, buf, offset, rows, cols):
    """The C-ordered ``rows x cols`` view of ``buf[offset : offset + rows * cols]``
    (``buf`` 1-D and C-ordered; the caller keeps the range inside it)."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"):
        raise TypeError(f"carve: the buffer must be a 1-D C-ordered array, not {buf}")
    arrty = types.Array(buf.dtype, 2, "C")

    def codegen(context, builder, sig, args):
        src = make_array(sig.args[0])(context, builder, args[0])
        intp = context.get_value_type(types.intp)
        off, nrows, ncols = (context.cast(builder, v, t, types.intp) for v, t in zip(args[1:], sig.args[1:]))
        itemsize = context.get_abi_sizeof(context.get_data_type(buf.dtype))
        out = make_array(arrty)(context, builder)
        populate_array(
            out,
            data=builder.gep(src.data, [off]),
            shape=cgutils.pack_array(builder, [nrows, ncols]),
            strides=cgutils.pack_array(builder, [builder.mul(ncols, intp(itemsize)), intp(itemsize)]),
            itemsize=context.get_constant(types.intp, itemsize),
            meminfo=src.meminfo,
        )
        return impl_ret_borrowed(context, builder, arrty, out._getvalue())

    return arrty(buf, offset, rows, cols), codegen


@intrinsic
def any_layout(typingctx, x):
    """``x`` (an array) typed with layout ``"A"``: the same data, strides and owner."""
    if not isinstance(x, types.Array):
        raise TypeError(f"any_layout: expected an array, not {x}")
    arrty = x.copy(layout="A")

    def codegen(context, builder, sig, args):
        return impl_ret_borrowed(context, builder, arrty, args[0])

    return arrty(x), codegen


@intrinsic
def c_layout(typingctx, x):
    """``x`` (an array) typed with layout ``"C"``: the same data, shape, strides and
    owner. Only for an array the caller has checked to be C-ordered
    (:func:`is_c_contiguous`): code compiled for layout "C" assumes unit strides."""
    if not isinstance(x, types.Array):
        raise TypeError(f"c_layout: expected an array, not {x}")
    arrty = x.copy(layout="C")

    def codegen(context, builder, sig, args):
        return impl_ret_borrowed(context, builder, arrty, args[0])

    return arrty(x), codegen


@register_jitable
def is_c_contiguous(x) -> bool:
    """Is the 2-D array ``x`` C-ordered (rows of unit-stride elements, one after the
    other; a dimension of length 1 has any stride)?"""
    r, c = x.shape
    return (c <= 1 or x.strides[1] == x.itemsize) and (r <= 1 or x.strides[0] == c * x.itemsize)
