"""The layers import one way (ARCHITECTURE.md): ``mixjit.ir`` only itself; ``mixjit.passes`` the
IR, itself and the runtime; ``mixjit.runtime`` neither the passes nor the user layer. And no
import cycle in the user layer. Read from the sources with ``ast``: module-level imports and
imports inside functions alike, absolute and relative."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"mixjit": ROOT / "mixjit", "mixjit.ir": ROOT / "ir", "mixjit.passes": ROOT / "passes",
            "mixjit.runtime": ROOT / "runtime"}
LAYERS = ("mixjit.ir", "mixjit.passes", "mixjit.runtime")

def _modules() -> dict[str, Path]:
    found = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if "__pycache__" in parts or (package == "mixjit" and parts[0] in ("ir", "passes", "runtime")):
                continue
            name = ".".join((package, *parts))
            found[name.removesuffix(".__init__")] = path
    return found


def _graph() -> nx.DiGraph:
    modules = _modules()
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = name.split(".")[: len(name.split(".")) - node.level + is_package]
                    base = ".".join([*parent, base] if base else parent)
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                while target and target not in modules:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph.add_edge(name, target)
    return graph


def _layer(module: str) -> str:
    return next((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), "mixjit")


ALLOWED = {"mixjit.ir": {"mixjit.ir"}, "mixjit.passes": {"mixjit.ir", "mixjit.passes", "mixjit.runtime"},
           "mixjit.runtime": {"mixjit.runtime"}}


def test_the_graph_sees_the_packages():
    graph = _graph()
    assert graph.has_edge("mixjit.passes.detect_gemm", "mixjit.ir.core")
    assert graph.has_edge("mixjit.tuning.driver", "mixjit.passes.tune")


@pytest.mark.parametrize("layer", LAYERS)
def test_layers_import_one_way(layer):
    graph = _graph()
    wrong = sorted((a, b) for a, b in graph.edges if _layer(a) == layer and _layer(b) not in ALLOWED[layer])
    assert not wrong, f"{layer} may import only {sorted(ALLOWED[layer])}: {wrong}"


def test_no_import_cycle_in_the_user_layer():
    """The user layer imports one way too (imports inside functions counted): the decorator, the
    dispatcher, the tuning layer, the plan table and the backends form no circle."""
    graph = _graph()
    user = graph.subgraph(m for m in graph if _layer(m) == "mixjit")
    cycles = [sorted(c) for c in nx.strongly_connected_components(user) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


FRONT_DOOR = ("mixjit.decorator", "mixjit.dispatcher", "mixjit.options")


def test_the_tuning_layer_never_imports_the_decorator_or_the_dispatcher():
    """The tuning layer reaches a compiled function only through mixjit.tuning.protocol."""
    graph = _graph()
    tuning = [m for m in graph if m == "mixjit.tuning" or m.startswith("mixjit.tuning.")]
    reached = {t for m in tuning for t in nx.descendants(graph, m)}
    wrong = sorted(reached & set(FRONT_DOOR))
    assert not wrong, f"mixjit.tuning imports (directly or not) {wrong}; ask the function through TunableFunction"


def test_the_tuning_layer_reads_no_private_attribute_of_a_function():
    """No ``f._name`` / ``f.__dict__`` on a parameter annotated ``TunableFunction``: what the
    tuning layer may ask of a compiled function is what its protocol names."""
    wrong = []
    for path in sorted((ROOT / "mixjit" / "tuning").glob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            tunable = {a.arg for a in fn.args.args + fn.args.kwonlyargs
                       if a.annotation is not None and "TunableFunction" in ast.unparse(a.annotation)}
            for node in ast.walk(fn):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id in tunable and node.attr.startswith("_")):
                    wrong.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not wrong, f"private attributes of a compiled function read by mixjit.tuning: {wrong}"
    protocol = (ROOT / "mixjit" / "tuning" / "protocol.py").read_text()
    for member in ("site_blocks", "imported", "tuning_lock", "tuning_state", "mixjit_options", "overloads"):
        assert member in protocol
