"""The demo's mixopt step: the Cholesky example's IR dump through detect-gemm and build-dag,
summarised in one line, the full output (IR after each pass, timing, result) in a file."""

from __future__ import annotations

import re

from mixjit import demo


def test_mixopt_step_writes_every_pass_and_summarises_the_gemm(tmp_path):
    case = next(c for c in demo.cases(quick=True) if c.name == "cholesky")
    if not case.fn.signatures:
        case.fn(*case.args)
    status, summary, path = demo.mixopt_step(case, tmp_path)
    assert status == 0
    assert re.fullmatch(r"\d+ ops, 1 mix\.gemm \(alpha=-1\.0, beta=1\.0, loop depth 1\)", summary)
    assert (tmp_path / "cholesky.mix").is_file() and path == tmp_path / "cholesky.mixopt.txt"
    out = path.read_text()
    assert out.startswith(f"$ mixopt {tmp_path / 'cholesky.mix'} -p {demo.PIPELINE} --print-ir-after-all --timing")
    headers = re.findall(r"^// -----// IR Dump After \w+ \(([\w-]+)\) //----- //$", out, re.M)
    assert headers == demo.PIPELINE.split(",")
    assert "Total Execution Time" in out
    result = out.split("// Result:\n", 1)[1]
    gemms = [line for line in result.splitlines() if '"mix.gemm"' in line]
    assert len(gemms) == 1
    assert "alpha = -1.0" in gemms[0] and "beta = 1.0" in gemms[0] and "mix.loop_depth = 1" in gemms[0]
