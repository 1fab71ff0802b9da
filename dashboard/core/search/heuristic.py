"""A heuristic search of the generalization lattice for many quasi-identifiers: best-first with a budget of checks.

The exact search (:meth:`~dashboard.core.search.lattice.GeneralizationLattice.search`) keeps a mark for every node,
which a survey with 12 key variables (hundreds of millions of nodes) does not allow. This search follows ARX's
LIGHTNING (Prasser, Bild, Eicher, Spengler, Kuhn, "Lightning: utility-driven anonymization of high-dimensional
data", Transactions on Data Privacy 9(2), 2016): it starts at the bottom of the lattice and only ever generalizes
further, checking the nodes it reaches with the same class-table roll-ups, targets and metrics as the exact search
(so it runs on an engine's aggregate as well), and stops after a budget of checked nodes.

Algorithm
---------
*Score.* A node's score is its metric with the records of its violating classes suppressed, whatever their number
(its value when it satisfies the targets). Suppressing more records never lowers a metric, and generalizing never
lowers the bound, so the score ranks nodes by how close they are to a cheap solution.

1. *Greedy dive* (LIGHTNING's depth-first phase): from the bottom, check every successor (one level more in one
   QI) of the current node and move to the one of least score, until a node satisfies the targets. This gives a
   first solution after at most ``sum(heights) * q`` checks.
2. *Best-first* (LIGHTNING's main phase): a priority queue of checked nodes ordered by score, starting with the
   bottom; the node of least score is taken and *expanded*: its successors are checked and queued. A node whose
   bound reaches the best value found is not checked (its successors cannot do better), and a satisfying node
   whose value equals its bound (nothing suppressed that its successors could keep) is not expanded.

*Distance to the optimum.* Every node not checked is above a queued node, or cannot beat the best value (bounds
are monotone under generalization). So when the budget runs out, the optimum is at least the least of: the bounds of
the queued nodes that satisfy the targets, and for a queued node that fails them, the least bound one level above it
(its solutions are strict successors). The search reports that lower bound, and the optimum itself (``proven``) when
the queue empties first. With ``solutions > 1`` the pruning is against the last of the best solutions kept.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable

import numpy as np

from dashboard.core.errors import ParameterError
from dashboard.core.search.lattice import (
    GeneralizationLattice,
    NodeResult,
    SearchOutcome,
    _Best,
    suppression_budget,
)
from dashboard.core.targets import DEFAULT_MAX_SUPPRESSION, PrivacyTargets
from dashboard.core.utility.metrics import Metric

__all__ = ["DEFAULT_MAX_CHECKS", "heuristic_search"]

#: Nodes the heuristic search checks at most, unless told otherwise.
DEFAULT_MAX_CHECKS = 5_000


def heuristic_search(
    lattice: GeneralizationLattice,
    *,
    targets: PrivacyTargets,
    max_suppression: float = DEFAULT_MAX_SUPPRESSION,
    metric: str | Metric = Metric.LOSS,
    solutions: int = 1,
    max_checks: int = DEFAULT_MAX_CHECKS,
    max_seconds: float | None = None,
) -> SearchOutcome:
    """The best solutions the LIGHTNING-style search finds within ``max_checks`` checked nodes (and
    ``max_seconds``, when given); see the module docstring. Raises
    :class:`~dashboard.core.search.lattice.NoSolutionError` when none is found (the top of the lattice is always
    checked, so then no node satisfies the targets).
    """
    metric = Metric.parse(metric)
    lattice._check_targets(targets)
    if solutions < 1:
        raise ParameterError(f"solutions must be at least 1, got {solutions}.")
    if max_checks < 1:
        raise ParameterError(f"max_checks must be at least 1, got {max_checks}.")
    budget = suppression_budget(max_suppression, lattice.n_records)
    tops = tuple(int(h) - 1 for h in lattice.heights)
    deadline = None if max_seconds is None else time.perf_counter() + max_seconds
    best = _Best(solutions)
    checked: dict[tuple[int, ...], tuple[float, float, NodeResult]] = {}  # node -> score, bound, result

    def prior(nodes: list[tuple[int, ...]]) -> np.ndarray:
        return lattice.prior_bounds(metric, np.array(nodes, dtype=np.int64).reshape(len(nodes), -1))

    def exhausted() -> bool:
        return len(checked) >= max_checks or (deadline is not None and time.perf_counter() > deadline)

    def check(node: tuple[int, ...], prior_bound: float) -> tuple[float, float, NodeResult]:
        found = checked.get(node)
        if found is not None:
            return found
        table = lattice.table(node)
        bound = lattice._posterior_bound(metric, table, prior_bound)
        bad = lattice._violations(table, targets)
        result = lattice._result(node, table, bad, budget, metric, bound)
        score = result.value if result.satisfied else lattice._metric(metric, table, bad)
        if result.satisfied:
            best.offer(result)
        checked[node] = (score, bound, result)
        return checked[node]

    def successors(node: tuple[int, ...]) -> list[tuple[int, ...]]:
        return [(*node[:i], v + 1, *node[i + 1 :]) for i, v in enumerate(node) if v < tops[i]]

    bottom = (0,) * len(tops)
    # 1. Greedy dive to a first solution.
    current = bottom
    check(current, float(prior([current])[0]))
    while not checked[current][2].satisfied and current != tops and not exhausted():
        above = successors(current)
        bounds = prior(above)
        scored = []
        for node, bound in zip(above, bounds.tolist(), strict=True):
            if exhausted():
                break
            scored.append((check(node, bound)[0], node))
        if not scored:
            break
        current = min(scored)[1]
    # 2. Best-first from the bottom.
    queue: list[tuple[float, tuple[int, ...]]] = [(checked[bottom][0], bottom)]
    expanded: set[tuple[int, ...]] = set()
    open_bounds: list[tuple[float, tuple[int, ...]]] = [(checked[bottom][1], bottom)]  # lazy: expanded ones skipped
    interrupted: tuple[int, ...] | None = None  # stopped while expanding: still open
    while queue and not exhausted():
        _, node = heapq.heappop(queue)
        if node in expanded:
            continue
        _score, bound, result = checked[node]
        if bound >= best.threshold or (solutions == 1 and result.satisfied and result.value <= bound):
            expanded.add(node)  # nothing above it can join the best solutions
            continue
        above = [s for s in successors(node) if s not in checked]
        bounds = prior(above) if above else np.zeros(0)
        for successor, prior_bound in zip(above, bounds.tolist(), strict=True):
            if prior_bound >= best.threshold:
                continue
            if exhausted():
                interrupted = node
                break
            check(successor, prior_bound)
        if interrupted is not None:
            break
        # Successors checked before (by the dive or another parent) are queued through that parent.
        for successor in successors(node):
            if successor in checked and successor not in expanded:
                heapq.heappush(queue, (checked[successor][0], successor))
                heapq.heappush(open_bounds, (checked[successor][1], successor))
        expanded.add(node)
    if not best.items:
        check(tops, float(prior([tops])[0]))
    if not best.items:
        raise lattice._no_solution(targets, max_suppression)
    found = best.results()
    open_nodes = sorted({node for _, node in open_bounds if node not in expanded})
    lower = _lower_bound(open_nodes, expanded, checked, successors, prior, best.value)
    return SearchOutcome(
        found[0],
        tuple(found),
        len(checked),
        "heuristic",
        float(lower),
        not open_nodes,
        lattice.size,
        budget,
    )


def _lower_bound(
    open_nodes: list[tuple[int, ...]],
    expanded: set[tuple[int, ...]],
    checked: dict[tuple[int, ...], tuple[float, float, NodeResult]],
    successors: Callable[[tuple[int, ...]], list[tuple[int, ...]]],
    prior: Callable[[list[tuple[int, ...]]], np.ndarray],
    best: float,
) -> float:
    """The least value any node not yet ruled out may have.

    Every node that may beat ``best`` is an open node or above one: on a chain from the bottom to it, the first node
    not expanded is open (an expanded node's successors were all checked and queued, or could not beat the best).
    A satisfying open node may be the optimum itself (its bound). Above a failing one the solutions are strict
    successors; those above a successor that is itself open or expanded are accounted for there, so only the other
    successors' bounds count (none left: nothing to account for)."""
    lower = best
    covered = set(open_nodes) | expanded
    failing = []
    for node in open_nodes:
        _, bound, result = checked[node]
        if result.satisfied:
            lower = min(lower, bound)
        else:
            failing.append(node)
    for node in failing:
        rest = [above for above in successors(node) if above not in covered]
        if not rest:
            continue
        unchecked = [above for above in rest if above not in checked]
        bounds = [checked[above][1] for above in rest if above in checked]
        if unchecked:
            bounds.append(float(prior(unchecked).min()))
        lower = min(lower, max(checked[node][1], min(bounds)))
    return lower
