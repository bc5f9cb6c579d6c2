"""`make demo` (python -m mixjit.demo): Cholesky under @mixjit, then mixopt on its IR dump."""

from __future__ import annotations

import re

from mixjit import demo


def test_demo_runs_the_example_and_shows_every_pass(capsys):
    assert demo.main() == 0
    out = capsys.readouterr().out
    # Part 1: the example, linked and counted, accurate.
    assert re.search(r"site \d+: c -= a @ b\.T at \S+cholesky.py:\d+ \[float64\] .* calls=3", out)
    assert re.search(r"site \d+: c -= a @ b\.T at \S+cholesky.py:\d+ \[float32\] .* calls=3", out)
    errors = {m[0]: float(m[1]) for m in re.findall(r"reference \((float\d\d)\): (\S+)", out)}
    assert errors["float64"] < 1e-14 and 1e-9 < errors["float32"] < 1e-6
    assert re.search(r"node \d+: loop depth 1", out)  # site ids are process-wide
    # Part 2: mixopt after each pass of the pipeline, with timing.
    headers = re.findall(r"^// -----// IR Dump After \w+ \(([\w-]+)\) //----- //$", out, re.M)
    assert headers == demo.PIPELINE.split(",")
    assert "Total Execution Time" in out
    result = out.split("// Result:\n", 1)[1]
    gemms = [line for line in result.splitlines() if '"mix.gemm"' in line]
    assert len(gemms) == 1
    assert "alpha = -1.0" in gemms[0] and "beta = 1.0" in gemms[0] and "mix.loop_depth = 1" in gemms[0]
