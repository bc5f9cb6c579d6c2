"""The config of the complex wrapper: a form composed with one real scheme's config.

``ComplexConfig(form, real, real_config)``: ``form`` 4 (four real products) or 3 (Gauss's
three), ``real`` a scheme name of the catalogue and ``real_config`` one of that scheme's
configs. It composes the real config, as CUTLASS composes a TileDescription into a
kernel, instead of copying each real scheme's fields. Label:
``form=4,real=mixpert(segments=4,pairs=sig6,align=row)``: the real config's own label in
parentheses, so any real label nests without escaping (no real label holds parentheses).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixjit.runtime.complex.label import split_complex_label
from mixjit.runtime.schemes.base import Config, Scheme, get_scheme

__all__ = ["FORMS", "ComplexConfig", "working_dtype", "parse_complex_label"]

FORMS = (4, 3)
"""The forms, most precise first: four real products, or Gauss's three (docs/numerics.md)."""

_PART_DTYPES = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}


def working_dtype(dtype: np.dtype | type) -> np.dtype:
    """The real dtype of the parts of a complex ``dtype`` (float32 for complex64, float64 for
    complex128); TypeError for any other dtype."""
    dt = np.dtype(dtype)
    if dt not in _PART_DTYPES:
        raise TypeError(f"complex: operands must be complex64 or complex128, got {dt}; "
                        "convert with .astype(np.complex64) or .astype(np.complex128)")
    return _PART_DTYPES[dt]


@dataclass(frozen=True)
class ComplexConfig(Config):
    """A complex product as ``form`` real products under scheme ``real`` with ``real_config``."""

    form: int
    real: str
    real_config: Config

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise ValueError(f"complex: form={self.form!r} is not a form; choose 4 (four real products) "
                             "or 3 (Gauss: three products, less accurate imaginary parts)")
        scheme = get_scheme(self.real)  # a scheme name; an alias or unknown name is an error naming the fix
        if not _config_of(scheme, self.real_config):
            raise TypeError(f"complex: real_config must be a config of the real scheme {self.real!r} "
                            f"(one of {self.real!r}'s configs() or its parse_config(label)), got {self.real_config!r}")

    @property
    def label(self) -> str:
        """``form=4,real=<scheme>(<real config label>)``."""
        return f"form={self.form},real={self.real}({self.real_config.label})"


def _config_of(scheme: Scheme, config: object) -> bool:
    """``config`` is a valid config of ``scheme``: its label parses back to it. A config of the
    scheme's own class that its parser refuses raises the parser's error (it names the field)."""
    if not isinstance(config, Config):
        return False
    try:
        return scheme.parse_config(config.label) == config
    except ValueError:
        if type(config) is type(scheme.configs(scheme.dtypes[0])[0]):
            raise
        return False


def parse_complex_label(text: str) -> ComplexConfig:
    """Inverse of :attr:`ComplexConfig.label`; ValueError naming the bad part."""
    form, real, config = split_complex_label(text)
    scheme = get_scheme(real)
    return ComplexConfig(form, scheme.name, scheme.parse_config(config))
