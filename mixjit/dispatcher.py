"""``MixjitDispatcher``: a Numba dispatcher whose compilations link their GEMM sites to mixjit.

It is a ``CPUDispatcher`` built on mixjit's pipeline (``mixjit.numba_pipeline``): Numba's
compilation, with two hooks. The untyped hook swaps the plain ``@njit`` functions a function
calls for mixjit versions of themselves (with their own options), so their GEMMs are linked too;
the typed hook finds the GEMM sites, gives each a site block and an initial plan
(``mixjit.plan``) and links it to the run-time entry (``mixjit.linking``). A failure inside
mixjit's own stages (``numba_pipeline.StageError``) never fails the call: the signature is
compiled again as plain Numba, with a ``MixjitWarning``, and ``sites`` lists why nothing was
taken (``mixjit.sites.NotLinked``).

A first call (a signature Numba's fast path does not know) compiles, then hands the new
signature to the tuning layer (``mixjit.tuning.api.on_new_signature``: first-call tuning, saved
or given plans), one thread at a time per function (``tuning_lock``); its code reaches Numba's
fast path only once tuned. The tuning layer reaches the dispatcher only through what
``mixjit.tuning.protocol.TunableFunction`` names.

What the user inspects: ``ir``, ``dump``, ``dag_for`` / ``dag``, ``sites``, ``call_counts``; and the
tuning methods (``tune``, ``check_plan``, ``plan``, ``use_plan``, ``save_plan``, ``report``), thin
calls into ``mixjit.tuning``. docs/frontend.md, "The @mixjit decorator".
"""

from __future__ import annotations

import inspect
import secrets
import sys
import threading
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import llvmlite.binding as llvm
import numpy as np
from numba.core import compiler, errors, ir, sigutils, types
from numba.core.caching import NullCache
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import CPUDispatcher
from numba.core.typing.typeof import Purpose, typeof

from mixjit import linking
from mixjit.cache import MixjitCache
from mixjit.linalg_link import link_linalg_call, resolve_linalg
from mixjit.numba_pipeline import StageError, make_pipeline, stage
from mixjit.options import Options
from mixjit.plan import SiteBlock, SiteRecord, get_plan, initial_plan, linalg_native_plan
from mixjit.runtime.jit.warning import MixjitWarning
from mixjit.sites import (
    FALLBACK_REASON,
    NotLinked,
    Site,
    annotate_sites,
    objmode_products,
    process_site_ids,
    signature_text,
    source_loc,
    statement_forms,
)

__all__ = ["MixjitDispatcher"]


_PERF_WARNING = r".* is faster on contiguous arrays"
_callee_lock = threading.Lock()
_callee_versions: dict[tuple[int, Options], "MixjitDispatcher"] = {}
_provisional_cells: list[np.ndarray] = []
"""Cells of site-block symbols registered during a compilation (see ``MixjitDispatcher.compile``);
kept for the life of the process, since llvmlite's symbol table and the compiled code point at them."""


def _block_symbol() -> str:
    """A site-block symbol unique to this compilation in every process: random, since cached code
    from another process (in a container, often with the same process id) names its own blocks."""
    return "mixjit_sites_" + secrets.token_hex(16)


def _provisional_cell(symbol: str) -> np.ndarray:
    """Register ``symbol`` with llvmlite at a new cell, so the code being compiled links; the cell
    receives the block's base id once the compilation succeeds."""
    cell = np.full(1, -1, dtype=np.int64)
    _provisional_cells.append(cell)
    llvm.add_symbol(symbol, cell.ctypes.data)
    return cell


@dataclass
class _Compilation:
    """What one ``MixjitDispatcher.compile`` attempt's hooks did: the site blocks waiting for
    the compilation to succeed, whether the Numba IR was rewritten (``linked``) and the site
    records found (reported if the compilation falls back)."""

    pending: list[tuple[SiteBlock, np.ndarray]] = field(default_factory=list)
    linked: bool = False
    records: tuple[SiteRecord, ...] = ()


class MixjitDispatcher(CPUDispatcher):
    """A Numba dispatcher whose compilations link their GEMM sites to mixjit."""

    def __init__(self, py_func: Callable, options: Options, targetoptions: dict[str, Any],
                 is_callee: bool = False, locals: dict[str, Any] | None = None) -> None:
        self.mixjit_options = options
        self._is_callee = is_callee
        self._compilations: list[_Compilation] = []  # one per compile() attempt in progress
        self._first_caller: int | None = None  # the thread in a first call (_compile_for_args)
        self._deferred: list[Any] = []  # its compilations, kept from Numba's fast path until tuned
        self.tuning_lock = threading.RLock()
        """One tuning or first call of this function at a time (mixjit.tuning.protocol)."""
        self.tuning_state: Any = None
        """The tuning layer's record of this function's plans and tunings (mixjit.tuning.api)."""
        pipeline = make_pipeline(self._link_sites, self._swap_callees)
        super().__init__(py_func, locals=dict(locals or {}), targetoptions={**targetoptions, "nopython": True},
                         pipeline_class=pipeline)
        if options.cache:
            self.enable_caching()

    # -- pickling ------------------------------------------------------------------

    def _reduce_states(self) -> dict[str, Any]:
        """Numba's pickled state of a dispatcher (its function, by value where it is not
        importable, locals, target options; no compiled code) plus mixjit's options, so that a
        copy rebuilt in another process compiles the same code with the same sites (a tuning's
        executor workers: mixjit.tuning.executor_pool)."""
        return {**super()._reduce_states(), "options": self.mixjit_options, "is_callee": self._is_callee}

    @classmethod
    def _rebuild(cls, uuid: str, py_func: Callable, locals: dict[str, Any], targetoptions: dict[str, Any],
                 can_compile: bool, sigs: list[Any], options: Options, is_callee: bool) -> "MixjitDispatcher":
        """The dispatcher pickled by :meth:`_reduce_states`: this process's own where it exists (by
        its uuid, as Numba does), else a fresh one with the same options and signatures."""
        try:
            return cls._memo[uuid]
        except KeyError:
            pass
        self = cls(py_func, options, {k: v for k, v in targetoptions.items() if k != "nopython"},
                   is_callee=is_callee, locals=locals)
        self._set_uuid(uuid)
        for sig in sigs:
            self.compile(sig)
        self._can_compile = can_compile
        return self

    # -- Numba dispatcher hooks -------------------------------------------------

    def enable_caching(self) -> None:
        self._cache = MixjitCache(self.py_func, self.mixjit_options.tag(self.targetoptions, self.locals))

    def compile(self, sig: Any) -> Any:
        """Numba's ``compile`` with mixjit's pipeline, then the warnings about what it found.

        A failure inside mixjit's own stages (a ``StageError`` from a hook, or any error after
        the hook rewrote the IR) does not fail the call: the signature is compiled again as
        plain Numba, with a ``MixjitWarning``. An error that plain Numba raises too is the
        user's and propagates."""
        with global_compiler_lock:
            before = set(self.overloads)
            attempt = _Compilation()
            with warnings.catch_warnings():
                # The entry reads strided operands in place; Numba's advice is moot.
                warnings.filterwarnings("ignore", _PERF_WARNING, errors.NumbaPerformanceWarning)
                try:
                    result = self._compile_linked(sig, attempt)
                except StageError as failure:
                    result = self._compile_plain(sig, failure, attempt.records)
            for key in set(self.overloads) - before:
                self._warn_about(key)
            return result

    def _compile_linked(self, sig: Any, attempt: "_Compilation") -> Any:
        """One compilation through mixjit's pipeline. The site blocks its typed hook made are
        registered (fresh site ids, plans) only when its code becomes callable (``add_overload``).
        Until then their symbols point at provisional cells, so a compilation that fails
        earlier (in lowering) uses up no site id and writes no plan."""
        self._compilations.append(attempt)
        try:
            return super().compile(sig)
        except StageError:
            raise
        except Exception as e:
            args, _ = sigutils.normalize_signature(sig)
            if attempt.linked and tuple(args) not in self.overloads:
                raise StageError("lowering", e) from e  # Numba failed on IR that mixjit rewrote: retry without it
            raise  # the user's error, or one after the code was added (it runs, linked: as @njit, the next call does)
        finally:
            self._compilations.pop()

    def add_overload(self, cres: Any) -> None:
        """Numba's ``add_overload`` (the compiled code becomes callable), after registering the site
        blocks the compilation made, which its code reads its site ids from. Here and not after
        ``compile`` returns: Numba writes the disk cache after adding the code, and an error or a
        Ctrl-C there must not leave callable code whose sites have no id (every call failing).
        A first call's code reaches Numba's fast path only when that call returns."""
        attempt = self._compilations[-1] if self._compilations else None
        if attempt is not None:
            mine = [(block, cell) for block, cell in attempt.pending
                    if any(block is entry for entry in cres.reload_init or ())]
            for block, cell in mine:
                cell[0] = block()
            attempt.pending[:] = [p for p in attempt.pending if p not in mine]
        if self._first_caller == threading.get_ident():
            # made by a first call: Numba's fast path (calls that skip ``_compile_for_args``) gets
            # it only once that call has tuned it; other threads' calls wait in ``_compile_for_args``
            self.overloads[tuple(cres.signature.args)] = cres
            self._deferred.append(cres)
            return
        super().add_overload(cres)

    def _compile_plain(self, sig: Any, failure: StageError, found: tuple[SiteRecord, ...]) -> Any:
        """Compile ``sig`` as plain Numba would (no callee swap, no linking; ``np.matmul``
        still rewritten to ``@`` unless that rewrite failed), recording why in a ``NotLinked``."""
        args, return_type = sigutils.normalize_signature(sig)
        failed = self._compiler._failed_cache
        for key in [k for k in failed if k[0] == tuple(args)]:
            del failed[key]  # Numba keeps typing errors; this attempt must run
        qualname = self.py_func.__qualname__
        signature = f"({signature_text(tuple(args))})"
        reason = (f"{FALLBACK_REASON}: mixjit's {failure.stage} stage failed "
                  f"({type(failure.error).__name__}: {failure.error}); the function runs as plain Numba")
        records = self._fallback_records(found, reason)

        def record(state: Any) -> bool:
            state.reload_init.append(NotLinked(f"({signature_text(tuple(state.args))})", records))
            return False

        saved = self._compiler.pipeline_class
        self._compiler.pipeline_class = make_pipeline(record, None, canonicalize=failure.stage != "canonicalize-matmul")
        try:
            result = CPUDispatcher.compile(self, sig)
        finally:
            self._compiler.pipeline_class = saved
        code = self.py_func.__code__
        warnings.warn_explicit(
            f"mixjit: {qualname}{signature} runs as plain Numba, its GEMMs not linked: mixjit's "
            f"{failure.stage} stage failed ({type(failure.error).__name__}: {failure.error}); "
            "please report this with the function", MixjitWarning, code.co_filename, code.co_firstlineno,
            self.py_func.__module__)
        return result

    def _fallback_records(self, found: tuple[SiteRecord, ...], reason: str) -> tuple[SiteRecord, ...]:
        """The ``sites`` entries of a fallback: the candidates ``found`` before the failure,
        else one entry for the whole function at its ``def``."""
        if found:
            return tuple(replace(r, reason=reason) for r in found)
        code = self.py_func.__code__
        return (SiteRecord(self.py_func.__qualname__, f"{code.co_filename}:{code.co_firstlineno}", "",
                           "(whole function)", reason=reason),)

    def _warn_about(self, key: tuple) -> None:
        """Warn about a new compiled signature: no GEMM found, plan notes."""
        code = self.py_func.__code__
        entries = self.site_blocks(key)
        blocks = [b for b in entries if isinstance(b, SiteBlock)]
        fell_back = any(isinstance(b, NotLinked) for b in entries)
        where = (code.co_filename, code.co_firstlineno, self.py_func.__module__)
        if not any(b.records for b in blocks) and not self._is_callee and not fell_back:
            warnings.warn_explicit(
                f"mixjit: no GEMM found in {self.py_func.__qualname__}({signature_text(key)}); "
                "it runs as plain Numba code", MixjitWarning, *where)
        own = [b for b in blocks if b.signature == f"({signature_text(key)})"
               and any(r.function == self.py_func.__qualname__ for r in b.records)]
        for note in sorted({p.note for b in own for p in b.plans if p.note}):  # helpers warn at their own compile
            warnings.warn_explicit(f"mixjit: {note}", MixjitWarning, *where)

    def _compile_for_args(self, *args: Any, **kws: Any) -> Any:
        """A call of a signature Numba's fast path does not know (``_first_call``). One thread at a
        time per function (``tuning_lock``), so concurrent first calls compile
        and tune once and the others then run the tuned plan; the code it compiles reaches the fast
        path only when it returns (``add_overload``). A call that fails or is interrupted leaves no
        compiled code behind, so the next call is a first call again."""
        with self.tuning_lock:
            outer = self._first_caller is None  # else re-entered by the same thread
            if outer:
                self._first_caller = threading.get_ident()
            before = set(self.overloads)
            try:
                return self._first_call(before, args, kws)
            except BaseException:
                # an error or a Ctrl-C after the code was added (Numba's cache write, first-call
                # tuning): drop that code, so that the next call is a first call again
                self._forget(set(self.overloads) - before)
                raise
            finally:
                if outer:
                    self._first_caller = None
                    deferred, self._deferred = self._deferred, []
                    for cres in deferred:
                        if self.overloads.get(tuple(cres.signature.args)) is cres:  # not forgotten
                            CPUDispatcher.add_overload(self, cres)

    def _forget(self, keys: set[tuple]) -> None:
        """Remove the compiled signatures ``keys`` (from ``overloads`` and Numba's C dispatch table)."""
        if not keys:
            return
        kept = [cres for key, cres in self.overloads.items() if key not in keys]
        self._reset_overloads()
        for cres in kept:
            CPUDispatcher.add_overload(self, cres)

    def _first_call(self, before: set[tuple], args: tuple, kws: dict) -> Any:
        """Compile for ``args`` (Numba's ``_compile_for_args``), with mixjit's notes on Numba's
        errors; then tune, or apply a saved or given plan to, each new signature."""
        names = self._check_arguments(args, kws)
        qualname = self.py_func.__qualname__
        try:
            result = super()._compile_for_args(*args, **kws)
        except errors.NumbaError as e:
            e.add_note(
                f"mixjit: Numba could not compile {qualname} (see above); "
                "@mixjit compiles what @numba.njit compiles, so make it compile under @njit first"
            )
            raise
        except NotImplementedError as e:  # Numba's code generator lacks a type (float16 arrays)
            named = [f"{n!r} ({t})" for n, t in names.items() if str(e) and str(e) in str(t)]
            what = ", ".join(named) if named else ", ".join(f"{n!r} ({t})" for n, t in names.items())
            e.add_note(
                f"mixjit: Numba cannot generate code for {qualname} with argument {what}: it does not "
                f"implement {e or 'a type used'}; convert that argument (e.g. float16 to float32)")
            raise
        if not self._is_callee:  # first-call tuning, saved or given plans (mixjit.tuning)
            from mixjit.tuning.api import on_new_signature

            for key in set(self.overloads) - before:
                on_new_signature(self, key, args)
        return result

    def _check_arguments(self, args: tuple, kws: dict) -> dict[str, types.Type]:
        """Raise TypeError naming an argument Numba cannot compile; warn about function
        arguments. Returns the Numba type of each argument, by name."""
        try:
            bound = inspect.signature(self.py_func).bind(*args, **kws)
        except TypeError:
            return {}  # Numba reports the arity error itself
        out = {}
        for name, value in bound.arguments.items():
            try:
                ty = typeof(value, Purpose.argument)
            except ValueError:
                ty = None
            if ty is None or isinstance(ty, types.PyObject) or not ty.is_precise():
                what = f"NumPy array of dtype {value.dtype}" if isinstance(value, np.ndarray) else type(value).__name__
                article = "an" if what[0] in "aeiouAEIOU" else "a"
                raise TypeError(
                    f"mixjit: argument {name!r} of {self.py_func.__qualname__} is {article} {what}, "
                    "which Numba cannot compile; pass NumPy arrays of numbers, scalars or tuples of them")
            if isinstance(ty, (types.Dispatcher, types.FunctionType)):
                warnings.warn(
                    f"mixjit: argument {name!r} of {self.py_func.__qualname__} is a function; "
                    "GEMMs inside functions passed as arguments are not linked (call it as a "
                    "global @njit function instead)", MixjitWarning, stacklevel=3)
            out[name] = ty
        return out

    # -- pipeline hooks ------------------------------------------------------

    def _swap_callees(self, state: Any) -> bool:
        """Untyped hook: replace globals naming plain ``@njit`` functions (also
        as module attributes) by their mixjit versions, before typing."""
        changed = False
        func_ir = state.func_ir
        with stage("callees"):
            for block in func_ir.blocks.values():
                for stmt in block.body:
                    if not isinstance(stmt, ir.Assign):
                        continue
                    value = _referenced_dispatcher(func_ir, stmt.value)
                    if value is None:
                        continue
                    swapped = self._callee_version(value)
                    new = ir.Global(value.py_func.__name__, swapped, stmt.value.loc)
                    defs = func_ir._definitions[stmt.target.name]
                    defs[:] = [new if d is stmt.value else d for d in defs]
                    stmt.value = new
                    changed = True
        return changed

    def _callee_version(self, disp: CPUDispatcher) -> "MixjitDispatcher":
        """The mixjit version of the plain ``@njit`` dispatcher ``disp``: one per function and
        option set, compiled with ``disp``'s own options (``targetoptions``, ``locals``, and its
        disk cache when it has one)."""
        options = replace(self.mixjit_options, cache=not isinstance(disp._cache, NullCache), tune="never")
        key = (id(disp), options)
        with _callee_lock:
            version = _callee_versions.get(key)
            if version is None:
                opts = {k: v for k, v in disp.targetoptions.items() if k != "nopython"}
                version = MixjitDispatcher(disp.py_func, options, opts, is_callee=True, locals=disp.locals)
                _callee_versions[key] = version
                version._original = disp  # keeps id(disp) from being reused
            return version

    def _link_sites(self, state: Any) -> bool:
        """Typed hook: find the GEMM sites (importer + detect-gemm), make their
        block and plans, link them. The block is registered when the compilation
        succeeds (``compile``), and recorded in Numba's ``reload_init`` even with
        no site taken, so ``sites`` can list the candidates left to Numba.
        Raises StageError when a stage fails (``compile`` then compiles plain Numba)."""
        attempt = self._compilations[-1] if self._compilations else _Compilation()
        qualname = state.func_id.func_qualname
        signature = f"({signature_text(tuple(state.args))})"
        found = linking.find_sites(state)
        with stage("resolve"):  # the mix.linalg sites, numbered after the GEMM sites
            linalg_calls = [resolve_linalg(state, found.imported.stmts, s) for s in found.pipeline.linalg_sites]
        with stage("plan"):
            calls = found.calls
            records = tuple(
                SiteRecord(qualname, source_loc(c.loc), str(c.dtype), form, c.alpha, c.beta)
                for c, form in zip(calls, statement_forms(found, state))
            ) + tuple(SiteRecord(qualname, source_loc(c.loc), str(c.dtype), c.form, op=c.fn)
                      for c in linalg_calls)
            attempt.records = records
            rejected = tuple(
                SiteRecord(qualname, f"{r.loc.file}:{r.loc.line}", "", r.op.name, reason=f"{r.reason}: {r.detail}")
                for r in found.rejected
            ) + tuple(objmode_products(qualname, state.func_ir))
            schemes = self.mixjit_options.schemes
            plans = tuple(initial_plan(schemes, np.dtype(str(c.dtype))) for c in calls) + \
                tuple(linalg_native_plan() for _ in linalg_calls)
            block = SiteBlock(_block_symbol(), records, plans, rejected, signature, self.mixjit_options.backend)
        with stage("link"):
            if self._compilations:
                attempt.pending.append((block, _provisional_cell(block.symbol)))
            else:  # not under compile(): nothing to wait for
                block()
            for local, call in enumerate(calls):
                attempt.linked = True  # from here on the Numba IR is rewritten
                linking.link_gemm_call(state, call, block.symbol, local)
            for local, lcall in enumerate(linalg_calls, start=len(calls)):
                attempt.linked = True
                link_linalg_call(state, lcall, block.symbol, local)
        state.reload_init.append(block)
        return bool(records)

    # -- what the user inspects ----------------------------------------------

    def site_blocks(self, key: tuple) -> list[SiteBlock | NotLinked]:
        """The site blocks and fallback records of compiled signature ``key`` (its callees'
        included), each once."""
        cres = self.overloads.get(key)
        if cres is None:
            return []
        seen = []
        for fn in cres.reload_init or ():
            if isinstance(fn, (SiteBlock, NotLinked)) and fn not in seen:
                seen.append(fn)
        return seen

    @property
    def sites(self) -> list[Site]:
        """Every GEMM site of every compiled signature (callees' sites included). A site's
        ``signature`` is that of the function holding it (a helper's own)."""
        out = []
        for key in list(self.overloads):
            default = f"({signature_text(key)})"
            for block in self.site_blocks(key):
                sig = block.signature or default
                if isinstance(block, NotLinked):
                    out += [Site(None, r.function, sig, r.loc, r.dtype, r.form, r.alpha, r.beta, False, None,
                                 r.reason) for r in block.records]
                    continue
                for sid, rec in zip(block.site_ids(), block.records):
                    out.append(Site(sid, rec.function, sig, rec.loc, rec.dtype, rec.form, rec.alpha,
                                    rec.beta, True, get_plan(sid)))
                for rec in block.rejected:
                    out.append(Site(None, rec.function, sig, rec.loc, rec.dtype, rec.form, rec.alpha,
                                    rec.beta, False, None, rec.reason))
        return out

    def call_counts(self) -> dict[int, int]:
        """Calls so far of each site of ``sites``, by site id."""
        return {s.id: s.calls for s in self.sites if s.id is not None}

    def _spec_types(self, spec: Sequence[Any], kws: dict[str, Any] | None = None
                    ) -> tuple[tuple[types.Type, ...], types.Type | None]:
        """The argument types (and return type, if given) that ``spec`` / ``kws`` name, folded as
        a call folds them (``mixjit.arguments.resolve_spec``: defaults, keywords). No ``spec``
        for a function with required parameters: the tuned signature (``plan``), else the one
        compiled signature; ValueError when there is neither."""
        from mixjit.arguments import resolve_spec

        required = [p.name for p in inspect.signature(self.py_func).parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if spec or kws or not required:
            return resolve_spec(self, spec, kws)
        from mixjit.tuning.api import state_of

        tuned = state_of(self).last
        if tuned is not None:
            return tuned, None
        if len(self.signatures) == 1:
            return tuple(self.signatures[0]), None
        which = "no compiled signature" if not self.signatures else f"{len(self.signatures)} compiled signatures"
        raise ValueError(
            f"mixjit: {self.py_func.__qualname__} takes {', '.join(map(repr, required))} and has no tuned "
            f"signature and {which}: pass sample arguments, Numba types or a signature "
            "(f.ir(*args), f.dump(path, *args))")

    def imported(self, spec: Sequence[Any], raw: bool, pipeline: str = "detect-gemm",
                  print_ir_after_all: bool = False, timing: bool = False,
                  kws: dict[str, Any] | None = None) -> Any:
        """This function and its @njit callees imported for ``spec`` / ``kws`` (``_spec_types``;
        callees typed as their mixjit versions, as when the function compiles); unless ``raw``,
        after ``pipeline`` (run by ``mixjit.frontend_pipeline``, the JIT's own pass pipeline), with
        the process site ids and plans of the compiled signatures (``annotate_sites``)."""
        from mixjit.frontend_pipeline import run_frontend_pipeline
        from mixjit.importer import import_function

        argtypes, return_type = self._spec_types(spec, kws)
        typed = (return_type(*argtypes),) if return_type is not None else argtypes
        imported = import_function(self, *typed, untyped_hook=self._swap_callees)
        if not raw:
            result = run_frontend_pipeline(imported.module, pipeline, print_ir_after_all=print_ir_after_all,
                                           timing=timing)
            if result.timing is not None:
                sys.stderr.write(result.timing.report())
            annotate_sites(imported)
            from mixjit.tuning.annotate import annotate_profiles

            annotate_profiles(self, imported)  # tuned sites carry mix.profile: a dump re-tunes offline
        return imported

    def ir(self, *spec: Any, raw: bool = False, pipeline: str = "detect-gemm",
           print_ir_after_all: bool = False, timing: bool = False, **kws: Any) -> str:
        """The mix IR text of this function (and its @njit callees) for the
        argument types of ``spec``: example arguments (keyword arguments too; defaults as a call
        takes them), Numba types or one signature (``"float64[:, :](float64[:, :])"``); none: the
        tuned signature, else the one compiled signature.

        The IR is shown after ``pipeline`` (``mixopt -p`` syntax; default detect-gemm: each GEMM
        site is a ``mix.gemm``), run through the pass manager as the JIT runs it, with verify-each;
        ``print_ir_after_all`` prints the IR after every pass and ``timing`` a per-pass timing
        report, both to stderr. Once the signature is compiled, a site's ``site`` is the id of
        ``sites`` / ``call_counts()`` and ``mix.runs`` says what it runs (``{config, executor,
        scheme}``: its plan); a tuned site also carries its profile (``mix.profile``), so
        ``mixopt dump.mix -p "build-dag,tune{budget=...,target=...}"`` re-tunes it offline. ``raw=True`` gives the import alone (``py.*`` ops, no pass).
        Nothing is compiled."""
        return self.imported(spec, raw, pipeline, print_ir_after_all, timing, kws).text()

    # -- tuning (mixjit.tuning) ----------------------------------------------

    def tune(self, *args: Any, validate: Sequence[Sequence[Any]] = (), search: str = "greedy",
             budget: float | str | None = None, target: str | None = None,
             metric: Callable[[Any, Any], float] | None = None, margin: float = 0.0,
             max_evals: int | None = None, fp64: bool = True, eval_timeout: float | None = None,
             workers: int | None = None, executor: Any = None, reuse: bool = True, **kws: Any) -> Any:
        """Tune the plan of the signature of ``args`` / ``kws`` on them, taken as a call takes them
        (defaults, keyword arguments; ``validate``: held-out argument tuples, with the same keyword
        arguments, the plan must also meet the budget on); returns a ``mixjit.tuning.TuneResult``.
        ``budget`` / ``target``: this tuning's error budget and GPU, in place of the decorator's
        ``error_budget`` / ``target`` (which stay as they were for first-call tuning and plan
        files). ``eval_timeout``: seconds a program run may take before it is stopped (None: the
        decorator's, else derived from the reference run). ``workers``: worker processes running
        the program at once (None: the decorator's, else one per core); the plan does not depend
        on it. ``executor``: a ``concurrent.futures`` process pool or a ``distributed.Client`` whose
        workers run the program in place of ``workers`` (the same plan; docs/tuning.md). ``reuse``:
        take the errors an earlier tuning of this program on these inputs measured (another budget
        or target, an interrupted session), kept beside Numba's cache; False measures everything
        again. docs/frontend_tuning.md."""
        from mixjit.tuning.api import tune_function

        return tune_function(self, args, validate=validate, search=search, budget=budget, target=target,
                             metric=metric, margin=margin, max_evals=max_evals, fp64=fp64,
                             eval_timeout=eval_timeout, workers=workers, executor=executor, kws=kws,
                             reuse=reuse)

    def check_plan(self, *args: Any, metric: Callable[[Any, Any], float] | None = None, **kws: Any) -> Any:
        """The error of the current plan of the signature of ``args`` / ``kws`` (taken as a call takes
        them) on them (inputs it was not tuned on) against their reference run, with a warning when it breaks the plan's budget: a budget
        is met on the tuning samples, not guaranteed elsewhere. Returns a ``PlanCheck``
        (``error``, ``budget``, ``within_budget``). docs/frontend_tuning.md."""
        from mixjit.tuning.api import check_plan

        return check_plan(self, args, metric, kws)

    @property
    def plan(self) -> Any:
        """The ``TunedPlan`` tuned or given last (None before any)."""
        from mixjit.tuning.api import current_plan

        return current_plan(self)

    def use_plan(self, plan_or_path: Any) -> Any:
        """Run a ``TunedPlan`` or plan file for its signature (now, or when it compiles)."""
        from mixjit.tuning.api import use_plan

        return use_plan(self, plan_or_path)

    def save_plan(self, path: str | Path | None = None) -> Path:
        """Write ``plan`` as JSON to ``path`` (default: beside Numba's cache of the function)."""
        from mixjit.tuning.api import save_current_plan

        return save_current_plan(self, path)

    def report(self, plot: str | Path | None = None) -> str:
        """The last tuning's table (sites, shapes, calls, chosen configs, errors, modeled times);
        ``plot``: also write the modeled-speedup/error Pareto plot there."""
        from mixjit.tuning.report import report

        return report(self, plot)

    def dump(self, path: str | Path, *spec: Any, raw: bool = False, **kws: Any) -> Path:
        """Write ``ir(*spec, raw=raw, **kws)`` to ``path``, a ``.mix`` file ``mixopt`` reads; returns
        it. ``f.dump(path)`` alone dumps the tuned signature (else the one compiled signature)."""
        path = Path(path)
        path.write_text(self.ir(*spec, raw=raw, **kws), encoding="utf-8")
        return path

    def dag_for(self, *spec: Any, **kws: Any) -> Any:
        """The networkx DAG of the GEMM sites (build-dag) of this function and
        its callees for the argument types of ``spec`` (as for ``ir``; compiled
        first if needed). Nodes are the site ids of ``sites`` and
        ``call_counts()``, with ``loop_depth``; edges carry ``via`` and ``carried``.
        Sites of a function that runs as plain Numba (see ``sites``) are left out."""
        import networkx as nx

        from mixjit.frontend_pipeline import run_frontend_pipeline

        argtypes, _ = self._spec_types(spec, kws)
        self.compile(argtypes)
        imported = self.imported(argtypes, raw=True)
        dag = run_frontend_pipeline(imported.module).dag  # the frontend passes' GemmDag analysis
        mapping: dict[int, int] = {}
        for function in imported.functions:
            mapping.update(process_site_ids(function) or {})
        dag = dag.copy()  # the analysis result is read-only
        dag.remove_nodes_from([n for n in list(dag.nodes) if n not in mapping])
        return nx.relabel_nodes(dag, mapping)

    @property
    def dag(self) -> Any:
        """``dag_for`` the first compiled signature."""
        if not self.signatures:
            raise RuntimeError(
                f"mixjit: {self.py_func.__qualname__} has no compiled signature yet; call it "
                "first, or use .dag_for(*example_args)")
        return self.dag_for(*self.signatures[0])


def _referenced_dispatcher(func_ir: ir.FunctionIR, value: Any) -> CPUDispatcher | None:
    """The plain ``@njit`` dispatcher an untyped-IR value names, if any:
    ``global(f)``, ``freevar(f)`` or ``getattr(module, f)``."""
    if isinstance(value, (ir.Global, ir.FreeVar)):
        target = value.value
    elif isinstance(value, ir.Expr) and value.op == "getattr":
        try:
            owner = func_ir.infer_constant(value.value)
        except errors.ConstantInferenceError:
            return None
        target = getattr(owner, value.attr, None) if inspect.ismodule(owner) else None
    else:
        return None
    if (isinstance(target, CPUDispatcher) and not isinstance(target, MixjitDispatcher)
            and target._compiler.pipeline_class is compiler.Compiler):
        return target
    return None
