"""The pass registry: names, summaries, options, and one golden test per pass."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from mixjit.passes.pass_base import ModulePass, is_kebab_case, option
from mixjit.passes.registry import all_passes, get_pass, register_pass

GOLDEN = Path(__file__).resolve().parents[1] / "filecheck"
PASSES = all_passes()


def test_the_generic_passes_are_registered():
    assert {"dce", "canonicalize"} <= set(PASSES)


@pytest.mark.parametrize("name", PASSES)
def test_registered_name_matches_class(name):
    cls = PASSES[name]
    assert cls.name == name
    assert is_kebab_case(name)
    assert issubclass(cls, ModulePass)
    assert get_pass(name) is cls


@pytest.mark.parametrize("name", PASSES)
def test_pass_has_summary_and_buildable_defaults(name):
    cls = PASSES[name]
    summary = cls.summary()
    assert summary and "\n" not in summary
    for info in cls.options():
        assert is_kebab_case(info.name), f"option {info.name} of {name}"
        assert info.help, f"option {info.name} of {name} has no help text"
    if not any(info.required for info in cls.options()):
        assert cls.from_options({}) == cls()


@pytest.mark.parametrize("name", PASSES)
def test_pass_has_a_golden_test_that_runs_it(name):
    golden = GOLDEN / f"{name}.mix"
    assert golden.is_file(), f"pass '{name}' needs a golden test {golden}"
    runs = re.findall(r"//\s*RUN:(.*)", golden.read_text())
    assert any(re.search(rf"-p\s+\"?[^\"]*\b{re.escape(name)}\b", run) for run in runs), (
        f"{golden.name} has no RUN line running -p {name}"
    )


def test_register_pass_rejects_bad_declarations():
    @dataclass(frozen=True)
    class NoDoc(ModulePass):
        name = "no-doc"

    @dataclass(frozen=True)
    class BadName(ModulePass):
        """Has a docstring."""

        name = "Bad_Name"

    @dataclass(frozen=True)
    class BadOption(ModulePass):
        """Has a docstring."""

        name = "bad-option"
        table: dict = option(None, "not a supported type")

    with pytest.raises(TypeError, match="needs a docstring"):
        register_pass(NoDoc)
    with pytest.raises(TypeError, match="kebab-case"):
        register_pass(BadName)
    with pytest.raises(TypeError, match="option 'table' of pass class BadOption"):
        register_pass(BadOption)
    with pytest.raises(TypeError, match="pass name 'dce' is taken"):

        @dataclass(frozen=True)
        class Impostor(ModulePass):
            """Clashes with dce."""

            name = "dce"

        register_pass(Impostor)
    assert "no-doc" not in all_passes() and get_pass("dce") is not Impostor


def _documented_passes() -> dict[str, dict[str, str]]:
    """``* **`name{opt=default,...}`**`` bullets of docs/passes.md's "## Passes" section."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "passes.md").read_text()
    section = docs.split("\n## Passes\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    found: dict[str, dict[str, str]] = {}
    for name, opts in re.findall(r"^\* \*\*`([a-z0-9-]+)(?:\{([^}]*)\})?`\*\*", section, re.M):
        assert name not in found, f"docs/passes.md lists '{name}' twice"
        found[name] = dict(item.split("=", 1) for item in opts.split(",")) if opts else {}
    return found


def test_docs_list_exactly_the_registered_passes_with_their_options():
    expected = {
        name: {info.name: info.format_value(info.default) for info in cls.options()}
        for name, cls in PASSES.items()
    }
    assert _documented_passes() == expected
