"""The ``mix.gemm`` sites of a module, as the tuner's pass and report read them."""

from __future__ import annotations

from mixjit.ir.core import Operation
from mixjit.ir.diagnostics import Diagnostic, DiagnosticError
from mixjit.ir.dialects.mix import GemmOp
from mixjit.ir.location import Location

__all__ = ["gemm_sites", "site_loc"]


def site_loc(op: Operation) -> Location:
    """Where to point at a site: its Python source location, else its line in the .mix text."""
    return op.loc if op.loc.is_known or op.text_loc is None else op.text_loc


def gemm_sites(module: Operation) -> dict[int, GemmOp]:
    """Site id -> its ``mix.gemm``, sorted by id; DiagnosticError for an id used twice."""
    ops: dict[int, GemmOp] = {}
    for op in module.walk():
        if isinstance(op, GemmOp):
            site = op.site.value
            if site in ops:
                raise DiagnosticError(Diagnostic.error(
                    f"GEMM site id {site} is used twice: run detect-gemm on the whole module so that it "
                    "numbers the sites", site_loc(op)))
            ops[site] = op
    return dict(sorted(ops.items()))
