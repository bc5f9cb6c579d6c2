"""Unmodified Numba code under mixjit (issue 22 item 3): ``mixjit.patch_numba`` compiles the
``numba.njit`` / ``numba.jit`` functions decorated inside it as ``@mixjit`` ones with their own
Numba options, leaves object mode and options mixjit does not take to Numba, and restores Numba;
``python -m mixjit run script.py args`` runs a multi-function script (``parallel=True`` and
``cache=True`` functions included) with its arguments and exit status, and prints one report."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numba
import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

import mixjit
from mixjit.decorator import MixjitWarning
from mixjit.dispatcher import MixjitDispatcher


def _product(a, b):
    return a @ b


def test_patch_numba_compiles_njit_and_jit_functions_as_mixjit_with_their_options():
    original_njit, original_jit = numba.njit, numba.jit
    with mixjit.patch_numba(error_budget=1e-4, schemes=["native"], tune="never") as patched:
        plain = numba.njit(_product)
        fast = numba.njit(fastmath=True)(_product)
        jitted = numba.jit(nopython=True)(_product)
        signed = numba.njit("float64[:, :](float64[:, :], float64[:, :])")(_product)
        objmode = numba.jit(forceobj=True)(_product)
        from numba import njit as imported_inside
        assert imported_inside is numba.njit
    assert numba.njit is original_njit and numba.jit is original_jit
    assert numba.core.decorators.njit is original_njit
    for f in (plain, fast, jitted, signed):
        assert isinstance(f, MixjitDispatcher)
        assert f.mixjit_options.error_budget == 1e-4 and f.mixjit_options.schemes == ("native",)
    assert fast.targetoptions.get("fastmath") is True
    assert signed.signatures  # compiled at decoration, as @njit does
    assert isinstance(objmode, CPUDispatcher) and not isinstance(objmode, MixjitDispatcher)
    assert patched.functions == [plain, fast, jitted, signed]
    a = np.arange(16.0).reshape(4, 4)
    assert np.array_equal(plain(a, a), a @ a)
    assert [s.taken for s in plain.sites] == [True]
    report = patched.report()
    assert "4 Numba function(s) compiled as @mixjit, 2 called" in report and "_product" in report


def test_options_mixjit_does_not_take_and_numbas_own_functions_stay_with_numba():
    with mixjit.patch_numba(tune="never"):
        with pytest.warns(MixjitWarning, match="pipeline_class .* runs as plain Numba"):
            custom = numba.njit(pipeline_class=numba.core.compiler.Compiler)(_product)
        inner = _product.__module__
        _product.__module__ = "numba.np.fake_support"
        try:
            internal = numba.njit(_product)
        finally:
            _product.__module__ = inner
    assert not isinstance(custom, MixjitDispatcher) and not isinstance(internal, MixjitDispatcher)


def test_bad_options_are_refused_before_anything_is_patched_and_patches_do_not_nest():
    original = numba.njit
    with pytest.raises(ValueError, match="error_budget"):
        with mixjit.patch_numba(error_budget=-1.0):
            pass
    with pytest.raises(TypeError, match="parallel"):
        with mixjit.patch_numba(parallel=True):
            pass
    assert numba.njit is original
    with mixjit.patch_numba():
        with pytest.raises(RuntimeError, match="already active"):
            with mixjit.patch_numba():
                pass
    assert numba.njit is original


SCRIPT = '''
    import sys
    import numpy as np
    import numba
    from numba import njit, prange


    @njit
    def helper(a, b):
        return a @ b


    @numba.jit(nopython=True, cache=True)
    def gram(x):
        return x.T.dot(x)


    @njit(parallel=True)
    def chain(a, b, n):
        out = np.zeros_like(a)
        for i in prange(n):
            out += helper(a, b)
        return out


    def main(n):
        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((48, 48)), rng.standard_normal((48, 48))
        g, c = gram(a), chain(a, b, n)
        print("ok", np.allclose(g, a.T @ a), np.allclose(c, n * (a @ b)), type(gram).__name__, flush=True)
        sys.exit(int(sys.argv[2]))


    if __name__ == "__main__":
        main(int(sys.argv[1]))
'''


def test_python_m_mixjit_run_runs_an_unmodified_script_and_prints_one_report(tmp_path):
    script = tmp_path / "science.py"
    script.write_text(textwrap.dedent(SCRIPT))
    report = tmp_path / "report.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "mixjit", "run", "--budget", "1e-6", "--schemes", "mixpert-fp64,native",
         "--report", str(report), str(script), "3", "7"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 7, proc.stderr[-3000:]  # the script's own exit status
    assert "ok True True MixjitDispatcher" in proc.stdout
    text = report.read_text()
    assert text.count("Numba function(s) compiled as @mixjit") == 1
    assert "3 Numba function(s) compiled as @mixjit, 3 called" in text
    for name in ("__main__.helper", "__main__.gram", "__main__.chain"):
        assert f"== {name}" in text
    assert "a.T.dot(b)" in text and "modeled" in text
    assert text.strip() in proc.stderr  # printed once, on stderr
    assert "cannot fork a tuning worker" not in proc.stderr


def test_python_m_mixjit_run_refuses_bad_options_and_missing_scripts(tmp_path):
    bad = subprocess.run([sys.executable, "-m", "mixjit", "run", "--target", "nosuchgpu", "x.py"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert bad.returncode == 2 and "nosuchgpu" in bad.stderr
    missing = subprocess.run([sys.executable, "-m", "mixjit", "run", "nosuchscript.py"],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert missing.returncode == 2 and "no such script" in missing.stderr


def test_schemes_split_at_top_level_commas_only():
    from mixjit.__main__ import split_schemes

    assert split_schemes("int8{encoding=sf16,pct=1},native") == ["int8{encoding=sf16,pct=1}", "native"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert split_schemes(" mixpert ") == ["mixpert"]
