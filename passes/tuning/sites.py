"""The sites of a module, as the tuner's pass and report read them: every site op
(``mix.gemm`` and ``mix.linalg``) for the tuner, the ``mix.gemm`` ones for GEMM-only passes."""

from __future__ import annotations

from mixjit.ir.core import Operation
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.dialects.mix import GemmOp, SiteOp
from mixjit.ir.location import Location

__all__ = ["gemm_sites", "tunable_sites", "site_loc"]


def site_loc(op: Operation) -> Location:
    """Where to point at a site: its Python source location, else its line in the .mix text."""
    return op.loc if op.loc.is_known or op.text_loc is None else op.text_loc


def tunable_sites(module: Operation) -> dict[int, SiteOp]:
    """Site id -> its site op (``mix.gemm`` or ``mix.linalg``), sorted by id; DiagnosticError for
    an id used twice."""
    ops: dict[int, SiteOp] = {}
    for op in module.walk():
        if isinstance(op, SiteOp):
            site = op.site.value
            if site in ops:
                raise DiagnosticError(Diagnostic.error(
                    f"site id {site} is used twice: run detect-gemm and detect-linalg on the whole module "
                    "so that they number the sites", site_loc(op)))
            ops[site] = op
    return dict(sorted(ops.items()))


def gemm_sites(module: Operation) -> dict[int, GemmOp]:
    """Site id -> its ``mix.gemm``, sorted by id (the sites of GEMM-only passes: emit-cuda,
    dfp chains); DiagnosticError for an id used twice."""
    return {s: op for s, op in tunable_sites(module).items() if isinstance(op, GemmOp)}
