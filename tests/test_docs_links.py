"""Every relative link of the docs (docs/**/*.md, README.md, CONTRIBUTING.md) names a file the
repository tracks: a page written under an ignored folder (docs/results/ is ignored, its files
are added by hand) and never added left clean clones with broken links."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)  # code is not a link


def _tracked() -> set[str] | None:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.splitlines())


def _pages() -> list[Path]:
    return sorted([*ROOT.glob("docs/**/*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"])


def test_relative_links_of_the_docs_name_tracked_files():
    tracked = _tracked()
    if tracked is None:
        pytest.skip("not a git checkout: which files are tracked is unknown")
    broken = []
    for page in _pages():
        if not page.is_file() or page.relative_to(ROOT).as_posix() not in tracked:
            continue
        for target in LINK.findall(CODE.sub("", page.read_text(encoding="utf-8"))):
            if "://" in target or target.startswith("mailto:"):
                continue
            path = (page.parent / target).resolve()
            try:
                rel = path.relative_to(ROOT).as_posix()
            except ValueError:
                broken.append(f"{page.relative_to(ROOT)}: {target} (outside the repository)")
                continue
            if rel not in tracked and not any(t.startswith(rel + "/") for t in tracked):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, "links to files git does not track:\n" + "\n".join(broken)
