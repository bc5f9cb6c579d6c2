"""Config labels are range-checked by each scheme's own parser before anything uses them: an
out-of-range count is a ValueError naming the field and its range, at once (a MixPert label
with segments=99999999 used to loop over segments^2 pairs; fields past int64 used to reach the
executors' words as OverflowError)."""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest
from time_limit import within

import mixjit
from mixjit.runtime.schemes.base import all_schemes

HUGE = str(2**63)  # one past int64: no executor word can hold it


@pytest.mark.parametrize("scheme", ["mixpert", "mixpert-fp64"])
@pytest.mark.parametrize("label", ["segments=99999999,pairs=sig1", "segments=99999999,pairs=slices1sig1",
                                   "segments=99999999"])
def test_gemm_refuses_a_huge_segment_count_at_once(scheme: str, label: str) -> None:
    a = np.ones((4, 4), np.float32 if scheme == "mixpert" else np.float64)
    with within(2, f"mixjit.gemm(..., {scheme!r}, {label!r})"), \
            pytest.raises(ValueError, match=r"segments=99999999 .* must be in 1\.\.9"):
        mixjit.gemm(a, a, scheme, label)


def _int_fields(scheme_name: str) -> list[str]:
    """The integer fields (int, or a tuple of ints such as mixpert's tile) of the scheme's config."""
    scheme = all_schemes()[scheme_name]
    cls = type(scheme.default_config(scheme.dtypes[0]))
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls)
            if hints[f.name] is int or typing.get_origin(hints[f.name]) is tuple and int in typing.get_args(hints[f.name])]


CASES = [(s, f) for s in sorted(all_schemes()) for f in _int_fields(s)]


def test_every_scheme_with_integer_fields_is_covered() -> None:
    assert {s for s, _ in CASES} >= {"mixpert", "mixpert-fp64", "ozaki2", "split", "vitbit", "dfp"}


@pytest.mark.parametrize(("scheme_name", "field"), CASES)
def test_an_integer_field_past_int64_is_a_value_error_naming_it(scheme_name: str, field: str) -> None:
    scheme = all_schemes()[scheme_name]
    default = scheme.default_config(scheme.dtypes[0])
    value = "x".join([HUGE] * 3) if isinstance(getattr(default, field), tuple) else HUGE
    parts = [p for p in default.label.split(",") if not p.startswith(f"{field}=") and p != "default"]
    label = ",".join([*parts, f"{field}={value}"])
    a = np.ones((4, 4), scheme.dtypes[0])
    with within(2, f"{scheme_name}[{label}]"), pytest.raises(ValueError, match=field):
        mixjit.gemm(a, a, scheme_name, label)


def test_dfp_block_past_int64_is_refused() -> None:  # block is a text field holding a row count
    a = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match=r"block=.*1\.\.4611686018427387904"):
        mixjit.gemm(a, a, "dfp", f"bits=8,block={HUGE}")


def test_config_words_with_a_huge_segment_count_are_refused_at_once() -> None:
    from mixjit.runtime.mixpert.words import W_SEGMENTS
    from mixjit.runtime.schemes.mixpert import MixPertConfig, config_from_words

    words = list(MixPertConfig().words())
    assert config_from_words(words) == MixPertConfig()
    words[W_SEGMENTS] = 99999999
    with within(2, "config_from_words"), pytest.raises(ValueError, match=r"segments word 99999999 must be in 1\.\.9"):
        config_from_words(words)
