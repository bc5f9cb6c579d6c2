"""The MixPert executor's config words, statistics and status codes.

A config reaches the compiled executor as ``N_WORDS`` int64 words (written by
``MixPertConfig.words()``, layout ``W_*``); a call fills ``N_STATS`` int64
counters (``STAT_*``) and returns ``OK`` or an ``ERR_*`` status whose meaning is
``STATUS_MESSAGES``. :func:`params_ok` and :func:`kept_pairs` read the words in
compiled code. Semantics: docs/numerics.md, "mixpert".
"""

from __future__ import annotations

import numpy as np

from mixjit.runtime.jit.cache import cached_njit
from mixjit.runtime.mixpert.pair_blocks import K_TOO_LONG
from mixjit.runtime.mixpert.segments import width

# ---- the config as int64 words (written by MixPertConfig.words) -----------------
W_SEGMENTS = 0  # INT8 segments per element, 1..9
W_SEG0_BITS = 1  # significant bits of segment 0, implied one included, 1..7
W_DIGITS = 2  # segments.MAGNITUDE | segments.BALANCED
W_ALIGN = 3  # ALIGN_TILE | ALIGN_ROW
W_ROUNDING = 4  # segments.ROUND_TRUNC | segments.ROUND_NEAREST
W_TM = 5  # A tile rows
W_TK = 6  # k-tile length
W_TN = 7  # B tile columns
W_FALLBACK = 8  # spread threshold in bits, -1: never
W_DOMAIN = 9  # DOMAIN_FP32 | DOMAIN_FP64
W_PAIRS0 = 10  # kept pairs: bit 9*i + j of the 81-bit word pair (PAIRS0 low 63 bits)
W_PAIRS1 = 11
N_WORDS = 12
#: words 0..N_LAYOUT_WORDS-1 fix how an operand is split (what a prepared operand fixes)
N_LAYOUT_WORDS = 10
PAIR_STRIDE = 9
ALIGN_TILE = 0
ALIGN_ROW = 1
DOMAIN_FP32 = 0
DOMAIN_FP64 = 1

# ---- what a call did (the stats array) ---------------------------------------
STAT_FALLBACK_TILES = 0
STAT_TILES = 1
STAT_NONFINITE = 2
STAT_EXACT_ROWS = 3
STAT_EXACT_COLS = 4
STAT_WIDEST_SPAN = 5
STAT_CERTIFIED = 6  # outputs computed by the certified path (float64 GEMM + Ziv's test)
STAT_SLOW_ELEMENTS = 7  # of those, outputs Ziv's test left in doubt: summed exactly
STAT_RECOMPUTED = 8  # outputs the guarantee check left in doubt: RN(exact A·B) (runtime/mixpert/guarantee/bound.py)
STAT_SMALL_PATH = 9  # 1 when the small-shape path computed the call (mixpert/paths/small.py)
N_STATS = 10

# ---- status codes ----------------------------------------------------------
OK = 0
ERR_SPAN = 1
ERR_K_TOO_LONG = 2
ERR_PARAMS = 3
ERR_SHAPE = 4
STATUS_MESSAGES: dict[int, str] = {
    ERR_SPAN: "a row of A and a column of B span too many binades along K (at most 900); "
    "scale the operands or use the native scheme for this GEMM",
    ERR_K_TOO_LONG: K_TOO_LONG,
    ERR_PARAMS: "the config words are invalid, or a float64-domain config was given float32 "
    "operands or a tile fallback (encode configs with MixPertConfig.words(); mixpert-fp64 "
    "takes float64 only and has no fallback)",
    ERR_SHAPE: "shapes do not match: A is m x k, B must be k x n and C m x n",
}
"""What each non-zero status of the compiled executor means."""

#: widest exponent span (row of A + column of B) whose pieces stay in float64's range
MAX_SPAN = 900


@cached_njit(nogil=True)
def params_ok(params, out_itemsize: int) -> bool:
    """Are the config words ``params`` valid, and do they fit an output of
    ``out_itemsize`` bytes (the float64 domain takes float64 only, without fallback)?"""
    if params.shape[0] < N_WORDS:
        return False
    s = params[W_SEGMENTS]
    return (
        1 <= s <= 9
        and 1 <= params[W_SEG0_BITS] <= 7
        and 0 <= params[W_DIGITS] <= 1
        and 0 <= params[W_ALIGN] <= 1
        and 0 <= params[W_ROUNDING] <= 1
        and min(params[W_TM], params[W_TK], params[W_TN]) >= 1
        and params[W_FALLBACK] >= -1
        and 0 <= params[W_DOMAIN] <= 1
        and not (params[W_DOMAIN] == DOMAIN_FP64 and (out_itemsize == 4 or params[W_FALLBACK] != -1))
        and width(s, params[W_SEG0_BITS], params[W_DIGITS]) <= 62
    )


@cached_njit(nogil=True)
def kept_pairs(params):
    """The kept pairs as a boolean segments x segments matrix."""
    s = params[W_SEGMENTS]
    out = np.zeros((s, s), dtype=np.bool_)
    for i in range(s):
        for j in range(s):
            bit = PAIR_STRIDE * i + j
            word = params[W_PAIRS0] if bit < 63 else params[W_PAIRS1]
            out[i, j] = (word >> (bit % 63)) & 1 == 1
    return out
