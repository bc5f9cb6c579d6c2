"""mix dialect: the sites the tuner assigns a scheme to (:class:`SiteOp`): ``mix.gemm``, a GEMM,
and ``mix.linalg``, an ``np.linalg`` call; and ``mix.kernel``, a generated GPU kernel
(``emit-cuda``) that runs some GEMM sites.

``mix.gemm``: ``out = alpha * op(A) @ op(B) + beta * C`` where ``op`` transposes when
``trans_a``/``trans_b``. ``mix.linalg``: ``out = np.linalg.<op>(A[, B])``.
"""

from __future__ import annotations

from mixjit.ir.attributes import ArrayAttr, BoolAttr, FloatAttr, IntegerAttr, StringAttr, TypeAttr
from mixjit.ir.core import Operation
from mixjit.ir.opdef import operand, opt_operand, prop, result
from mixjit.ir.traits import MemAlloc, MemRead
from mixjit.ir.types import ArrayType, ComplexType, FloatType, TupleType, f64, i64
from mixjit.ir.verifier import VerifyError


class SiteOp(Operation):
    """A tunable site: an op with a module-wide ``site`` id and an element type ``dtype``
    (``mix.gemm`` and ``mix.linalg``). Site numbering, the dependence DAG and the tuner work on
    every SiteOp; what a site computes is its subclass's."""

    site = prop(IntegerAttr)
    dtype = prop(TypeAttr)

    def _verify_site(self) -> None:
        if self.site.type != i64 or self.site.value < 0:
            raise VerifyError(f"site must be a non-negative i64, got {self.site}")


class GemmOp(SiteOp):
    """A GEMM: operands A, B and optional C (rank-2 arrays of ``dtype``, a float or complex
    type); ``site`` numbers the
    GEMM sites of a module; alpha/beta are f64 (beta must be 0 without C)."""

    name = "mix.gemm"
    a = operand(ArrayType)
    b = operand(ArrayType)
    c = opt_operand(ArrayType)
    out = result(ArrayType)
    trans_a = prop(BoolAttr, default=BoolAttr(False))
    trans_b = prop(BoolAttr, default=BoolAttr(False))
    alpha = prop(FloatAttr, default=FloatAttr(1.0, f64))
    beta = prop(FloatAttr, default=FloatAttr(0.0, f64))
    traits = (MemRead, MemAlloc)  # reads A, B, C; the result is a new array

    def verify_(self) -> None:
        dtype = self.dtype.value
        if not isinstance(dtype, FloatType) and not (isinstance(dtype, ComplexType)
                                                     and isinstance(dtype.element, FloatType)):
            raise VerifyError(f"dtype must be a float or complex type, got '{dtype}'")
        arrays = {"A": self.a, "B": self.b, "C": self.c, "result": self.out}
        for label, value in arrays.items():
            if value is None:
                continue
            t = value.type
            assert isinstance(t, ArrayType)
            if t.rank != 2:
                raise VerifyError(f"{label} must be a rank-2 array, got '{t}'")
            if t.dtype != dtype:
                raise VerifyError(f"{label} has element type '{t.dtype}' but dtype is '{dtype}'")
        for label, attr in (("alpha", self.alpha), ("beta", self.beta)):
            if attr.type != f64:
                raise VerifyError(f"{label} must be an f64 attribute, got {attr}")
        if self.c is None and self.beta.value != 0.0:
            raise VerifyError(f"beta is {self.beta.value} but there is no C operand")
        self._verify_site()


LINALG_OPS = ("cholesky", "solve", "inv", "lstsq", "det", "slogdet")
"""The ``np.linalg`` functions a ``mix.linalg`` site can be."""
SCALAR_RESULTS = {"det": f64, "slogdet": TupleType([f64, f64])}
"""The result type of the sites whose result is not an array (Numba's: float64 for any dtype)."""


class LinalgOp(SiteOp):
    """``out = np.linalg.<fn>(A[, B])`` (``fn``: ``cholesky``, ``solve``, ``inv``, ``lstsq``: its
    solution ``np.linalg.lstsq(A, B)[0]``, ``det`` or ``slogdet``): A a rank-2 array of ``dtype``
    (f32 or f64; square but for ``lstsq``), B (``solve`` and ``lstsq`` only) rank 1 or 2 of
    ``dtype``; the result an array of ``dtype`` (rank 1 or 2), or, as Numba types them, an f64
    (``det``) or ``tuple<f64, f64>`` (``slogdet``) whatever ``dtype``."""

    name = "mix.linalg"
    a = operand(ArrayType)
    b = opt_operand(ArrayType)
    out = result()
    fn = prop(StringAttr)
    traits = (MemRead, MemAlloc)  # reads A (and B); the result is a new array (or a scalar)

    def verify_(self) -> None:
        fn, dtype = self.fn.value, self.dtype.value
        if fn not in LINALG_OPS:
            raise VerifyError(f"fn must be one of {', '.join(LINALG_OPS)}, got '{fn}'")
        if not isinstance(dtype, FloatType):
            raise VerifyError(f"dtype must be a float type, got '{dtype}'")
        two = fn in ("solve", "lstsq")
        if (self.b is not None) != two:
            raise VerifyError(f"{fn} takes {'A and B' if two else 'A only'}")
        scalar = SCALAR_RESULTS.get(fn)
        if scalar is not None and self.out.type != scalar:
            raise VerifyError(f"{fn}'s result must be '{scalar}', got '{self.out.type}'")
        if scalar is None and not isinstance(self.out.type, ArrayType):
            raise VerifyError(f"{fn}'s result must be an array, got '{self.out.type}'")
        arrays = (("A", self.a, (2,)), ("B", self.b, (1, 2)), ("result", self.out if scalar is None else None, (1, 2)))
        for label, value, ranks in arrays:
            if value is None:
                continue
            t = value.type
            assert isinstance(t, ArrayType)
            if t.rank not in ranks:
                raise VerifyError(f"{label} must be a rank-{' or '.join(map(str, ranks))} array, got '{t}'")
            if t.dtype != dtype:
                raise VerifyError(f"{label} has element type '{t.dtype}' but dtype is '{dtype}'")
        self._verify_site()


class KernelOp(Operation):
    """A generated kernel at module level: ``sym_name`` (the kernel's name), ``scheme`` and
    ``config`` it implements, target ``arch`` (``sm_80``), ``source_hash`` (sha256 of the
    source), the ``file`` it is written to, and the GEMM ``sites`` it runs. A declaration: no
    operands or results, never erased by dce."""

    name = "mix.kernel"
    sym_name = prop(StringAttr)
    scheme = prop(StringAttr)
    config = prop(StringAttr)
    arch = prop(StringAttr)
    source_hash = prop(StringAttr)
    file = prop(StringAttr)
    sites = prop(ArrayAttr)

    def verify_(self) -> None:
        if not self.arch.value.startswith("sm_"):
            raise VerifyError(f"arch must be an sm_XX target, got '{self.arch.value}'")
        if len(self.source_hash.value) != 64 or any(c not in "0123456789abcdef" for c in self.source_hash.value):
            raise VerifyError(f"source_hash must be a sha256 hex digest, got '{self.source_hash.value}'")
        for site in self.sites:
            if not isinstance(site, IntegerAttr) or site.value < 0:
                raise VerifyError(f"sites must be non-negative integers, got {site}")
