"""Profiles as ``mix.profile`` attributes on the ``mix.gemm`` ops of an imported module, so a
dump carries them and ``mixopt -p tune{...}`` can re-tune offline
(``mixjit.passes.tuning.profile`` has the attribute's form).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mixjit.passes.tuning.profile import PROFILE_ATTR

__all__ = ["annotate_profiles", "profiled_module"]


def annotate_profiles(f: Any, imported: Any, key: tuple) -> int:
    """Set ``mix.profile`` on each ``mix.gemm`` of ``imported`` (an ``ImportedModule`` of ``f``
    for signature ``key``, after detect-gemm) whose site was profiled by ``f``'s tuning of
    ``key``; the attribute's ``site`` is the module's site id. Returns how many ops got one."""
    from mixjit.decorator import _process_site_ids
    from mixjit.ir.dialects.mix import GemmOp
    from mixjit.tuning.api import state_of

    result = state_of(f).results.get(key)
    if result is None:
        return 0
    to_process: dict[int, int] = {}
    for function in imported.functions:
        to_process.update(_process_site_ids(function))
    done = 0
    for op in imported.module.walk():
        if not isinstance(op, GemmOp):
            continue
        local = op.site.value
        profile = result.profiles.get(to_process.get(local, -1))
        if profile is not None:
            op.attributes[PROFILE_ATTR] = replace(profile, site=local).to_attr()
            done += 1
    return done


def profiled_module(f: Any, *args: Any) -> Any:
    """``f``'s module for the signature of ``args`` after detect-gemm and build-dag (``mix.deps``,
    ``mix.loop_depth``), with the profiles of its last tuning on that signature (tune first:
    ``f.tune(*args)``). Its ``.text()`` is a dump ``mixopt`` can re-tune offline."""
    from mixjit.importer import import_function
    from mixjit.passes.build_dag import annotate_dag, gemm_dag
    from mixjit.passes.detect_gemm import detect_gemms
    from mixjit.tuning.driver import signature_of

    key = signature_of(f, args)
    imported = import_function(f, *key, untyped_hook=f._swap_callees)
    detect_gemms(imported.module)
    annotate_dag(imported.module, gemm_dag(imported.module))
    annotate_profiles(f, imported, key)
    return imported
