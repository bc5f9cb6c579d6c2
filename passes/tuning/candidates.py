"""A site's candidates, ordered for the search and pruned to their error/time Pareto front.

The search lowers a site by moving to the next candidate, so the candidates must run from the
most precise (slowest) to the least precise (fastest). A candidate that is both slower and less
precise than another one (on the site alone) can never be part of a good plan, and every such
candidate would cost the greedy search an evaluation: it is pruned.

"Less precise" is decided by the measured error first and, when two errors are equal, by the
order the candidates are given in (the site's space: the scheme's most precise config first).
Sample inputs on which every candidate measures the same error (0, say: k-means labels that no
candidate moves) say nothing about precision; without the tie-break the fastest candidate would
dominate all the others, and the "most precise plan" fallback after a held-out failure would be
that same fastest plan.

Which candidates a site has starts from the user's ``schemes=``: each entry is a scheme name
(``"int8"``: its configs) or a *scheme spec* that fixes config fields (:func:`parse_scheme_spec`):
``"int8{encoding=sf16}"``, ``"split{encoding=sf16|pct99}"`` (``|``: one candidate per value),
``"dfp{out=dfp}"``. The encoded configs and other non-default fields are candidates only when a
spec asks for them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mixjit.passes.tuning.space import Candidate, SiteSpace

__all__ = ["by_modeled_time", "pareto_front", "prune_space", "SchemeSpec", "parse_scheme_spec", "split_scheme_specs", "config_fields"]

_SPEC = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*(?:\{(.*)\})?\s*$", re.S)


def config_fields(label: str) -> dict[str, str]:
    """The ``key=value`` fields of a config label, in order (``"bits=8,block=1"``)."""
    fields = {}
    for part in filter(None, (p.strip() for p in label.split(","))):
        key, _, value = part.partition("=")
        fields[key.strip()] = value.strip()
    return fields


@dataclass(frozen=True)
class SchemeSpec:
    """A ``schemes=`` entry: the scheme's name and the config fields it fixes, each with the
    values to offer (``encoding=sf16|sf8``: two)."""

    scheme: str
    fixed: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def labels(self, base: Sequence[str]) -> list[str]:
        """The config labels this spec offers: each of the scheme's ``base`` labels (most precise
        first) with the fixed fields set, once per combination of their values, duplicates
        dropped. The scheme parses (and checks) each label; unknown fields fail there."""
        if not self.fixed:
            return list(base)
        keys = [k for k, _ in self.fixed]
        out: list[str] = []
        for values in itertools.product(*(v for _, v in self.fixed)):
            for label in base:
                fields = config_fields("" if label == "default" else label)
                fields.update(zip(keys, values))
                text = ",".join(f"{k}={v}" for k, v in fields.items())
                if text not in out:
                    out.append(text)
        return out


def parse_scheme_spec(text: str) -> SchemeSpec:
    """``"int8{encoding=sf16|pct99}"`` -> ``SchemeSpec("int8", (("encoding", ("sf16", "pct99")),))``;
    a plain name has no fixed fields. ValueError names what is wrong and shows the syntax."""
    match = _SPEC.match(text)
    syntax = "write a scheme name, or name{field=value,...} with value1|value2 to offer several"
    if match is None:
        raise ValueError(f"mixjit: bad scheme spec {text!r}; {syntax} (e.g. 'int8{{encoding=sf16}}')")
    name, body = match.group(1), match.group(2)
    fixed = []
    for part in filter(None, (p.strip() for p in (body or "").split(","))):
        key, sep, values = part.partition("=")
        alternatives = tuple(v.strip() for v in values.split("|"))
        if not sep or not key.strip() or not all(alternatives):
            raise ValueError(f"mixjit: bad field {part!r} in scheme spec {text!r}; {syntax}")
        fixed.append((key.strip(), alternatives))
    if body is not None and not fixed:
        raise ValueError(f"mixjit: scheme spec {text!r} fixes no field; {syntax}")
    return SchemeSpec(name, tuple(fixed))


def split_scheme_specs(text: str) -> tuple[str, ...]:
    """``"mixpert,int8{encoding=sf16,scale=row}"`` -> ``("mixpert", "int8{encoding=sf16,scale=row}")``:
    a comma-separated list of scheme specs (command-line flags), split at the commas outside braces."""
    specs, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0 or depth > 1:
            raise ValueError(f"mixjit: unbalanced braces in scheme list {text!r}; write name{{field=value,...}}")
        if ch == "," and depth == 0:
            specs.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise ValueError(f"mixjit: unclosed '{{' in scheme list {text!r}; write name{{field=value,...}}")
    specs.append(text[start:].strip())
    if not all(specs):
        raise ValueError(f"mixjit: empty entry in scheme list {text!r}; separate scheme specs by single commas")
    return tuple(specs)


def by_modeled_time(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """``candidates`` from the slowest modeled time to the fastest (the search's order: the most
    precise first). Ties: the smaller measured error first, then the given order."""
    indexed = sorted(enumerate(candidates), key=lambda ic: (-ic[1].time, _error_key(ic[1]), ic[0]))
    return tuple(c for _, c in indexed)


def pareto_front(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """The candidates that no other candidate beats on both error and modeled time, most precise
    (slowest) first.

    ``candidates`` must be in precision order (most precise first, as a site's space lists them):
    that order breaks ties in measured error. Candidate ``d`` dominates ``c`` when both errors are
    measured, ``d.time <= c.time`` and ``d`` is more precise: ``d.error < c.error``, or equal errors
    and ``d`` given before ``c``. So the first-given candidate of the smallest error is always kept,
    and of candidates that all measure the same error only those faster than every more precise
    one are dropped, never the most precise. A NaN error counts as the worst error. Candidates
    whose error is not measured (``None``) are kept as given: nothing is known against them, and
    they dominate nothing.
    """
    kept: list[Candidate] = []
    for i, c in enumerate(candidates):
        if c.error is not None and any(_dominates(d, c, j < i) for j, d in enumerate(candidates) if j != i):
            continue
        kept.append(c)
    return by_modeled_time(kept)


def prune_space(space: SiteSpace) -> SiteSpace:
    """``space`` with its candidates pruned by :func:`pareto_front` (same site id)."""
    return SiteSpace(space.site, pareto_front(space.candidates))


def _error_key(c: Candidate) -> float:
    if c.error is None or math.isnan(c.error):
        return math.inf
    return c.error


def _dominates(d: Candidate, c: Candidate, d_first: bool) -> bool:
    """Does ``d`` dominate ``c`` (``d_first``: ``d`` comes first in precision order, which breaks
    ties in measured error)?"""
    if d.error is None or d.time > c.time:
        return False
    de, ce = _error_key(d), _error_key(c)
    return de < ce or (de == ce and d_first)
