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

from mixjit.ir.attributes import ArrayAttr, Attribute, DictAttr, FloatAttr, IntegerAttr, StringAttr, to_attr
from mixjit.passes.tuning.space import Candidate, SiteSpace

__all__ = ["PROFILE_ATTR", "SiteProfile", "ProfileError"]

PROFILE_ATTR = "mix.profile"


class ProfileError(ValueError):
    """A ``mix.profile`` attribute that does not have the documented form."""


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
        return to_attr({
            "dtype": self.dtype, "target": self.target, "calls": int(self.calls),
            "loop_depth": int(self.loop_depth), "shapes": [list(map(int, s)) for s in self.shapes],
            "candidates": cands, "stats": {k: float(v) for k, v in self.stats.items()},
        })

    @staticmethod
    def from_attr(site: int, attr: Attribute) -> "SiteProfile":
        """Read a ``mix.profile`` value back; ProfileError names the missing or bad field."""
        d = _dict(attr, f"{PROFILE_ATTR} of site {site}")
        where = f"{PROFILE_ATTR} of site {site}"
        cands = []
        for i, c in enumerate(_array(_get(d, "candidates", where), f"{where}: candidates")):
            cw = f"{where}: candidates[{i}]"
            cd = _dict(c, cw)
            error = _float(cd["error"], f"{cw}: error") if "error" in cd else None
            cands.append(Candidate(_str(_get(cd, "scheme", cw), f"{cw}: scheme"),
                                   _str(_get(cd, "config", cw), f"{cw}: config"),
                                   _float(_get(cd, "time", cw), f"{cw}: time"),
                                   _int(cd["products"], f"{cw}: products") if "products" in cd else 1,
                                   error))
        if not cands:
            raise ProfileError(f"{where}: candidates is empty")
        shapes = []
        for i, s in enumerate(_array(_get(d, "shapes", where), f"{where}: shapes")):
            dims = tuple(_int(x, f"{where}: shapes[{i}]") for x in _array(s, f"{where}: shapes[{i}]"))
            if len(dims) != 4:
                raise ProfileError(f"{where}: shapes[{i}] must be [m, n, k, calls], got {len(dims)} numbers")
            shapes.append(dims)
        stats = {k: _float(v, f"{where}: stats.{k}") for k, v in _dict(d["stats"], f"{where}: stats").items()} \
            if "stats" in d else {}
        return SiteProfile(site, _str(_get(d, "dtype", where), f"{where}: dtype"),
                           _str(_get(d, "target", where), f"{where}: target"),
                           _int(_get(d, "calls", where), f"{where}: calls"),
                           _int(_get(d, "loop_depth", where), f"{where}: loop_depth"),
                           tuple(shapes), tuple(cands), stats)


def _get(d: dict[str, Attribute], key: str, where: str) -> Attribute:
    if key not in d:
        raise ProfileError(f"{where}: missing '{key}'")
    return d[key]


def _dict(a: Attribute, where: str) -> dict[str, Attribute]:
    if not isinstance(a, DictAttr):
        raise ProfileError(f"{where}: expected a dictionary attribute, got {a}")
    return a.as_dict()


def _array(a: Attribute, where: str) -> ArrayAttr:
    if not isinstance(a, ArrayAttr):
        raise ProfileError(f"{where}: expected an array attribute, got {a}")
    return a


def _str(a: Attribute, where: str) -> str:
    if not isinstance(a, StringAttr):
        raise ProfileError(f"{where}: expected a string, got {a}")
    return a.value


def _int(a: Attribute, where: str) -> int:
    if not isinstance(a, IntegerAttr):
        raise ProfileError(f"{where}: expected an integer, got {a}")
    return a.value


def _float(a: Attribute, where: str) -> float:
    if isinstance(a, FloatAttr):
        return a.value
    if isinstance(a, IntegerAttr):
        return float(a.value)
    raise ProfileError(f"{where}: expected a number, got {a}")
