"""examples/_common.py: the tuning metric for integer outputs, the flags, the FP64 run."""

from __future__ import annotations

import numpy as np
import pytest

from mixjit.demo import load_example

common = load_example("_common")


def test_a_changed_label_costs_one_over_the_points_whatever_its_value():
    ref = np.arange(100) % 7
    out = ref.copy()
    out[3] = ref[3] + 5
    assert common.relative_or_mismatch(out, ref) == pytest.approx(1 / 100)
    assert common.relative_or_mismatch(ref, ref) == 0.0


def test_neighbour_sets_ignore_order_and_count_lost_neighbours():
    ref = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    assert common.relative_or_mismatch(ref[:, ::-1], ref) == 0.0
    out = np.array([[1, 2, 3, 9], [5, 6, 10, 11]])  # 3 of 8 reference neighbours lost
    assert common.relative_or_mismatch(out, ref) == pytest.approx(3 / 8)


def test_float_outputs_use_the_relative_frobenius_error():
    ref = np.array([[3.0, 4.0]])
    assert common.relative_or_mismatch(ref + [[0.0, 0.5]], ref) == pytest.approx(0.1)


def test_flags_parse_the_common_and_the_example_options():
    flags = common.parse_flags("doc", ["--size", "7", "--budget", "1e-4", "--target", "a100", "--schemes",
                                       "tf32x3,mixpert", "--block", "4"], size=1, size_help="n", budget=1e-3,
                               target="h100", dtype="float32", extra=[("block", int, 2, "block")])
    assert (flags.size, flags.budget, flags.target, flags.dtype, flags.seed) == (7, 1e-4, "a100", "float32", 0)
    assert flags.schemes == ("tf32x3", "mixpert") and flags.extra == {"block": 4}
    assert common.parse_flags("doc", [], size=1, size_help="n", budget=1e-3, target="h100", dtype="float32").extra == {}


def test_scheme_flag_keeps_commas_inside_a_spec():
    flags = common.parse_flags("doc", ["--schemes", "native,int8{encoding=sf16|pct99},dfp{bits=8,out=dfp}"],
                               size=1, size_help="n", budget=1e-3, target="h100", dtype="float32")
    assert flags.schemes == ("native", "int8{encoding=sf16|pct99}", "dfp{bits=8,out=dfp}")


@pytest.mark.parametrize("argv", [["--size", "0"], ["--budget", "-1"], ["--budget", "nan"], ["--target", "gtx480"],
                                  ["--schemes", "mixpert,fp4x99"], ["--schemes", "int8{encoding=sf16"],
                                  ["--schemes", "mixpert,,native"], ["--schemes", "fp4x99{bits=2}"],
                                  ["--block", "0"]])
def test_bad_flags_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit) as e:
        common.parse_flags("doc", argv, size=1, size_help="n", budget=1e-3, target="h100", dtype="float32",
                           extra=[("block", int, 2, "block")])
    assert e.value.code == 2 and argv[0] in capsys.readouterr().err


def test_the_fp64_run_upcasts_float_arrays_only():
    def scaled(a, ints, k):
        return a * k, ints

    got, ints = common.run_fp64(scaled, (np.full(2, 0.1, np.float32), np.arange(2, dtype=np.int32), 3))
    assert got.dtype == np.float64 and ints.dtype == np.int32
    np.testing.assert_array_equal(got, np.float64(np.float32(0.1)) * 3)
