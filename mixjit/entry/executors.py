"""The executor table: the C function of each compiled executor (a scheme family's kernel, or
the built-in native and reference executors) per plan code and dtype, compiled or loaded from its
disk cache when a plan row first names it (``load_executor``), foreign executors installed in a
free slot (``install_executor``: the device executor), and plan rows written through it
(``write_plan_row``)."""

from __future__ import annotations

import functools
import hashlib
import threading
from pathlib import Path
from typing import Iterable

import numpy as np
from llvmlite import ir as llir
from numba import njit, types
from numba.core import sigutils
from numba.core.ccallback import CFunc
from numba.extending import intrinsic

from mixjit.entry.abi import (
    DTYPE_C64,
    DTYPE_C128,
    DTYPE_CODES,
    ENTRY_BAD_DTYPE,
    ENTRY_ERRORS,
    ENTRY_OK,
    ENTRY_SIG,
    EXEC_LINALG,
    EXEC_NATIVE,
    EXEC_NONE,
    EXEC_REFERENCE,
    EXECUTORS,
    EXECUTORS_BY_SCHEME,
    MAX_SITES,
    NUMPY_DTYPES,
    PLAN_WORDS,
    REFERENCE_EXECUTOR,
    STATUS_SPAN,
    executor_status,
)
from mixjit.entry.blas import (
    _axpby,
    _may_overlap,
    _native,
    _reference,
    _view,
)
from mixjit.entry.tables import (
    _EXEC_TABLE,
    _PLANS,
    _address,
    _plan_word,
    _profile_load,
    _record_stats,
    _slot,
)
from mixjit.runtime.jit.cache import RuntimeCache
from mixjit.runtime.jit.scratch_arrays import any_layout, stack_array
from mixjit.runtime.jit.source_hash import runtime_sources_hash, sources_hash
from mixjit.runtime.schemes.base import MAX_EXECUTOR_CODE, CompiledExecutor


@intrinsic
def _call_executor(typingctx, address, site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
    """Call the executor C function at ``address`` with the entry's own arguments."""
    args = (site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)
    sig = types.int32(address, *args)

    def codegen(context, builder, sig, llargs):
        fnty = llir.FunctionType(llir.IntType(32), [context.get_value_type(t) for t in sig.args[1:]])
        fn = builder.inttoptr(llargs[0], fnty.as_pointer())
        return builder.call(fn, llargs[1:])

    return sig, codegen


@njit(inline="always")
def _c_is_p(m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1, isz):
    """May the product ``P`` be written straight into C: alpha 1, beta 0 (``alpha * P + beta * C``
    is ``P``, bit for bit) and C overlapping neither operand (the executor reads them while it
    writes C)?"""
    pc = _address(c)
    return (alpha == 1.0 and beta == 0.0
            and not _may_overlap(pc, m, n, cs0, cs1, _address(a), m, k, as0, as1, isz)
            and not _may_overlap(pc, m, n, cs0, cs1, _address(b), k, n, bs0, bs1, isz))


def _executor_function(executor: CompiledExecutor, dtype_code: int):
    """The C-ABI function (the entry's signature) that runs ``executor`` for a site of
    one dtype (entry code ``dtype_code``; another dtype gives ``ENTRY_BAD_DTYPE``):
    config words from the plan row, ``P`` straight into C where ``C = P`` (alpha 1,
    beta 0, C overlapping neither operand), else into a fresh temporary followed by
    ``C = alpha * P + beta * C`` element by element in C's dtype (the arithmetic of the
    native path's temporary: for ``C -= A @ B``, ``C - P``); the executor's refusal as
    ``executor_status(code, status)`` (C is then unspecified), statistics while profiling."""
    kernel, code, n_words = executor.kernel, executor.code, executor.n_words
    n_stats, max_stat, profiled = max(1, executor.n_stats), executor.max_stat, executor.profile_stats

    # The kernel is called, never passed as a value (a first-class function would be a
    # process address in the code, which then could not be cached).
    # No heap allocation for the config words and statistics (stack arrays), and none
    # for P where C = P can be written in place (alpha 1, beta 0, C overlapping neither
    # operand: then alpha * P + beta * C is P, bit for bit); the kernel sees C and the
    # temporary with one type ("A" layout), so it compiles once.
    def body(dt, _rdt, site, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
        if m == 0 or n == 0:
            return ENTRY_OK
        params = stack_array(n_words, np.int64)
        for w in range(n_words):
            params[w] = _plan_word(site, 1 + w)
        stats = stack_array(n_stats, np.int64)
        for w in range(n_stats):
            stats[w] = 0
        av = _view(a, m, k, as0, as1, dt)
        bv = _view(b, k, n, bs0, bs1, dt)
        cv = _view(c, m, n, cs0, cs1, dt)
        if _c_is_p(m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1, cv.itemsize):
            status = kernel(av, bv, cv, params, stats)
        else:
            tmp = np.empty((m, n), dt)
            status = kernel(av, bv, any_layout(tmp), params, stats)
            if status == 0:
                _axpby(cv, tmp, alpha, beta)
        if status != 0:
            return STATUS_SPAN * code + status
        if profiled and _profile_load(0) != 0:
            _record_stats(site, stats, max_stat)
        return ENTRY_OK

    dt = NUMPY_DTYPES[dtype_code]
    return _entry_function(body, executor, dtype_code, dt, dt)


def _entry_function(body, executor: CompiledExecutor, dtype_code: int, dt, rdt):
    """The C-ABI function (the entry's signature) running ``body(dt, rdt, site, m, ...)`` for
    sites of entry dtype code ``dtype_code`` (another dtype gives ``ENTRY_BAD_DTYPE``); one name
    per executor and dtype: its own cache files, and distinct symbols when several load."""
    name = f"_executor_{executor.name}_{np.dtype(dt).name}"
    body.__name__ = body.__qualname__ = f"{name}_body"
    body = njit(inline="always")(body)

    def run(site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
        if dtype != dtype_code:
            return ENTRY_BAD_DTYPE
        return body(dt, rdt, site, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)

    run.__name__ = run.__qualname__ = name
    return run


#: the parts' real dtype of each complex entry dtype code
_PART_DTYPES = {DTYPE_C128: np.float64, DTYPE_C64: np.float32}


@njit
def _parts(x, rdt):
    """C-ordered real and imaginary parts of the complex 2-D array ``x``, in ``rdt``."""
    re = np.empty(x.shape, rdt)
    im = np.empty(x.shape, rdt)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j]
            re[i, j] = v.real
            im[i, j] = v.imag
    return re, im


@njit
def _part_sum(x, y):
    """``x + y`` element by element, one rounding each (form 3's operand sums)."""
    out = np.empty(x.shape, x.dtype)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] + y[i, j]
    return out


def _complex_executor_function(executor: CompiledExecutor, dtype_code: int):
    """The C-ABI function that runs a complex site (entry code ``dtype_code``) as real products
    under ``executor`` (docs/numerics.md, "Complex products"): plan row ``[code, form, the real
    config's words]``; the parts of A and B copied once, ``form`` (4 or 3) products by the real
    kernel, the complex wrapper's compiled epilogue (runtime/complex/epilogue.py) into C, or into
    a temporary followed by ``C = alpha * P + beta * C`` as the real executors do."""
    from mixjit.runtime.complex.epilogue import combine3, combine4

    kernel, code, n_words = executor.kernel, executor.code, executor.n_words
    n_stats, max_stat, profiled = max(1, executor.n_stats), executor.max_stat, executor.profile_stats
    dt = NUMPY_DTYPES[dtype_code]
    rdt = _PART_DTYPES[dtype_code]

    def body(dt, rdt, site, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
        if m == 0 or n == 0:
            return ENTRY_OK
        form = _plan_word(site, 1)
        params = stack_array(n_words, np.int64)
        for w in range(n_words):
            params[w] = _plan_word(site, 2 + w)
        stats = stack_array(n_stats, np.int64)
        ar, ai = _parts(_view(a, m, k, as0, as1, dt), rdt)
        br, bi = _parts(_view(b, k, n, bs0, bs1, dt), rdt)
        cv = _view(c, m, n, cs0, cs1, dt)
        # form 4: Ar·Br, Ai·Bi, Ar·Bi, Ai·Br; form 3: Ar·Br, Ai·Bi, (Ar+Ai)·(Br+Bi)
        sa, sb = (_part_sum(ar, ai), _part_sum(br, bi)) if form == 3 else (ar, br)
        count = 4 if form == 4 else 3
        products = np.empty((count, m, n), rdt)
        for t in range(count):
            for w in range(n_stats):
                stats[w] = 0
            x = ar if t == 0 or t == 2 else ai
            y = br if t == 0 or t == 3 else bi
            if t == 2 and form == 3:
                x, y = sa, sb
            status = kernel(any_layout(x), any_layout(y), any_layout(products[t]), params, stats)
            if status != 0:
                return STATUS_SPAN * code + status
            if profiled and _profile_load(0) != 0:
                _record_stats(site, stats, max_stat)
        direct = _c_is_p(m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1, cv.itemsize)
        out = cv if direct else any_layout(np.empty((m, n), dt))
        if form == 4:
            combine4(products[0], products[1], products[2], products[3], out)
        else:
            combine3(products[0], products[1], products[2], out)
        if not direct:
            _axpby(cv, out, alpha, beta)
        return ENTRY_OK

    return _entry_function(body, executor, dtype_code, dt, rdt)


def _builtin_function(code: int, dtype_code: int):
    """The C-ABI function (the entry's signature) of the built-in executor ``code``
    (``EXEC_NATIVE``: BLAS, ``_native``; ``EXEC_REFERENCE``: ``_reference``) for sites of
    one dtype (entry code ``dtype_code``; another dtype gives ``ENTRY_BAD_DTYPE``)."""
    dt = NUMPY_DTYPES[dtype_code]
    isz = np.dtype(dt).itemsize
    if code == EXEC_NATIVE:
        def run(site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
            if dtype != dtype_code:
                return ENTRY_BAD_DTYPE
            return _native(dt, isz, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)
    else:
        def run(site, dtype, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1):
            if dtype != dtype_code:
                return ENTRY_BAD_DTYPE
            return _reference(dt, m, n, k, alpha, beta, a, as0, as1, b, bs0, bs1, c, cs0, cs1)

    run.__name__ = run.__qualname__ = f"_builtin_{_BUILTIN_NAMES[code]}_{np.dtype(dt).name}"
    return run


_BUILTIN_NAMES = {EXEC_NATIVE: "native", EXEC_REFERENCE: REFERENCE_EXECUTOR}


ENTRY_SOURCES: tuple[Path, ...] = tuple(sorted(Path(__file__).resolve().parent.glob("*.py")))
"""Every module of this package: compiled entry code (the entry, each executor's C function)
compiles in intrinsics and functions of its sibling modules."""


@functools.cache
def entry_sources_hash() -> str:
    """A hash of ``ENTRY_SOURCES`` (names and contents), once per process."""
    return sources_hash(ENTRY_SOURCES)


class EntryCache(RuntimeCache):
    """The disk cache of the entry's compiled code: ``RuntimeCache`` (the runtime sources its
    module imports, transitively) keyed also on every module of this package, which lie outside
    the runtime package ``RuntimeCache`` follows: an edited sibling module recompiles."""

    def _index_key(self, sig, codegen) -> tuple:
        return (*super()._index_key(sig, codegen), ("mixjit-entry", entry_sources_hash()))


class _BuiltinCache(EntryCache):
    """The disk cache of one built-in executor's C function: keyed, beyond ``EntryCache``
    (this package's and its runtime sources), on its code's bytes and the executor and dtype it
    serves (the closure's cells)."""

    def _index_key(self, sig, codegen) -> tuple:
        cells = tuple(repr(cell.cell_contents) for cell in self._py_func.__closure__ or ())
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (*super()._index_key(sig, codegen), code, cells)


class _ExecutorCache(EntryCache):
    """The disk cache of one executor's C function: keyed, beyond ``EntryCache``, on
    the executor's declaration and its kernel module's runtime sources (the closure's
    cells, which Numba would pickle, hold the kernel dispatcher)."""

    def __init__(self, py_func, executor: CompiledExecutor) -> None:
        super().__init__(py_func)
        self._executor = executor

    def _index_key(self, sig, codegen) -> tuple:
        ex = self._executor
        module = ex.kernel.py_func.__module__
        declared = (ex.name, ex.code, ex.n_words, ex.n_stats, ex.profile_stats, ex.max_stat, module,
                    ex.kernel.py_func.__qualname__)
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        return (sig, codegen.magic_tuple(), code, declared,
                ("mixjit-runtime", runtime_sources_hash(self._py_func.__module__)),
                ("mixjit-entry", entry_sources_hash()),
                ("kernel-sources", runtime_sources_hash(module)))


_executor_functions: dict[tuple[int, int], CFunc] = {}
"""The loaded executors' C functions, by (plan code, entry dtype code)."""
_executor_lock = threading.Lock()
_builtin_functions: dict[tuple[int, int], CFunc] = {}
"""The loaded built-in executors' C functions (native, reference), by (plan code, entry dtype code)."""


def executor_for(scheme: str) -> CompiledExecutor:
    """The compiled executor of ``scheme`` (ValueError naming the runnable schemes if it has none)."""
    try:
        return EXECUTORS_BY_SCHEME[scheme]
    except KeyError:
        raise ValueError(
            f"mixjit: scheme {scheme!r} has no compiled executor; schemes a site can run: {sorted(EXECUTORS)}"
        ) from None


def _dtype_codes(dtypes: "Iterable[np.dtype | type | str] | None") -> list[int]:
    """Entry dtype codes of ``dtypes`` (all of them for None); ValueError for another dtype."""
    if dtypes is None:
        return sorted(DTYPE_CODES.values())
    codes = []
    for dt in dtypes:
        code = DTYPE_CODES.get(np.dtype(dt))
        if code is None:
            raise ValueError(f"mixjit: executors run float32, float64, complex64 or complex128 GEMMs, "
                             f"not {np.dtype(dt)}")
        codes.append(code)
    return sorted(set(codes))


def load_executor(code: int, dtypes: "Iterable[np.dtype | type | str] | None" = None) -> None:
    """Make the executor with plan code ``code`` callable by the entry for sites of ``dtypes``
    (float32, float64, complex64, complex128; None: all): compile its C function for each, or load it from the
    disk cache, the first time a plan needs it (so a function whose sites run ``native`` never
    compiles emulation code, and one whose sites are float64 never compiles a float32 kernel)."""
    wanted = _dtype_codes(dtypes)
    if 0 < code <= MAX_EXECUTOR_CODE and all(_EXEC_TABLE[_slot(code, d)] != 0 for d in wanted):
        return
    if code in _BUILTIN_NAMES:
        with _executor_lock:
            for dtype_code in wanted:
                if _EXEC_TABLE[_slot(code, dtype_code)] == 0:
                    py_func = _builtin_function(code, dtype_code)
                    fn = CFunc(py_func, sigutils.normalize_signature(ENTRY_SIG), locals={}, options={"nopython": True})
                    fn._cache = _BuiltinCache(py_func)
                    fn.compile()
                    _builtin_functions[code, dtype_code] = fn
                    _EXEC_TABLE[_slot(code, dtype_code)] = fn.address
        return
    with _executor_lock:
        executor = next((ex for ex in EXECUTORS_BY_SCHEME.values() if ex.code == code), None)
        if executor is None or executor.kernel is None:
            raise ValueError(f"mixjit: no compiled executor has plan code {code}; see mixjit.entry.EXECUTORS")
        for dtype_code in wanted:
            if _EXEC_TABLE[_slot(code, dtype_code)] != 0:
                continue
            # an executor with parallel regions loaded from the disk cache starts Numba's threading
            # layer by the reload hooks runtime/jit/cache.py saves with it (tests/runtime/
            # test_jit_cache_first_use.py)
            make = _complex_executor_function if dtype_code in _PART_DTYPES else _executor_function
            py_func = make(executor, dtype_code)
            fn = CFunc(py_func, sigutils.normalize_signature(ENTRY_SIG), locals={}, options={"nopython": True})
            fn._cache = _ExecutorCache(py_func, executor)
            fn.compile()
            _executor_functions[code, dtype_code] = fn
            _EXEC_TABLE[_slot(code, dtype_code)] = fn.address


def executor_address(code: int, dtype_code: int) -> int:
    """The C address of the loaded executor with plan code ``code`` for entry dtype code
    ``dtype_code`` (``DTYPE_CODES``; ``load_executor`` first); ValueError for a slot not filled."""
    valid = 0 < code <= MAX_EXECUTOR_CODE and dtype_code in NUMPY_DTYPES
    address = int(_EXEC_TABLE[_slot(code, dtype_code)]) if valid else 0
    if not address:
        raise ValueError(f"mixjit: no executor is loaded under plan code {code} for dtype code {dtype_code} "
                         "(see mixjit.entry.EXECUTORS and DTYPE_CODES; mixjit.entry.load_executor loads one)")
    return address


_installed: dict[int, str] = {}


def install_executor(name: str, address: int, status_messages: dict[int, str]) -> int:
    """Put a C function with the entry's signature (e.g. a ctypes callback: mixjit.backends'
    device executor) in the executor table under the highest plan code no scheme declares, and
    its refusals (status 1..63) in ``ENTRY_ERRORS``; returns that code. Idempotent per name."""
    with _executor_lock:
        for code, known in _installed.items():
            if known == name:
                return code
        taken = set(EXECUTORS.values()) | set(_installed) | {EXEC_NONE, EXEC_NATIVE, EXEC_REFERENCE}
        free = [c for c in range(MAX_EXECUTOR_CODE, 0, -1)
                if c not in taken and not any(_EXEC_TABLE[_slot(c, d)] for d in NUMPY_DTYPES)]
        if not free or not address:
            raise ValueError(f"mixjit: cannot install executor {name!r}: "
                             + ("no free plan code" if not free else "its address is 0"))
        code = free[0]
        ENTRY_ERRORS.update({executor_status(code, s): f"{name} executor: {msg}" for s, msg in status_messages.items()})
        _installed[code] = name
        for dtype_code in NUMPY_DTYPES:  # the foreign function takes the dtype as its argument
            _EXEC_TABLE[_slot(code, dtype_code)] = address
        return code


def loaded_executors() -> list[str]:
    """The names of the compiled executors loaded in this process, for any dtype (the built-in
    native and reference executors are part of the entry and not listed)."""
    return sorted(loaded_executor_dtypes())


def loaded_executor_dtypes() -> dict[str, list[str]]:
    """The dtypes each loaded compiled executor was loaded for, by executor name
    (``{"mixpert": ["float64"]}``): what a process compiled or loaded from the disk cache."""
    names = {ex.code: ex.name for ex in EXECUTORS_BY_SCHEME.values()}
    out: dict[str, list[str]] = {}
    for code, dtype_code in sorted(_executor_functions):
        out.setdefault(names[code], []).append(np.dtype(NUMPY_DTYPES[dtype_code]).name)
    return out


def write_plan_row(site: int, row: "np.ndarray | tuple[int, ...]",
                   dtypes: "Iterable[np.dtype | type | str] | None" = None) -> None:
    """Write ``site``'s plan row (word 0 the executor code, then its config words), loading
    the executor first, for the dtypes the site runs (``dtypes``; None: both float32 and
    float64). The code is written last, so a concurrent call of the site never sees it
    before its words (callers serialize writers of one site)."""
    if not 0 <= site < MAX_SITES:
        raise ValueError(f"mixjit: site id {site} is outside [0, {MAX_SITES})")
    words = np.zeros(PLAN_WORDS, dtype=np.int64)
    if len(row) > PLAN_WORDS:
        raise ValueError(f"mixjit: a plan row has {len(row)} words, the table has {PLAN_WORDS}")
    words[: len(row)] = row
    if words[0] not in (EXEC_NONE, EXEC_LINALG):  # a linalg site's blocked plan loads no entry executor
        load_executor(int(words[0]), dtypes)
    _PLANS[site, 1:] = words[1:]
    _PLANS[site, 0] = words[0]
