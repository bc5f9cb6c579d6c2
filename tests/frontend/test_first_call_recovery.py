"""A failure never leaves a @mixjit function broken (issue 26, Why 5): after a cache write that
fails or a Ctrl-C during the first call, the next call compiles (or loads) again and returns the
right result; it never runs code whose GEMM sites have no id (``RuntimeError('mixjit GEMM entry
failed...', 1)`` on every later call)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from mixjit import mixjit
from mixjit.cache import CacheFileWarning
from mixjit.tuning import driver

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from cache_files import load_module  # noqa: E402

GEMM = "def f(a, b):\n    return a @ b\n"


def _operands() -> tuple[np.ndarray, np.ndarray]:
    a = np.arange(12.0).reshape(3, 4) / 7
    return a, a.T.copy()


def test_a_directory_where_the_cache_data_file_goes(tmp_path):
    """The cache cannot be written: one warning, and every call runs linked."""
    module = load_module(tmp_path, GEMM)
    f = mixjit(cache=True, schemes=["native"])(module.f)
    data_file = Path(f._cache.cache_path) / f"{f._cache._impl.filename_base}.1.nbc"
    data_file.mkdir(parents=True)
    a, b = _operands()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert np.array_equal(f(a, b), a @ b)
        assert np.array_equal(f(2 * a, b), 2 * a @ b)
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheFileWarning)]
    assert len(messages) == 1 and "could not write" in messages[0] and "IsADirectoryError" in messages[0]
    (site,) = f.sites
    assert site.taken and site.calls == 2


def test_interrupt_during_the_cache_write_of_the_first_call(monkeypatch):
    """Ctrl-C after the code was compiled (while Numba writes its cache): the call is interrupted
    and the next call compiles again, linked, with the right result."""
    f = mixjit(schemes=["native"])(lambda a, b: a @ b)
    a, b = _operands()

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(f._cache, "save_overload", interrupted)
    with pytest.raises(KeyboardInterrupt):
        f(a, b)
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(f(a, b), a @ b)
    assert sum(f.stats.cache_misses.values()) == 2, "the next call did not compile again"
    (site,) = f.sites
    assert site.taken and site.calls == 1


def test_interrupt_during_first_call_tuning(monkeypatch):
    """Ctrl-C in the tuning of the first call: the next call is a first call again and tunes."""
    f = mixjit(lambda a, b: a @ b)
    a, b = _operands()
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    real = driver._warm  # the tuning's first step (loads executors before its worker forks)

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(driver, "_warm", interrupted)
    with pytest.raises(KeyboardInterrupt):
        f(a32, b32)
    monkeypatch.setattr(driver, "_warm", real)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(f(a32, b32), a32 @ b32, rtol=1e-6)
    assert f.plan is not None and f.plan.within_budget
    assert [s.calls for s in f.sites] == [1]
