"""The targets each build test builds a config for (CI time: a build costs seconds of nvcc).

A family's representative config builds for every target of runtime/cuda/desc.py's ARCHS in the
default run; its other default configs build for sm_80 and sm_90 there, and for the Blackwell
targets with ``-m slow`` (the same templates and compiler: what differs per target is the SASS
table's row and ptxas's register allocation, which the representative config checks)."""

from __future__ import annotations

from typing import Any

import pytest

from mixjit.runtime.cuda.desc import ARCHS

__all__ = ["CORE_ARCHS", "per_target"]

#: the targets every default config builds for
CORE_ARCHS = ("sm_80", "sm_90")


def per_target(cases: list[Any]) -> list[Any]:
    """``pytest.param(arch, *case)`` for each target and case (a tuple of values, or a
    ``pytest.param`` whose marks and id it keeps), the first case the representative one."""
    out = []
    for i, case in enumerate(cases):
        values, marks, name = (tuple(case.values), list(case.marks), case.id) if hasattr(case, "values") \
            else (case if isinstance(case, tuple) else (case,), [], None)
        for arch in ARCHS:
            slow = [pytest.mark.slow] if i and arch not in CORE_ARCHS else []
            out.append(pytest.param(arch, *values, marks=marks + slow, id=f"{arch}-{name}" if name else None))
    return out
