"""The complex wrapper's Scheme face: configs, labels, CPU executor and cost.

:class:`ComplexScheme` follows the :class:`~mixjit.runtime.schemes.base.Scheme` contract
for complex64/complex128 operands. Its configs compose a real scheme's config
(:class:`~mixjit.runtime.complex.config.ComplexConfig`), so one wrapper serves every real
scheme of the catalogue, present and future, and inherits its bit-exactness: the real
products run through the real scheme's own compiled executor (``scheme.run``) and the
additions in the compiled epilogue (runtime/complex/epilogue.py). Semantics:
docs/numerics.md, "Complex products (the wrapper over real schemes)".

It is the catalogue's ``complex`` family, without a plan code of its own: a complex site runs
the real scheme's compiled executor through the entry's complex dtypes (mixjit/entry/
executors.py: the parts copied once, the real kernel per product, this package's epilogue), its
plan row ``[real code, form, the real config's words]`` (:meth:`ComplexScheme.plan_row`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mixjit.runtime.complex.config import FORMS, ComplexConfig, parse_complex_label, working_dtype
from mixjit.runtime.complex.epilogue import combine3, combine4
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import (
    CompiledExecutor,
    Config,
    RunStats,
    Scheme,
    Work,
    get_scheme,
    register,
    resolve_scheme,
)
from mixjit.runtime.schemes.emulation import check_operands

__all__ = ["ComplexScheme", "COMPLEX", "complex_gemm"]


@register
class ComplexScheme(Scheme):
    """Complex GEMM from real products of the parts under one real scheme (form 4 or 3)."""

    name = "complex"
    summary = "complex GEMM as 4 (or Gauss's 3) real products under a real scheme, parts scaled separately"
    dtypes = (np.dtype(np.complex64), np.dtype(np.complex128))

    # ------------------------------------------------------------------ configs

    def configs(self, dtype: np.dtype | type = np.complex64, real: str | None = None) -> Sequence[Config]:
        """The configs over real scheme ``real`` for ``dtype`` operands, in the order the tuner
        lowers a site (most precise first, never more products later): by products
        (``form`` times the real config's) from most to fewest, the real configs' own order
        and form 4 before form 3 among equals except that on a tie of products form 3,
        which moves more memory, comes first. ``real=None``: the
        catalogue's first default plan scheme for the parts' dtype (mixpert for complex64,
        mixpert-fp64 for complex128: FP32-class-or-better and FP64-class-or-better parts)."""
        w = working_dtype(dtype)
        scheme, fixed = resolve_scheme(real if real is not None else catalog.default_schemes("plan", w.name)[0])
        _check_part_dtype(scheme, w)
        reals = [fixed] if fixed is not None else list(scheme.configs(w))
        configs = [ComplexConfig(form, scheme.name, rc) for rc in reals for form in FORMS]
        return sorted(configs, key=lambda c: (-self.products(c), c.form))

    # ------------------------------------------------------------------ sites

    @property
    def runs_at_sites(self) -> bool:
        """Yes: a complex site runs its real scheme's compiled executor (module docstring)."""
        return True

    def plan_row(self, config: Config) -> tuple[CompiledExecutor, tuple[int, ...]]:
        """The real scheme's executor, and the words ``form, *the real config's words``."""
        cfg = _check_config(config)
        executor, words = get_scheme(cfg.real).plan_row(cfg.real_config)
        return executor, (cfg.form, *words)

    def default_config(self, dtype: np.dtype | type = np.complex64) -> Config:
        """Form 4 over the most precise config of the default real scheme for ``dtype``."""
        return self.configs(dtype)[0]

    def parse_config(self, text: str) -> Config:
        """``form=<4|3>,real=<scheme>(<its label>)`` -> :class:`ComplexConfig`."""
        return parse_complex_label(text)

    # ----------------------------------------------------------------- executor

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        """C = A @ B for complex ``a`` (m×k) and ``b`` (k×n) of one dtype (any strides)."""
        cfg = _check_config(config)
        a, b, w = _check_operands(a, b)
        real = get_scheme(cfg.real)
        _check_part_dtype(real, w)
        ar, ai, br, bi = (np.ascontiguousarray(x, dtype=w) for x in (a.real, a.imag, b.real, b.imag))
        c = np.empty((a.shape[0], b.shape[1]), dtype=a.dtype)
        rc = cfg.real_config
        if cfg.form == 4:
            # each part is an operand of two products: prepare it once (same bits, scheme contract)
            pa_r, pa_i = real.prepare_a(ar, rc), real.prepare_a(ai, rc)
            pb_r, pb_i = real.prepare_b(br, rc), real.prepare_b(bi, rc)
            runs = [real.run_with_stats(x, y, rc) for x, y in ((pa_r, pb_r), (pa_i, pb_i), (pa_r, pb_i), (pa_i, pb_r))]
            combine4(*(r[0] for r in runs), c)
        else:
            runs = [real.run_with_stats(x, y, rc) for x, y in ((ar, br), (ai, bi), (ar + ai, br + bi))]
            combine3(*(r[0] for r in runs), c)
        return c, _merged([s for _, s in runs])

    # --------------------------------------------------------------------- cost

    def products(self, config: Config) -> int:
        """Full-size low-precision products: ``form`` times the real config's."""
        cfg = _check_config(config)
        return cfg.form * get_scheme(cfg.real).products(cfg.real_config)

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.complex64) -> Work:
        """The ``form`` real products' work summed, plus the wrapper's passes over memory:
        splitting A and B into parts, form 3's operand sums, the real results written and
        read back by the epilogue (docs/numerics.md, "Complex products", Cost)."""
        cfg = _check_config(config)
        w = working_dtype(dtype)
        real = get_scheme(cfg.real)
        one = real.work(cfg.real_config, m, n, k, w)
        ops = {cls: cfg.form * v for cls, v in one.ops.items()}
        size = w.itemsize
        split = 2 * 2 * size * (m * k + k * n)
        sums = 3 * size * (m * k + k * n) if cfg.form == 3 else 0
        epilogue = 2 * cfg.form * size * m * n
        return Work(ops=ops, bytes_moved=cfg.form * one.bytes_moved + split + sums + epilogue,
                    concurrent=one.concurrent)


COMPLEX = ComplexScheme()
"""The wrapper (stateless, like every scheme)."""


def complex_gemm(a: np.ndarray, b: np.ndarray, real: str | None = None, config: Config | str | None = None,
                 form: int = 4) -> np.ndarray:
    """C = A @ B for complex64/complex128 ``a``, ``b`` as ``form`` real products under scheme
    ``real`` (a name or alias of the catalogue; None: the default plan scheme for the parts,
    mixpert for complex64, mixpert-fp64 for complex128) with ``config`` (a config of ``real``,
    its label, or None for its most precise config for the parts' dtype)."""
    if real is None:
        real = _check_config(COMPLEX.default_config(np.asarray(a).dtype)).real
    scheme, fixed = resolve_scheme(real)
    if config is None:
        config = fixed if fixed is not None else scheme.default_config(working_dtype(np.asarray(a).dtype))
    elif isinstance(config, str):
        config = scheme.parse_config(config)
    return COMPLEX.run(a, b, ComplexConfig(form, scheme.name, config))


# ----------------------------------------------------------------- checks


def _check_config(config: Config) -> ComplexConfig:
    if not isinstance(config, ComplexConfig):
        raise TypeError(f"complex: expected a ComplexConfig, got {type(config).__name__}; build one with "
                        "COMPLEX.parse_config('form=4,real=tf32x3(products=3)') or COMPLEX.configs(dtype, real=...)")
    return config


def _check_operands(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """``a``, ``b`` as 2-D complex arrays of one dtype with matching inner dimensions, and the
    parts' dtype; a TypeError (dtypes) or ValueError (shapes) that names the problem."""
    a, b = np.asarray(a), np.asarray(b)
    w = working_dtype(a.dtype)
    if a.dtype != b.dtype:
        raise TypeError(f"complex: A and B must have one dtype, got {a.dtype} and {b.dtype}; convert one "
                        "with .astype() (complex64 for FP32-class parts, complex128 for FP64-class)")
    check_operands("complex", a.real, b.real)  # the shapes, checked on the parts (views)
    return a, b, w


def _check_part_dtype(real: Scheme, w: np.dtype) -> None:
    if w not in real.dtypes:
        takes = ", ".join(d.name for d in real.dtypes)
        raise TypeError(f"complex: real scheme {real.name!r} takes {takes} parts, not {w.name} "
                        f"(the parts of {'complex64' if w == np.float32 else 'complex128'} operands); "
                        "use operands whose parts it takes, or another real scheme")


def _merged(stats: list[RunStats]) -> RunStats:
    """The real products' statistics added; each product's own in ``extra["real"]``."""
    reasons = list(dict.fromkeys(s.fallback_reason for s in stats if s.fallback_reason))
    return RunStats(fallbacks=sum(s.fallbacks for s in stats), units=sum(s.units for s in stats),
                    fallback_unit=stats[0].fallback_unit, fallback_reason="; ".join(reasons),
                    extra={"real": tuple(stats)})
