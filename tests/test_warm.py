"""``python -m mixjit.warm`` (run by ``make setup``): every site executor and every scheme's
kernel is compiled or loaded, and each says so on its own line."""

from __future__ import annotations

import io

from mixjit import entry
from mixjit.runtime.schemes.base import all_schemes
from mixjit.warm import warm


def test_warm_loads_every_site_executor_and_every_scheme_kernel():
    out = io.StringIO()
    spent = warm(out)
    text = out.getvalue()
    executors = {entry.executor_for(s).name for s in entry.EXECUTORS} - {"native"}
    assert executors <= set(entry.loaded_executors())
    for name in executors:
        assert f"site executor {name}" in text
    for name, scheme in all_schemes().items():
        for dtype in scheme.dtypes:
            assert f"{name} ({dtype.name})" in text
    assert spent >= 0 and text.rstrip().endswith("s CPU")
