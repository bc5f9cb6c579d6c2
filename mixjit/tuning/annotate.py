"""Profiles as ``mix.profile`` attributes on the ``mix.gemm`` ops of an imported module, so a
dump carries them and ``mixopt -p tune{...}`` can re-tune offline
(``mixjit.passes.tuning.profile`` has the attribute's form).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mixjit.passes.tuning.profile import PROFILE_ATTR
from mixjit.tuning.protocol import TunableFunction

__all__ = ["annotate_profiles", "profiled_module"]


def annotate_profiles(f: TunableFunction, imported: Any) -> int:
    """Set ``mix.profile`` on each ``mix.gemm`` of ``imported`` whose site ``f``'s tuning
    profiled. ``imported`` is an ``ImportedModule`` of ``f`` after detect-gemm whose sites carry
    the process site ids (``mixjit.sites.annotate_sites``, as ``f.ir()`` shows them). Returns how
    many ops got one."""
    from mixjit.ir.dialects.mix import SiteOp
    from mixjit.tuning.api import state_of

    profiles = {sid: p for result in state_of(f).results.values() for sid, p in result.profiles.items()}
    done = 0
    for op in imported.module.walk():
        if isinstance(op, SiteOp) and op.site.value in profiles:
            op.attributes[PROFILE_ATTR] = replace(profiles[op.site.value], site=op.site.value).to_attr()
            done += 1
    return done


def profiled_module(f: TunableFunction, *args: Any) -> Any:
    """``f``'s module for the signature of ``args`` after the frontend passes
    (``detect-gemm,detect-linalg,build-dag``, run by the pass manager as ``f.ir`` runs them: ``mix.deps``, ``mix.loop_depth``), with the process site ids
    and the profiles of its tuning (tune first: ``f.tune(*args)``). Its ``.text()`` is a dump
    ``mixopt -p "tune{...}"`` can re-tune offline."""
    from mixjit.frontend_pipeline import FRONTEND_PIPELINE
    from mixjit.tuning.driver import signature_of

    return f.imported(signature_of(f, args), raw=False, pipeline=FRONTEND_PIPELINE)
