"""Synthetic tuning problems: random site spaces, DAGs and evaluators with a known structure, for
the search's tests and tools/bench_tuner_synthetic.py (greedy against exhaustive). Pure Python,
seeded: the same seed gives the same problem.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

import networkx as nx

from mixjit.passes.tuning.space import Candidate, Plan, SiteSpace

__all__ = ["SyntheticProblem", "random_problem", "AdditiveEvaluator", "PropagatingEvaluator"]


@dataclass(frozen=True)
class SyntheticProblem:
    """Spaces whose candidates get faster and less precise with the index, and a forward DAG."""

    spaces: dict[int, SiteSpace]
    dag: nx.DiGraph


def random_problem(seed: int, sites: int, candidates: int = 4) -> SyntheticProblem:
    """``sites`` sites of ``candidates`` candidates each: times spread over two decades and falling
    with the index, site errors from about 1e-8 rising by 3x to 30x a step; edges ``i -> j``
    (``i < j``) drawn with probability 0.4."""
    rng = random.Random(seed)
    spaces = {}
    for site in range(sites):
        time = 10 ** rng.uniform(-4, -2)
        error = 10 ** rng.uniform(-8.5, -7.5)
        cands = []
        for i in range(candidates):
            cands.append(Candidate("synthetic", f"level={i}", time, products=candidates - i, error=error))
            time *= rng.uniform(0.3, 0.8)
            error *= 10 ** rng.uniform(0.5, 1.5)
        spaces[site] = SiteSpace(site, tuple(cands))
    dag = nx.DiGraph()
    dag.add_nodes_from(range(sites))
    for j in range(sites):
        for i in range(j):
            if rng.random() < 0.4:
                dag.add_edge(i, j, carried=False)
    return SyntheticProblem(spaces, dag)


class AdditiveEvaluator:
    """``sum_s e_s(plan[s])``: the program error if site errors simply added up. Counts its calls."""

    def __init__(self, spaces: Mapping[int, SiteSpace]) -> None:
        self.spaces = spaces
        self.calls = 0

    def error(self, plan: Plan) -> float:
        self.calls += 1
        return math.fsum(self.spaces[s].candidates[i].error or 0.0 for s, i in plan.items())


class PropagatingEvaluator:
    """A non-additive program: each site's output error is its own error plus ``gain`` times the
    sum of its predecessors' output errors, and the program error is the largest output error
    among the sinks (sites without successors). Counts its calls."""

    def __init__(self, spaces: Mapping[int, SiteSpace], dag: nx.DiGraph, gain: float = 3.0) -> None:
        self.spaces = spaces
        self.gain = gain
        self.order = [(site, sorted(dag.predecessors(site))) for site in nx.lexicographical_topological_sort(dag)]
        self.sinks = sorted(s for s in dag if dag.out_degree(s) == 0)
        self.calls = 0

    def error(self, plan: Plan) -> float:
        self.calls += 1
        out: dict[int, float] = {}
        for site, preds in self.order:
            own = self.spaces[site].candidates[plan[site]].error or 0.0
            out[site] = own + self.gain * sum(out[p] for p in preds)
        return max(out[s] for s in self.sinks)
