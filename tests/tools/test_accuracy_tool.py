"""The accuracy reproduction scripts (tools/accuracy.py, tools/scalar_error.py):
run their quick forms as a user would and check the structure of the output and
that the numbers make sense against independent yardsticks."""

from __future__ import annotations

import json
import math
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from mixjit.runtime.schemes import all_schemes

ROOT = pathlib.Path(__file__).resolve().parents[2]
U32 = 2.0**-24
DISTS = ("uniform", "normal", "wide")
DTYPES = ("float32", "float64")
#: the rows the paper comparison needs, listed whether or not they are registered
EXPECTED = ("native", "mixpert", "tf32x3", "bf16xn", "fp16x2", "int8", "split")


def _run(script: str, *args: str, tmp: pathlib.Path) -> tuple[str, dict]:
    out = tmp / "out.json"
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / script), *args, "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(out.read_text())


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> tuple[str, dict]:
    return _run("accuracy.py", "--quick", "--repeats", "1", tmp=tmp_path_factory.mktemp("acc"))


@pytest.fixture(scope="module")
def scalar(tmp_path_factory) -> tuple[str, dict]:
    return _run("scalar_error.py", "--samples", "40000", tmp=tmp_path_factory.mktemp("scalar"))


def _mean(data: dict, dist: str, key: str, dtype: str = "float32") -> float | None:
    return data["means"][f"{dtype}|{dist}|{key}"]


def _records(data: dict, dist: str, key: str, dtype: str = "float32") -> dict[int, dict]:
    """Records of one row by size; fails if the row was not measured at every size."""
    recs = {r["n"]: r for r in data["records"] if r["dtype"] == dtype and r["dist"] == dist and r["key"] == key}
    assert sorted(recs) == sorted(data["sizes"]) and all(r["error"] is not None for r in recs.values()), \
        f"{key} ({dtype}) on {dist}: {recs}"
    return recs


def _errors(data: dict, dist: str, key: str, dtype: str = "float32") -> dict[int, float]:
    return {n: r["error"] for n, r in _records(data, dist, key, dtype).items()}


# --- GEMM table ------------------------------------------------------------------


def test_quick_table_structure(quick) -> None:
    text, data = quick
    sizes, rows = data["sizes"], data["rows"]
    assert data["dists"] == list(DISTS) and data["dtypes"] == list(DTYPES)
    assert max(sizes) <= 64, "--quick must stay small enough for CI"
    # one record per (dtype, distribution, size, row of that dtype), no more
    per_dtype = {d: sum(r["dtype"] == d for r in rows) for d in DTYPES}
    assert len(data["records"]) == len(DISTS) * len(sizes) * sum(per_dtype.values())
    # one error table per (dtype, distribution), with a column per size, the mean,
    # the componentwise maximum and the paper; one time table per dtype
    tables = [line for line in text.splitlines() if line.startswith("| row | config | products")]
    assert len(tables) == len(DISTS) * len(DTYPES)
    for line in tables:
        assert all(f"n={n}" in line for n in sizes) and "| mean | componentwise max | paper" in line
    assert all(t.rstrip(" |").endswith("fallbacks") for t in tables), "every table reports fallbacks"
    assert sum("CPU time / numpy's" in line for line in text.splitlines()) == len(DTYPES)
    # every scheme the paper comparison needs shows up, as numbers or as "not available"
    registered = set(all_schemes())
    for name in EXPECTED:
        mine = [r for r in rows if r["scheme"] == name and r["dtype"] == "float32"]
        assert mine, f"no row for {name}"
        assert all(r["available"] for r in mine) == (name in registered)
    assert "not available" in text or registered >= set(EXPECTED)
    assert "### Findings" in text
    # every paper figure is attached to a row, so a renamed config cannot drop it silently
    keys = {r["key"] for r in rows if r["available"] and r["dtype"] == "float32"}
    for key in data["paper"]:
        assert key.split(":")[0] not in registered or key in keys, f"paper figure for {key} has no row"


def test_every_registered_scheme_has_rows_in_its_tables(quick) -> None:
    """The tables enumerate the registry: every config of every scheme that takes
    float32 is a float32 row, and the float64 table holds the float64-precision
    schemes' float64 configs (mixpert-fp64 and ozaki2 at least) and nothing that
    rounds to float32."""
    _, data = quick
    rows = {(r["dtype"], r["key"]) for r in data["rows"]}
    for name, s in all_schemes().items():
        if np.dtype(np.float32) in s.dtypes:
            for cfg in s.configs(np.float32):
                assert ("float32", f"{name}:{cfg.label}") in rows, (name, cfg.label)
    f64 = {k.split(":")[0] for d, k in rows if d == "float64" and not k.startswith("ref:")}
    assert {"native", "mixpert-fp64", "ozaki2"} <= f64 and not f64 & {"tf32x3", "bf16xn", "int8", "mixpert"}
    for cfg in all_schemes()["mixpert-fp64"].configs(np.float64):
        assert ("float64", f"mixpert-fp64:{cfg.label}") in rows


def test_fp32_references_sit_in_the_rounding_error_band(quick) -> None:
    # Random-rounding model of a k-term FP32 sum of zero-mean terms: each partial sum
    # s_i (rms sigma*sqrt(i)) is rounded with rms relative error ~0.49u, so the
    # relative error of C is ~0.49u*sqrt(k/2) ~= 0.35 u sqrt(k). Sequential must sit
    # within a factor 2 of that; BLAS (blocked, maybe FMA) no higher, and well above
    # a lone output rounding (what a float64 accumulation would give).
    _, data = quick
    rows = [("ref:fp32-seq", 0.17)]
    if "native" in all_schemes():
        rows.append(("native:accumulate=blas", 0.1))
    for dist in ("uniform", "normal"):
        for key, lo in rows:
            for n, err in _errors(data, dist, key).items():
                scale = U32 * math.sqrt(n)
                assert lo * scale < err < 0.7 * scale, f"{dist} {key} n={n}: {err:.3g} vs u*sqrt(k)={scale:.3g}"


def test_rounded_exact_product_is_the_floor(quick) -> None:
    """RN(exact) is a single rounding: its error sits in (0.1u, u) of the input
    precision and no row (sgemm, dgemm, any scheme) is below it but for the
    unrounded float64 BLAS row; float64 BLAS is within its own rounding band."""
    _, data = quick
    for dtype, u in (("float32", U32), ("float64", 2.0**-53)):
        for dist in DISTS:
            floor = _errors(data, dist, "ref:RN(exact)", dtype)
            assert all(0.1 * u < e < u for e in floor.values()), (dtype, dist, floor)
            for r in data["records"]:
                if r["dtype"] == dtype and r["dist"] == dist and r["error"] is not None and r["key"] != "ref:dgemm":
                    assert r["error"] >= 0.999 * floor[r["n"]], r
    for dist in DISTS:
        assert all(e < 16 * 2.0**-53 * math.sqrt(n) for n, e in _errors(data, dist, "ref:dgemm").items())


def test_times_are_ratios_to_numpy_in_the_same_run(quick) -> None:
    _, data = quick
    for r in data["records"]:
        if r["seconds"] is not None:
            assert r["numpy_seconds"] >= 0 and r["ratio"] == pytest.approx(r["seconds"] / r["numpy_seconds"])


def test_every_available_scheme_gives_finite_bounded_errors(quick) -> None:
    _, data = quick
    for r in data["records"]:
        if r["status"] == "unavailable":
            continue
        assert r["status"] == "ok", f"{r['key']} on {r['dist']} n={r['n']}: {r['note']}"
        assert math.isfinite(r["error"]) and r["error"] > 0, r
        if r["dist"] != "wide":
            # even a single INT8 product keeps 7-bit significands: error far below 1
            assert r["error"] < 0.1, f"{r['key']} on {r['dist']} n={r['n']}: {r['error']:.3g}"


def test_mixpert_levels_are_ordered(quick) -> None:
    _, data = quick
    keys = {lv: f"mixpert:level={lv}" for lv in ("I", "II", "III", "IV")}
    have = {r["key"] for r in data["rows"] if r["available"]}
    mixpert_rows = sorted(k for k in have if "mixpert" in k)
    assert set(keys.values()) <= have, f"mixpert levels missing from the accuracy rows (have {mixpert_rows})"
    for dist in ("uniform", "normal"):
        e = {lv: _mean(data, dist, k) for lv, k in keys.items()}
        assert e["I"] > max(e["II"], e["III"]) and min(e["II"], e["III"]) > e["IV"], (dist, e)
        # level IV keeps 20 of 23 fraction bits: within a few 2^-21 of exact
        assert e["IV"] < 4 * 2.0**-21, (dist, e)


def test_runs_are_reproducible(tmp_path) -> None:
    def errors(name: str, *extra: str) -> list[float]:
        (tmp_path / name).mkdir()
        _, data = _run("accuracy.py", "--sizes", "32", "--dists", "normal", "--schemes", "native",
                       "--dtypes", "float32", *extra, tmp=tmp_path / name)
        assert {r["key"] for r in data["rows"]} == {"ref:fp32-seq", "ref:dgemm", "ref:RN(exact)",
                                                    "native:accumulate=blas"}
        return [r["error"] for r in data["records"]]

    first = errors("a")
    assert errors("b") == first
    assert errors("c", "--seed", "7") != first


def test_rows_predicted_too_slow_are_skipped_with_the_reason(tmp_path) -> None:
    text, data = _run("accuracy.py", "--sizes", "16", "32", "64", "--dists", "normal", "--schemes", "native",
                      "--dtypes", "float32", "--max-seconds", "0", tmp=tmp_path)
    seq = [r for r in data["records"] if r["key"] == "ref:fp32-seq"]
    assert [r["status"] for r in seq] == ["ok", "skipped", "skipped"]
    assert seq[1]["note"] == seq[2]["note"] and seq[1]["note"].startswith("skipped from n=32 on: n=16 took")
    assert "(1 of 3 sizes)" in text and "--max-seconds 0" in text


# --- scalar analysis ---------------------------------------------------------------


def _model(data: dict, name: str) -> dict:
    return next(m for m in data["models"] if m["model"] == name)


def test_scalar_worst_case_matches_closed_form(scalar) -> None:
    _, data = scalar
    # x0 = y0 = 64, x3 = y3 = 48, x1 = x2 = 0: e = 2^21 * 2*64*48 / (64*2^21 + 48)^2
    closed = 2.0**21 * 2 * 64 * 48 / (64 * 2.0**21 + 48) ** 2
    for name in ("as stated", "joint no-carry", "full range, truncation"):
        assert _model(data, name)["worst"] == pytest.approx(closed, rel=1e-12)
    assert closed == pytest.approx(data["paper"]["worst"], rel=1e-3)


def test_scalar_expectation_reproduces_paper_under_joint_no_carry(scalar) -> None:
    _, data = scalar
    models = {m["model"]: m for m in data["models"]}
    # the exact enumeration agrees with the first-order approximation where both apply
    for m in models.values():
        if m["first_order"] is not None:
            assert m["expectation"] == pytest.approx(m["first_order"], rel=0.03), m["model"]
    # the paper's 2.82e-7 is reproduced by the joint no-carry reading, not the literal one
    paper = data["paper"]["expectation"]
    assert models["joint no-carry"]["expectation"] == pytest.approx(paper, rel=0.01)
    assert abs(models["as stated"]["expectation"] / paper - 1) > 0.03


def test_scalar_fp32_products_are_correctly_rounded(scalar) -> None:
    _, data = scalar
    fp32 = [r for r in data["measured"] if r["scheme"] == "fp32 multiply"]
    assert len(fp32) == 2
    for r in fp32:
        assert r["samples"] >= 40000
        assert r["max"] <= U32 and 0.2 * U32 < r["mean"] < 0.6 * U32, r


def test_scalar_mixpert_products_match_the_round_to_nearest_model(scalar) -> None:
    # The scheme's element split rounds to nearest (docs/numerics.md, mixpert step 1),
    # so in the paper's layout (x0 in [64, 127], the default) its scalar products follow the
    # round-to-nearest reading of Eq. 6, on both input ranges; the output rounding
    # to FP32 (mean ~0.36u) and sampling noise stay within the tolerance.
    _, data = scalar
    mine = {r["range"]: r for r in data["measured"] if r["scheme"] == "mixpert" and r["config"] == "level=IV"}
    if not mine:
        pytest.skip("scheme mixpert is not registered")
    for rng, model in (("x in [1, 90/64): x0 <= 89", "no-carry range, round-to-nearest"),
                       ("x in [1, 2): x0 in [64, 127]", "full range, round-to-nearest")):
        expect = _model(data, model)
        assert mine[rng]["mean"] == pytest.approx(expect["expectation"], rel=0.15), rng
        assert mine[rng]["max"] <= expect["worst"] + U32, rng
