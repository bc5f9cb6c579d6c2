"""Every scheme writes a zero result as +0 (docs/numerics.md, "Common conventions";
the rounding step of each scheme: "zero is +0", "zero written +0").

IEEE arithmetic gives -0 for (-1)·0, for -0 + -0 and for a negative value that rounds
to zero, so an executor that returns its last floating-point operation unchanged
writes -0 on exactly these inputs. Each case is checked in float32 and, for the
FP32-domain schemes, with float64 inputs (whose output is the float32 result widened).
"""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.runtime.schemes import get_scheme

#: (scheme, config label): every scheme with a written rounding rule, float32 inputs
FP32_SCHEMES = [
    ("mixpert", "segments=4,pairs=sig6,align=row"), ("mixpert", "level=IV"), ("mixpert", "level=IV,digits=balanced"),
    ("tf32x3", "products=3"), ("tf32x3", "products=1"), ("bf16xn", "products=9"), ("bf16xn", "products=1"),
    ("fp16x2", "products=3"), ("fp16x2", "products=1"), ("int8", "scale=row-col"),
    ("int8", "scale=row-col,encoding=sf16"), ("int8", "scale=row-col,encoding=pct50"),
    ("split", "fp16=0.0"), ("split", "fp16=1.0"), ("split", "fp16=0.5,width=1"),
    ("ozaki2", "moduli=8"), ("ozaki2", "moduli=8,mode=accurate"),
    ("dfp", "bits=8,block=1"), ("dfp", "bits=16,block=tensor,out=dfp"), ("vitbit", "bits=8"),
]
#: schemes whose float64 inputs keep the float64 domain
FP64_SCHEMES = [("mixpert-fp64", "segments=9,pairs=slices3sig2,tile=16x4096x8"), ("mixpert-fp64", "pairs=sig7"), ("mixpert-fp64", "segments=7,pairs=sig6"), ("ozaki2", "moduli=14")]
#: the FP32-domain schemes among FP32_SCHEMES (ozaki2 keeps float64 inputs in float64)
FP32_DOMAIN = [(s, c) for s, c in FP32_SCHEMES if s != "ozaki2"]


def _cases(tiny: float) -> dict[str, tuple[list[list[float]], list[list[float]]]]:
    """Inputs whose exact result is zero or rounds to zero; ``tiny``: a power of two
    whose square underflows the output format."""
    return {
        "zero factor": ([[-1.0, -2.0]], [[0.0], [0.0]]),  # IEEE: -0 + -0
        "negative zero inputs": ([[-0.0, -0.0]], [[1.0], [2.0]]),
        "exact cancellation": ([[-1.5, 1.5]], [[1.0], [1.0]]),
        "negative underflow": ([[-tiny]], [[tiny]]),
        # a tile of A that falls back in mixpert (half its elements 20 binades below)
        "cancellation in a fallback tile": ([[-1.0, -(2.0**-20), 1.0, 2.0**-20]], [[1.0]] * 4),
    }


def _assert_positive_zero(c: np.ndarray, label: str) -> None:
    assert c.shape == (1, 1)
    assert c[0, 0] == 0.0, (label, c)
    assert not np.signbit(c[0, 0]), f"{label}: -0 written for a zero result"


@pytest.mark.parametrize("scheme,config", FP32_SCHEMES)
@pytest.mark.parametrize("case", list(_cases(2.0**-100)))
def test_float32_zero_results_are_positive_zero(scheme, config, case):
    s = get_scheme(scheme)
    a, b = _cases(2.0**-100)[case]
    c = s.run(np.array(a, np.float32), np.array(b, np.float32), s.parse_config(config))
    _assert_positive_zero(c, f"{scheme} {config!r} {case}")


@pytest.mark.parametrize("scheme,config", FP32_DOMAIN)
@pytest.mark.parametrize("case", list(_cases(2.0**-100)))
def test_fp32_domain_float64_outputs_of_zero_are_positive_zero(scheme, config, case):
    s = get_scheme(scheme)
    a, b = _cases(2.0**-100)[case]
    c = s.run(np.array(a), np.array(b), s.parse_config(config))
    assert c.dtype == np.float64
    _assert_positive_zero(c, f"{scheme} {config!r} {case} (float64 inputs)")


@pytest.mark.parametrize("scheme,config", FP64_SCHEMES)
@pytest.mark.parametrize("case", list(_cases(2.0**-600)))
def test_float64_zero_results_are_positive_zero(scheme, config, case):
    s = get_scheme(scheme)
    a, b = _cases(2.0**-600)[case]
    c = s.run(np.array(a), np.array(b), s.parse_config(config))
    _assert_positive_zero(c, f"{scheme} {config!r} {case}")


@pytest.mark.parametrize("label", ["level=IV", "segments=4,pairs=sig6,align=row"])
def test_mixpert_recomputed_row_of_zero_is_positive_zero(label):
    # step 6: the element 2^-60 aligns to q = 0 in a tile that does not fall back
    # (1 of 9 shifted), so the row is recomputed exactly; its exact sum is -0 in IEEE
    # order (-2^-60 * 0 after a cancelling sum) and must be written +0
    s = get_scheme("mixpert")
    a = np.array([[-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -(2.0**-60)]], np.float32)
    b = np.array([[1.0]] * 8 + [[0.0]], np.float32)
    c, stats = s.run_with_stats(a, b, s.parse_config(label))
    assert stats.extra["recomputed_elements"] == 1
    _assert_positive_zero(c, f"mixpert {label!r} recomputed row")


def test_mixpert_fp64_recomputed_output_of_zero_is_positive_zero():
    # the example with a cancelling sign: 1e-20 - 1e-20 = 0, recomputed exactly
    s = get_scheme("mixpert-fp64")
    c, stats = s.run_with_stats(np.array([[1.0, -1e-20]]), np.array([[1e-20], [1.0]]), s.default_config())
    assert stats.fallbacks == 1
    _assert_positive_zero(c, "mixpert-fp64 recomputed output")
