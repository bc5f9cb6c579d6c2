"""A GEMM site's profile, carried by its ``mix.gemm`` op as the ``mix.profile`` attribute.

The online tuner records, per site, on the user's sample inputs: the shapes it ran and how
often, its loop depth, the operand statistics that decide emulation error, and for every
candidate its modeled time on the target and its error when it alone runs it. Written into
a dump, this lets ``mixopt -p tune{...}`` re-tune with no program run.

Textual form (a dictionary attribute; keys sorted as the printer prints them)::

    {mix.profile = {calls = 12 : i64, candidates = [{config = "level=full", error = 1.0e-07 : f64,
      products = 9 : i64, scheme = "mixpert", time = 0.0012 : f64}, ...], dtype = "float32",
      loop_depth = 1 : i64, shapes = [[64, 64, 32, 12]], stats = {a_row_spread = 3.0 : f64, ...},
      target = "a100"}}

``shapes`` lists ``[m, n, k, calls]``; ``time`` is modeled seconds over all profiled calls;
``error`` is absent until measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from mixjit.ir.attributes import Attribute, DictAttr, dict_attr
from mixjit.passes.tuning.attrs import TuningAttrError, as_array, as_dict, as_float, as_int, as_str, get
from mixjit.passes.tuning.space import Candidate, SiteSpace

__all__ = ["PROFILE_ATTR", "SiteProfile", "ProfileError"]

PROFILE_ATTR = "mix.profile"


ProfileError = TuningAttrError
"""A ``mix.profile`` attribute that does not have the documented form (the tuner attributes'
common error class, under the name its users know)."""


@dataclass(frozen=True)
class SiteProfile:
    """What profiling found about one site (see the module docstring)."""

    site: int
    dtype: str
    target: str
    calls: int
    loop_depth: int
    shapes: tuple[tuple[int, int, int, int], ...]
    candidates: tuple[Candidate, ...]
    stats: Mapping[str, float] = field(default_factory=dict)

    def space(self) -> SiteSpace:
        """The site's search space: its candidates, in the order recorded (most precise first)."""
        return SiteSpace(self.site, self.candidates)

    def to_attr(self) -> DictAttr:
        """The ``mix.profile`` attribute value."""
        cands = []
        for c in self.candidates:
            entry: dict[str, object] = {"scheme": c.scheme, "config": c.config, "time": float(c.time),
                                        "products": int(c.products)}
            if c.error is not None:
                entry["error"] = float(c.error)
            cands.append(entry)
        return dict_attr({
            "dtype": self.dtype, "target": self.target, "calls": int(self.calls),
            "loop_depth": int(self.loop_depth), "shapes": [list(map(int, s)) for s in self.shapes],
            "candidates": cands, "stats": {k: float(v) for k, v in self.stats.items()},
        })

    @staticmethod
    def from_attr(site: int, attr: Attribute) -> "SiteProfile":
        """Read a ``mix.profile`` value back; ProfileError names the missing or bad field. Times and
        errors must be non-negative (times finite; an error may be infinite), counts non-negative,
        and no (scheme, config) may appear twice."""
        where = f"{PROFILE_ATTR} of site {site}"
        d = as_dict(attr, where)
        cands: list[Candidate] = []
        for i, c in enumerate(as_array(get(d, "candidates", where), f"{where}: candidates")):
            cw = f"{where}: candidates[{i}]"
            cd = as_dict(c, cw)
            error = as_float(cd["error"], f"{cw}: error", nonnegative=True) if "error" in cd else None
            cand = Candidate(as_str(get(cd, "scheme", cw), f"{cw}: scheme"),
                             as_str(get(cd, "config", cw), f"{cw}: config"),
                             as_float(get(cd, "time", cw), f"{cw}: time", nonnegative=True, finite=True),
                             as_int(cd["products"], f"{cw}: products", minimum=0) if "products" in cd else 1,
                             error)
            if any((cand.scheme, cand.config) == (o.scheme, o.config) for o in cands):
                raise ProfileError(f"{cw}: {cand.label} is listed twice")
            cands.append(cand)
        if not cands:
            raise ProfileError(f"{where}: candidates is empty")
        shapes = []
        for i, s in enumerate(as_array(get(d, "shapes", where), f"{where}: shapes")):
            dims = tuple(as_int(x, f"{where}: shapes[{i}]", minimum=0) for x in as_array(s, f"{where}: shapes[{i}]"))
            if len(dims) != 4:
                raise ProfileError(f"{where}: shapes[{i}] must be [m, n, k, calls], got {len(dims)} numbers")
            shapes.append(dims)
        stats = {k: as_float(v, f"{where}: stats.{k}") for k, v in as_dict(d["stats"], f"{where}: stats").items()} \
            if "stats" in d else {}
        return SiteProfile(site, as_str(get(d, "dtype", where), f"{where}: dtype"),
                           as_str(get(d, "target", where), f"{where}: target"),
                           as_int(get(d, "calls", where), f"{where}: calls", minimum=0),
                           as_int(get(d, "loop_depth", where), f"{where}: loop_depth", minimum=0),
                           tuple(shapes), tuple(cands), stats)
