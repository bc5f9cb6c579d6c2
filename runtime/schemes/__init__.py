"""GEMM schemes. Importing this package registers the built-in schemes.

Each scheme module registers itself with ``@register``; add new modules to the
import list below.
"""

from mixjit.runtime.schemes.base import (  # noqa: F401
    Config,
    RunStats,
    Scheme,
    Work,
    all_schemes,
    get_scheme,
    register,
)

# Built-in schemes (each module calls @register on import).
