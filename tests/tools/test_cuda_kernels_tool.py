"""tools/cuda_kernels.py: ``--archs`` picks the targets (every one of ARCHS by default) and refuses to
rewrite docs/cuda.md's table with part of them. The builds themselves are tests/cuda's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import cuda_kernels  # noqa: E402


def test_part_of_the_targets_only_without_writing_the_docs(capsys):
    with pytest.raises(SystemExit):
        cuda_kernels.main(["--archs", "sm_100a"])
    assert "give --no-write too" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # not a target the backend builds
        cuda_kernels.main(["--archs", "sm_110", "--no-write"])
    assert "invalid choice: 'sm_110'" in capsys.readouterr().err
