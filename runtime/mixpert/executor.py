"""Bit-exact CPU executor of the MixPert schemes (``mixpert``, ``mixpert-fp64``): the
public face, and the map of the modules it is made of.

Semantics: docs/numerics.md, sections "mixpert" and "mixpert-fp64". Every output is
the exact value ``X[i,j]`` of the kept INT8 segment products (each k-tile scaled by
its A and B group exponents), plus the fallback tile products, rounded once to the
target format. The executor gets that exact value three ways (fast, certified and
exact paths), all giving the same bits. Its modules, one job each:

* runtime/mixpert/words.py: the config words (``W_*``), statistics
  (``STAT_*``) and status codes (``ERR_*``, ``STATUS_MESSAGES``);
* runtime/mixpert/split.py: the operand split (row form, INT8 segments,
  group exponents, fallback tiles) into a ``SplitOperand`` named tuple;
* runtime/mixpert/pack.py: the integer-valued float64 block operands
  the dgemms take;
* runtime/mixpert/paths/fast.py: the fast path, segments combined into a few
  blocks (runtime/mixpert/pair_blocks.py) whose dgemms over the whole K are exact, then
  one rounding per output (TwoSum, or a TwoSum chain, Ziv's test and an exact
  sum in integer limbs for the outputs it leaves in doubt);
* runtime/mixpert/guarantee/certified.py: the certified path (float32 domain):
  rows / columns too wide for the fast path or touching a fallback tile get
  ``S'`` from one float64 GEMM over exactly representable columns with a
  rigorous error bound; Ziv's test accepts ``RN32(S')`` or the output is summed
  exactly; and step 6's float32 recomputation;
* runtime/mixpert/guarantee/exact.py: which rows and columns leave the fast path,
  and the exact path for them (float64 domain): k-tile by k-tile exact dgemms,
  summed exactly;
* runtime/mixpert/guarantee/ziv.py: Ziv's rounding tests (float32, float64);
* runtime/mixpert/paths/small.py: the small-shape path (m*n*k up to
  ``small_max_work``, data the fast path takes whole): a fused split and loop
  products on one scratch buffer, the same blocks, epilogues and step 6, so the
  same bits; the driver tries it first (``STAT_SMALL_PATH``);
* runtime/mixpert/paths/direct.py (float32 domain) and
  runtime/mixpert/paths/direct64.py (float64 domain): the small path's direct
  paths, tried before its loops: no block plan, one exact product of the kept
  pairs, float arithmetic only, for the common configs on well-scaled data (the
  loops compile only when a call needs them: runtime/jit/lazy_link.py's ``unlinked_lazy``);
* runtime/mixpert/driver.py: the driver, in order: split, fast
  path, certified / exact path, step 6 (runtime/mixpert/guarantee/bound.py: outputs the
  executor cannot vouch for are recomputed as ``RN(A·B)`` exactly and counted,
  ``STAT_RECOMPUTED``), the non-finite rule (elements count as 0, the affected
  outputs are set by the rule of Common conventions).

The whole executor is compiled (``@cached_njit(nogil=True)``: Numba, disk-cached), so the
Python API (``scheme.run``) and compiled callers (the @mixjit entry) run the same
compiled paths; each path compiles when a call first needs it
(runtime/mixpert/lazy.py, docs/results/first_use.md):

* :func:`mixpert_gemm` ``(a, b, c, params, stats) -> status``: ``C = A @ B`` for
  2-D float32/float64 arrays with any strides; ``params`` is the config as int64
  words (``MixPertConfig.words()``, layout ``W_*``), ``stats`` an int64
  array of ``N_STATS`` (``STAT_*``) it fills; status 0 or an ``ERR_*`` code
  (``STATUS_MESSAGES``). It never raises; it holds the GIL only for the moment its
  trampolines take to enter a path (the paths themselves release it). Python
  callers (:func:`run_mixpert`) use ``executor_mixpert_driver.gemm_from_python``:
  the same checks, paths and bits, the small/general choice made in Python.
* :func:`prepare_operand` / :func:`multiply_into`: the same in two steps, so an
  operand split once (a ``SplitOperand``, wrapped by :class:`Prepared` on the
  Python side) serves several GEMMs.

This module keeps every public name of the executor importable from one place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixjit.runtime.mixpert.driver import gemm_from_python, mixpert_gemm, multiply_into
from mixjit.runtime.mixpert.split import SplitOperand, prepare_operand
from mixjit.runtime.mixpert.words import (
    ALIGN_ROW,
    ALIGN_TILE,
    DOMAIN_FP32,
    DOMAIN_FP64,
    ERR_K_TOO_LONG,
    ERR_PARAMS,
    ERR_SHAPE,
    ERR_SPAN,
    MAX_SPAN,
    N_LAYOUT_WORDS,
    N_STATS,
    N_WORDS,
    OK,
    PAIR_STRIDE,
    STAT_CERTIFIED,
    STAT_EXACT_COLS,
    STAT_EXACT_ROWS,
    STAT_FALLBACK_TILES,
    STAT_NONFINITE,
    STAT_RECOMPUTED,
    STAT_SLOW_ELEMENTS,
    STAT_SMALL_PATH,
    STAT_TILES,
    STAT_WIDEST_SPAN,
    STATUS_MESSAGES,
    W_ALIGN,
    W_DIGITS,
    W_DOMAIN,
    W_FALLBACK,
    W_PAIRS0,
    W_PAIRS1,
    W_ROUNDING,
    W_SEG0_BITS,
    W_SEGMENTS,
    W_TK,
    W_TM,
    W_TN,
)

__all__ = [
    "N_WORDS",
    "N_LAYOUT_WORDS",
    "N_STATS",
    "STATUS_MESSAGES",
    "SplitOperand",
    "Prepared",
    "ExecStats",
    "mixpert_gemm",
    "prepare_operand",
    "multiply_into",
    "prepare",
    "run_mixpert",
    # the config words, statuses and statistics (mixpert.words), read through this module too
    "ALIGN_ROW", "ALIGN_TILE", "DOMAIN_FP32", "DOMAIN_FP64", "ERR_K_TOO_LONG", "ERR_PARAMS", "ERR_SHAPE",
    "ERR_SPAN", "MAX_SPAN", "OK", "PAIR_STRIDE", "STAT_CERTIFIED", "STAT_EXACT_COLS", "STAT_EXACT_ROWS",
    "STAT_FALLBACK_TILES", "STAT_NONFINITE", "STAT_RECOMPUTED", "STAT_SLOW_ELEMENTS", "STAT_SMALL_PATH",
    "STAT_TILES", "STAT_WIDEST_SPAN", "W_ALIGN", "W_DIGITS", "W_DOMAIN", "W_FALLBACK", "W_PAIRS0", "W_PAIRS1",
    "W_ROUNDING", "W_SEG0_BITS", "W_SEGMENTS", "W_TK", "W_TM", "W_TN",
]


@dataclass
class Prepared:
    """One operand split and aligned under a config, ready for several GEMMs.

    Stored in *row form*: A as m×K, B as Bᵀ (n×K), so both sides use one code path.
    ``arrays`` is the :class:`SplitOperand` the compiled :func:`multiply_into` takes."""

    side: str  # "A" | "B"
    params: np.ndarray  # the config words it was split under
    shape: tuple[int, int]  # the operand's own shape (A: m×K, B: K×n)
    dtype: np.dtype  # the caller's dtype (C is returned in it)
    arrays: SplitOperand

    @property
    def q(self) -> np.ndarray:
        """Aligned signed mantissas (row form; int32 where the config's width allows)."""
        return self.arrays.q

    @property
    def gexp(self) -> np.ndarray:
        """Group exponent per row (of the row form) and k-tile."""
        return self.arrays.gexp

    def same_layout(self, params: np.ndarray) -> bool:
        """Was it split as config words ``params`` split an operand?"""
        return bool(np.array_equal(self.params[:N_LAYOUT_WORDS], params[:N_LAYOUT_WORDS]))


@dataclass
class ExecStats:
    """What the executor did (the scheme turns it into RunStats)."""

    fallback_tiles: int
    tiles: int
    nonfinite_elements: int
    exact_path_rows: int
    exact_path_cols: int
    certified_elements: int  # outputs of those rows/columns from the float64 GEMM + Ziv's test
    slow_path_elements: int  # of those, the ones summed exactly (the test left them in doubt)
    recomputed_elements: int  # outputs the guarantee check left in doubt: RN(exact A·B)


def _words(params: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(params, dtype=np.int64)


def prepare(x: np.ndarray, side: str, params: np.ndarray) -> Prepared:
    """Split and align operand ``x`` (A if ``side == "A"``, else B) under the config
    words ``params``."""
    if side not in ("A", "B"):
        raise ValueError(f"side must be 'A' or 'B', got {side!r}")
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"mixpert: operand {side} must be 2-D, got shape {x.shape}")
    params = _words(params)
    return Prepared(side, params, x.shape, x.dtype, prepare_operand(x, side == "B", params))


def _raise(status: int, stats: np.ndarray, a_shape: tuple, b_shape: tuple) -> None:
    if status == ERR_SPAN:
        raise ValueError(
            f"mixpert: a row of A and a column of B span {int(stats[STAT_WIDEST_SPAN])} binades along K; "
            f"the executor supports at most {MAX_SPAN}. Scale the operands or use the native scheme "
            "for this GEMM"
        )
    if status == ERR_SHAPE:
        raise ValueError(
            f"mixpert: inner dimensions differ: A is {a_shape[0]}x{a_shape[1]}, B is {b_shape[0]}x{b_shape[1]}"
        )
    raise ValueError(f"mixpert: {STATUS_MESSAGES[status]}")


def run_mixpert(
    a: np.ndarray | Prepared, b: np.ndarray | Prepared, params: np.ndarray
) -> tuple[np.ndarray, ExecStats]:
    """C = A @ B under the MixPert semantics (arrays, or operands from :func:`prepare`
    under the same config); C has A's dtype. Raises ValueError for what the
    compiled executor refuses."""
    params = _words(params)
    dtype = a.dtype if isinstance(a, Prepared) else np.asarray(a).dtype
    a_shape = a.shape if isinstance(a, Prepared) else np.shape(a)
    b_shape = b.shape if isinstance(b, Prepared) else np.shape(b)
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ValueError(f"mixpert: A and B must be 2-D, got shapes {a_shape} and {b_shape}")
    c = np.empty((a_shape[0], b_shape[1]), dtype=dtype)
    stats = np.zeros(N_STATS, dtype=np.int64)
    if isinstance(a, Prepared) or isinstance(b, Prepared):
        if a_shape[1] != b_shape[0]:
            _raise(ERR_SHAPE, stats, a_shape, b_shape)
        pa = a if isinstance(a, Prepared) else prepare(a, "A", params)
        pb = b if isinstance(b, Prepared) else prepare(b, "B", params)
        status = multiply_into(pa.arrays, pb.arrays, params, c, stats)
    else:
        status = gemm_from_python(np.asarray(a), np.asarray(b), c, params, stats)
    if status != OK:
        _raise(status, stats, a_shape, b_shape)
    return c, ExecStats(
        int(stats[STAT_FALLBACK_TILES]),
        int(stats[STAT_TILES]),
        int(stats[STAT_NONFINITE]),
        int(stats[STAT_EXACT_ROWS]),
        int(stats[STAT_EXACT_COLS]),
        int(stats[STAT_CERTIFIED]),
        int(stats[STAT_SLOW_ELEMENTS]),
        int(stats[STAT_RECOMPUTED]),
    )
