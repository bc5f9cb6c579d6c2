"""The default candidate set (``schemes=None``): the FP32-class-or-better emulations plus native,
with error-tolerant schemes opt-in through ``schemes=``."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.entry import EXECUTORS
from mixjit.plan import initial_plan
from mixjit.runtime.schemes.base import get_scheme
from mixjit.tuning.profiling import TUNING_DEFAULT_SCHEMES, site_candidates

SHAPES = [(64, 64, 64, 1)]
OPT_IN = ("int8", "split", "dfp", "vitbit", "tf32x3", "bf16xn", "fp16x2")


def _schemes(dtype, schemes=None) -> set[str]:
    return {c.scheme for c in site_candidates(np.dtype(dtype), schemes, SHAPES, "a100")}


def test_float32_default_is_mixpert_and_native_only():
    assert _schemes(np.float32) == {"mixpert", "native"}
    expected = len(get_scheme("mixpert").configs(np.float32)) + 1
    assert len(site_candidates(np.dtype(np.float32), None, SHAPES, "a100")) == expected


def test_float64_default_adds_the_fp64_class_emulations_and_keeps_mixpert():
    assert _schemes(np.float64) == {"mixpert-fp64", "ozaki2", "mixpert", "native"}
    ozaki = [c.config for c in site_candidates(np.dtype(np.float64), None, SHAPES, "a100") if c.scheme == "ozaki2"]
    assert ozaki == [c.label for c in get_scheme("ozaki2").configs(np.float64)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_default_leaves_error_tolerant_schemes_out_and_starts_at_the_initial_plan(dtype):
    assert not _schemes(dtype) & set(OPT_IN)
    first = site_candidates(np.dtype(dtype), None, SHAPES, "a100")[0]
    plan = initial_plan(None, dtype)
    assert (first.scheme, first.config) == (plan.scheme, plan.config)


@pytest.mark.parametrize("scheme", OPT_IN)
def test_error_tolerant_schemes_join_when_named(scheme):
    assert scheme in EXECUTORS, f"{scheme} lost its compiled executor"
    assert _schemes(np.float32, (scheme,)) == {scheme, "native"}


def test_every_default_scheme_has_a_compiled_executor_and_accepts_its_dtype():
    for dtype, names in TUNING_DEFAULT_SCHEMES.items():
        for name in names:
            assert get_scheme(name).runs_at_sites and np.dtype(dtype) in get_scheme(name).dtypes, (dtype, name)
