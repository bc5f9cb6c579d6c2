"""``mixjit.gemm``: one GEMM under a chosen scheme, outside any compiled code."""

from __future__ import annotations

import numpy as np

from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import Config, resolve_scheme

#: the scheme ``gemm`` uses when none is given, by input dtype: the first of @mixjit's default
#: plan candidates (the scheme catalogue's ``plan`` role)
DEFAULT_SCHEMES = {np.dtype(dt): catalog.default_schemes("plan", dt)[0] for dt in ("float32", "float64")}


def gemm(
    a: np.ndarray,
    b: np.ndarray,
    scheme: str | None = None,
    config: Config | str | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Compute ``a @ b`` with ``scheme`` under ``config`` on the CPU executor.

    ``a`` (m×k) and ``b`` (k×n) are 2-D float32 or float64 arrays of the same
    dtype; transposed, non-contiguous and byte-swapped views are accepted.
    ``scheme`` defaults to ``mixpert`` for float32 and ``mixpert-fp64`` for float64
    inputs, so a float64 GEMM keeps FP64-level accuracy unless asked otherwise.
    ``config`` is a Config of the scheme, its text label (``"level=IV"``), or None
    for the most precise config. ``out``, if given, must be a writable m×n ndarray
    of that dtype.
    """
    a = _native_order(np.asarray(a))
    b = _native_order(np.asarray(b))
    if scheme is None:
        scheme = DEFAULT_SCHEMES.get(a.dtype, "mixpert")
    s, fixed = resolve_scheme(scheme)
    if fixed is not None:
        if config is not None:
            raise ValueError(
                f"mixjit.gemm: scheme {scheme!r} already fixes config {fixed.label!r}; "
                f"pass scheme={s.name!r} to choose another config"
            )
        config = fixed
    for name, x in (("A", a), ("B", b)):
        if x.ndim != 2:
            raise ValueError(
                f"mixjit.gemm: {name} must be a 2-D matrix, got {x.ndim}-D shape {x.shape}; "
                "reshape it, or use np.dot for vector products"
            )
        if x.dtype not in s.dtypes:
            ok = ", ".join(str(d) for d in s.dtypes)
            fix = " or ".join(f"{name}.astype(np.{d})" for d in s.dtypes)
            raise TypeError(
                f"mixjit.gemm: {name} has dtype {x.dtype}; scheme {s.name!r} accepts {ok}. "
                f"Convert with {fix}"
            )
    if a.dtype != b.dtype:
        raise TypeError(
            f"mixjit.gemm: A is {a.dtype} but B is {b.dtype}; convert both to one dtype"
        )
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"mixjit.gemm: inner dimensions differ: A is {a.shape[0]}x{a.shape[1]}, "
            f"B is {b.shape[0]}x{b.shape[1]} (A's columns must equal B's rows)"
        )
    if config is None:
        cfg = s.default_config(a.dtype)
    elif isinstance(config, str):
        cfg = s.parse_config(config)
    else:
        cfg = config
    m, n = a.shape[0], b.shape[1]
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"mixjit.gemm: out must be a numpy ndarray, got {type(out).__name__}")
        if out.shape != (m, n) or out.dtype != a.dtype:
            raise ValueError(
                f"mixjit.gemm: out must be a {m}x{n} {a.dtype} array, got "
                f"{'x'.join(map(str, out.shape))} {out.dtype}"
            )
        if not out.flags.writeable:
            raise ValueError("mixjit.gemm: out is read-only")
    if a.shape[1] == 0 or m == 0 or n == 0:
        c = np.zeros((m, n), dtype=a.dtype)
    else:
        c = s.run(a, b, cfg)
    if out is not None:
        out[...] = c
        return out
    return c


def _native_order(x: np.ndarray) -> np.ndarray:
    """``x`` in the machine's byte order (a byte-swapped float array is converted)."""
    if x.dtype.kind == "f" and not x.dtype.isnative:
        return x.astype(x.dtype.newbyteorder("="))
    return x
