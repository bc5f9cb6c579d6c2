"""The MixPert executor's paths compiled on demand: trampolines from compiled code into
Python, which calls each path's own (lazily compiled, disk-cached) dispatcher.

Numba compiles a jitted callee into its caller: the callee's LLVM module is linked
into the caller's and the whole is optimised again at O3 and turned into machine
code, at every level of the call tree (docs/first_use.md, "Where the cold time
goes"). So a kernel pays, on its first compile, for every path it *could* take:
the MixPert driver compiled the fast path, the wide-certified path, the certified
and exact paths, both domains' guarantee checks and the recomputations, whatever
the data needed, and re-optimised the whole tree at each of its three levels.

Each function here has the signature and the result of the path it stands for, and
its body is one ``numba.objmode`` block that calls that path's dispatcher from
Python. Compiled into a caller, it is a few dozen instructions; the path itself is
compiled (or loaded from its disk cache) the first time a call needs it, as a
separate top-level function that no caller relinks. A call costs the GIL, the
boxing of its arguments and a dispatcher call (docs/first_use.md gives the measured
cost), negligible beside the work of the paths routed here: each runs once per
general-path GEMM (above ``small_max_work``), or only for data that needs it.
Arrays pass by reference, so what a path writes lands in the caller's arrays; the
bits are those of the path called directly.

The trampolines are declared without ``nogil``: they are only called from compiled
code, where the flag means nothing, and the objmode block takes the GIL whatever it
says (with the flag, Numba would warn that object mode will not run in parallel).
The paths themselves are ``nogil`` and release the GIL while they work, so callers
on several threads (``prange`` bodies, ``@mixjit`` sites) still run them in parallel.

:data:`LAZY_PATHS` names each trampoline's dispatcher, so a test can count the
dispatcher's compiled overloads after a common call (none) and after a call that
needs the path (one).
"""

from __future__ import annotations

from numba import objmode

from mixjit.runtime.executor_common import nonfinite_rule
from mixjit.runtime.executor_mixpert_certified import certified, exact_elements, recompute32
from mixjit.runtime.executor_mixpert_exact import exact_rows
from mixjit.runtime.executor_mixpert_fast import fast_path
from mixjit.runtime.executor_mixpert_split import prepare_call_operand
from mixjit.runtime.jit_cache import cached_njit
from mixjit.runtime.mixpert_bound import fp64_doubtful, recompute
from mixjit.runtime.mixpert_wide import fast32_certified

__all__ = ["LAZY_PATHS", "general_gemm", "general_gemm_lazy", "fast_path_lazy", "fast32_certified_lazy",
           "certified_lazy", "exact_elements_lazy", "exact_rows_lazy", "recompute32_lazy", "fp64_doubtful_lazy",
           "recompute_lazy", "nonfinite_rule_lazy"]


def general_gemm(a, b, c, params, stats) -> int:
    """The general MixPert path from Python: both operands split, then the product
    (``executor_mixpert_driver.multiply_into``); ``params`` and the shapes checked by
    the caller. Imported here, not at module level: the driver imports this module."""
    from mixjit.runtime.executor_mixpert_driver import multiply_into

    pa = prepare_call_operand(a, False, params)  # A read in place where it can be (no copy)
    pb = prepare_call_operand(b, True, params)
    return multiply_into(pa, pb, params, c, stats)


@cached_njit
def general_gemm_lazy(a, b, c, params, stats) -> int:
    """:func:`general_gemm` from compiled code (the site executor's path for calls the
    small path leaves)."""
    with objmode(status="int64"):
        status = general_gemm(a, b, c, params, stats)
    return status


@cached_njit
def fast_path_lazy(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32):
    """``executor_mixpert_fast.fast_path``, compiled on first use."""
    with objmode():
        fast_path(aq, ascale, bq, bscale, blocks, ea, eb, params, out, to32)


@cached_njit
def fast32_certified_lazy(aq, ascale, bq, bscale, blocks, ea, eb, segments, digits, tk, out):
    """``mixpert_wide.fast32_certified``, compiled on first use."""
    with objmode(doubt="int64[::1]"):
        doubt = fast32_certified(aq, ascale, bq, bscale, blocks, ea, eb, segments, digits, tk, out)
    return doubt


@cached_njit
def certified_lazy(pa, pb, parts_a, parts_b, blocks, ea, eb, params, rows, others, out, transposed) -> int:
    """``executor_mixpert_certified.certified``, compiled on first use."""
    with objmode(slow="int64"):
        slow = certified(pa, pb, parts_a, parts_b, blocks, ea, eb, params, rows, others, out, transposed)
    return slow


@cached_njit
def exact_elements_lazy(pa, pb, blocks, ea, eb, params, flat, skip_rows, skip_cols, out) -> int:
    """``executor_mixpert_certified.exact_elements``, compiled on first use."""
    with objmode(slow="int64"):
        slow = exact_elements(pa, pb, blocks, ea, eb, params, flat, skip_rows, skip_cols, out)
    return slow


@cached_njit
def exact_rows_lazy(pa, pb, blocks, ea, eb, params, rows, out, transposed, to32):
    """``executor_mixpert_exact.exact_rows``, compiled on first use."""
    with objmode():
        exact_rows(pa, pb, blocks, ea, eb, params, rows, out, transposed, to32)


@cached_njit
def recompute32_lazy(xraw, yraw, rows, out, transposed):
    """``executor_mixpert_certified.recompute32``, compiled on first use."""
    with objmode():
        recompute32(xraw, yraw, rows, out, transposed)


@cached_njit
def fp64_doubtful_lazy(araw, agexp, aref, braw, bgexp, bref, tk, w, dropped, c):
    """``mixpert_bound.fp64_doubtful``, compiled on first use."""
    with objmode(doubt="boolean[:, ::1]"):
        doubt = fp64_doubtful(araw, agexp, aref, braw, bgexp, bref, tk, w, dropped, c)
    return doubt


@cached_njit
def recompute_lazy(araw, braw, doubt, out, to32) -> int:
    """``mixpert_bound.recompute``, compiled on first use."""
    with objmode(count="int64"):
        count = recompute(araw, braw, doubt, out, to32)
    return count


@cached_njit
def nonfinite_rule_lazy(araw, braw, abad, bbad, out) -> int:
    """``executor_common.nonfinite_rule``, compiled on first use."""
    with objmode(count="int64"):
        count = nonfinite_rule(araw, braw, abad, bbad, out)
    return count


#: each trampoline and the dispatcher it calls
LAZY_PATHS = {
    fast_path_lazy: fast_path,
    fast32_certified_lazy: fast32_certified,
    certified_lazy: certified,
    exact_elements_lazy: exact_elements,
    exact_rows_lazy: exact_rows,
    recompute32_lazy: recompute32,
    fp64_doubtful_lazy: fp64_doubtful,
    recompute_lazy: recompute,
    nonfinite_rule_lazy: nonfinite_rule,
}
