"""The scheme catalogue: one entry per scheme family, the one place a family is named.

Each :class:`Family` says which schemes the family registers and under which aliases, the
input dtypes, the modules that define its schemes (imported lazily, on the first lookup of one
of its names: each loads its Numba executor), the plan code of its compiled executor (word 0 of
a plan row), which of its schemes have CUDA kernels and the desc class that describes them,
its role in the default candidate sets per dtype, and whether the tuner carries values along
chains of its sites after a search. Everything that lists schemes reads it: the scheme
registry (``get_scheme``), the run-time entry's executor table, the default plans and tuning
candidates, the CUDA desc registry and launcher imports, ``mixjit.gemm``'s error for an
unknown scheme, the accuracy tool.

A pure table: imports neither numba nor numpy (tests/runtime/schemes/test_catalog.py checks), so
looking up a name never compiles anything. A new family is one :class:`Family` here (or
:func:`register_family` for one that lives outside mixjit) plus its package under runtime/.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping

__all__ = ["Family", "FAMILIES", "ROLES", "register_family", "unregister_family", "families", "family_of",
           "scheme_names", "alias_table", "default_schemes", "kernel_families", "plan_code", "plan_codes"]

ROLES = ("plan", "tuning")
"""The default candidate sets a scheme can belong to, per dtype: ``plan`` the candidates of a
site when the user names none (``mixjit.plan``; its first is the site's initial plan and
``mixjit.gemm``'s default), ``tuning`` what the tuner searches when the user names none."""


@dataclass(frozen=True)
class Family:
    """One scheme family.

    ``name``: the family (``mixpert``). ``schemes``: the scheme names it registers.
    ``modules``: the modules whose import registers those schemes (``@register``).
    ``dtypes``: the input dtypes its schemes take (names: ``float32``). ``plan_code``: word 0
    of a plan row naming its compiled executor (1..3 are the entry's built-ins); None for a
    wrapper whose sites run other families' executors (the complex wrapper). ``aliases``:
    name -> (scheme, config label), a name for one config. ``kernels``: the schemes that have
    CUDA kernels, described by ``cuda_desc`` (``module:Class``, a desc with ``for_config``;
    the launchers are that package's ``launchers`` module). ``defaults``: role -> dtype ->
    ordered schemes of this family in that default set, with their rank (lower first) across
    families. ``carries_chains``: after a search the tuner re-plans chains of its sites
    (dfp carries block exponents from one GEMM to the next: same bits, less work)."""

    name: str
    schemes: tuple[str, ...]
    modules: tuple[str, ...]
    dtypes: tuple[str, ...]
    plan_code: int | None
    aliases: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    kernels: tuple[str, ...] = ()
    cuda_desc: str | None = None
    defaults: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)
    carries_chains: bool = False

    def __post_init__(self) -> None:
        problems = []
        if not set(self.kernels) <= set(self.schemes):
            problems.append(f"kernels {self.kernels} are not all among its schemes {self.schemes}")
        if bool(self.kernels) != (self.cuda_desc is not None):
            problems.append("kernels and cuda_desc go together (both or neither)")
        for role, by_dtype in self.defaults.items():
            if role not in ROLES:
                problems.append(f"default role {role!r} is not one of {ROLES}")
            for dtype, ranked in by_dtype.items():
                if dtype not in self.dtypes or not set(ranked) <= set(self.schemes):
                    problems.append(f"defaults[{role!r}][{dtype!r}] names {sorted(ranked)}: not its schemes or dtypes")
        for alias, (scheme, _) in self.aliases.items():
            if scheme not in self.schemes:
                problems.append(f"alias {alias!r} names {scheme!r}, not one of its schemes")
        if problems:
            raise ValueError(f"scheme family {self.name!r}: " + "; ".join(problems))

    @property
    def names(self) -> tuple[str, ...]:
        """Every name that finds this family: its schemes and aliases."""
        return (*self.schemes, *self.aliases)

    @property
    def cuda_package(self) -> str | None:
        """The package of its CUDA parts (the desc's package), None without kernels."""
        return None if self.cuda_desc is None else self.cuda_desc.partition(":")[0].rpartition(".")[0]


_R = "mixjit.runtime"
_F32, _F64 = "float32", "float64"
_BOTH = (_F32, _F64)
_C64, _C128 = "complex64", "complex128"

FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("native", ("native",), (f"{_R}.schemes.native",), (*_BOTH, _C64, _C128), 1,
           defaults={role: {dt: {"native": 9} for dt in (_F32, _F64, _C64, _C128)} for role in ("plan", "tuning")}),
    Family("multiterm", ("tf32x3", "bf16xn", "fp16x2"),
           (f"{_R}.schemes.tf32x3", f"{_R}.schemes.bf16xn", f"{_R}.schemes.fp16x2"), _BOTH, 5,
           aliases={f"bf16x{p}": ("bf16xn", f"products={p}") for p in (3, 6, 9)},
           kernels=("tf32x3", "bf16xn", "fp16x2"), cuda_desc=f"{_R}.multiterm.cuda.desc:MultiTermDesc"),
    Family("int8", ("int8",), (f"{_R}.schemes.int8",), _BOTH, 6,
           kernels=("int8",), cuda_desc=f"{_R}.int8.cuda.desc:Int8Desc"),
    Family("split", ("split",), (f"{_R}.schemes.split",), _BOTH, 7,
           kernels=("split",), cuda_desc=f"{_R}.split.cuda.desc:SplitDesc"),
    Family("mixpert", ("mixpert", "mixpert-fp64"), (f"{_R}.schemes.mixpert",), _BOTH, 4,
           kernels=("mixpert", "mixpert-fp64"), cuda_desc=f"{_R}.mixpert.cuda.desc:KernelDesc",
           defaults={"plan": {_F32: {"mixpert": 0}, _F64: {"mixpert-fp64": 0}},
                     "tuning": {_F32: {"mixpert": 0}, _F64: {"mixpert-fp64": 0, "mixpert": 2}}}),
    Family("ozaki2", ("ozaki2",), (f"{_R}.schemes.ozaki2",), _BOTH, 8,
           kernels=("ozaki2",), cuda_desc=f"{_R}.ozaki2.cuda.desc:Ozaki2Desc",
           defaults={"tuning": {_F64: {"ozaki2": 1}}}),
    Family("dfp", ("dfp",), (f"{_R}.schemes.dfp",), _BOTH, 9, carries_chains=True,
           kernels=("dfp",), cuda_desc=f"{_R}.dfp.cuda.desc:DfpDesc"),
    Family("vitbit", ("vitbit",), (f"{_R}.schemes.vitbit",), _BOTH, 10,
           kernels=("vitbit",), cuda_desc=f"{_R}.vitbit.cuda.desc:VitbitDesc"),
    # complex64/complex128 products as real products under any family's scheme: its sites run
    # the real scheme's executor (complex entry dtypes), so it has no plan code of its own; its
    # kernels are the real scheme's for the parts' products plus the complex epilogue
    Family("complex", ("complex",), (f"{_R}.complex.scheme",), (_C64, _C128), None,
           kernels=("complex",), cuda_desc=f"{_R}.complex.cuda.desc:ComplexDesc",
           defaults={role: {_C64: {"complex": 0}, _C128: {"complex": 0}} for role in ("plan", "tuning")}),
)}
"""The built-in families, in registration order."""

_BUILTIN = frozenset(FAMILIES)


def register_family(family: Family) -> Family:
    """Add ``family`` to the catalogue (a family that lives outside mixjit); ValueError when one
    of its names, or its plan code, is taken already. Its schemes load on first lookup."""
    taken = {n: f.name for f in FAMILIES.values() for n in f.names}
    clash = sorted(n for n in family.names if n in taken)
    if family.name in FAMILIES or clash:
        raise ValueError(f"scheme family {family.name!r}: name(s) {clash or [family.name]} are taken "
                         f"(by {sorted({taken.get(n, family.name) for n in clash or [family.name]})}); choose others")
    codes = plan_codes()
    if family.plan_code is not None and family.plan_code in codes:
        raise ValueError(f"scheme family {family.name!r}: plan code {family.plan_code} is taken by "
                         f"{codes[family.plan_code]!r}; the next free code is {max(codes) + 1}")
    FAMILIES[family.name] = family
    return family


def unregister_family(name: str) -> None:
    """Remove a family added by :func:`register_family` (the built-ins stay); loaded schemes
    are forgotten by ``mixjit.runtime.schemes.base.forget_family``."""
    if name in _BUILTIN:
        raise ValueError(f"scheme family {name!r} is built in and cannot be removed")
    FAMILIES.pop(name, None)


def families() -> Iterator[Family]:
    """Every family, built-ins first, in registration order."""
    return iter(tuple(FAMILIES.values()))


def family_of(name: str) -> Family | None:
    """The family a scheme name or alias belongs to, None for an unknown name."""
    return next((f for f in FAMILIES.values() if name in f.names), None)


def scheme_names() -> tuple[str, ...]:
    """Every scheme and alias name, sorted (what an error for an unknown name lists)."""
    return tuple(sorted(n for f in FAMILIES.values() for n in f.names))


def alias_table() -> dict[str, tuple[str, str]]:
    """Every alias: name -> (scheme, config label)."""
    return {a: target for f in FAMILIES.values() for a, target in f.aliases.items()}


def default_schemes(role: str, dtype: str) -> tuple[str, ...]:
    """The schemes of default set ``role`` (:data:`ROLES`) for inputs of ``dtype``, in rank order."""
    if role not in ROLES:
        raise ValueError(f"unknown default role {role!r}; one of {ROLES}")
    ranked = [(rank, scheme) for f in FAMILIES.values()
              for scheme, rank in f.defaults.get(role, {}).get(dtype, {}).items()]
    return tuple(scheme for _, scheme in sorted(ranked))


def kernel_families() -> dict[str, str]:
    """Scheme -> its CUDA desc (``module:Class``), for every scheme that has kernels."""
    return {s: f.cuda_desc for f in FAMILIES.values() if f.cuda_desc is not None for s in f.kernels}


def plan_code(family: str) -> int:
    """The plan code of ``family``'s compiled executor (what its ``CompiledExecutor`` declares)."""
    code = FAMILIES[family].plan_code
    if code is None:
        raise ValueError(f"scheme family {family!r} runs other families' executors and has no plan code")
    return code


def plan_codes() -> dict[int, str]:
    """Plan code -> family."""
    return {f.plan_code: f.name for f in FAMILIES.values() if f.plan_code is not None}
