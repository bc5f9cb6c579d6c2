"""Offline re-tuning: the error model fitted from profiles, the profile and plan attributes, the
re-modeling for another target, the ``tune`` pass and the ``--report`` table."""

from __future__ import annotations

import io
import itertools
import math

import pytest

from mixjit import mixopt
from mixjit.ir.attributes import to_attr
from mixjit.ir.diagnostics import DiagnosticError, Severity
from mixjit.ir.dialects.mix import GemmOp
from mixjit.ir.parser import parse_module
from mixjit.ir.printer import print_op
from mixjit.passes import tune as tune_module
from mixjit.passes.analysis import AnalysisManager
from mixjit.passes.manager import PassFailure, PassManager
from mixjit.passes.pass_base import OptionError, PassResult
from mixjit.passes.tune import Tune, TuneSearch
from mixjit.passes.tuning.backend import OfflineBackend, SiteProfiles, TuningBackend
from mixjit.passes.tuning.candidates import prune_space
from mixjit.passes.tuning.error_model import ErrorModel, measured_space
from mixjit.passes.tuning.greedy import greedy
from mixjit.passes.tuning.plan_attr import PLAN_ATTR, TUNING_ATTR, SitePlan
from mixjit.passes.tuning.profile import ProfileError, SiteProfile
from mixjit.passes.tuning.report import format_report, format_seconds
from mixjit.passes.tuning.retarget import TargetMismatch, retarget
from mixjit.passes.tuning.space import Candidate, SiteSpace, plan_time

T = "!py.array<f32, 2, C>"


def cands(scale=1.0, native=True):
    out = [Candidate("mixpert", "level=full", 4e-4 * scale, 9, 2e-8),
           Candidate("mixpert", "level=III", 2.6e-4 * scale, 6, 3e-7),
           Candidate("mixpert", "level=II", 1.5e-4 * scale, 3, 6e-6)]
    if native:
        out.insert(1, Candidate("native", "accumulate=blas", 5.5e-4 * scale, 1, 1e-7))
    return tuple(out)


def profile(site, candidates=None, target="a100", shapes=((256, 256, 256, 2),)):
    return SiteProfile(site, "float32", target, sum(s[3] for s in shapes), 0, tuple(shapes),
                       candidates or cands(), {"a_row_spread": 3.0})


def module_text(profiles, deps=None, extra=""):
    """A function whose sites 0..n-1 form a chain (or ``deps``: site -> predecessor list)."""
    n = len(profiles)
    args = ", ".join(f"%a{i}: {T}" for i in range(n + 1))
    lines = [f'"func.func"() <{{sym_name = "f", function_type = ({", ".join([T] * (n + 1))}) -> {T}}}> ({{',
             f"^bb0({args}):"]
    prev = "%a0"
    for i, p in enumerate(profiles):
        preds = deps[i] if deps is not None else ([i - 1] if i else [])
        d = ", ".join(f'{{carried = false, site = {s} : i64, via = "value"}}' for s in preds)
        attrs = f"mix.deps = [{d}]" + (f", mix.profile = {p.to_attr()}" if p is not None else "") + extra
        lines.append(f'  %g{i} = "mix.gemm"({prev}, %a{i + 1}) <{{dtype = f32, site = {i} : i64}}> {{{attrs}}} '
                     f': ({T}, {T}) -> {T} loc("prog.py":{10 + i}:5)')
        prev = f"%g{i}"
    lines += [f'  "func.return"({prev}) : ({T}) -> ()', "}) : () -> ()"]
    return "\n".join(lines) + "\n"


def run_tune(text, **options):
    module = parse_module(text, "t.mix")
    diagnostics = PassManager([Tune(**options)]).run(module)
    return module, diagnostics


def plans(module):
    return {op.site.value: SitePlan.from_attr(op.site.value, op.attributes[PLAN_ATTR])
            for op in module.walk() if isinstance(op, GemmOp)}


def failure_messages(text, **options):
    with pytest.raises(PassFailure) as info:
        run_tune(text, **options)
    assert isinstance(info.value.cause, DiagnosticError)
    return [(str(d.loc), d.message) for d in info.value.cause.diagnostics]


# --- the error model ---------------------------------------------------------------------------

def test_error_model_adds_site_errors_or_their_squares():
    spaces = {0: SiteSpace(0, cands()), 1: SiteSpace(1, cands(0.5))}
    assert ErrorModel(spaces).error({0: 3, 1: 2}) == pytest.approx(6e-6 + 3e-7)
    assert ErrorModel(spaces, "rss").error({0: 3, 1: 2}) == pytest.approx(math.hypot(6e-6, 3e-7))
    assert ErrorModel(spaces).site_error(1, 1) == 1e-7


def test_error_model_refuses_what_it_cannot_judge():
    spaces = {0: SiteSpace(0, cands())}
    with pytest.raises(KeyError, match=r"gives no candidate to site\(s\) \[0\]"):
        ErrorModel(spaces).error({})
    with pytest.raises(KeyError, match="names site 5, which the model does not know"):
        ErrorModel(spaces).error({0: 0, 5: 0})
    with pytest.raises(IndexError, match="gives site 0 candidate 9; it has 4"):
        ErrorModel(spaces).error({0: 9})
    with pytest.raises(ValueError, match="unknown combine rule 'max'"):
        ErrorModel(spaces, "max")
    unmeasured = SiteSpace(0, (Candidate("native", "accumulate=blas", 1.0),))
    with pytest.raises(ValueError, match=r"native\[accumulate=blas\] has no measured error"):
        ErrorModel({0: unmeasured})
    with pytest.raises(ValueError, match="has error nan"):
        ErrorModel({0: SiteSpace(0, (Candidate("native", "accumulate=blas", 1.0, error=math.nan),))})


def test_measured_space_leaves_out_unmeasured_candidates():
    space = SiteSpace(3, (Candidate("a", "x", 2.0, error=1e-7), Candidate("b", "y", 1.0)))
    kept, dropped = measured_space(space)
    assert kept == SiteSpace(3, space.candidates[:1]) and dropped == space.candidates[1:]
    assert measured_space(SiteSpace(3, space.candidates[1:])) == (None, space.candidates[1:])


def test_greedy_on_the_error_model_meets_the_budget_the_model_computes():
    spaces = {s: SiteSpace(s, cands(1.0 / (s + 1), native=False)) for s in range(3)}
    model = ErrorModel(spaces)
    result = greedy(spaces, model, 1e-5)
    assert result.within_budget and result.error == pytest.approx(sum(
        spaces[s].candidates[i].error for s, i in result.plan.items()))
    best = min((plan_time(spaces, dict(enumerate(p))), p) for p in itertools.product(range(3), repeat=3)
               if model.error(dict(enumerate(p))) <= 1e-5)
    assert result.time == pytest.approx(best[0])


# --- attributes --------------------------------------------------------------------------------

def test_profile_round_trips_through_the_printed_ir():
    p = profile(2, shapes=((64, 32, 16, 3), (8, 8, 8, 1)))
    module = parse_module(module_text([profile(0), profile(1), p]), "t.mix")
    again = parse_module(print_op(module), "t.mix")
    op = [o for o in again.walk() if isinstance(o, GemmOp)][2]
    assert SiteProfile.from_attr(2, op.attributes["mix.profile"]) == p


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["candidates"][0].update(time=-1.0), r"candidates\[0\]: time: must be a non-negative number"),
    (lambda d: d["candidates"][0].update(time=math.inf), r"candidates\[0\]: time: must be finite"),
    (lambda d: d["candidates"][1].update(error=math.nan), r"candidates\[1\]: error: must be a non-negative"),
    (lambda d: d["candidates"].append(dict(d["candidates"][0])), r"candidates\[4\]: mixpert\[level=full\] is listed twice"),
    (lambda d: d.update(calls=-1), "calls: must be at least 0"),
    (lambda d: d.update(shapes=[[1, 2, 3]]), r"shapes\[0\] must be \[m, n, k, calls\], got 3 numbers"),
    (lambda d: d.update(candidates=[]), "candidates is empty"),
    (lambda d: d.pop("target"), "missing 'target'"),
])
def test_profile_refuses_bad_fields_by_name(edit, message):
    good = profile(4)
    d = {"dtype": good.dtype, "target": good.target, "calls": good.calls, "loop_depth": 0,
         "shapes": [list(s) for s in good.shapes],
         "candidates": [{"scheme": c.scheme, "config": c.config, "time": c.time, "error": c.error}
                        for c in good.candidates]}
    edit(d)
    with pytest.raises(ProfileError, match="mix.profile of site 4: " + message):
        SiteProfile.from_attr(4, to_attr(d))


def test_site_plan_round_trips_and_names_bad_fields():
    plan = SitePlan("mixpert", "level=II", 1.5e-4, 6e-6)
    assert SitePlan.from_attr(0, plan.to_attr()) == plan
    assert SitePlan.from_attr(0, SitePlan("native", "accumulate=blas", 1.0).to_attr()).error is None
    with pytest.raises(ValueError, match="mix.plan of site 3: missing 'scheme'"):
        SitePlan.from_attr(3, to_attr({"config": "x", "modeled_time": 1.0}))


# --- re-modeling for another target ------------------------------------------------------------

def fake_cost_model(scheme, config, shapes, dtype, target):
    """Seconds of the shapes' calls: 2mnk flops a call at a rate per scheme (not a real part)."""
    if target == "unknown":
        raise KeyError(f"no hardware named '{target}'")
    rate = {"native": 1e12, "mixpert": 4e12}[scheme]
    return sum(calls * 2 * m * n * k / rate for m, n, k, calls in shapes)


def test_retarget_re_models_every_candidate_over_the_shapes():
    p = profile(0, shapes=((256, 256, 256, 2), (128, 128, 128, 4)))
    assert retarget(p, "a100", None) is p
    moved = retarget(p, "h100", fake_cost_model)
    flops = 2 * (2 * 256**3 + 4 * 128**3)
    assert moved.target == "h100"
    assert [c.time for c in moved.candidates] == pytest.approx(
        [flops / 4e12, flops / 1e12, flops / 4e12, flops / 4e12])
    assert [c.error for c in moved.candidates] == [c.error for c in p.candidates]


def test_retarget_without_a_cost_model_names_the_mismatch():
    with pytest.raises(TargetMismatch, match="site 0's profile was recorded for target 'a100', not 'h100': "
                                              "re-modeling its times needs mixjit.runtime.model.costmodel.modeled_calls_time"):
        retarget(profile(0), "h100", None)
    with pytest.raises(TargetMismatch, match=r"cannot re-model mixpert\[level=full\]: .*no hardware named"):
        retarget(profile(0), "unknown", fake_cost_model)


# --- the tune pass -----------------------------------------------------------------------------

def test_tune_writes_the_plan_the_search_chose_and_a_remark_per_site():
    module, diagnostics = run_tune(module_text([profile(0), profile(1, cands(0.5))]), budget=1e-5)
    chosen = plans(module)
    assert {s: p.label for s, p in chosen.items()} == {0: "mixpert[level=II]", 1: "mixpert[level=III]"}
    assert chosen[0] == SitePlan("mixpert", "level=II", 1.5e-4, 6e-6)
    remarks = [d for d in diagnostics if d.severity is Severity.REMARK]
    assert [str(d.loc) for d in remarks] == ["prog.py:10:5", "prog.py:11:5", "prog.py:10:5"]
    assert remarks[0].message.startswith("site 0: mixpert[level=II], error alone 6e-06, modeled 150 us")
    tuning = module.attributes[TUNING_ATTR].as_dict()
    assert tuning["within_budget"].value and tuning["error"].value == pytest.approx(6.3e-6)
    assert tuning["search"].value == "greedy" and tuning["model"].value == "additive"


def test_tune_plans_change_with_the_budget():
    text = module_text([profile(0), profile(1, cands(0.5))])
    times = [run_tune(text, budget=b)[0].attributes[TUNING_ATTR]["modeled_time"].value for b in (1e-7, 1e-5, 1e-3)]
    assert times[0] > times[1] > times[2]


def test_tune_exhaustive_finds_the_same_optimum_here_and_refuses_large_programs():
    text = module_text([profile(0), profile(1, cands(0.5))])
    greedy_plan = plans(run_tune(text, budget=1e-5)[0])
    module, _ = run_tune(text, budget=1e-5, search="exhaustive")
    assert plans(module) == greedy_plan
    assert module.attributes[TUNING_ATTR]["evaluations"].value == 9  # native pruned: 3 x 3
    [(loc, message)] = failure_messages(text, search="exhaustive", max_plans=8)
    assert loc == "prog.py:10:5" and "would judge 9 plans (3 x 3 candidates), more than max-plans=8" in message


def test_tune_unreachable_budget_keeps_the_most_precise_plan_with_a_warning():
    module, diagnostics = run_tune(module_text([profile(0), profile(1)]), budget=1e-9)
    assert {p.config for p in plans(module).values()} == {"level=full"}
    [warning] = [d for d in diagnostics if d.severity is Severity.WARNING]
    assert "budget 1e-09 is unreachable offline: even the most precise plan has modeled error 4e-08" in warning.message


def test_tune_max_evals_stops_early_and_says_so():
    module, diagnostics = run_tune(module_text([profile(0), profile(1)]), budget=1e-5, max_evals=2)
    assert module.attributes[TUNING_ATTR]["stopped"].value == "max-evals"
    assert any(d.severity is Severity.WARNING and "stopped early (max-evals)" in d.message for d in diagnostics)


def test_tune_re_models_for_another_target_with_the_cost_model(monkeypatch):
    monkeypatch.setattr(tune_module, "cost_model", lambda: fake_cost_model)
    module, _ = run_tune(module_text([profile(0), profile(1)]), budget=1e-5, target="h100")
    flops = 2 * 2 * 256**3
    for site, plan in plans(module).items():
        assert plan.modeled_time == pytest.approx(flops / 4e12)
        op = [o for o in module.walk() if isinstance(o, GemmOp)][site]
        written = SiteProfile.from_attr(site, op.attributes["mix.profile"])
        assert written.target == "h100" and written.candidates[1].time == pytest.approx(flops / 1e12)
    assert module.attributes[TUNING_ATTR]["target"].value == "h100"


def test_tune_refuses_another_target_without_a_cost_model(monkeypatch):
    monkeypatch.setattr(tune_module, "cost_model", lambda: None)
    messages = failure_messages(module_text([profile(0), profile(1)]), target="h100")
    assert [loc for loc, _ in messages] == ["prog.py:10:5", "prog.py:11:5"]
    assert "site 1's profile was recorded for target 'a100', not 'h100'" in messages[1][1]


def test_tune_asks_which_target_when_profiles_disagree():
    [(_, message)] = failure_messages(module_text([profile(0), profile(1, target="h100")]))
    assert "recorded for different targets (a100, h100): say which one to tune for" in message


def test_tune_reports_every_bad_site_at_its_location():
    bad = to_attr({"dtype": "float32"})
    text = module_text([profile(0), None, profile(2)]).replace(
        "site = 2 : i64}> {mix.deps = [{carried = false, site = 1 : i64, via = \"value\"}], mix.profile = "
        + str(profile(2).to_attr()),
        "site = 2 : i64}> {mix.deps = [], mix.profile = " + str(bad))
    messages = failure_messages(text)
    assert messages == [
        ("prog.py:11:5", "site 1 has no mix.profile: tune re-tunes from profiles; profile the program on "
                         "sample inputs (f.tune(...)) and dump it with its profiles"),
        ("prog.py:12:5", "bad mix.profile: mix.profile of site 2: missing 'candidates'"),
    ]


def test_tune_refuses_a_malformed_deps_entry():
    head, tail = module_text([profile(0), profile(1)], deps=[[], []]).rsplit("mix.deps = []", 1)
    text = head + "mix.deps = [{site = 0 : i64}]" + tail
    [(loc, message)] = failure_messages(text)
    assert loc == "prog.py:11:5" and "mix.deps of site 1: entry 0 must be {carried = <bool>, site = <int>" in message


def test_tune_raises_a_predecessor_along_mix_deps():
    # The trade of test_tuning_search.trade_problem, through the pass: site 0 feeds site 1.
    p0 = profile(0, (Candidate("s", "a", 20, 1, 0.0), Candidate("s", "b", 11, 1, 4e-6), Candidate("s", "c", 5, 1, 5e-6)))
    p1 = profile(1, (Candidate("s", "a", 10, 1, 0.0), Candidate("s", "b", 1, 1, 5.5e-6), Candidate("s", "c", 0.5, 1, 9e-6)))
    chained, _ = run_tune(module_text([p0, p1]), budget=1e-5)
    unlinked, _ = run_tune(module_text([p0, p1], deps=[[], []]), budget=1e-5)
    assert {s: p.config for s, p in plans(chained).items()} == {0: "b", 1: "b"}
    assert {s: p.config for s, p in plans(unlinked).items()} == {0: "c", 1: "a"}


def test_tune_leaves_a_module_without_sites_alone():
    text = '"func.func"() <{sym_name = "f", function_type = () -> ()}> ({\n  "func.return"() : () -> ()\n}) : () -> ()\n'
    module = parse_module(text, "t.mix")
    run = PassManager([Tune()]).run_with_results(module)
    assert run.diagnostics == [] and TUNING_ATTR not in module.attributes
    assert run.results == [PassResult(modified=False, payload=None)]


def test_tune_returns_its_search_and_the_spaces_it_searched():
    module = parse_module(module_text([profile(0), profile(1, cands(0.5))]), "t.mix")
    tune = Tune(budget=1e-5)
    run = PassManager([tune]).run_with_results(module)
    result = run.result_of(tune)
    assert result.modified and isinstance(result.payload, TuneSearch)
    searched, spaces = result.payload.result, result.payload.spaces
    assert spaces == {s: prune_space(measured_space(profile(s, c).space())[0])
                      for s, c in ((0, cands()), (1, cands(0.5)))}
    # the payload is the plan the pass wrote into the IR, and the search its mix.tuning records
    assert {s: spaces[s].candidates[i].label for s, i in searched.plan.items()} == \
        {s: p.label for s, p in plans(module).items()}
    tuning = module.attributes[TUNING_ATTR]
    assert searched.within_budget and tuning["error"].value == searched.error
    assert tuning["evaluations"].value == searched.evaluation_count > 0


@pytest.mark.parametrize("options, option", [
    ({"budget": 0.0}, "budget"), ({"budget": math.nan}, "budget"), ({"search": "random"}, "search"),
    ({"max_evals": -1}, "max-evals"), ({"max_plans": 0}, "max-plans"), ({"margin": 1.0}, "margin"),
])
def test_tune_options_are_checked(options, option):
    with pytest.raises(OptionError) as info:
        Tune(**options)
    assert info.value.option == option


# --- the report --------------------------------------------------------------------------------

def test_format_seconds_picks_a_readable_unit():
    assert [format_seconds(x) for x in (2.5, 1.3e-3, 1.2e-5, 3e-9)] == ["2.5 s", "1.3 ms", "12 us", "3 ns"]


def test_report_of_a_tuned_module_totals_the_modeled_speedup():
    module, _ = run_tune(module_text([profile(0), profile(1)]), budget=1e-5)
    lines = format_report(module).splitlines()
    assert lines[0].startswith("tuning report: target a100, budget 1e-05, greedy search")
    cells = lambda line: [c.strip() for c in line.split("|")]  # noqa: E731  (plain: ASCII columns)
    assert cells(lines[1])[:5] == ["site", "loc", "shapes (m x n x k)", "calls", "chosen"]
    assert set(lines[2]) == {"-", "+"}
    row0 = cells(lines[3])
    assert row0[:6] == ["0", "prog.py:10:5", "256x256x256", "2", "mixpert[level=II]", "3"]
    assert row0[-1] == f"{5.5e-4 / 1.5e-4:.2f}x"
    assert "\x1b" not in "\n".join(lines)  # no colour codes when not rendered for a terminal
    total = cells(lines[-1])
    chosen_time = sum(p.modeled_time for p in plans(module).values())
    assert total[0] == "total" and total[-1] == f"{2 * 5.5e-4 / chosen_time:.2f}x"


def test_report_table_is_rich_on_a_terminal_and_plain_elsewhere(monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # the terminal's width (a narrow one wraps the cells)

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    module, _ = run_tune(module_text([profile(0), profile(1)]), budget=1e-5)
    fancy = format_report(module, stream=Terminal())
    assert "\x1b[" in fancy and "mixpert[level=II]" in fancy  # colour codes; cells are text, not markup
    assert format_report(module, stream=io.StringIO()) == format_report(module)


def test_report_of_an_untuned_module_and_of_sites_without_native():
    module = parse_module(module_text([profile(0, cands(native=False))]), "t.mix")
    text = format_report(module)
    assert "not tuned" in text.splitlines()[0] and "(not tuned)" in text
    tuned, _ = run_tune(module_text([profile(0, cands(native=False))]), budget=1e-5)
    assert format_report(tuned).splitlines()[-1].split()[-1] == "-"  # no native time: no speedup


def test_report_names_a_malformed_plan_at_its_site():
    module, _ = run_tune(module_text([profile(0)]), budget=1e-5)
    op = next(o for o in module.walk() if isinstance(o, GemmOp))
    op.attributes[PLAN_ATTR] = to_attr({"scheme": "mixpert"})
    with pytest.raises(DiagnosticError) as info:
        format_report(module)
    assert str(info.value.diagnostics[0].loc) == "prog.py:10:5"
    assert "mix.plan of site 0: missing 'config'" in info.value.diagnostics[0].message


def test_mixopt_report_flag_prints_the_table_to_stderr(tmp_path):
    path = tmp_path / "dump.mix"
    path.write_text(module_text([profile(0), profile(1)]))
    out, err = io.StringIO(), io.StringIO()
    assert mixopt.main([str(path), "-p", "tune{budget=1e-5}", "--report"], out, err) == 0
    assert "mix.plan = {" in out.getvalue() and "tuning report:" not in out.getvalue()
    assert "modeled speedup vs native" in err.getvalue() and "mixpert[level=II]" in err.getvalue()
    bad = tmp_path / "bad.mix"
    bad.write_text(module_text([profile(0)]).replace("mix.deps = []", f"mix.deps = [], {PLAN_ATTR} = 3"))
    err = io.StringIO()
    assert mixopt.main([str(bad), "--report"], io.StringIO(), err) == 1
    assert "prog.py:10:5: error: mix.plan of site 0: expected a dictionary attribute, got 3 : i64" in err.getvalue()


def test_tune_re_models_with_the_real_cost_model():
    pytest.importorskip("mixjit.runtime.model.costmodel")
    from mixjit.runtime.model.costmodel import modeled_calls_time

    module, _ = run_tune(module_text([profile(0), profile(1)]), budget=1e-5, target="h100")
    for op in (o for o in module.walk() if isinstance(o, GemmOp)):
        written = SiteProfile.from_attr(op.site.value, op.attributes["mix.profile"])
        assert written.target == "h100"
        for c in written.candidates:
            assert c.time == modeled_calls_time(c.scheme, c.config, [(256, 256, 256, 2)], "float32", "h100")
        chosen = SitePlan.from_attr(op.site.value, op.attributes[PLAN_ATTR])
        assert chosen.modeled_time in [c.time for c in written.candidates]
    assert module.attributes[TUNING_ATTR]["within_budget"].value


# --- the backend a caller registers (how @mixjit runs this pass online) --------------------------

class RecordingBackend:
    """Profiles site 1 itself, leaves site 2 alone, judges plans with the error model + 1e-7 and
    records what the pass asked."""

    model = "recording"

    def __init__(self):
        self.asked, self.judged = [], []

    def profile(self, ops):
        self.asked.append(sorted(ops))
        return SiteProfiles(profiles={1: profile(1)}, skipped={2: "it did not run on the sample inputs"})

    def evaluator(self, spaces):
        model, judged = ErrorModel(spaces), self.judged

        class Shifted:
            def error(self, plan):
                judged.append(dict(plan))
                return model.error(plan) + 1e-7

        return Shifted()

    def progress(self):
        return None


def test_tune_profiles_and_judges_through_the_backend_registered_for_the_run():
    module = parse_module(module_text([profile(0), None, None]), "t.mix")
    backend = RecordingBackend()
    analyses = AnalysisManager(module)
    analyses.register(TuningBackend, lambda _module: backend)
    run = PassManager([Tune(budget=1e-5)]).run_with_results(module, analyses)
    diagnostics, (tuned,) = run.diagnostics, run.results
    assert backend.asked == [[1, 2]]  # only the sites without mix.profile
    assert tuned.modified and sorted(tuned.payload.spaces) == [0, 1]  # site 2 was left alone
    searched = tuned.payload.result
    assert backend.judged and searched.evaluation_count == len(backend.judged)
    assert searched.error == pytest.approx(ErrorModel(
        {s: prune_space(profile(s).space()) for s in (0, 1)}).error(searched.plan) + 1e-7)
    ops = {op.site.value: op for op in module.walk() if isinstance(op, GemmOp)}
    assert SiteProfile.from_attr(1, ops[1].attributes["mix.profile"]) == profile(1)  # measured: now in the IR
    assert PLAN_ATTR in ops[0].attributes and PLAN_ATTR in ops[1].attributes
    assert PLAN_ATTR not in ops[2].attributes and "mix.profile" not in ops[2].attributes
    assert any(d.message == "site 2 not tuned: it did not run on the sample inputs" for d in diagnostics)
    tuning = module.attributes[TUNING_ATTR]
    assert tuning["model"].value == "recording" and tuning["evaluations"].value == len(backend.judged)


def test_without_a_registered_backend_tune_is_offline():
    module = parse_module(module_text([profile(0)]), "t.mix")
    analyses = AnalysisManager(module)
    PassManager([Tune(budget=1e-5)]).run(module, analyses)
    assert isinstance(analyses.cached(TuningBackend), OfflineBackend)
    assert module.attributes[TUNING_ATTR]["model"].value == "additive"
