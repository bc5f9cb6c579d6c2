"""The reference plan (float64 products, one rounding), the profile flag's shape log, and what
counts as a run's outputs (returned values and written arguments)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import prange

from mixjit import entry, gemm, mixjit
from mixjit.plan import reference_plan, set_plan
from mixjit.tuning.outputs import check_finite, collect, program_error, relative_frobenius, written_arguments

RNG = np.random.default_rng(7)


def _three_forms(a, b, s):
    p = a @ b
    q = np.dot(b.T, a.T)
    s[2:, 2:] -= s[2:, :2] @ s[2:, :2].T
    return p, q


three_forms = mixjit(tune="never")(_three_forms)


def _set_all(f, plan):
    for site in f.sites:
        if site.taken:
            set_plan(site.id, plan)


def test_float32_reference_is_float64_products_rounded_once():
    a = RNG.standard_normal((6, 40)).astype(np.float32)
    b = RNG.standard_normal((40, 5)).astype(np.float32)
    s = RNG.standard_normal((7, 7)).astype(np.float32)
    three_forms(a, b, s.copy())
    _set_all(three_forms, reference_plan("float32"))
    s_got = s.copy()
    p, q = three_forms(a, b, s_got)
    a64, b64, s64 = a.astype(np.float64), b.astype(np.float64), s.astype(np.float64)
    np.testing.assert_array_equal(p, (a64 @ b64).astype(np.float32))
    np.testing.assert_array_equal(q, (b64.T @ a64.T).astype(np.float32))
    want = s.copy()
    want[2:, 2:] = (s64[2:, 2:] - s64[2:, :2] @ s64[2:, :2].T).astype(np.float32)  # C - P in float64, one rounding
    np.testing.assert_array_equal(s_got, want)
    # and it is not what the float32 BLAS computes (the test can tell the executors apart)
    assert not np.array_equal(p, a @ b) or not np.array_equal(q, b.T @ a.T)


def test_float64_reference_is_the_most_precise_mixpert_fp64_config():
    plan = reference_plan("float64")
    assert (plan.scheme, plan.executor) == ("mixpert-fp64", "mixpert-fp64")
    a = RNG.standard_normal((5, 30))
    b = RNG.standard_normal((30, 4))
    s = RNG.standard_normal((6, 6))
    three_forms(a, b, s.copy())
    _set_all(three_forms, plan)
    p, _ = three_forms(a, b, s.copy())
    np.testing.assert_array_equal(p, gemm(a, b, "mixpert-fp64", plan.config))


def test_shape_log_counts_each_shape_only_while_profiling():
    f = mixjit(tune="never")(_three_forms)
    a = RNG.standard_normal((6, 40)).astype(np.float32)
    b = RNG.standard_normal((40, 5)).astype(np.float32)
    s = RNG.standard_normal((7, 7)).astype(np.float32)
    f(a, b, s.copy())
    ids = [site.id for site in f.sites if site.taken]
    entry.reset_profile(ids)
    f(a, b, s.copy())  # flag off: nothing logged
    assert all(entry.shape_log(i) == ([], 0) for i in ids)
    entry.set_profiling(True)
    try:
        f(a, b, s.copy())
        f(a, b, s.copy())
        f(a[:3], b, s.copy())
    finally:
        entry.set_profiling(False)
    logs = [entry.shape_log(i)[0] for i in ids]
    assert logs[0] == [(6, 5, 40, 2), (3, 5, 40, 1)]
    assert logs[1] == [(5, 6, 40, 2), (5, 3, 40, 1)]
    assert logs[2] == [(5, 5, 2, 3)]
    stats = entry.site_stats(ids[0])
    assert stats[1] > 0  # MixPert tiles counted (the default plan runs MixPert)
    entry.reset_profile(ids)


def test_outputs_are_returned_values_and_written_arguments():
    a = np.ones((2, 2))
    before = (a, np.zeros(3), 4)
    after = (a, np.array([0.0, 1.0, 0.0]), 4)
    written = written_arguments(before, after, ("a", "v", "n"))
    assert written == ("arg 'v'",)
    outs = collect((np.eye(2), 3.5), after, ("a", "v", "n"), written)
    assert [o.name for o in outs] == ["return[0]", "return[1]", "arg 'v'"]
    assert outs[1].value.shape == ()


def test_relative_frobenius_and_program_error():
    ref = np.array([3.0, 4.0])
    assert relative_frobenius(ref, ref) == 0.0
    assert relative_frobenius(np.array([3.0, 4.5]), ref) == pytest.approx(0.1)
    assert relative_frobenius(np.array([np.nan, 4.0]), ref) == math.inf
    assert relative_frobenius(np.zeros(2), np.zeros(2)) == 0.0
    assert relative_frobenius(np.ones(2), np.zeros(2)) == math.inf
    from mixjit.tuning.outputs import Output

    outs = [Output("return[0]", np.array([3.0, 4.5])), Output("arg 'x'", np.array([1.0]))]
    refs = [Output("return[0]", ref), Output("arg 'x'", np.array([2.0]))]
    assert program_error(outs, refs) == pytest.approx(0.5)  # the max over outputs
    assert program_error(outs, refs, metric=lambda o, r: float(np.abs(o - r).max())) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="metric returned"):
        program_error(outs, refs, metric=lambda o, r: float("nan"))



def _frobenius_by_numpy(x, r) -> float:
    """The definition, with numpy's norms over float64 / complex128 copies."""
    x, r = (np.asarray(v).astype(np.complex128 if np.iscomplexobj(v) else np.float64) for v in (x, r))
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: masked out
        diff = np.where((x == r) | (np.isnan(x) & np.isnan(r)), 0.0, x - r)
    num, den = np.linalg.norm(diff.ravel()), np.linalg.norm(np.where(np.isfinite(r), r, 0.0).ravel())
    return 0.0 if num == 0 else math.inf if not math.isfinite(num) or den == 0 else num / den


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128, np.int32, np.float16])
def test_relative_frobenius_is_the_definition_for_every_dtype_and_layout(dtype):
    """The one-pass measure agrees with the definition (numpy's norms) for each output dtype, a
    Fortran-ordered output against a C-ordered reference, and equal infinities and NaNs."""
    rng = np.random.default_rng(3)
    for trial in range(20):
        shape = (int(rng.integers(1, 40)), int(rng.integers(1, 40)))
        r = rng.standard_normal(shape) * 100
        x = r + rng.standard_normal(shape) * 10.0 ** rng.uniform(-9, 1)
        if np.dtype(dtype).kind == "c":
            r, x = r + 1j * rng.standard_normal(shape), x + 1j * rng.standard_normal(shape)
        r, x = r.astype(dtype), x.astype(dtype)
        if trial % 3 == 1 and np.dtype(dtype).kind != "i":
            x.flat[0] = r.flat[0] = np.inf
            x.flat[-1] = r.flat[-1] = np.nan
        if trial % 2:
            x = np.asfortranarray(x)
        want = _frobenius_by_numpy(x, r)
        got = relative_frobenius(x, r)
        if np.dtype(dtype).kind == "c":
            want = max(want, _frobenius_by_numpy(x.real, r.real), _frobenius_by_numpy(x.imag, r.imag))
        assert got == pytest.approx(want, rel=1e-12, abs=0.0)
    assert relative_frobenius(np.array([1.0, np.inf]), np.array([1.0, -np.inf])) == math.inf
    assert relative_frobenius(np.array([np.nan, 2.0]), np.array([np.nan, 1.0])) == 1.0

@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_check_finite_names_the_argument(bad):
    x = np.ones((2, 2), np.float32)
    x[1, 0] = bad
    with pytest.raises(ValueError, match=r"input y of f contains (NaN|Inf)"):
        check_finite((np.ones(2), x), ("a", "y"), "f")
    with pytest.raises(ValueError, match=r"input t\[1\] of f is"):
        check_finite(((1.0, float(bad)),), ("t",), "f")


def _many_shapes(x, out):
    for i in prange(out.shape[0]):
        m = 1 + i % 3
        out[i] = (x[:m] @ x[:m].T).sum()
    return out


def test_shape_log_is_exact_under_prange():
    f = mixjit(tune="never", parallel=True)(_many_shapes)
    x = RNG.standard_normal((4, 8))
    out = np.zeros(60)
    f(x, out)
    (site,) = [s for s in f.sites if s.taken]
    entry.reset_profile([site.id])
    entry.set_profiling(True)
    try:
        f(x, out)
    finally:
        entry.set_profiling(False)
    shapes, unlogged = entry.shape_log(site.id)
    assert unlogged == 0
    assert sorted(shapes) == [(1, 1, 8, 20), (2, 2, 8, 20), (3, 3, 8, 20)]
    entry.reset_profile([site.id])


def test_progress_bar_appears_on_a_terminal_after_its_delay():
    import io

    from mixjit.passes.tuning.judge import SearchProgress
    from mixjit.passes.tuning.space import Evaluation
    from mixjit.tuning.progress import SearchBar

    class Tty(io.StringIO):
        def isatty(self):
            return True

    last = Evaluation({0: 1}, 2e-7, 1e-3)
    quiet, shown = io.StringIO(), Tty()
    for stream in (quiet, shown):
        bar = SearchBar("mixjit: tuning f", delay=0.0, stream=stream)
        bar(SearchProgress(3, 10, last, last))
        bar.close()
    assert quiet.getvalue() == ""  # not a terminal: silent
    text = shown.getvalue()  # a rich bar (transient: it is erased at close, the text stays in the buffer)
    assert "mixjit: tuning f" in text and "3/10" in text and "plans, best 2.00e-07" in text


def test_progress_bar_counts_the_runs_of_every_worker():
    """Program runs are counted as they come back, before the search judges a plan too, with
    the number of workers that run them."""
    import io

    from mixjit.passes.tuning.judge import SearchProgress
    from mixjit.passes.tuning.space import Evaluation
    from mixjit.tuning.evaluator import ProgramRunner
    from mixjit.tuning.progress import SearchBar

    class Tty(io.StringIO):
        def isatty(self):
            return True

    class Pool:  # a pool of 3 workers whose runs come back at once
        workers = 3

        def run(self, task):
            return type("Outcome", (), {"stopped": "", "written": (), "seconds": 0.0})()

        def run_many(self, tasks, each):
            outcomes = [self.run(t) for t in tasks]
            for index, outcome in enumerate(outcomes):
                each(index, outcome)
            return outcomes

    def runs(judged: bool) -> str:  # what the bar last showed (rich draws it on refresh and at close)
        stream = Tty()
        bar = SearchBar("mixjit: tuning g", delay=0.0, stream=stream, workers=Pool.workers)
        runner = ProgramRunner(Pool(), 0, bar.add_runs)
        runner.run({})  # the reference run decides the outputs
        runner.run_many([{}, {}, {}, {}])
        if judged:
            last = Evaluation({0: 1}, 2e-7, 1e-3)
            bar(SearchProgress(1, 4, last, last))
            runner.run_many([{}])
        assert bar.runs == (6 if judged else 5)
        bar.close()
        return stream.getvalue()

    assert "0/?" in runs(False) and "none within budget yet; 5 runs on 3 workers" in runs(False)
    assert "1/4" in runs(True) and "best 2.00e-07; 6 runs on 3 workers" in runs(True)
