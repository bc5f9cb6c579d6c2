"""The MixPert general path from compiled code: a trampoline into Python.

Numba compiles a jitted callee into its caller: the callee's LLVM module is linked
into the caller's and the whole is optimised again at O3 and turned into machine
code, at every level of the call tree (docs/results/first_use.md, "Where the cold time
goes"). A site's executor compiled with the general path inside would pay, on its
first compile, for every path the general path *could* take (the fast paths, the
certified and exact paths, both domains' guarantee checks, the recomputations),
whatever the data needed.

So the general path runs from Python (:func:`general_gemm`: ``prepare_operand``
twice, then ``executor_mixpert_driver.multiply_into``, which plans in Python and
calls each path's compiled kernel only when a call needs it, each compiled or
loaded from its disk cache as a top-level function that no caller relinks), and
compiled code (the sites' kernel ``mixpert_gemm``, for the calls the small path
leaves) reaches it through :func:`general_gemm_lazy`: the signature and result of
the path, its body one ``numba.objmode`` block that calls :func:`general_gemm`.
The sites' kernel calls it through an address cell filled at the first call the small
path leaves (runtime/jit/lazy_link.py's ``unlinked_lazy``), so a site whose calls the small
path all takes never compiles even the trampoline. A call costs the GIL, the
boxing of its arguments and a Python call (docs/results/first_use.md gives the measured
cost), negligible beside the work of a general-path GEMM (above ``small_max_work``).
Arrays pass by reference, so what the path writes lands in the caller's arrays;
the bits are those of the path called from Python.

The trampoline is declared without ``nogil``: it is only called from compiled code,
where the flag means nothing, and an objmode block takes the GIL whatever it says
(with the flag, Numba would warn that object mode will not run in parallel). The
kernels the general path calls are ``nogil`` and release the GIL while they work,
so callers on several threads (``prange`` bodies, ``@mixjit`` sites) still run them
in parallel.
"""

from __future__ import annotations

from numba import objmode

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.split import prepare_call_operand

__all__ = ["general_gemm", "general_gemm_lazy"]


def general_gemm(a, b, c, params, stats) -> int:
    """The general MixPert path from Python: both operands split, then the product
    (``executor_mixpert_driver.multiply_into``); ``params`` and the shapes checked by
    the caller. Imported here, not at module level: the driver imports this module."""
    from mixjit.runtime.mixpert.driver import multiply_into

    pa = prepare_call_operand(a, False, params)  # A read in place where it can be (no copy)
    pb = prepare_call_operand(b, True, params)
    return multiply_into(pa, pb, params, c, stats, (a, b))


@cached_njit
def general_gemm_lazy(a, b, c, params, stats) -> int:
    """:func:`general_gemm` from compiled code (the site executor's path for calls the
    small path leaves)."""
    with objmode(status="int64"):
        status = general_gemm(a, b, c, params, stats)
    return status
