"""Compiled kernels that compiled callers call through an address cell, not by linking.

Numba compiles a jitted callee as a function of its own (typing, lowering, LLVM O3,
machine code), then links the callee's LLVM module into every caller and optimises
and code-generates the caller's whole linked module again (docs/results/first_use.md, "Where
the cold time goes"). For a large kernel that a caller merely calls, such as the
MixPert small path at the sites' executor, that second pass over the kernel's code
buys nothing and costs as much as the kernel's own compile.

``unlinked(dispatcher)`` gives an object that compiled code calls like the dispatcher
(same arguments, same result, exceptions propagate); the callee is compiled (or loaded
from its disk cache) for the call's argument types when the caller is typed, and the
caller's code calls it through an int64 *cell* registered with llvmlite under a name
derived from the callee and its argument types (``mixjit_unlinked_<hash>``): the cell
holds the address of the callee's compiled function in this process, so the caller's
object code holds no address and can be cached. The caller's library carries a
``reload_init`` hook (:class:`CellHook`, pickled with cached code): before cached
code that calls the callee is loaded in a new process, Numba runs it, which compiles
or loads the callee and registers the cell (an unresolved symbol would abort the
process). Callers compiled later inherit the hook from the caller's library, as Numba
does for its own hooks.

The call is Numba's own calling convention, through a pointer; a call costs what a
call of a function that is not inlined costs (nothing measurable beside a kernel).

``unlinked_lazy(dispatcher, restype)`` goes one step further for a kernel that many
calls never reach (the MixPert small path's loops, which a call the direct path takes
never runs): the callee is not compiled when the caller is, only the first time the
caller's code actually calls it. Its result type is declared (typing the callee would
compile everything it calls). The caller's code finds the cell empty (0) on that first
call and calls a C callback (``mixjit_unlinked_fill``, a ctypes function registered with
llvmlite), which takes the GIL, compiles or loads the callee, checks its signature
against the declared one and fills the cell; every later call goes through the filled
cell, without the GIL. A failed compile is printed and raised in the caller as
``RuntimeError``. Its reload hook (:class:`LazyCellHook`) registers an empty cell and
compiles nothing.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Iterable

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as llir
from numba.core import cgutils, errors, types
from numba.core.callconv import excinfo_ptr_t
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.imputils import lower_builtin, lower_constant
from numba.extending import models, register_model, typeof_impl

__all__ = ["CellHook", "LazyCellHook", "LazyUnlinked", "Unlinked", "fill_lazy_cells", "unlinked", "unlinked_lazy"]

_cells: dict[str, np.ndarray] = {}  # symbol -> its cell (kept alive: compiled code reads it)


def _cell(symbol: str) -> np.ndarray:
    """The cell registered under ``symbol`` in this process, registered empty (0) if it is new;
    call with Numba's compiler lock held."""
    cell = _cells.get(symbol)
    if cell is None:
        cell = np.zeros(1, dtype=np.int64)
        llvm.add_symbol(symbol, cell.ctypes.data)
        _cells[symbol] = cell
    return cell


@dataclass(frozen=True)
class CellHook:
    """Registers, in this process, the cell through which compiled code calls the kernel
    ``module.qualname`` for the argument types ``argtypes`` (compiling or loading the
    kernel first). Numba runs it (``reload_init``) before it loads cached code that
    calls the kernel; picklable and hashable."""

    module: str
    qualname: str
    argtypes: tuple

    @property
    def symbol(self) -> str:
        """The cell's symbol: a name derived from the kernel and its argument types."""
        key = f"{self.module}.{self.qualname}{self.argtypes}".encode()
        return "mixjit_unlinked_" + hashlib.sha256(key).hexdigest()[:24]

    def dispatcher(self) -> Dispatcher:
        """The kernel's dispatcher, imported by name."""
        obj: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, Unlinked):  # the module calls its kernel's dispatcher by the kernel's name
            obj = obj.dispatcher
        if not isinstance(obj, Dispatcher):
            raise TypeError(f"mixjit: {self.module}.{self.qualname} is not a Numba dispatcher; cached code "
                            "that calls it cannot be loaded (delete the Numba cache, or fix the name)")
        return obj

    def __call__(self) -> None:
        self.fill()

    def fill(self) -> None:
        """Register the cell and put the address of the compiled kernel in it (compiling or
        loading the kernel first), unless it is filled already."""
        # Numba's compiler lock (reentrant: loading a kernel runs the hooks of the kernels it
        # calls), the one a compiling caller holds when it registers a cell: one lock, one order
        with global_compiler_lock:
            cell = _cell(self.symbol)
            if cell[0]:
                return
            cres = self._compiled()
            address = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
            if not address:
                raise RuntimeError(f"mixjit: the compiled code of {self.module}.{self.qualname}{self.argtypes} "
                                   "has no function to call (a Numba change?)")
            cell[0] = address

    def _compiled(self) -> Any:
        """The kernel's compile result for ``argtypes`` (compiled or loaded now if needed)."""
        dispatcher = self.dispatcher()
        dispatcher.compile(self.argtypes)
        return dispatcher.overloads[self.argtypes]


#: cell address -> the hook that fills it on the first call (:class:`LazyCellHook`)
_lazy_hooks: dict[int, "LazyCellHook"] = {}


@dataclass(frozen=True)
class LazyCellHook(CellHook):
    """A :class:`CellHook` for a kernel compiled at its first call (:func:`unlinked_lazy`):
    run before cached code that calls the kernel is loaded, it registers the cell empty and
    compiles nothing; the first call fills it (:func:`_fill_from_compiled_code`) after checking
    that the kernel returns ``restype``, the type its callers were compiled for."""

    restype: Any

    def __call__(self) -> None:
        with global_compiler_lock:
            _lazy_hooks[_cell(self.symbol).ctypes.data] = self

    def _compiled(self) -> Any:
        cres = super()._compiled()
        if cres.signature.return_type != self.restype:
            raise TypeError(f"mixjit: {self.module}.{self.qualname}{self.argtypes} returns "
                            f"{cres.signature.return_type}, but unlinked_lazy declared {self.restype}; "
                            "declare the type it returns")
        return cres


def _fill_from_compiled_code(cell_address: int) -> int:
    """The C callback compiled code calls on finding a lazy cell empty: fill it (0), or print
    why it cannot be filled (1: the caller raises; an exception cannot cross into C)."""
    try:
        _lazy_hooks[cell_address].fill()
        return 0
    except BaseException:  # noqa: BLE001 -- reported here, raised by the caller
        traceback.print_exc(file=sys.stderr)
        return 1


def fill_lazy_cells(kernels: "Iterable[Dispatcher] | None" = None, package: str | None = None) -> int:
    """Compile (or load) now every kernel (of ``kernels``; None: all; only those of modules in
    ``package``, if given) whose lazy cell compiled code registered in this process, for the
    argument types it was registered with (what ``python -m mixjit.warm`` does for package
    ``mixjit``, so that no first call compiles one later: a user's or a test's cells in the
    same process are theirs), and the cells that filling registers (compiling a kernel
    registers the lazy cells of the kernels it calls); returns how many cells it filled."""
    names = None if kernels is None else {(k.py_func.__module__, k.py_func.__qualname__) for k in kernels}

    def wanted(hook: LazyCellHook) -> bool:
        in_package = package is None or hook.module == package or hook.module.startswith(package + ".")
        return in_package and (names is None or (hook.module, hook.qualname) in names)

    filled = 0
    with global_compiler_lock:
        while empty := [hook for hook in _lazy_hooks.values() if not _cell(hook.symbol)[0] and wanted(hook)]:
            for hook in empty:
                hook.fill()
            filled += len(empty)
    return filled


FILL_SYMBOL = "mixjit_unlinked_fill"
_fill_callback = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(_fill_from_compiled_code)
llvm.add_symbol(FILL_SYMBOL, ctypes.cast(_fill_callback, ctypes.c_void_p).value)


class Unlinked:
    """A cached kernel (``cached_njit`` dispatcher) that compiled callers call through an
    address cell instead of linking its code in (module docstring). Python callers call
    the dispatcher itself."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        if not isinstance(dispatcher, Dispatcher):
            raise TypeError(f"mixjit: unlinked() takes a Numba dispatcher, not {type(dispatcher).__name__}")
        self.dispatcher = dispatcher
        self.numba_type = UnlinkedType(self)
        lower_builtin(self.numba_type, types.VarArg(types.Any))(self._lower)

    def hook(self, argtypes: tuple) -> CellHook:
        """The cell hook of this kernel for ``argtypes``."""
        py_func = self.dispatcher.py_func
        return CellHook(py_func.__module__, py_func.__qualname__, tuple(argtypes))

    def __call__(self, *args: Any) -> Any:
        return self.dispatcher(*args)

    def _lower(self, context, builder, sig, args):
        hook = self.hook(sig.args)
        hook()  # the cell exists before the caller's code is finalized
        context.active_code_library._reload_init.add(hook)
        return self._call_through(context, builder, sig, args, _cell_global(builder, hook.symbol))

    @staticmethod
    def _call_through(context, builder, sig, args, cell):
        """Call the function whose address ``cell`` holds, Numba's calling convention."""
        cc = context.call_conv
        fnty = cc.get_function_type(sig.return_type, sig.args)
        callee = builder.inttoptr(builder.load(cell), fnty.as_pointer())
        # CPUCallConv.call_function (numba 0.68), on a pointer rather than a declared function
        retty = cc.get_return_type(sig.return_type).pointee
        retval = cgutils.alloca_once(builder, retty)
        builder.store(cgutils.get_null_value(retty), retval)
        excinfo = cgutils.alloca_once(builder, excinfo_ptr_t, name="excinfo")
        code = builder.call(callee, [retval, excinfo, *cc._get_arg_packer(sig.args).as_arguments(builder, args)])
        status = cc._get_return_status(builder, code, builder.load(excinfo))
        with cgutils.if_unlikely(builder, status.is_error):
            cc.return_status_propagate(builder, status)
        result = context.get_returned_value(builder, sig.return_type, builder.load(retval))
        return result


def _cell_global(builder, symbol: str):
    """The caller module's declaration of the int64 cell registered under ``symbol``."""
    cell = builder.module.globals.get(symbol)
    if cell is None:
        cell = llir.GlobalVariable(builder.module, llir.IntType(64), symbol)
        cell.linkage = "external"
    return cell


class LazyUnlinked(Unlinked):
    """An :class:`Unlinked` kernel compiled at its callers' first call of it, not when they
    are compiled (module docstring); ``restype`` is the type it returns."""

    def __init__(self, dispatcher: Dispatcher, restype: types.Type) -> None:
        if not isinstance(restype, types.Type):
            raise TypeError(f"mixjit: unlinked_lazy() needs the Numba type the kernel returns (e.g. "
                            f"numba.types.int64), not {restype!r}")
        self.restype = restype
        super().__init__(dispatcher)

    def hook(self, argtypes: tuple) -> LazyCellHook:
        """The lazy cell hook of this kernel for ``argtypes``."""
        py_func = self.dispatcher.py_func
        return LazyCellHook(py_func.__module__, py_func.__qualname__, tuple(argtypes), self.restype)

    def _lower(self, context, builder, sig, args):
        hook = self.hook(sig.args)
        hook()  # the (empty) cell exists before the caller's code is finalized
        context.active_code_library._reload_init.add(hook)
        cell = _cell_global(builder, hook.symbol)
        i64 = llir.IntType(64)
        with cgutils.if_unlikely(builder, builder.icmp_unsigned("==", builder.load(cell), i64(0))):
            fill = cgutils.get_or_insert_function(builder.module, llir.FunctionType(i64, [cgutils.voidptr_t]),
                                                  FILL_SYMBOL)
            failed = builder.icmp_unsigned("!=", builder.call(fill, [builder.bitcast(cell, cgutils.voidptr_t)]),
                                           i64(0))
            with cgutils.if_unlikely(builder, failed):
                context.call_conv.return_user_exc(builder, RuntimeError, (
                    f"mixjit: {hook.module}.{hook.qualname}{hook.argtypes} could not be compiled at its first "
                    "call (the error is printed above)",))
        return self._call_through(context, builder, sig, args, cell)


class UnlinkedType(types.Callable):
    """Numba's type of an :class:`Unlinked` kernel: typed as its dispatcher (compiled
    for the plain types of the arguments), lowered as a call through the cell."""

    def __init__(self, fn: Unlinked) -> None:
        self.fn = fn
        py_func = fn.dispatcher.py_func
        kind = "unlinked_lazy" if isinstance(fn, LazyUnlinked) else "unlinked"
        super().__init__(name=f"{kind}({py_func.__module__}.{py_func.__qualname__})")

    def get_call_type(self, context, args, kws):
        if kws:
            raise errors.TypingError(f"{self}: keyword arguments are not supported; pass them by position")
        argtypes = tuple(types.unliteral(a) for a in args)
        if isinstance(self.fn, LazyUnlinked):  # compiled at the first call: typed as declared
            return self.fn.restype(*argtypes)
        self.fn.dispatcher.compile(argtypes)
        return self.fn.dispatcher.overloads[argtypes].signature

    def get_call_signatures(self):
        if isinstance(self.fn, LazyUnlinked):
            return [], True
        return [cres.signature for cres in self.fn.dispatcher.overloads.values()], True

    def get_impl_key(self, sig):
        return self


register_model(UnlinkedType)(models.OpaqueModel)


@lower_constant(UnlinkedType)
def _unlinked_constant(context, builder, ty, pyval):
    return context.get_dummy_value()


@typeof_impl.register(Unlinked)
def _typeof_unlinked(val: Unlinked, c) -> UnlinkedType:
    return val.numba_type


def unlinked(dispatcher: Dispatcher) -> Unlinked:
    """``dispatcher`` for compiled callers, called through an address cell instead of linked
    in: its code is optimised and compiled once, not again inside every caller."""
    return Unlinked(dispatcher)


def unlinked_lazy(dispatcher: Dispatcher, restype: types.Type) -> LazyUnlinked:
    """``dispatcher`` for compiled callers, called through an address cell and compiled (or
    loaded from its disk cache) at the first call that reaches it, not when a caller is
    compiled; ``restype`` is the Numba type it returns (checked when it compiles). For a
    large kernel that many calls never reach."""
    return LazyUnlinked(dispatcher, restype)
