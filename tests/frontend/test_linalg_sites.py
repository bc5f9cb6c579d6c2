"""``np.linalg`` calls inside ``@mixjit`` functions are sites (detect-linalg, mixjit.linalg_link):
native is bit for bit what ``@njit`` gives, errors included; a blocked plan runs runtime/linalg
with Numba's result types; the tuner picks blocked candidates where the cost model says they pay,
within an FP64-class budget; dumps re-tune offline."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from mixjit import mixjit, mixopt
from mixjit.linalg_link import linalg_stats
from mixjit.plan import SitePlan, set_plan
from mixjit.runtime.linalg.solve import run_linalg


def _gp(k, y):
    l = np.linalg.cholesky(k)
    alpha = np.linalg.solve(k, y)
    beta = np.linalg.solve(k, y[:, 0])
    return l, alpha, beta, np.linalg.inv(k)


def _spd(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3))
    d = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    return np.exp(-0.5 * d) + 1e-2 * np.eye(n)


def _blocked(fn_name: str) -> str:
    refine = "off" if fn_name == "cholesky" else "on"
    return f"block=64,gemm=mixpert-fp64[segments=7,pairs=sig6],refine={refine}"


@pytest.fixture(scope="module")
def gp():
    return mixjit(tune="never")(_gp)


def test_linalg_calls_are_sites_that_run_native_bit_for_bit(gp):
    k, y = _spd(96), np.random.default_rng(1).standard_normal((96, 3))
    out, ref = gp(k, y), njit(_gp)(k, y)
    for got, want in zip(out, ref):
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
        assert got.flags.f_contiguous == want.flags.f_contiguous and got.flags.c_contiguous == want.flags.c_contiguous
    sites = gp.sites
    assert [s.form for s in sites] == ["np.linalg.cholesky(a)", "np.linalg.solve(a, b)", "np.linalg.solve(a, b)",
                                       "np.linalg.inv(a)"]
    assert all(s.taken and s.plan.scheme == "native" and s.calls >= 1 for s in sites)


def test_native_linalg_sites_raise_numbas_errors(gp):
    singular = np.ones((8, 8))
    with pytest.raises(np.linalg.LinAlgError) as mine:
        gp(singular, np.ones((8, 2)))
    with pytest.raises(np.linalg.LinAlgError) as numba_s:
        njit(_gp)(singular, np.ones((8, 2)))
    assert str(mine.value) == str(numba_s.value)


def test_a_blocked_plan_runs_runtime_linalg_with_numbas_result_types(gp):
    k, y = _spd(150, 2), np.random.default_rng(3).standard_normal((150, 2))
    ref = njit(_gp)(k, y)
    gp(k, y)
    sites = gp.sites
    try:
        for s in sites:
            set_plan(s.id, SitePlan("linalg", _blocked(s.form.split("(")[0].split(".")[-1]), "linalg"))
        before = [linalg_stats(s.id).get("calls", 0) for s in sites]
        out = gp(k, y)
        after = [linalg_stats(s.id).get("calls", 0) for s in sites]
    finally:
        for s in sites:
            set_plan(s.id, SitePlan("native", "accumulate=blas", "native"))
    assert [a - b for a, b in zip(after, before)] == [1, 1, 1, 1]
    for got, want, fn, args in zip(out, ref, ("cholesky", "solve", "solve", "inv"),
                                   ((k, None), (k, y), (k, y[:, 0].copy()), (k, None))):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.flags.f_contiguous == want.flags.f_contiguous
        expected, _ = run_linalg(fn, args[0], args[1], _blocked(fn))  # the executor's bits
        assert np.array_equal(got, expected)
        assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()


def _logdets(k):
    s, l = np.linalg.slogdet(k)
    return np.linalg.det(k), s, l


def test_det_and_slogdet_are_sites_native_bit_for_bit_and_blocked_with_numbas_types():
    f = mixjit(tune="never")(_logdets)
    for dtype in (np.float64, np.float32):
        k = (_spd(120, 4) * 3).astype(dtype)
        k[[0, 1]] = k[[1, 0]]  # an odd permutation: a negative determinant
        ref = njit(_logdets)(k)
        assert f(k) == ref  # native: Numba's own call
        sites = [s for s in f.sites if s.signature.startswith(f"(array({np.dtype(dtype).name}")]
        assert sorted(s.form for s in sites) == ["np.linalg.det(a)", "np.linalg.slogdet(a)"]
        cfg = "block=32,gemm=mixpert-fp64[segments=7,pairs=sig6],refine=off" if dtype == np.float64 else \
            "block=32,gemm=mixpert[level=IV],refine=off"
        try:
            for s in sites:
                set_plan(s.id, SitePlan("linalg", cfg, "linalg"))
            det, sign, logdet = f(k)
        finally:
            for s in sites:
                set_plan(s.id, SitePlan("native", "accumulate=blas", "native"))
        assert type(det) is float and type(sign) is float and sign == ref[1] == -1.0
        assert (sign, logdet) == run_linalg("slogdet", k, None, cfg)[0]  # the executor's bits
        assert abs(logdet - ref[2]) <= 1e-5 * abs(ref[2]) and abs(det - ref[0]) <= 1e-4 * abs(ref[0])


def test_complex_linalg_calls_stay_with_numba_and_say_why():
    @mixjit(tune="never")
    def zinv(z):
        return np.linalg.inv(z)

    z = np.eye(4, dtype=np.complex128) * (2 + 1j)
    with pytest.warns(UserWarning, match="runs as plain Numba"):
        got = zinv(z)
    assert np.array_equal(got, njit(zinv.py_func)(z))
    rejected = [s for s in zinv.sites if not s.taken]
    assert len(rejected) == 1 and "linalg-dtype" in rejected[0].reason


def test_tuning_picks_blocked_candidates_where_they_pay_within_an_fp64_budget(tmp_path):
    @mixjit(tune="never")
    def fit(k, y):
        l = np.linalg.cholesky(k)
        return l, np.linalg.solve(k, y)

    k, y = _spd(384, 4), np.random.default_rng(5).standard_normal((384, 4))
    # rtx4090: FP64 at 1/64 of FP32, so the cost model prices INT8-emulated FP64 products
    # below LAPACK's native ones at this size
    result = fit.tune(k, y, budget=1e-10, target="rtx4090", workers=1)
    plans = [s.plan for s in fit.sites]
    assert any(p.scheme == "linalg" for p in plans), plans
    assert result.plan.within_budget and result.plan.error <= 1e-10
    assert result.plan.modeled_time_s < result.plan.native_modeled_time_s
    lref, xref = njit(fit.py_func)(k, y)
    l, x = fit(k, y)
    assert np.abs(x - xref).max() <= 1e-10 * np.abs(xref).max()  # FP64-class
    # a dump of the tuned function re-tunes offline: the linalg sites carry their profiles
    from mixjit.tuning.annotate import profiled_module
    text = profiled_module(fit, k, y).text()
    assert text.count('"mix.linalg"') == 2 and "mix.profile" in text
    dump = tmp_path / "fit.mix"
    dump.write_text(text)
    assert mixopt.main([str(dump), "-p", "tune{budget=1e-10}", "-o", str(tmp_path / "out.mix")]) == 0
    tuned = (tmp_path / "out.mix").read_text()
    assert tuned.count("mix.plan = {") == 2


def test_an_fp64_budget_picks_the_refined_candidate_where_it_is_modeled_faster_than_lapack():
    """FP32-class products (mixpert) cannot meet an FP64-class budget in a factorization alone;
    with iterative refinement they can. On a Jetson AGX Orin (weak FP64) at n = 768 the cost
    model prices the refined solve below LAPACK, so the tuner must choose it, and its error on
    the solution must be FP64-class."""
    @mixjit(tune="never", schemes=("mixpert",))
    def solve(k, y):
        return np.linalg.solve(k, y)

    k, y = _spd(768, 6), np.random.default_rng(7).standard_normal((768, 1))
    result = solve.tune(k, y, budget=1e-10, target="jetson-agx-orin", workers=1)
    plan = solve.sites[0].plan
    assert plan.scheme == "linalg" and plan.config.endswith("refine=on"), plan
    assert result.plan.within_budget and result.plan.modeled_time_s < result.plan.native_modeled_time_s
    x, ref = solve(k, y), njit(solve.py_func)(k, y)
    assert np.abs(x - ref).max() <= 1e-10 * np.abs(ref).max()


def test_lstsq_solutions_are_sites_that_run_native_bit_for_bit_and_tune_to_refined_normal_equations():
    """``lstsq(...)[0]`` and an unpacked lstsq whose other items are unused are sites; untuned they
    are gelsd's solution, bit for bit @njit's. On a Jetson AGX Orin (weak FP64), a 250 x 200 fit
    is modeled faster by FP32-class refined normal equations than by gelsd, so an FP64-class budget
    must pick them, and the solution must be FP64-class."""
    @mixjit(tune="never", schemes=("mixpert",))
    def fit(a, y):
        x = np.linalg.lstsq(a, y)[0]
        z, res, rank, sv = np.linalg.lstsq(a, 2 * y)
        return x + z

    rng = np.random.default_rng(12)
    a = rng.standard_normal((250, 200))
    y = a @ rng.standard_normal(200) + 1e-2 * rng.standard_normal(250)
    ref = njit(fit.py_func)(a, y)
    out = fit(a, y)
    assert [s.form for s in fit.sites] == ["np.linalg.lstsq(a, b)[0]"] * 2
    assert out.tobytes() == ref.tobytes()
    result = fit.tune(a, y, budget=1e-10, target="jetson-agx-orin", workers=1, reuse=False)
    plans = [s.plan for s in fit.sites]
    assert all(p.scheme == "linalg" and p.config.endswith("refine=on") for p in plans), plans
    assert result.plan.within_budget and result.plan.modeled_time_s < result.plan.native_modeled_time_s
    assert np.abs(fit(a, y) - ref).max() <= 1e-10 * np.abs(ref).max()


def test_a_saved_plan_of_linalg_sites_loads_into_a_fresh_function_and_bad_ones_are_refused(tmp_path):
    import json

    from mixjit.tuning.persistence import PlanFileError

    @mixjit(tune="never", schemes=("mixpert-fp64",))
    def fit(k, y):
        return np.linalg.solve(k, y) @ y.T

    k, y = _spd(512, 8), np.random.default_rng(9).standard_normal((512, 2))
    fit.tune(k, y, budget=1e-10, target="rtx4090", workers=1, reuse=False)
    path = fit.save_plan(tmp_path / "fit.mixplan.json")
    saved = [(s.scheme, s.config) for s in fit.plan.sites]
    assert any(scheme == "linalg" for scheme, _ in saved)
    fresh = mixjit(tune="never", schemes=("mixpert-fp64",))(fit.py_func)
    fresh.use_plan(path)
    out = fresh(k, y)
    assert [(s.plan.scheme, s.plan.config) for s in fresh.sites] == saved
    assert out.tobytes() == fit(k, y).tobytes()
    data = json.loads(path.read_text())
    linalg_site = next(s for s in data["sites"] if s["scheme"] == "linalg")
    for scheme, config, why in [("mixpert", "level=IV", "is an np.linalg site"),
                                ("linalg", "block=64,gemm=complex[form=4,real=mixpert(level=IV)],refine=on", "cannot run float64 products"),
                                ("linalg", "block=64", "bad config")]:
        linalg_site.update(scheme=scheme, config=config)
        bad = tmp_path / f"bad-{scheme}-{len(config)}.mixplan.json"
        bad.write_text(json.dumps(data))
        with pytest.raises(PlanFileError, match=why):
            fresh.use_plan(bad)  # compiled: the plan is checked against its sites now


def test_a_log_likelihood_with_slogdet_tunes_its_determinant_to_a_blocked_candidate():
    """A GP log-likelihood's slogdet (a tuple-valued site) takes part in tuning: on an RTX 4090 its
    blocked LU over INT8-emulated FP64 products is modeled faster than LAPACK and meets 1e-10."""
    @mixjit(tune="never", schemes=("mixpert-fp64",))
    def loglik(k, y):
        sign, logdet = np.linalg.slogdet(k)
        return logdet + np.sum(np.linalg.solve(k, y))

    k, y = _spd(512, 5), np.random.default_rng(5).standard_normal(512)
    result = loglik.tune(k, y, budget=1e-10, target="rtx4090", workers=1, reuse=False)
    plans = {s.form: s.plan for s in loglik.sites}
    assert plans["np.linalg.slogdet(a)"].scheme == "linalg", plans
    assert result.plan.within_budget and result.plan.error <= 1e-10
    assert abs(loglik(k, y) - njit(loglik.py_func)(k, y)) <= 1e-10 * abs(njit(loglik.py_func)(k, y))


def test_tuning_warms_every_linalg_candidate_before_forking_its_workers(monkeypatch):
    """Every linalg config is warmed in the tuning process (its GEMM scheme's paths compile per
    config): keyed by executor alone, only the first was, and on a cold cache every other candidate
    compiled in a worker, ran past its time limit and counted as failed (a different plan chosen)."""
    import mixjit.tuning.workers as workers
    from mixjit.tuning.driver import _warm, signature_sites

    @mixjit(tune="never", schemes=("mixpert",))
    def fit(k, y):
        return np.linalg.solve(k, y)

    k, y = _spd(64, 3), np.ones(64)
    fit(k, y)
    sites = signature_sites(fit, next(iter(fit.overloads)))
    warmed: list[str] = []
    monkeypatch.setattr(workers, "warm_linalg", lambda config, dtype: warmed.append(config))
    _warm(sites, ("mixpert",), "jetson-agx-orin", {s.id: s.reference_plan() for s in sites})
    linalg = {c.config for c in sites[0].candidates(("mixpert",), (), "jetson-agx-orin") if c.scheme == "linalg"}
    assert len(linalg) > 2 and set(warmed) == linalg
