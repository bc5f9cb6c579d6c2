"""How parse, verify, print and the dce, cse and canonicalize passes scale with function size.

    python tools/bench_ir_scale.py [--sizes 1000,3000,10000,30000,100000] [--write]

Two synthetic functions, generated as ``.mix`` text of about N ops each:

* ``chain``: one block, one long dependence chain with work for every pass: per step a
  duplicated constant (cse merges them), an add on the chain, a multiply by one
  (canonicalize folds it away) and a dead subtract (dce erases it).
* ``mixed``: many blocks, like an imported scientific function: a sequence of
  if/else diamonds (``cf.cond_br`` to two blocks that join with a block argument), with
  array loads and stores (``py.getitem``/``py.setitem``: cse must respect the writes),
  side-effecting calls, expressions recomputed in dominated blocks (cse), identities and
  constants (canonicalize), dead ops (dce), and every fourth diamond on a constant
  condition (canonicalize turns it into a branch, erases the dead arm and merges blocks).

Each stage runs on the result of the one before, as ``mixopt -p dce,cse,canonicalize``
does: parse, verify, print, dce, cse, canonicalize (each pass through the pass manager, as
mixopt runs it), and a final verify and print.
Times are CPU seconds of this process (``time.process_time``), so machine load from
other processes hardly moves them; each size is measured ``--repeats`` times and the
fastest run is kept. The table gives seconds per stage, the pipeline total
(parse + verify + dce + cse + canonicalize, the issue's target: 10k ops < 1.5 s, 100k ops
< 15 s), microseconds per op, and the growth of the total from one size to the next
divided by the growth in ops (1.0 is linear, the size ratio is quadratic).
``--write`` replaces the generated section of docs/results/ir_scale.md.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

#: stages in the order they run; TOTAL_STAGES make up the issue's pipeline total
STAGES = ("parse", "verify", "print", "dce", "cse", "canonicalize", "verify-after", "print-after")
TOTAL_STAGES = ("parse", "verify", "dce", "cse", "canonicalize")
TARGETS = {10_000: 1.5, 100_000: 15.0}  # ops -> CPU seconds for TOTAL_STAGES


def chain_text(n_ops: int) -> str:
    """One block of about ``n_ops`` ops: a dependence chain, 4 ops per step (see module doc)."""
    steps = max(1, (n_ops - 3) // 4)
    lines = [
        '"func.func"() <{sym_name = "chain", function_type = (i64) -> i64}> ({',
        "^bb0(%x: i64):",
        '  %one = "arith.constant"() <{value = 1 : i64}> : () -> i64',
    ]
    prev = "%x"
    for i in range(steps):
        lines += [
            f'  %k{i} = "arith.constant"() <{{value = 3 : i64}}> : () -> i64 loc("chain.py":{i + 1}:5)',
            f'  %s{i} = "arith.addi"({prev}, %k{i}) : (i64, i64) -> i64 loc("chain.py":{i + 1}:9)',
            f'  %m{i} = "arith.muli"(%s{i}, %one) : (i64, i64) -> i64',
            f'  %dead{i} = "arith.subi"(%s{i}, %x) : (i64, i64) -> i64',
        ]
        prev = f"%m{i}"
    lines += [f'  "func.return"({prev}) : (i64) -> ()', "}) : () -> ()"]
    return "\n".join(lines) + "\n"


_ARRAY = "!py.array<f64, 1, C>"
_MIXED_OPS_PER_DIAMOND = 20


def mixed_text(n_ops: int) -> str:
    """About ``n_ops`` ops in if/else diamonds of 20 ops each (see module doc)."""
    diamonds = max(1, n_ops // _MIXED_OPS_PER_DIAMOND)
    a = _ARRAY
    lines = [
        f'"func.func"() <{{sym_name = "mixed", function_type = ({a}, i64, i1) -> i64}}> ({{',
        f"^bb0(%arr: {a}, %x: i64, %flag: i1):",
        '  %one = "arith.constant"() <{value = 1 : i64}> : () -> i64',
        '  %zero = "arith.constant"() <{value = 0 : i64}> : () -> i64',
        '  %yes = "arith.constant"() <{value = true}> : () -> i1',
        '  "cf.br"(%x)[^h_0] : (i64) -> ()',
    ]
    for d in range(diamonds):
        cond = "%yes" if d % 4 == 3 else "%flag"
        lines += [
            f"^h_{d}(%p_{d}: i64):",
            f'  %c_{d} = "arith.constant"() <{{value = {d % 7} : i64}}> : () -> i64',
            f'  %u_{d} = "arith.addi"(%p_{d}, %c_{d}) : (i64, i64) -> i64 loc("mixed.py":{d + 1}:3)',
            f'  %v_{d} = "arith.muli"(%u_{d}, %one) : (i64, i64) -> i64',
            f'  %w_{d} = "arith.addi"(%v_{d}, %zero) : (i64, i64) -> i64',
            f'  %l_{d} = "py.getitem"(%arr, %w_{d}) : ({a}, i64) -> f64 loc("mixed.py":{d + 1}:7)',
            f'  %lb_{d} = "py.getitem"(%arr, %w_{d}) : ({a}, i64) -> f64',
            f'  %sum_{d} = "arith.addf"(%l_{d}, %lb_{d}) : (f64, f64) -> f64',
            f'  "py.setitem"(%arr, %p_{d}, %sum_{d}) : ({a}, i64, f64) -> ()',
            f'  %lc_{d} = "py.getitem"(%arr, %w_{d}) : ({a}, i64) -> f64',
            f'  %dead_{d} = "arith.subi"(%u_{d}, %x) : (i64, i64) -> i64',
            f'  "cf.cond_br"({cond}, %u_{d}, %w_{d})[^t_{d}, ^e_{d}] <{{operandSegmentSizes = array<i32: 1, 1, 1>}}>'
            " : (i1, i64, i64) -> ()",
            f"^t_{d}(%ta_{d}: i64):",
            f'  %tu_{d} = "arith.addi"(%p_{d}, %c_{d}) : (i64, i64) -> i64',
            f'  %tv_{d} = "arith.muli"(%tu_{d}, %ta_{d}) : (i64, i64) -> i64',
            f'  %tf_{d} = "arith.mulf"(%lc_{d}, %lc_{d}) : (f64, f64) -> f64',
            f'  "py.setitem"(%arr, %tv_{d}, %tf_{d}) : ({a}, i64, f64) -> ()',
            f'  "cf.br"(%tv_{d})[^j_{d}] : (i64) -> ()',
            f"^e_{d}(%ea_{d}: i64):",
            f'  %eu_{d} = "arith.subi"(%ea_{d}, %one) : (i64, i64) -> i64',
            f'  %edead_{d} = "arith.muli"(%eu_{d}, %eu_{d}) : (i64, i64) -> i64',
            f'  "cf.br"(%eu_{d})[^j_{d}] : (i64) -> ()',
            f"^j_{d}(%r_{d}: i64):",
            f'  "cf.br"(%r_{d})[^h_{d + 1}] : (i64) -> ()',
        ]
    lines += [f"^h_{diamonds}(%out: i64):", '  "func.return"(%out) : (i64) -> ()', "}) : () -> ()"]
    return "\n".join(lines) + "\n"


SHAPES: dict[str, Callable[[int], str]] = {"chain": chain_text, "mixed": mixed_text}


def count_ops(text: str) -> int:
    """Ops in a generated text (one per line that holds an op, the function included)."""
    return sum(1 for line in text.splitlines() if '"(' in line)


@dataclass
class Measurement:
    shape: str
    ops: int
    seconds: dict[str, float] = field(default_factory=dict)
    ops_after: int = 0

    @property
    def total(self) -> float:
        return sum(self.seconds[s] for s in TOTAL_STAGES)


def measure_once(shape: str, text: str) -> Measurement:
    """Run every stage once on ``text``, timing each with process_time."""
    from mixjit.ir.parser import parse_module
    from mixjit.ir.printer import print_op
    from mixjit.ir.verifier import verify
    from mixjit.passes.canonicalize import Canonicalize
    from mixjit.passes.cse import CommonSubexpressionElimination
    from mixjit.passes.dce import DeadCodeElimination
    from mixjit.passes.manager import PassManager

    def run_pass(pass_: object) -> None:
        PassManager([pass_]).run(state["module"])  # as mixopt runs it (no instrumentation)

    m = Measurement(shape, count_ops(text))
    state: dict[str, object] = {}
    stages: dict[str, Callable[[], object]] = {
        "parse": lambda: state.__setitem__("module", parse_module(text, f"{shape}.mix", verify=False)),
        "verify": lambda: verify(state["module"]),
        "print": lambda: print_op(state["module"]),
        "dce": lambda: run_pass(DeadCodeElimination()),
        "cse": lambda: run_pass(CommonSubexpressionElimination()),
        "canonicalize": lambda: run_pass(Canonicalize()),
        "verify-after": lambda: verify(state["module"]),
        "print-after": lambda: print_op(state["module"]),
    }
    for name in STAGES:
        gc.collect()  # each stage starts without garbage left by the one before
        t0 = time.process_time()
        stages[name]()
        m.seconds[name] = time.process_time() - t0
    m.ops_after = sum(1 for _ in state["module"].walk()) - 1  # type: ignore[attr-defined]
    return m


def measure(shape: str, n_ops: int, repeats: int) -> Measurement:
    """The fastest of ``repeats`` runs (per stage) of every stage on a ``shape`` of ``n_ops``."""
    text = SHAPES[shape](n_ops)
    runs = [measure_once(shape, text) for _ in range(repeats)]
    best = runs[0]
    for stage in STAGES:
        best.seconds[stage] = min(r.seconds[stage] for r in runs)
    return best


def table(results: list[Measurement]) -> list[str]:
    """A Markdown table: seconds per stage, total, µs per op, and growth against the previous size."""
    import common

    header = ["shape", "ops", "ops after", *STAGES, "total (s)", "µs/op", "growth / size growth"]
    rows = []
    previous: dict[str, Measurement] = {}
    for m in results:
        prev = previous.get(m.shape)
        growth = "-" if prev is None else f"{(m.total / prev.total) / (m.ops / prev.ops):.2f}"
        rows.append(
            [m.shape, str(m.ops), str(m.ops_after), *(f"{m.seconds[s]:.3f}" for s in STAGES),
             f"{m.total:.3f}", f"{1e6 * m.total / m.ops:.1f}", growth]
        )
        previous[m.shape] = m
    return common.markdown_table(header, rows)


def target_lines(results: list[Measurement]) -> list[str]:
    """One line per (shape, target size) measured: the total against the issue's target."""
    lines = []
    for m in results:
        for size, limit in TARGETS.items():
            if abs(m.ops - size) <= size // 20:
                verdict = "meets" if m.total < limit else "MISSES"
                lines.append(f"- {m.shape}, {m.ops} ops: {m.total:.2f} s CPU {verdict} the target of < {limit:g} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000,10000,30000,100000", help="comma-separated op counts")
    parser.add_argument("--shapes", default="chain,mixed", help="comma-separated shapes (chain, mixed)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per size; the fastest is kept")
    parser.add_argument("--write", action="store_true", help="update docs/results/ir_scale.md")
    args = parser.parse_args(argv)
    import common

    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    for shape in args.shapes.split(","):
        for n in sizes:
            common.progress(f"bench_ir_scale: {shape} {n} ops")
            results.append(measure(shape, n, args.repeats))
    lines = [*table(results), "", *target_lines(results)]
    print("\n".join(lines))
    if args.write:
        body = "\n".join([*common.provenance(["python", "tools/bench_ir_scale.py", *(argv or sys.argv[1:])], None), "", *lines])
        common.replace_generated_section(common.ROOT / "docs" / "results" / "ir_scale.md", "ir-scale", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
