"""The compiled epilogue of the complex wrapper: real products -> complex C.

One pass over the real products that forms both parts of C in the order
docs/numerics.md ("Complex products") defines and writes the complex C:

* :func:`combine4` ``(p_rr, p_ii, p_ri, p_ir, c)``: Re C = p_rr − p_ii, Im C = p_ri + p_ir;
* :func:`combine3` ``(t1, t2, t3, c)``: Re C = t1 − t2, Im C = (t3 − t1) − t2.

Every operation is one IEEE subtraction or addition in the parts' dtype (float32 for a
complex64 ``c``, float64 for complex128), rounded once; Numba compiles them without
fastmath, so nothing is reassociated, contracted or flushed to zero. ``complex(re, im)``
places the parts without arithmetic (an inf or a signed zero stays as it is).
"""

from __future__ import annotations

from mixjit.runtime.jit.cache import cached_njit

__all__ = ["combine4", "combine3"]


@cached_njit(nogil=True)
def combine4(p_rr, p_ii, p_ri, p_ir, c):
    """``c[i, j] = (p_rr − p_ii) + i(p_ri + p_ir)``, each part rounded once (form 4)."""
    m, n = c.shape
    for i in range(m):
        for j in range(n):
            c[i, j] = complex(p_rr[i, j] - p_ii[i, j], p_ri[i, j] + p_ir[i, j])


@cached_njit(nogil=True)
def combine3(t1, t2, t3, c):
    """``c[i, j] = (t1 − t2) + i((t3 − t1) − t2)``, each operation rounded once (form 3)."""
    m, n = c.shape
    for i in range(m):
        for j in range(n):
            x = t1[i, j]
            y = t2[i, j]
            c[i, j] = complex(x - y, (t3[i, j] - x) - y)
