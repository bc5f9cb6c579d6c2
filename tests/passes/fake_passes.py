"""Test-only passes with every option type; not registered globally."""

from __future__ import annotations

from dataclasses import dataclass

from mixjit.ir.diagnostics import Diagnostic
from mixjit.ir.location import Location
from mixjit.passes.pass_base import ModulePass, PassContext, PassResult, option


@dataclass(frozen=True)
class Tune(ModulePass):
    """Pretend to tune GEMMs."""

    name = "tune"
    budget: float = option(1e-6, "error budget")
    target: str = option("h100", "hardware")
    max_iterations: int = option(10, "iteration limit")
    exhaustive: bool = option(False, "try everything")
    sites: list[int] = option([], "sites to tune")
    scales: tuple[float, ...] = option((1.0,), "scales")
    names: list[str] = option(["a"], "names")

    def apply(self, module) -> None:
        module.log.append(self.name)


@dataclass(frozen=True)
class Needs(ModulePass):
    """A pass with a required option."""

    name = "needs"
    level: int = option(help="a required level")

    def apply(self, module) -> None:
        module.log.append(self.name)


@dataclass(frozen=True)
class Boom(ModulePass):
    """A pass that always fails."""

    name = "boom"

    def apply(self, module) -> None:
        module.log.append(self.name)
        raise RuntimeError("kaboom")


@dataclass(frozen=True)
class Mark(ModulePass):
    """Append a mark to the module's log."""

    name = "mark"
    text: str = option("x", "what to append")

    def apply(self, module) -> None:
        module.log.append(self.text)


@dataclass(frozen=True)
class Chatty(ModulePass):
    """Emit a remark and a warning through the pass context (``run``, not ``apply``)."""

    name = "chatty"
    text: str = option("hi", "what to say")

    def run(self, module, context: PassContext) -> None:
        module.log.append(self.name)
        context.remark(f"remark {self.text}", Location("k.py", 3, 5), [Diagnostic.note("a note")])
        context.warning(f"warning {self.text}", Location("k.py", 4, 1))


@dataclass(frozen=True)
class Count(ModulePass):
    """Return how long the module's log is (a payload); change the module only when ``grow``."""

    name = "count"
    grow: bool = option(False, "append to the log")

    def apply(self, module) -> PassResult[int]:
        if self.grow:
            module.log.append(self.name)
        return PassResult(modified=self.grow, payload=len(module.log))


@dataclass(frozen=True)
class Rude(ModulePass):
    """Return what a pass may not return."""

    name = "rude"

    def apply(self, module):
        return True


FAKE_REGISTRY = {cls.name: cls for cls in (Tune, Needs, Boom, Mark)}


class FakeModule:
    """Stands in for a module: a log the fake passes append to; prints as the log."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def __str__(self) -> str:
        return "// log: " + " ".join(self.log)
