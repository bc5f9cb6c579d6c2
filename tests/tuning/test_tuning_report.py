"""f.report(): the table (every time labelled modeled), the Pareto plot; profiles as
mix.profile attributes on the mix.gemm ops of a dump."""

from __future__ import annotations

import numpy as np
import programs as P
import pytest

from mixjit import mixjit
from mixjit.ir.parser import parse_module
from mixjit.passes.tuning.profile import PROFILE_ATTR, SiteProfile
from mixjit.runtime.schemes.base import get_scheme
from mixjit.tuning.annotate import profiled_module


@pytest.fixture(scope="module")
def tuned():
    f = mixjit(error_budget=1e-9, target="rtx4090", tune="explicit")(P.mlp)
    args = P.mlp_inputs(16, 32, 0, np.float64)
    result = f.tune(*args, validate=[P.mlp_inputs(16, 32, 1, np.float64)])
    return f, args, result


def test_report_table_lists_every_site_with_modeled_times(tuned):
    f, _, result = tuned
    text = f.report()
    lines = text.splitlines()
    header = next(line for line in lines if line.split("|")[0].strip() == "site")
    for column in ("location", "form", "shapes", "calls", "config", "products", "error alone",
                   "modeled time", "modeled speedup vs native"):
        assert column in header
    rows = lines[lines.index(header) + 2:][:3]
    assert len(rows) == 3
    for s, row in zip(result.plan.sites, rows):
        assert f"{s.scheme}[{s.config}]" in row and "16x32x32" in row and "programs.py:" in row
    assert "on rtx4090 (modeled)" in lines[0]
    assert "held-out input 0: error" in text
    assert "against the whole program in float64" in text
    assert "\x1b" not in text  # plain text: the report is returned, not printed to a terminal


def test_report_writes_the_pareto_plot(tuned, tmp_path):
    f, _, _ = tuned
    out = tmp_path / "pareto.png"
    f.report(plot=out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_before_tuning_says_what_to_do():
    f = mixjit(tune="explicit")(P.mlp)
    with pytest.raises(ValueError, match="has not been tuned"):
        f.report()


def test_profiles_become_mix_profile_attributes_of_a_dump(tuned):
    f, args, result = tuned
    text = profiled_module(f, *args).text()
    module = parse_module(text)
    gemms = [op for op in module.walk() if op.name == "mix.gemm"]
    assert len(gemms) == 3
    for op in gemms:
        profile = SiteProfile.from_attr(op.site.value, op.attributes[PROFILE_ATTR])
        assert profile.shapes == ((16, 32, 32, 1),) and profile.calls == 1 and profile.target == "rtx4090"
        assert profile.candidates[0].label == "mixpert-fp64[" + get_scheme("mixpert-fp64").default_config().label + "]"
        assert all(c.error is not None for c in profile.candidates)
    measured = sorted(c.error for p in result.profiles.values() for c in p.candidates)
    dumped = sorted(c.error for op in gemms
                    for c in SiteProfile.from_attr(0, op.attributes[PROFILE_ATTR]).candidates)
    assert dumped == pytest.approx(measured, rel=1e-12)


def test_a_dump_of_a_tuned_function_retunes_offline_in_mixopt(tuned, tmp_path, capsys):
    """f.dump carries the tuned sites' profiles; mixopt re-tunes the dump with no program run,
    and a looser budget never gives a slower modeled plan than a tighter one."""
    from mixjit import mixopt

    f, args, _ = tuned
    path = f.dump(tmp_path / "mlp.mix", *args)
    assert path.read_text().count(PROFILE_ATTR) == 3
    times = []
    for budget in ("1e-12", "1e-3"):
        out = tmp_path / f"tuned-{budget}.mix"
        status = mixopt.main([str(path), "-p", f"build-dag,tune{{budget={budget},target=rtx4090}}", "-o", str(out)])
        assert status == 0, capsys.readouterr().err
        module = parse_module(out.read_text())
        plans = [op.attributes["mix.plan"] for op in module.walk() if op.name == "mix.gemm"]
        assert len(plans) == 3
        times.append(sum(p["modeled_time"].value for p in plans))
    assert times[1] <= times[0]


def test_rich_is_imported_only_when_a_report_is_rendered():
    import subprocess
    import sys

    code = ("import sys, mixjit, mixjit.tuning, mixjit.tuning.report, mixjit.passes.tune, mixjit.mixopt; "
            "print('rich' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_dump_names_predecessors_by_the_same_site_ids_as_its_sites(tuned):
    """f.ir relabels the sites to their process ids (f.sites); build-dag's mix.deps follow, so a
    dump re-tunes with tune alone (no second build-dag)."""
    from mixjit.passes.build_dag import DEPS_ATTR

    f, args, _ = tuned
    other = mixjit(tune="never")(P.mlp)  # takes process site ids: f's no longer start at 0 ...
    other(*args)
    g = mixjit(tune="never")(P.mlp)  # ... and g's surely do not
    g(*args)
    module = parse_module(g.ir(*args, pipeline="detect-gemm,build-dag"))
    gemms = [op for op in module.walk() if op.name == "mix.gemm"]
    ids = [op.site.value for op in gemms]
    assert ids == [s.id for s in g.sites] and ids != [0, 1, 2]
    assert [[d["site"].value for d in op.attributes[DEPS_ATTR]] for op in gemms] == [[], ids[:1], ids[1:2]]
