"""The install layout: ir/, passes/, runtime/ install as mixjit.* and every
package directory is listed in pyproject.toml (a missing entry would vanish from a
wheel even though an editable install still finds it)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _declared() -> tuple[list[str], dict[str, str]]:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return cfg["packages"], cfg["package-dir"]


def _data_packages() -> dict[str, list[str]]:
    """package-data: data-only directories (no __init__.py) declared as packages, and their globs."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"].get("package-data", {})


def _source_dir(dotted: str) -> pathlib.Path:
    _, package_dir = _declared()
    top = next(t for t in sorted(package_dir, key=len, reverse=True) if dotted == t or dotted.startswith(t + "."))
    return ROOT / package_dir[top] / pathlib.Path(*dotted[len(top):].lstrip(".").split(".") if dotted != top else ())


def _on_disk() -> set[str]:
    found = set()
    for top, dotted in (("mixjit", "mixjit"), ("ir", "mixjit.ir"), ("passes", "mixjit.passes"), ("runtime", "mixjit.runtime")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top)
            found.add(".".join([dotted, *rel.parts]))
    return found


def test_every_package_directory_is_declared() -> None:
    packages, _ = _declared()
    missing = _on_disk() - set(packages)
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
    stale = set(packages) - _on_disk() - set(_data_packages())
    assert not stale, f"pyproject.toml lists packages that do not exist: {sorted(stale)}"


def test_package_data_globs_match_files_and_their_packages_are_declared() -> None:
    # setuptools warns (and will stop installing the files) when a data directory is not a declared package
    packages, _ = _declared()
    for dotted, globs in _data_packages().items():
        assert dotted in packages, f"add {dotted} to [tool.setuptools] packages (it holds package-data)"
        for pattern in globs:
            assert list(_source_dir(dotted).glob(pattern)), f"package-data {dotted}: {pattern} matches no file"


def test_top_level_dirs_map_to_mixjit_namespace() -> None:
    _, package_dir = _declared()
    assert package_dir == {"mixjit": "mixjit", "mixjit.ir": "ir", "mixjit.passes": "passes", "mixjit.runtime": "runtime"}


def test_ir_import_stays_light() -> None:
    # DESIGN.md: the IR core never imports heavy dependencies, so mixopt runs on a
    # dump without compiling anything.
    code = "import sys, mixjit.ir; print(' '.join(m for m in ('numba', 'llvmlite', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"importing mixjit.ir pulled in {out}"


def test_license_is_an_spdx_expression_the_build_backend_accepts() -> None:
    # A TOML-table license makes `pip install` warn (setuptools deprecated it); the SPDX string
    # form needs setuptools >= 77, so the build requirement must say so.
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(cfg["project"]["license"], str) and cfg["project"]["license"] == "Apache-2.0"
    (setuptools_req,) = [r for r in cfg["build-system"]["requires"] if r.startswith("setuptools")]
    assert int(setuptools_req.split(">=")[1].split(".")[0]) >= 77


def test_dir_lists_the_lazy_attributes() -> None:
    import mixjit

    assert {"gemm", "mixjit", "MixjitWarning", "__version__"} <= set(dir(mixjit))


def test_mixjit_warning_is_importable_from_the_top_without_loading_numba() -> None:
    # users filter mixjit's warnings by class: `warnings.simplefilter("error", mixjit.MixjitWarning)`
    code = ("import sys, mixjit; from mixjit.decorator import MixjitWarning as W; "
            "print(mixjit.MixjitWarning is W, 'numba' in sys.modules)")
    first = "import sys, mixjit; mixjit.MixjitWarning; print('numba' in sys.modules)"
    def run(src: str) -> list[str]:
        return subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, check=True).stdout.split()

    assert run(first) == ["False"]
    assert run(code)[0] == "True"
