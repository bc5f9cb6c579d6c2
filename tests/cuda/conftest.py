"""Built cubins shared by the tests of this directory (CI time: a build costs seconds of nvcc).

``cubin(desc, compiler=None)`` builds through the on-disk build cache (runtime/cuda/build.py,
keyed by source hash, arch and compiler), once per session; ``sass(path)`` and ``usage(path)``
read a cubin's SASS and resource usage once. Tests that check the cache or a compile error
build into their own ``tmp_path`` instead.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def cubin():
    from mixjit.runtime.cuda.build import build
    from mixjit.runtime.cuda.emit import render

    @lru_cache(maxsize=None)
    def built(desc, compiler=None) -> Path:
        return build(render(desc), compiler=compiler)

    return built


@pytest.fixture(scope="session")
def sass():
    from mixjit.runtime.cuda.sass import sass_by_kernel

    return lru_cache(maxsize=None)(sass_by_kernel)


@pytest.fixture(scope="session")
def usage():
    from mixjit.runtime.cuda.sass import resource_usage

    return lru_cache(maxsize=None)(resource_usage)
