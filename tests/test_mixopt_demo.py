"""`make demo` (python -m mixjit.demo) runs and shows every pass of its pipeline."""

from __future__ import annotations

import re

from mixjit import demo


def test_demo_runs_and_simplifies(capsys):
    assert demo.main() == 0
    out = capsys.readouterr().out
    headers = re.findall(r"^// -----// IR Dump After \w+ \(([\w-]+)\) //----- //$", out, re.M)
    assert headers == demo.PIPELINE.split(",")
    assert "Total Execution Time" in out
    result = out.split("// Result:\n", 1)[1]
    assert '"mix.gemm"' in result
    for gone in ("cf.cond_br", "py.print", "py.global", "arith.muli"):
        assert gone not in result
