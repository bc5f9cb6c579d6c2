"""ozaki2: GEMM emulation by the Chinese remainder theorem (Ozaki scheme II), after
GEMMul8 (Ozaki, Uchino, Imamura, "Ozaki Scheme II: A GEMM-oriented emulation of
floating-point matrix multiplication using an integer modular technique", 2025;
code github.com/RIKEN-RCCS/GEMMul8).

Rows of A and columns of B are scaled by powers of two and truncated to integers
small enough that their exact integer product is below half the product P of N
pairwise coprime moduli (GEMMul8's table, 256, 255, 253, ...); the product is
computed exactly modulo each modulus (one INT8 GEMM per modulus on a GPU; one exact
float64 GEMM of residues per modulus on the CPU), reconstructed exactly by the CRT
and scaled back with one rounding. Accuracy grows by about 4 bits per modulus
(ANCHORS.md: 8 moduli beat SGEMM, 14-15 match DGEMM). Semantics: docs/numerics.md,
section "ozaki2"; executor: runtime/ozaki2/executor.py.

Config labels: ``moduli=N`` (1..20), optionally ``mode=accurate`` (GEMMul8's
accurate scaling: one more INT8 GEMM, tighter bounds; default ``fast``) and
``kblock=B`` (the K block of the CPU executor's exact float64 residue GEMMs; it
never changes the result, only how the exact sums are formed). Fields at their
defaults are left out of the label.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mixjit.runtime.ozaki2 import executor as ex
from mixjit.runtime.schemes import catalog
from mixjit.runtime.schemes.base import CompiledExecutor, Config, RunStats, Scheme, Work, register

__all__ = ["Ozaki2Config", "Ozaki2", "FP32_MODULI", "FP64_MODULI"]

#: configs offered for float32 inputs, most precise first (8 moduli: ~31 bits per
#: scaled row norm, beyond float32's 24-bit significand for K up to ~2^10)
FP32_MODULI = (10, 9, 8, 7, 6, 5)
#: configs offered for float64 inputs, most precise first (14-15 moduli: FP64 level)
FP64_MODULI = (20, 18, 16, 15, 14, 13, 12)


@dataclass(frozen=True)
class Ozaki2Config(Config):
    """An ozaki2 config: ``moduli`` = N, the number of moduli (= INT8 residue GEMMs),
    using the first N of GEMMul8's table; ``kblock``: the K block of the CPU
    executor's exact float64 residue GEMMs (at most 2^39, where K·128² reaches
    2^53); ``mode``: GEMMul8's scaling, ``fast`` (a Cauchy-Schwarz bound from each
    row's exponents) or ``accurate`` (one more INT8 GEMM bounds every pair)."""

    moduli: int = 14
    kblock: int = ex.MAX_KBLOCK
    mode: str = "fast"

    def __post_init__(self) -> None:
        if not 1 <= self.moduli <= ex.MAX_MODULI:
            raise ValueError(f"ozaki2: moduli={self.moduli} must be in 1..{ex.MAX_MODULI} (GEMMul8's table)")
        if not 1 <= self.kblock <= ex.MAX_KBLOCK:
            raise ValueError(
                f"ozaki2: kblock={self.kblock} must be in 1..2^39 (a longer block could make a float64 "
                "residue GEMM inexact)"
            )
        if self.mode not in ("fast", "accurate"):
            raise ValueError(f"ozaki2: mode={self.mode!r} must be 'fast' or 'accurate' (GEMMul8's scaling modes)")

    @property
    def label(self) -> str:
        parts = [f"moduli={self.moduli}"]
        if self.mode != "fast":
            parts.append(f"mode={self.mode}")
        if self.kblock != ex.MAX_KBLOCK:
            parts.append(f"kblock={self.kblock}")
        return ",".join(parts)

    def words(self) -> tuple[int, ...]:
        """The config as int64 words for the compiled executor (and a plan table):
        layout ``W_*`` in runtime/ozaki2/executor.py."""
        w = [0] * ex.N_WORDS
        w[ex.W_MODULI] = self.moduli
        w[ex.W_KBLOCK] = self.kblock
        w[ex.W_MODE] = ex.MODE_ACCURATE if self.mode == "accurate" else ex.MODE_FAST
        return tuple(w)


def config_from_words(words: Sequence[int]) -> Ozaki2Config:
    """The config whose :meth:`Ozaki2Config.words` are ``words``."""
    if len(words) < ex.N_WORDS:
        raise ValueError(f"ozaki2: {len(words)} config words, expected {ex.N_WORDS}")
    mode = "accurate" if int(words[ex.W_MODE]) == ex.MODE_ACCURATE else "fast"
    return Ozaki2Config(moduli=int(words[ex.W_MODULI]), kblock=int(words[ex.W_KBLOCK]), mode=mode)


def parse_ozaki2_config(text: str) -> Ozaki2Config:
    """``moduli=N[,mode=fast|accurate][,kblock=B]`` -> config; unknown or malformed
    parts raise ValueError."""
    values: dict[str, int | str] = {}
    for item in (s.strip() for s in text.split(",")):
        key, sep, val = (s.strip() for s in item.partition("="))
        if not sep or key not in ("moduli", "kblock", "mode"):
            raise ValueError(
                f"ozaki2: bad config part {item!r} in {text!r}; write e.g. 'moduli=8' or "
                "'moduli=14,mode=accurate,kblock=4096'"
            )
        if key in values:
            raise ValueError(f"ozaki2: field {key!r} is given twice in {text!r}")
        if key == "mode":
            values[key] = val
            continue
        try:
            values[key] = int(val)
        except ValueError:
            raise ValueError(f"ozaki2: {key}={val!r} in {text!r} is not an integer") from None
    if "moduli" not in values:
        raise ValueError(f"ozaki2: config {text!r} lacks moduli; write e.g. 'moduli=8'")
    return Ozaki2Config(**values)


@register
class Ozaki2(Scheme):
    name = "ozaki2"
    executor = CompiledExecutor("ozaki2", catalog.plan_code("ozaki2"),
                                ex.ozaki2_gemm, ex.N_WORDS, ex.N_STATS, ex.STATUS_MESSAGES)
    summary = "Ozaki scheme II (GEMMul8): exact INT8 residue products modulo N moduli, CRT reconstruction"

    def configs(self, dtype: np.dtype | type = np.float32) -> Sequence[Config]:
        family = FP64_MODULI if np.dtype(dtype) == np.float64 else FP32_MODULI
        return [Ozaki2Config(moduli=n) for n in family]

    def parse_config(self, text: str) -> Config:
        return parse_ozaki2_config(text)

    def _check(self, config: Config) -> Ozaki2Config:
        if not isinstance(config, Ozaki2Config):
            raise TypeError(f"ozaki2: expected an Ozaki2Config, got {type(config).__name__}")
        return config

    def run_with_stats(self, a: np.ndarray, b: np.ndarray, config: Config) -> tuple[np.ndarray, RunStats]:
        """C = A @ B by the compiled executor (the code a @mixjit site calls).

        The only fallback is the non-finite rule: an output whose row of A or column
        of B holds inf/NaN is the IEEE value of its non-finite terms (unit
        ``element``). Small elements of a row are truncated by its scale, not counted:
        the scaling guarantees exact reconstruction, never a wrong CRT result."""
        cfg = self._check(config)
        c, st = ex.run_ozaki2(a, b, np.array(cfg.words(), dtype=np.int64))
        stats = RunStats(
            fallbacks=st.nonfinite_elements,
            units=c.size,
            fallback_unit="element",
            fallback_reason="inf/NaN in its row of A or column of B: IEEE propagation" if st.nonfinite_elements else "",
            extra={"k_blocks": st.k_blocks, "residue_gemms": st.residue_gemms, "bound_gemms": st.bound_gemms},
        )
        return c, stats

    def products(self, config: Config) -> int:
        """One INT8 GEMM per modulus, plus the accurate mode's bound GEMM."""
        cfg = self._check(config)
        return cfg.moduli + (cfg.mode == "accurate")

    def work(self, config: Config, m: int, n: int, k: int, dtype: np.dtype | type = np.float32) -> Work:
        """N INT8 GEMMs; memory passes as GEMMul8's fast mode: the scaling reads each
        operand twice (norm and exponent pass, then convert) and writes N INT8
        residue matrices and a 2-byte shift per row/column; each INT8 GEMM writes
        its INT32 product and the CRT epilogue reads all N of them back (writing C
        is not counted, as for every scheme). The accurate mode adds its bound GEMM
        and its passes: one more read of each operand with a 1-byte write of the
        leading bits, the INT32 bound matrix written once and read twice (row and
        column maxima)."""
        cfg = self._check(config)
        nm = cfg.moduli
        in_bytes = np.dtype(dtype).itemsize
        scaling = (2 * in_bytes + nm) * (m * k + k * n) + 2 * (m + n)
        epilogue = 2 * 4 * nm * m * n
        if cfg.mode == "accurate":
            scaling += (in_bytes + 1) * (m * k + k * n) + 3 * 4 * m * n
        return Work(ops={"int8": 2.0 * m * n * k * self.products(cfg)}, bytes_moved=float(scaling + epilogue))
