"""The complex wrapper's config label, taken apart without importing any scheme.

``form=4,real=mixpert(segments=4,pairs=sig6,align=row)``: the form, the real scheme's name and
the real config's own label in parentheses. :func:`split_complex_label` is the one parser of
that text: :func:`mixjit.runtime.complex.config.parse_complex_label` builds the config from its
parts, and the CUDA desc (runtime/complex/cuda/desc.py), which the ``emit-cuda`` pass imports,
reads the real scheme and config from it. Pure Python (no numba, no numpy).
"""

from __future__ import annotations

import re

__all__ = ["split_complex_label"]

_LABEL = re.compile(r"form=(?P<form>[^,]*),real=(?P<real>[A-Za-z0-9_-]+)\((?P<config>.*)\)")


def split_complex_label(text: str) -> tuple[int, str, str]:
    """(form, real scheme name, real config label) of a complex label; ValueError naming the
    bad part (the form must be an integer; whether it is 4 or 3 is the config's check)."""
    match = _LABEL.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"complex: bad config {text!r}; write form=<4|3>,real=<scheme>(<its config label>), "
                         "e.g. 'form=4,real=tf32x3(products=3)'")
    try:
        form = int(match["form"])
    except ValueError:
        raise ValueError(f"complex: form={match['form']!r} in {text!r} is not 4 or 3") from None
    return form, match["real"], match["config"]
