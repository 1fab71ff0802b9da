"""A heuristic search of the generalization lattice for many quasi-identifiers: best-first with a limit of checks.

The exact search (:meth:`~privdash.search.lattice.GeneralizationLattice.search`) keeps a mark for every node,
which a survey with 12 key variables (hundreds of millions of nodes) does not allow. This search follows ARX's
LIGHTNING (Prasser, Bild, Eicher, Spengler, Kuhn, "Lightning: utility-driven anonymization of high-dimensional
data", Transactions on Data Privacy 9(2), 2016): it starts at the bottom of the lattice and only ever generalizes
further, checking the nodes it reaches with the same class-table roll-ups, targets and metrics as the exact search
(so it runs on an engine's aggregate as well), and stops after a limit of checked nodes. A node is judged as the
exact search judges it, as published: ``t`` against the distribution of the records left after suppression, so every
solution it returns meets the targets as the diagnosis of its published table measures them. It infers nothing from
the targets' monotonicity (only from the metrics' bounds), so the judgement's lack of it costs nothing here.

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
are monotone under generalization). So when the limit runs out, the optimum is at least the least of: the bounds of
the queued nodes that satisfy the targets, and for a queued node that fails them, the least bound one level above it
(its solutions are strict successors). The search reports that lower bound, and the optimum itself (``proven``) when
the queue empties first. With ``solutions > 1`` the pruning is against the last of the best solutions kept.

The search itself is :func:`~privdash.search.lattice.heuristic_search` (beside the exact one, whose class tables,
targets and metrics it shares); this module names it for the API.
"""

from __future__ import annotations

from privdash.search.lattice import DEFAULT_MAX_CHECKS, heuristic_search

__all__ = ["DEFAULT_MAX_CHECKS", "heuristic_search"]
