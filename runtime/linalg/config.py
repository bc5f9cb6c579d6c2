"""A linalg candidate's config: block size, the GEMM scheme of its products, refinement.

Label form: ``block=64,gemm=mixpert[level=IV],refine=on`` (docs/numerics.md, "linalg").
The GEMM part is any real scheme of the catalogue with one of its configs, composed into
the linalg config as a tile description is composed into a CUTLASS operation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mixjit.runtime.schemes.base import Config, get_scheme

__all__ = ["LinalgConfig", "OPS", "REFINABLE", "BLOCK_SIZES", "LAPACK"]

#: the ``np.linalg`` functions a linalg site can be
OPS = ("cholesky", "solve", "inv", "lstsq", "det", "slogdet")
#: the ops iterative refinement applies to (a solution to correct)
REFINABLE = ("solve", "inv", "lstsq")
#: block sizes the tuner offers
BLOCK_SIZES = (64, 128, 256)
#: the label of the native candidate: the LAPACK call Numba makes
LAPACK = "lapack"

_LABEL = re.compile(r"^block=(\d+),gemm=([A-Za-z0-9_\-]+)\[(.*)\],refine=(on|off)$")


@dataclass(frozen=True)
class LinalgConfig:
    """A blocked candidate: panels of ``block`` columns, products under ``gemm_scheme``
    at ``gemm_config`` (a label of that scheme), iterative refinement when ``refine``."""

    block: int
    gemm_scheme: str
    gemm_config: str
    refine: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.block <= 4096:
            raise ValueError(f"linalg: block must be in 1..4096, got {self.block}")
        scheme = get_scheme(self.gemm_scheme)  # a KeyError names the known schemes
        scheme.parse_config(self.gemm_config)  # a ValueError names what is wrong with it

    @property
    def label(self) -> str:
        """``block=64,gemm=mixpert[level=IV],refine=on``."""
        return f"block={self.block},gemm={self.gemm_scheme}[{self.gemm_config}],refine={'on' if self.refine else 'off'}"

    def gemm(self) -> tuple:
        """``(scheme, config)`` of the products."""
        scheme = get_scheme(self.gemm_scheme)
        return scheme, scheme.parse_config(self.gemm_config)

    @classmethod
    def parse(cls, label: str) -> LinalgConfig:
        """The config a :attr:`label` names; ValueError shows the form."""
        match = _LABEL.match(label.strip())
        if match is None:
            raise ValueError(f"linalg: bad config {label!r}; write block=<n>,gemm=<scheme>[<config>],refine=on|off "
                             "(e.g. 'block=64,gemm=mixpert[level=IV],refine=on')")
        block, scheme, config, refine = match.groups()
        if len(block) > 4:
            raise ValueError(f"linalg: block must be in 1..4096, got {block}")
        return cls(int(block), scheme, config, refine == "on")

    @classmethod
    def of(cls, block: int, scheme: str, config: Config | str, refine: bool = False) -> LinalgConfig:
        """A config from a GEMM scheme name and one of its configs (or a label)."""
        return cls(block, scheme, config if isinstance(config, str) else config.label, refine)


def working_dtype(dtype: np.dtype | type) -> np.dtype:
    """The working precision of a linalg op on ``dtype`` operands: float32 or float64;
    anything else is refused (complex and integer operands stay with LAPACK)."""
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"linalg: blocked candidates take float32 or float64 operands, got {dt}")
    return dt
