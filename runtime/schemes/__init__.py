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
    register_alias,
    resolve_scheme,
    scheme_aliases,
)

# Built-in schemes (each module calls @register on import).
from mixjit.runtime.schemes import native  # noqa: E402,F401
from mixjit.runtime.schemes import tf32x3  # noqa: E402,F401
from mixjit.runtime.schemes import bf16xn  # noqa: E402,F401
from mixjit.runtime.schemes import fp16x2  # noqa: E402,F401
from mixjit.runtime.schemes import int8  # noqa: E402,F401
from mixjit.runtime.schemes import split  # noqa: E402,F401
from mixjit.runtime.schemes import mixpert  # noqa: F401,E402
from mixjit.runtime.schemes import ozaki2  # noqa: F401,E402
from mixjit.runtime.schemes import dfp  # noqa: F401,E402
from mixjit.runtime.schemes import vitbit  # noqa: F401,E402
