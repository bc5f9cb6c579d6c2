"""Readers for the tuner's dictionary attributes (``mix.profile``, ``mix.plan``): each checks one
field's kind and raises :class:`TuningAttrError` naming the attribute, the field and what it got,
so a hand-edited dump gets a message that says what to fix."""

from __future__ import annotations

import math

from mixjit.ir.attributes import ArrayAttr, Attribute, DictAttr, FloatAttr, IntegerAttr, StringAttr

__all__ = ["TuningAttrError", "get", "as_dict", "as_array", "as_str", "as_int", "as_float"]


class TuningAttrError(ValueError):
    """A tuner attribute (``mix.profile``, ``mix.plan``, ...) that does not have its documented form."""


def get(d: dict[str, Attribute], key: str, where: str) -> Attribute:
    if key not in d:
        raise TuningAttrError(f"{where}: missing '{key}'")
    return d[key]


def as_dict(a: Attribute, where: str) -> dict[str, Attribute]:
    if not isinstance(a, DictAttr):
        raise TuningAttrError(f"{where}: expected a dictionary attribute, got {a}")
    return a.as_dict()


def as_array(a: Attribute, where: str) -> ArrayAttr:
    if not isinstance(a, ArrayAttr):
        raise TuningAttrError(f"{where}: expected an array attribute, got {a}")
    return a


def as_str(a: Attribute, where: str) -> str:
    if not isinstance(a, StringAttr):
        raise TuningAttrError(f"{where}: expected a string, got {a}")
    return a.value


def as_int(a: Attribute, where: str, minimum: int | None = None) -> int:
    if not isinstance(a, IntegerAttr):
        raise TuningAttrError(f"{where}: expected an integer, got {a}")
    if minimum is not None and a.value < minimum:
        raise TuningAttrError(f"{where}: must be at least {minimum}, got {a.value}")
    return a.value


def as_float(a: Attribute, where: str, nonnegative: bool = False, finite: bool = False) -> float:
    """A number (float or integer attribute); ``nonnegative`` refuses negatives and NaN, ``finite``
    refuses infinities and NaN."""
    if isinstance(a, FloatAttr):
        value = a.value
    elif isinstance(a, IntegerAttr):
        value = float(a.value)
    else:
        raise TuningAttrError(f"{where}: expected a number, got {a}")
    if nonnegative and not value >= 0:
        raise TuningAttrError(f"{where}: must be a non-negative number, got {value}")
    if finite and not math.isfinite(value):
        raise TuningAttrError(f"{where}: must be finite, got {value}")
    return value
