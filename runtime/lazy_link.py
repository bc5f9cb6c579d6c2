"""Compiled kernels that compiled callers call through an address cell, not by linking.

Numba compiles a jitted callee as a function of its own (typing, lowering, LLVM O3,
machine code), then links the callee's LLVM module into every caller and optimises
and code-generates the caller's whole linked module again (docs/first_use.md, "Where
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
"""

from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as llir
from numba.core import cgutils, errors, types
from numba.core.callconv import excinfo_ptr_t
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.imputils import lower_builtin, lower_constant
from numba.extending import models, register_model, typeof_impl

__all__ = ["CellHook", "Unlinked", "unlinked"]

_cells: dict[str, np.ndarray] = {}


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
        # Numba's compiler lock (reentrant: loading a kernel runs the hooks of the kernels it
        # calls), the one a compiling caller holds when it registers a cell: one lock, one order
        with global_compiler_lock:
            if self.symbol in _cells:
                return
            dispatcher = self.dispatcher()
            dispatcher.compile(self.argtypes)
            cres = dispatcher.overloads[self.argtypes]
            address = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
            if not address:
                raise RuntimeError(f"mixjit: the compiled code of {self.module}.{self.qualname}{self.argtypes} "
                                   "has no function to call (a Numba change?)")
            cell = np.array([address], dtype=np.int64)
            llvm.add_symbol(self.symbol, cell.ctypes.data)
            _cells[self.symbol] = cell  # kept alive: compiled code reads it


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
        i64 = llir.IntType(64)
        cell = builder.module.globals.get(hook.symbol)
        if cell is None:
            cell = llir.GlobalVariable(builder.module, i64, hook.symbol)
            cell.linkage = "external"
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


class UnlinkedType(types.Callable):
    """Numba's type of an :class:`Unlinked` kernel: typed as its dispatcher (compiled
    for the plain types of the arguments), lowered as a call through the cell."""

    def __init__(self, fn: Unlinked) -> None:
        self.fn = fn
        py_func = fn.dispatcher.py_func
        super().__init__(name=f"unlinked({py_func.__module__}.{py_func.__qualname__})")

    def get_call_type(self, context, args, kws):
        if kws:
            raise errors.TypingError(f"{self}: keyword arguments are not supported; pass them by position")
        argtypes = tuple(types.unliteral(a) for a in args)
        self.fn.dispatcher.compile(argtypes)
        return self.fn.dispatcher.overloads[argtypes].signature

    def get_call_signatures(self):
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
