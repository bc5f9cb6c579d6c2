"""``MixjitWarning``, the base class of every warning mixjit gives (a leaf module).

It lives in the runtime so that runtime modules (``jit.cache.CacheFileWarning``)
can derive from it without importing mixjit's front end; ``mixjit.decorator``
re-exports it, and ``warnings.simplefilter("ignore", MixjitWarning)`` silences them all.
"""

from __future__ import annotations

__all__ = ["MixjitWarning"]


class MixjitWarning(UserWarning):
    """Something about mixjit the user should know: a @mixjit function (no GEMM found,
    a function argument whose GEMMs stay unlinked, a scheme without executor) or its
    compiled code (an unreadable cache file, compiled again)."""
