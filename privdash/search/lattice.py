"""Optimal full-domain generalization: the levels (one per quasi-identifier) and record suppression that meet
privacy targets with the least information loss, over the whole generalization lattice.

Problem (ARX's, Prasser & Kohlmayer, "Putting statistical disclosure control into practice: the ARX data
anonymization tool", 2015; Kohlmayer et al., "Flash: efficient, stable and optimal k-anonymity", 2012)
-------------------------------------------------------------------------------------------------------------
A *node* of the lattice is a vector of levels, one per QI; ``u <= v`` (``v`` is a successor, coarser) when every
level of ``u`` is at most that of ``v``. At a node, the records form equivalence classes over the generalized QIs
(missing values as a value of their own). A class *violates* the targets (:class:`PrivacyTargets`) when its size
is below ``k``, its prosecutor risk ``1 / f_j`` exceeds ``max_risk``, or, for some sensitive attribute, it has
fewer than ``l`` distinct values or its t-closeness distance to the distribution of the records *published* exceeds
``t``. The records of violating classes are suppressed (removed); since that changes the distribution t compares
with, ``t`` is judged again on the records left and the classes now farther than ``t`` are suppressed too, until none
is (:func:`~privdash.transform.generalization.suppressed_classes`, the ``generalize`` step's own suppression).
The node *satisfies* the targets when the records suppressed number at most ``floor(max_suppression * n)`` (ARX's
suppression limit) and some records are published: its published table then meets every target as its diagnosis
measures it (:meth:`~privdash.measure.diagnose.Diagnosis.check`). The result is a satisfying node of least
information loss for the chosen :class:`~privdash.utility.metrics.Metric`, with suppressed records counted as
described there.

Search
------
*Encode once, roll up.* Each QI is matched to its hierarchy's leaves once and the rows are grouped once at the
finest node (level 0 everywhere), giving a class table (QI codes, counts, sensitive-value counts). Any other
node's table is computed from an already computed finer node's table (the smallest one cached) by mapping its
class codes through the per-level lookups and re-aggregating: never from the raw rows.

*Bounds.* Every metric is ``bound(node) + penalty(node, suppressed)`` where the bound (the value with nothing
suppressed) is monotone under generalization and the suppression penalty is ``>= 0`` (ARX's lower bounds). For
loss, precision and non-uniform entropy the bound depends only on the levels and the per-QI value counts, so the
nodes are visited in increasing bound and the search stops as soon as the bound reaches the best value found; for
discernibility (``sum f_j^2``) and AECS (``n / J``) the bound is read off the node's table. A node whose bound is
not below the best value found prunes itself and all its successors (their bounds are at least as large).

*Monotonicity of the targets.* k-anonymity, prosecutor risk and distinct l-diversity are monotone with
suppression: classes only merge under generalization, and a merged class satisfies them whenever one of its parts
does, so the violating records of a node include those of every successor (ARX: monotonic with generalization and
suppression). Then a node failing them (beyond the limit) marks all its predecessors as failing, and a node meeting
them all its successors as meeting them; the binary search of Flash on a chain to the top finds the boundary. The
chain raises, step by step, the QI whose next level is the lowest share of its whole range of the bound, so it runs
through the nodes of low bound, those still to check, where a failing node marks the most of them (on Adult with
ARX's hierarchies, k = 5: 237 nodes checked instead of 498 on the chain of relative levels).
The records a node suppresses include those of the classes violating these (they are suppressed in the first round,
and rounds only add), so the marks hold for the published tables too. t-closeness is monotone without suppression
(nothing is removed, so the reference is the whole table's; the earth mover's distance to a fixed distribution is
convex in the class distribution, so a class merged from parts within t is within t), but not with it: a satisfying
class merged with a violating one may violate, and the reference itself is that of the records published, which
differs from node to node (a node may fail because suppression moved the distribution, and a coarser one succeed,
or the reverse). So with ``t`` and suppression only the monotone targets mark nodes, and ``t`` is judged at each node
that meets them, in bound order, unless the node's metric with only their violating records suppressed (a lower
bound: a satisfying node suppresses at least those, and suppressing more never lowers a metric) already reaches the
best value. The bounds of the metrics do not depend on the targets, so their pruning is unchanged.

*Release targets beyond k.* ``k_map`` and ``delta_presence`` are judged per class with the population (a sampling
fraction, a population size as ``pi = n / N``, or the weight sums per class, rolled up with the counts), and the
global targets ``global_risk``, ``average_risk`` and ``population_uniques`` on the records a node publishes: after the
classes violating a class-level target are suppressed, while a global target fails, further classes are suppressed in
decreasing order of their records' risk (cumulative sums give every prefix at once), and the node satisfies the
targets iff the records suppressed fit the limit (:mod:`privdash.transform.release_targets`, shared with the
``generalize`` step, so the published table is the one judged). None of them marks other nodes: like ``t`` with
suppression, they are judged at each node that meets the monotone targets, after the same lower-bound test.
``household_risk`` needs the household of each record: the lattice then keeps, for every class table, the class of
each finest class, and maps the (household, finest class) pairs through it.

*What t implies.* A class violates ``t`` whatever its counts when it has too few records or too few distinct
sensitive values to come within ``t`` of the distribution ``p'`` of the records published
(:meth:`GeneralizationLattice.implied_by_t`). Suppressing ``s`` of the ``n`` records gives ``p = (1 - a) p' + a r``
with ``a = s / n``, so ``p'`` is within ``a <= limit / n`` of the whole table's ``p`` in either distance, and a class
within ``t`` of ``p'`` is within ``t + limit / n`` of ``p``. With ``d`` distinct values the equal distance to ``p`` is
at least ``1 - (sum of the d largest p_i)`` and the ordered one at least the weighted ``d``-median cost of ``p`` on the
ranks over ``m - 1``; with ``f`` records at least the distance of the best whole-record counts (rounded shares); the
bounds are taken at ``t + limit / n``. The ordered distance also depends on which values the published records hold
(its ``m`` and ranks), so an attribute with a value of at most ``limit`` records implies nothing with suppression.
Both bounds are monotone (sizes and distinct values only grow when classes merge) and a class failing them fails
``t`` in the first round, so with ``t`` and suppression they join ``k`` and ``l`` among the conditions that mark
failing nodes. Each bound is checked against every distribution of up to 9 records in the tests, and the search
against an exhaustive evaluation of the lattice in which each node's published table is judged by the verdict.

The result is the exact minimum over all satisfying nodes (ties: least bound, then total level, then levels
lexicographically); the tests compare it with a brute-force evaluation of every node. With ``solutions=N`` the search
prunes against the N-th best value instead and returns the N best nodes, with the frontier of loss against risk and
suppression among them (:class:`Solution`). The result names the targets that *bound* it: those the node one level
finer in each QI fails (:func:`binding_targets`). Lattices beyond ``max_nodes`` are searched heuristically
(:func:`heuristic_search`, described in :mod:`privdash.search.heuristic`).
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from privdash.constants import DEFAULT_MAX_CHECKS, DEFAULT_MAX_NODES, SEARCH_STRATEGIES
from privdash.errors import (
    ColumnError,
    ParameterError,
    check_columns,
    check_counts,
    check_fraction,
)
from privdash.measure.classes import (
    EquivalenceClasses,
    MissingPolicy,
    SensitiveDistribution,
    equivalence_classes,
    equivalence_classes_from_aggregate,
)
from privdash.targets import DEFAULT_MAX_SUPPRESSION, TARGET_NAMES, PrivacyTargets
from privdash.transform.generalization import (
    generalize,
    suppressed_classes,
    violating_combinations,
    without_combinations,
)
from privdash.transform.hierarchy import Hierarchy, HierarchyError
from privdash.transform.release_targets import Households, check_release_targets
from privdash.transform.steps import Recipe, Step, TransformResult
from privdash.utility.metrics import Metric

__all__ = [
    "DEFAULT_MAX_CHECKS",
    "DEFAULT_MAX_NODES",
    "SEARCH_STRATEGIES",
    "GeneralizationLattice",
    "NoSolutionError",
    "NodeResult",
    "SearchOutcome",
    "SearchResult",
    "Solution",
    "binding_targets",
    "heuristic_search",
    "optimal_generalization",
    "suppression_limit",
]

#: Name under which record counts of an aggregate travel inside the lattice.
_COUNT = "__privdash_records"
#: Cached class tables, in rows over all cached nodes (each row: one code per QI and a count).
_CACHE_ROWS = 2_000_000
_DENSE_KEYS = 1 << 12


class NoSolutionError(ParameterError):
    """No node of the lattice meets the targets within the suppression limit."""


# --- class tables --------------------------------------------------------------------------------------------------


class _Table:
    """Classes of one node: QI codes at the node's levels, record counts, and (when rolled up with them) sparse
    sensitive counts: class, value, count, sorted. ``sensitive`` is None for a table of class sizes only."""

    __slots__ = ("codes", "counts", "from_bottom", "levels", "sensitive", "weights")

    def __init__(
        self,
        levels: tuple[int, ...],
        codes: np.ndarray,
        counts: np.ndarray,
        sensitive: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None,
        weights: np.ndarray | None = None,
        from_bottom: np.ndarray | None = None,
    ) -> None:
        self.levels = levels
        self.codes = codes  # (J, q)
        self.counts = counts  # (J,) int64
        self.sensitive = sensitive
        self.weights = weights  # (J,) float64 sums of the sampling weights, when the lattice has a weight column
        self.from_bottom = from_bottom  # class of each finest class, when the lattice has household ids

    @property
    def n_classes(self) -> int:
        return len(self.counts)


class _TableCache:
    """Class tables of computed nodes; finds the smallest cached table finer than a node (a roll-up source).

    Holds at most about :data:`_CACHE_ROWS` rows; when full, the largest tables go first (small tables are the
    cheap sources of later roll-ups). The finest table is always kept. A table of class sizes only is replaced by
    the full one when the sensitive counts of that node are needed.
    """

    def __init__(self, bottom: _Table) -> None:
        self._tables: dict[tuple[int, ...], _Table] = {bottom.levels: bottom}
        self._bottom = bottom.levels
        self._rebuild()

    def _rebuild(self) -> None:
        keys = list(self._tables)
        self._keys = keys
        self._levels = np.array(keys, dtype=np.int64).reshape(len(keys), -1)
        self._sizes = np.array([self._tables[k].n_classes for k in keys], dtype=np.int64)
        self._full = np.array([self._tables[k].sensitive is not None for k in keys], dtype=bool)
        self._count = len(keys)
        self._rows = int(self._sizes.sum())

    def get(self, levels: tuple[int, ...]) -> _Table | None:
        return self._tables.get(levels)

    def source_for(self, levels: tuple[int, ...], sensitive: bool) -> _Table:
        # The nodes one level finer in one QI are the usual sources (a finer node has at least as many classes as
        # the parent above it); the whole cache is scanned only when none of them is at hand.
        parents = []
        for index, level in enumerate(levels):
            if level:
                found = self._tables.get((*levels[:index], level - 1, *levels[index + 1 :]))
                if found is not None and (found.sensitive is not None or not sensitive):
                    parents.append(found)
        if parents:
            return min(parents, key=lambda table: table.n_classes)
        count = self._count
        finer = (self._levels[:count] <= np.asarray(levels)).all(axis=1)
        if sensitive:
            finer &= self._full[:count]
        sizes = np.where(finer, self._sizes[:count], np.iinfo(np.int64).max)
        return self._tables[self._keys[int(sizes.argmin())]]

    def add(self, table: _Table) -> None:
        replaced = self._tables.get(table.levels)
        self._tables[table.levels] = table
        self._rows += table.n_classes
        if replaced is not None:
            self._rebuild()
            return
        if self._rows > _CACHE_ROWS:
            for key in sorted(self._tables, key=lambda k: -self._tables[k].n_classes):
                if key != self._bottom:
                    self._rows -= self._tables.pop(key).n_classes
                    if self._rows <= _CACHE_ROWS // 2:
                        break
            self._rebuild()
            return
        if self._count == len(self._levels):
            grown = max(16, 2 * self._count)
            self._levels = np.resize(self._levels, (grown, self._levels.shape[1]))
            self._sizes = np.resize(self._sizes, grown)
            self._full = np.resize(self._full, grown)
        self._keys.append(table.levels)
        self._levels[self._count] = table.levels
        self._sizes[self._count] = table.n_classes
        self._full[self._count] = table.sensitive is not None
        self._count += 1


@dataclass(frozen=True)
class NodeResult:
    """One node evaluated: whether it satisfies the targets, the records it suppresses and its metric value.

    ``violating`` counts the records the node suppresses: those of violating classes, with ``t`` judged round by
    round against the records left (counted until they exceed the limit); ``suppressed`` equals it when the node
    satisfies (else 0, nothing is published); ``value`` is the metric (NaN when the node does not satisfy); ``bound`` is
    the metric with nothing suppressed. ``highest_risk`` and ``average_risk`` are the prosecutor risks of the
    published records (``1 / min f_j`` and ``J / n`` over the classes kept; NaN when the node does not satisfy or
    nothing is published).
    """

    levels: tuple[int, ...]
    satisfied: bool
    violating: int
    suppressed: int
    classes: int
    value: float
    bound: float
    highest_risk: float = math.nan
    average_risk: float = math.nan

    def to_dict(self, quasi_identifiers: Sequence[str]) -> dict[str, Any]:
        """JSON-ready: levels by QI, value, suppressed, classes published, risks."""
        return {
            "levels": dict(zip(quasi_identifiers, self.levels, strict=True)),
            "value": self.value,
            "suppressed": self.suppressed,
            "classes": self.classes,
            "highest_risk": self.highest_risk,
            "average_risk": self.average_risk,
        }


def _rank(result: NodeResult) -> tuple[float, float, int, tuple[int, ...]]:
    """Order of solutions: metric value, then bound, total level and levels (ties go to the less general node)."""
    return (result.value, result.bound, sum(result.levels), result.levels)


class _Best:
    """The ``n`` best solutions found so far; ``threshold`` is the value a node must beat to join them."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.items: list[tuple[tuple[float, float, int, tuple[int, ...]], NodeResult]] = []

    @property
    def threshold(self) -> float:
        return self.items[-1][0][0] if len(self.items) >= self.n else math.inf

    @property
    def value(self) -> float:
        return self.items[0][0][0] if self.items else math.inf

    def offer(self, result: NodeResult) -> None:
        key = _rank(result)
        if len(self.items) >= self.n and key >= self.items[-1][0]:
            return
        if any(item[1].levels == result.levels for item in self.items):
            return
        bisect.insort(self.items, (key, result), key=lambda item: item[0])
        del self.items[self.n :]

    def results(self) -> list[NodeResult]:
        return [item[1] for item in self.items]


@dataclass(frozen=True)
class SearchOutcome:
    """What a search of the lattice found.

    ``best`` is the solution of least metric, ``solutions`` the best ones found (best first, ``best`` included);
    ``checked`` the nodes whose class table was computed; ``strategy`` ``"exact"`` or ``"heuristic"``;
    ``lower_bound`` a value no satisfying node goes below (the best value itself when the search is exact or the
    heuristic exhausted its queue: ``proven``); ``lattice_size`` the nodes of the lattice; ``suppression_limit``
    the records the suppression limit allows.
    """

    best: NodeResult
    solutions: tuple[NodeResult, ...]
    checked: int
    strategy: str
    lower_bound: float
    proven: bool
    lattice_size: int
    suppression_limit: int


class GeneralizationLattice:
    """The generalization lattice of a table: QIs with hierarchies, encoded once, with class-table roll-ups.

    Parameters
    ----------
    data
        The table.
    hierarchies
        A hierarchy for every quasi-identifier (rule-based ones are rebuilt over the column's values).
    quasi_identifiers
        The QIs, in lattice order (default: the keys of ``hierarchies``).
    sensitive
        Sensitive attributes whose per-class distributions l-diversity and t-closeness need.
    counts
        Instead of one row per record, ``data`` is an aggregate (one row per distinct combination of the QIs and
        sensitive attributes, as :func:`~privdash.engines.aggregate.aggregate_table` returns it) and this
        column holds its number of records. The search reads only class counts, so the result is the same as on the
        raw rows, for tables of any size.

    max_nodes
        Largest lattice the exact search (:meth:`search`) visits; the heuristic one
        (:func:`~privdash.search.heuristic.heuristic_search`) has no such limit.
    weights, population_size, sampling_fraction, household
        For the release targets beyond k (:mod:`privdash.transform.release_targets`): the sampling-weight
        column (its sums per class are rolled up with the counts), the population (a size ``N``, kept as
        ``pi = n / N``, or ``pi``) and the household-id column of ``household_risk``. Not with ``counts``.

    Raises :class:`HierarchyError` when a QI value is not a leaf of its hierarchy.
    """

    def __init__(
        self,
        data: pd.DataFrame,
        hierarchies: Mapping[str, Hierarchy],
        *,
        quasi_identifiers: Sequence[str] | None = None,
        sensitive: Sequence[str] = (),
        max_nodes: int = DEFAULT_MAX_NODES,
        counts: str | None = None,
        weights: str | None = None,
        population_size: float | None = None,
        sampling_fraction: float | None = None,
        household: str | None = None,
    ) -> None:
        qis = check_columns(
            data, list(hierarchies) if quasi_identifiers is None else quasi_identifiers, role="quasi-identifier"
        )
        sens = check_columns(data, sensitive, role="sensitive attribute", allow_empty=True)
        overlap = sorted(set(qis) & set(sens))
        if overlap:
            raise ColumnError(f"A column cannot be both quasi-identifier and sensitive: {', '.join(overlap)}.")
        absent = [c for c in qis if c not in hierarchies]
        if absent:
            raise HierarchyError(f"No hierarchy for quasi-identifier(s): {', '.join(repr(c) for c in absent)}.")
        if not len(data):
            raise ParameterError("The table has no rows.")
        self.quasi_identifiers: tuple[str, ...] = qis
        self.sensitive: tuple[str, ...] = sens
        record_counts = None if counts is None else check_counts(data, counts)
        self.n_records = len(data) if record_counts is None else int(record_counts.sum())
        if weights is not None:
            check_columns(data, [weights], role="weight column")
            if counts is not None:
                raise ParameterError("Sampling weights are not supported with an aggregate (counts=...).")
        self.weights: str | None = weights
        if household is not None:
            check_columns(data, [household], role="household-id column")
            if counts is not None:
                raise ParameterError("Household ids are not supported with an aggregate (counts=...).")
        self.household: str | None = household
        if population_size is not None and sampling_fraction is not None:
            raise ParameterError("Give a population size or a sampling fraction, not both.")
        if population_size is not None:
            size = float(population_size)
            if not math.isfinite(size) or size < self.n_records:
                raise ParameterError(
                    f"population_size must be a number of people at least the {self.n_records:,} records, "
                    f"got {population_size!r}."
                )
            sampling_fraction = self.n_records / size
        #: ``pi`` of the population targets (``F_j = f_j / pi``); None: the weights, if any.
        self.sampling_fraction: float | None = (
            None
            if sampling_fraction is None
            else check_fraction(sampling_fraction, "sampling_fraction", inclusive_zero=False)
        )
        resolved = []
        leaf_frame: dict[str, Any] = {}
        for column in qis:
            hierarchy = hierarchies[column].for_values(data[column])
            leaf = hierarchy.leaf_codes(data[column])
            leaf_frame[column] = np.where(leaf < 0, hierarchy.n_leaves, leaf)
            resolved.append(hierarchy)
        self.hierarchies: tuple[Hierarchy, ...] = tuple(resolved)
        self.heights = np.array([h.n_levels for h in resolved], dtype=np.int64)
        size = int(np.prod(self.heights, dtype=object))
        self.max_nodes = max_nodes
        self.size = size
        frame = pd.DataFrame(leaf_frame, index=pd.RangeIndex(len(data)))
        for name in sens:
            frame[name] = data[name].reset_index(drop=True)
        if weights is not None:
            frame[weights] = data[weights].reset_index(drop=True)
        if record_counts is None:
            bottom = equivalence_classes(frame, qis, sensitive=sens, missing=MissingPolicy.VALUE, weights=weights)
        else:
            frame[_COUNT] = record_counts
            bottom = equivalence_classes_from_aggregate(
                frame, qis, count=_COUNT, sensitive=sens, missing=MissingPolicy.VALUE
            )
        self._templates = dict(bottom.sensitive)
        codes = np.column_stack(
            [
                np.asarray(cat.to_numpy(), dtype=np.int64)[bottom.class_codes[:, i]]
                for i, cat in enumerate(bottom.categories)
            ]
        )
        self._has_missing = [
            bool((frame[c].to_numpy() == h.n_leaves).any()) for c, h in zip(qis, resolved, strict=True)
        ]
        # Per QI and level: code of each leaf at that level, with the missing value as one extra last code.
        self._leaf_to_level: list[list[np.ndarray]] = []
        self._radix: list[list[int]] = []
        for hierarchy in resolved:
            per_level, radices = [], []
            for level in range(hierarchy.n_levels):
                n_labels = len(hierarchy.labels[level])
                per_level.append(np.append(hierarchy.codes[level], n_labels))
                radices.append(n_labels + 1)
            self._leaf_to_level.append(per_level)
            self._radix.append(radices)
        self._maps: dict[tuple[int, int, int], np.ndarray] = {}
        sens_sparse = {
            name: (
                np.asarray(d.class_index, np.int64),
                np.asarray(d.value_index, np.int64),
                np.asarray(d.counts, np.int64),
            )
            for name, d in bottom.sensitive.items()
        }
        bottom_weights = None if bottom.weight_sums is None else np.asarray(bottom.weight_sums, dtype=np.float64)
        #: The (household, finest class, records) triples, for household_risk.
        self.households: Households | None = None
        if household is not None:
            assert bottom.record_class is not None
            self.households = Households.from_records(data[household].reset_index(drop=True), bottom.record_class)
        self.bottom = _Table(
            (0,) * len(qis),
            codes.astype(np.int64),
            np.asarray(bottom.counts, np.int64),
            sens_sparse,
            bottom_weights,
            None if household is None else np.arange(bottom.n_classes, dtype=np.int64),
        )
        # Value counts per QI leaf (missing last), for the column-separable metric parts.
        self._leaf_counts = [
            np.bincount(self.bottom.codes[:, i], weights=self.bottom.counts, minlength=h.n_leaves + 1).astype(np.int64)
            for i, h in enumerate(resolved)
        ]
        self._cache = _TableCache(self.bottom)
        self._bounds: dict[Metric, list[np.ndarray] | None] = {}
        self._share_cache: dict[tuple[int, int], np.ndarray] = {}
        self.rollups = 0

    def _too_large(self) -> str:
        return (
            f"The lattice has {self.size:,} nodes (levels per QI: "
            f"{', '.join(f'{c}={h}' for c, h in zip(self.quasi_identifiers, self.heights, strict=True))}), more "
            f"than the {self.max_nodes:,} the exact search visits; use the heuristic search (search='heuristic' or "
            "'auto'), fewer quasi-identifiers or hierarchies with fewer levels."
        )

    # -- lattice geometry --

    def nodes(self) -> np.ndarray:
        """Every node, one row of levels each, in C order of the level vectors."""
        grids = np.indices(tuple(int(h) for h in self.heights), dtype=np.int16).reshape(len(self.heights), -1).T
        return np.ascontiguousarray(grids)

    def check_levels(self, levels: Mapping[str, int] | Sequence[int]) -> tuple[int, ...]:
        """Levels as a tuple in QI order; raises for unknown columns or levels outside a hierarchy."""
        if isinstance(levels, Mapping):
            unknown = sorted(set(levels) - set(self.quasi_identifiers))
            if unknown or len(levels) != len(self.quasi_identifiers):
                raise ParameterError(
                    f"Give one level for each quasi-identifier ({', '.join(self.quasi_identifiers)})"
                    + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                    + "."
                )
            vector = [levels[c] for c in self.quasi_identifiers]
        else:
            vector = list(levels)
            if len(vector) != len(self.quasi_identifiers):
                raise ParameterError(f"Give {len(self.quasi_identifiers)} levels, one per quasi-identifier.")
        return tuple(
            h.check_level(v, f"Level of '{c}'")
            for c, h, v in zip(self.quasi_identifiers, self.hierarchies, vector, strict=True)
        )

    # -- roll-up --

    def _level_map(self, column: int, source: int, target: int) -> np.ndarray:
        key = (column, source, target)
        found = self._maps.get(key)
        if found is None:
            hierarchy = self.hierarchies[column]
            found = np.empty(len(hierarchy.labels[source]) + 1, dtype=np.int64)
            found[self._leaf_to_level[column][source]] = self._leaf_to_level[column][target]
            self._maps[key] = found
        return found

    def table(self, levels: tuple[int, ...], sensitive: bool = True) -> _Table:
        """The class table at ``levels``, rolled up from the smallest cached finer table; with ``sensitive=False``
        the class sizes may come without the sensitive counts (cheaper: k and the risk need only the sizes)."""
        sensitive = sensitive and bool(self.sensitive)
        cached = self._cache.get(levels)
        if cached is not None and (cached.sensitive is not None or not sensitive):
            return cached
        result = self._rollup(self._cache.source_for(levels, sensitive), levels, sensitive=sensitive)
        self._cache.add(result)
        return result

    def _rollup(self, source: _Table, levels: tuple[int, ...], *, sensitive: bool = True) -> _Table:
        self.rollups += 1
        n = source.n_classes
        columns = []
        key = np.zeros(n, dtype=np.int64)
        space = 1
        for index, (was, now) in enumerate(zip(source.levels, levels, strict=True)):
            column = source.codes[:, index]
            if was != now:
                column = self._level_map(index, was, now)[column]
            columns.append(column)
            radix = self._radix[index][now]
            key *= radix
            key += column
            space *= radix
        if space <= max(_DENSE_KEYS, 4 * n):
            seen = np.zeros(space, dtype=np.int64)
            seen[key] = 1
            ids = np.cumsum(seen) - 1
            inverse = ids[key]
            n_new = int(ids[-1]) + 1
        else:
            inverse, uniques = pd.factorize(key, sort=False)
            n_new = len(uniques)
        counts = np.bincount(inverse, weights=source.counts, minlength=n_new).astype(np.int64)
        representative = np.empty(n_new, dtype=np.int64)
        representative[inverse] = np.arange(n)
        codes = np.column_stack([c[representative] for c in columns])
        weights = None if source.weights is None else np.bincount(inverse, weights=source.weights, minlength=n_new)
        from_bottom = None if source.from_bottom is None else inverse[source.from_bottom]
        if not sensitive or source.sensitive is None:
            return _Table(levels, codes, counts, None if self.sensitive else {}, weights, from_bottom)
        rolled = {}
        for name, (cls, val, cnt) in source.sensitive.items():
            m = self._templates[name].n_values
            pair = inverse[cls] * m + val
            if n_new * m <= 4 * len(pair) + 4096:
                dense = np.bincount(pair, weights=cnt, minlength=n_new * m)
                present = np.flatnonzero(dense)
                sums = dense[present]
            else:
                present, where = np.unique(pair, return_inverse=True)
                sums = np.bincount(where.reshape(-1), weights=cnt, minlength=len(present))
            rolled[name] = (present // m, present % m, sums.astype(np.int64))
        return _Table(levels, codes, counts, rolled, weights, from_bottom)

    def classes(self, levels: Mapping[str, int] | Sequence[int]) -> EquivalenceClasses:
        """The equivalence classes at ``levels`` (from the roll-up; no per-record classes)."""
        return self._classes(self.table(self.check_levels(levels)))

    def _classes(self, table: _Table) -> EquivalenceClasses:
        if table.sensitive is None:  # a table of sizes only: the sensitive counts are needed here
            table = self.table(table.levels)
        counted = table.sensitive
        assert counted is not None
        categories = []
        for index, (hierarchy, level) in enumerate(zip(self.hierarchies, table.levels, strict=True)):
            labels = hierarchy.labels[level]
            categories.append(pd.Index([*labels.tolist(), None], dtype=object) if self._has_missing[index] else labels)
        codes = table.codes.copy()
        for index, (hierarchy, level) in enumerate(zip(self.hierarchies, table.levels, strict=True)):
            codes[codes[:, index] == len(hierarchy.labels[level]), index] = -1
        sensitive = {
            name: SensitiveDistribution(
                name=name,
                labels=template.labels,
                ordered=template.ordered,
                class_index=cls,
                value_index=val,
                counts=cnt,
                overall=template.overall,
                n_classes=table.n_classes,
            )
            for (name, template), (cls, val, cnt) in zip(
                self._templates.items(), (counted[n] for n in self._templates), strict=True
            )
        }
        return EquivalenceClasses(
            quasi_identifiers=self.quasi_identifiers,
            missing_policy=MissingPolicy.VALUE,
            class_codes=codes,
            categories=tuple(categories),
            sizes=table.counts,
            counts=table.counts,
            sensitive=sensitive,
            weight_sums=table.weights,
        )

    # -- metrics --

    def _missing_code(self, column: int, level: int) -> int:
        return len(self.hierarchies[column].labels[level])

    def prior_bounds(self, metric: Metric, nodes: np.ndarray) -> np.ndarray:
        """The metric of each node with nothing suppressed, for metrics where it needs no class table (loss,
        precision, entropy); zeros otherwise. Monotone non-decreasing under generalization."""
        per_level = self._column_bounds(metric)
        if per_level is None:
            return np.zeros(len(nodes))
        total = np.zeros(len(nodes))
        for index, values in enumerate(per_level):
            total += values[nodes[:, index]]
        return total / len(per_level) if metric in (Metric.LOSS, Metric.PRECISION) else total

    def _column_bounds(self, metric: Metric) -> list[np.ndarray] | None:
        if metric not in self._bounds:
            self._bounds[metric] = self._compute_column_bounds(metric)
        return self._bounds[metric]

    def _compute_column_bounds(self, metric: Metric) -> list[np.ndarray] | None:
        n = self.n_records
        out = []
        for index, hierarchy in enumerate(self.hierarchies):
            counts = self._leaf_counts[index]
            values = np.empty(hierarchy.n_levels)
            for level in range(hierarchy.n_levels):
                if metric == Metric.LOSS:
                    share = self._shares(index, level)[self._leaf_to_level[index][level]]
                    values[level] = _normalize_loss(float(counts @ share) / n, hierarchy.n_leaves)
                elif metric == Metric.PRECISION:
                    observed = n - counts[-1]
                    values[level] = observed * _intensity(level, hierarchy.max_level) / n
                elif metric == Metric.ENTROPY:
                    values[level] = self._entropy_generalization(index, level)
                else:
                    return None
            out.append(values)
        return out

    def _shares(self, column: int, level: int) -> np.ndarray:
        """Domain share of each label at ``level`` (leaves under it / all leaves); the missing code: ``1 / D``."""
        found = self._share_cache.get((column, level))
        if found is None:
            hierarchy = self.hierarchies[column]
            found = np.append(hierarchy.leaf_counts(level), 1) / hierarchy.n_leaves
            self._share_cache[(column, level)] = found
        return found

    def _entropy_generalization(self, column: int, level: int) -> float:
        counts = self._leaf_counts[column]
        mapping = self._leaf_to_level[column][level]
        grouped = np.bincount(mapping, weights=counts, minlength=self._radix[column][level])
        present = counts > 0
        return float(-(counts[present] * np.log2(counts[present] / grouped[mapping[present]])).sum())

    def _posterior_bound(self, metric: Metric, table: _Table, prior: float) -> float:
        if metric == Metric.DISCERNIBILITY:
            return float((table.counts.astype(np.float64) ** 2).sum())
        if metric == Metric.AECS:
            return self.n_records / table.n_classes
        return prior

    def _metric(self, metric: Metric, table: _Table, bad: np.ndarray) -> float:
        n = self.n_records
        counts = table.counts
        suppressed = int(counts[bad].sum())
        kept = ~bad
        if metric == Metric.DISCERNIBILITY:
            return float((counts[kept].astype(np.float64) ** 2).sum() + float(n) * suppressed)
        if metric == Metric.AECS:
            groups = int(kept.sum()) + (1 if suppressed else 0)
            return n / groups
        values = []
        for index, (hierarchy, level) in enumerate(zip(self.hierarchies, table.levels, strict=True)):
            codes = table.codes[:, index]
            if metric == Metric.LOSS:
                share = self._shares(index, level)[codes]
                raw = (float(counts[kept] @ share[kept]) + suppressed) / n
                values.append(_normalize_loss(raw, hierarchy.n_leaves))
            elif metric == Metric.PRECISION:
                observed = kept & (codes != self._missing_code(index, level))
                raw = float(counts[observed].sum()) * _intensity(level, hierarchy.max_level) + suppressed
                values.append(raw / n)
            else:
                generalization = self._column_bounds(Metric.ENTROPY)
                assert generalization is not None
                value = float(generalization[index][level])
                if suppressed:
                    by_value = np.bincount(codes[bad], weights=counts[bad])
                    by_value = by_value[by_value > 0]
                    value -= float((by_value * np.log2(by_value / suppressed)).sum())
                values.append(value)
        total = math.fsum(values)
        return total / len(values) if metric in (Metric.LOSS, Metric.PRECISION) else total

    # -- evaluation --

    def evaluate(
        self,
        levels: Mapping[str, int] | Sequence[int],
        *,
        targets: PrivacyTargets,
        max_suppression: float = DEFAULT_MAX_SUPPRESSION,
        metric: str | Metric = Metric.LOSS,
    ) -> NodeResult:
        """Evaluate one node: violating records, whether they fit the suppression limit, and the metric."""
        node = self.check_levels(levels)
        metric = Metric.parse(metric)
        limit = suppression_limit(max_suppression, self.n_records)
        table = self.table(node)
        bad = self._violations(table, targets, limit)
        prior = float(self.prior_bounds(metric, np.array([node]))[0])
        return self._result(node, table, bad, limit, metric, self._posterior_bound(metric, table, prior))

    def _result(
        self, node: tuple[int, ...], table: _Table, bad: np.ndarray, limit: int, metric: Metric, bound: float
    ) -> NodeResult:
        violating = int(table.counts[bad].sum())
        if violating > limit or violating >= self.n_records:  # nothing published: no target can be met
            return NodeResult(node, False, violating, 0, table.n_classes, math.nan, bound)
        kept = table.counts[~bad]
        highest = 1.0 / float(kept.min()) if len(kept) else math.nan
        average = len(kept) / float(kept.sum()) if len(kept) else math.nan
        value = self._metric(metric, table, bad)
        return NodeResult(node, True, violating, violating, table.n_classes, value, bound, highest, average)

    def _violations(self, table: _Table, targets: PrivacyTargets, limit: int | None = None) -> np.ndarray:
        """Boolean per class: its records are suppressed at this node. Without ``t``, the classes violating the
        targets; with ``t``, the suppression of :func:`~privdash.transform.generalization.suppressed_classes`
        (t judged against the records left, round by round, as the ``generalize`` step publishes them), whose rounds
        stop once more than ``limit`` records are removed (the node fails then). The population and global targets
        are judged the same way, on the records left (:mod:`privdash.transform.release_targets`)."""
        if targets.t is None and not targets.judged_per_node:
            return self._monotone_violations(table, targets)
        households = None
        if targets.household_risk is not None and self.households is not None:
            if table.from_bottom is None:  # a table of sizes only may lack it: the full one has it
                table = self.table(table.levels)
            assert table.from_bottom is not None
            households = self.households.mapped(table.from_bottom, table.n_classes)
        return suppressed_classes(
            self._classes(table),
            targets,
            limit,
            sampling_fraction=self.sampling_fraction,
            households=households,
        )

    def _monotone_violations(self, table: _Table, targets: PrivacyTargets) -> np.ndarray:
        """Classes violating ``k``, ``max_risk`` or distinct ``l`` (the number of sensitive entries of a class:
        the roll-up keeps one entry per distinct value, with a positive count)."""
        bad = targets.size_violations(table.counts)
        if targets.l is not None:
            assert table.sensitive is not None
            for name in targets.sensitive:
                bad |= np.bincount(table.sensitive[name][0], minlength=table.n_classes) < targets.l
        return bad

    def implied_by_t(self, targets: PrivacyTargets, limit: int = 0) -> tuple[int, dict[str, int]]:
        """What a class needs to have any chance of meeting ``t`` in a table published with at most ``limit``
        records suppressed: at least so many records, and per sensitive attribute at least so many distinct values;
        a class with fewer violates ``t`` against the distribution of any such table's records, whatever its counts
        (see the module docstring). ``(1, {})`` without ``t``.

        Removing ``s <= limit`` of the ``n`` records moves the reference distribution by at most ``a = limit / n``
        in either distance (``p = (1 - s/n) p' + (s/n) r``), so a class within ``t`` of the records published is
        within ``t + a`` of the whole table's ``p``: the bounds are taken at ``t + a``. The ordered distance also
        depends on which values are present (its ``m`` and ranks); an attribute with a value of at most ``limit``
        records, which suppression may remove entirely, implies nothing with suppression."""
        if targets.t is None:
            return 1, {}
        margin = limit / self.n_records
        records, distinct = 1, {}
        for name in targets.sensitive:
            template = self._templates[name]
            counts = np.asarray(template.overall, dtype=np.float64)
            shares = counts / counts.sum()
            kind = targets.t_distance or ("ordered" if template.ordered else "equal")
            if kind == "ordered" and limit and counts.min() <= limit:
                continue
            # A margin keeps the bounds below the exact distance's rounding: never a class that the check passes.
            within = targets.t + margin + 1e-9
            lowest = _fewest_values_equal(shares) if kind == "equal" else _fewest_values_ordered(shares)
            if lowest is not None:
                distinct[name] = int(np.flatnonzero(lowest <= within)[0]) + 1
            records = max(records, _fewest_records(shares, kind, within))
        return records, distinct

    def _upward_path(
        self, node: tuple[int, ...], per_level: Sequence[np.ndarray] | None = None
    ) -> list[tuple[int, ...]]:
        """A chain from ``node`` to the top, raising one level at a time, always in the QI whose next level is the
        lowest relative to its top: with ``per_level`` (each QI's part of the prior bound, by level) in terms of that
        bound, ``(b_i(level + 1) - b_i(0)) / (b_i(top) - b_i(0))``, else the QI of the lowest relative level (near
        the lattice's diagonal).
        The chain then stays among the nodes of low bound, those the search still has to check, where a failing node
        marks the most of them. Any chain serves the binary search: the monotone targets' status is monotone along
        every chain, so the choice changes the nodes checked, never the result."""
        current = list(node)
        tops = [int(h) - 1 for h in self.heights]
        share = [(b - b[0]) / (b[-1] - b[0]) if b[-1] > b[0] else np.zeros(len(b)) for b in per_level or ()]
        path = [tuple(current)]
        while current != tops:
            open_ = [i for i in range(len(current)) if current[i] < tops[i]]
            if per_level is None:
                step = min(open_, key=lambda i: (current[i] / tops[i], i))
            else:
                step = min(open_, key=lambda i: (share[i][current[i] + 1], i))
            current[step] += 1
            path.append(tuple(current))
        return path

    def _check_targets(self, targets: PrivacyTargets) -> None:
        check_release_targets(
            targets,
            weighted=self.weights is not None,
            sampling_fraction=self.sampling_fraction,
            households=self.households is not None,
        )
        missing_sa = sorted(set(targets.sensitive) - set(self.sensitive))
        if missing_sa:
            raise ColumnError(
                f"Sensitive attribute(s) {', '.join(missing_sa)} were not given when the lattice was built."
            )

    def _no_solution(self, targets: PrivacyTargets, max_suppression: float) -> NoSolutionError:
        limit = suppression_limit(max_suppression, self.n_records)
        top = tuple(int(h) - 1 for h in self.heights)
        table = self.table(top)
        violating = int(table.counts[self._violations(table, targets)].sum())
        return NoSolutionError(
            f"No generalization meets {targets.describe()} with at most {limit:,} suppressed records "
            f"({max_suppression:.2%} of {self.n_records:,}): even the most general levels leave {violating:,} "
            "records in violating classes. Allow more suppression or relax the targets."
        )

    def search(
        self,
        *,
        targets: PrivacyTargets,
        max_suppression: float = DEFAULT_MAX_SUPPRESSION,
        metric: str | Metric = Metric.LOSS,
        solutions: int = 1,
    ) -> SearchOutcome:
        """The satisfying nodes of least metric (see the module docstring): the best ``solutions`` of them, best
        first, and the number of nodes checked.

        Nodes are visited in increasing prior bound. Before a node is checked, the first node meeting the monotone
        targets (:meth:`PrivacyTargets.monotone`) on a chain from it to the top is found by binary search (Flash's
        strategy): every node failing them marks all its predecessors as failing, every node meeting them all its
        successors as meeting them. Without ``t`` (or without suppression) these are all the targets; with ``t``, a
        node meeting the monotone targets is then judged as published (``t`` against the records left, round by
        round), unless its metric with only the records violating the monotone targets suppressed (a lower bound:
        suppressing more records never lowers a metric) already reaches the ``solutions``-th best value. Raises
        :class:`NoSolutionError` when no node satisfies the targets within the limit, :class:`ParameterError` when
        the lattice has more nodes than ``max_nodes``.
        """
        metric = Metric.parse(metric)
        self._check_targets(targets)
        if self.size > self.max_nodes:
            raise ParameterError(self._too_large())
        if solutions < 1:
            raise ParameterError(f"solutions must be at least 1, got {solutions}.")
        limit = suppression_limit(max_suppression, self.n_records)
        # The global and population targets are judged at each node, on the records it publishes.
        all_monotone = (targets.t is None or limit == 0) and not targets.judged_per_node
        # Without suppression t is monotone too (a class merged from parts meeting t meets it: the distance is
        # convex in the class distribution), so the status of a node is then that of all the targets.
        monotone = targets if all_monotone else targets.monotone()
        if targets.k_map is not None and self.sampling_fraction is not None:
            # k-map with a sampling fraction is the class-size test f_j / pi >= k_map: monotone like k, it marks nodes.
            monotone = replace(monotone, k=max(monotone.k, _k_map_size(targets.k_map, self.sampling_fraction)))
        # With t and suppression: a class with fewer distinct values than t allows violates t (implied_l), a
        # monotone condition like l, which joins the monotone targets.
        records, least = self.implied_by_t(targets, limit) if not all_monotone else (1, {})
        if records > monotone.k:
            monotone = replace(monotone, k=records)
        if least and max(least.values()) > (targets.l or 1):
            least = {name: max(value, targets.l or 1) for name, value in least.items()}
            monotone = replace(monotone, l=None)
        else:
            least = {}
        needs_sensitive = monotone.l is not None or monotone.t is not None or bool(least)
        nodes = self.nodes()
        shape = tuple(int(h) for h in self.heights)
        prior = self.prior_bounds(metric, nodes).reshape(shape)
        per_level = self._column_bounds(metric)
        order = np.lexsort(
            (*(nodes[:, i] for i in range(nodes.shape[1] - 1, -1, -1)), nodes.sum(axis=1), prior.ravel())
        )
        failed = np.zeros(shape, dtype=bool)  # known to violate the monotone targets beyond the limit
        passed = np.zeros(shape, dtype=bool)  # known to meet the monotone targets within the limit
        pruned = np.zeros(shape, dtype=bool)  # bound not below the solutions-th best value found
        done = np.zeros(shape, dtype=bool)  # evaluated against every target
        touched = np.zeros(shape, dtype=bool)  # its class table was computed
        best = _Best(solutions)

        def below(node: tuple[int, ...]) -> tuple[slice, ...]:
            return tuple(slice(0, v + 1) for v in node)

        def above(node: tuple[int, ...]) -> tuple[slice, ...]:
            return tuple(slice(v, None) for v in node)

        def monotone_status(node: tuple[int, ...]) -> tuple[_Table, np.ndarray, bool]:
            table = self.table(node, sensitive=needs_sensitive)
            touched[node] = True
            bad = self._violations(table, monotone, limit)
            for name, value in least.items():
                assert table.sensitive is not None
                bad |= np.bincount(table.sensitive[name][0], minlength=table.n_classes) < value
            # Nothing published meets no target; all records violating is monotone like the rest.
            violating = int(table.counts[bad].sum())
            ok = violating <= limit and violating < self.n_records
            if ok:
                passed[above(node)] = True
            else:
                failed[below(node)] = True
            return table, bad, ok

        def evaluate(node: tuple[int, ...]) -> None:
            done[node] = True
            table, bad, ok = monotone_status(node)
            bound = self._posterior_bound(metric, table, float(prior[node]))
            if bound >= best.threshold:
                pruned[above(node)] = True
                return
            if not ok:
                return
            if not all_monotone:
                # A satisfying node suppresses at least the records violating the monotone targets (the bounds t
                # implies hold against any table published within the limit), and more suppression only adds
                # to the metric: so this lower bound may rule the node out before t is judged.
                if self._metric(metric, table, bad) >= best.threshold:
                    return
                table = self.table(node)
                bad = self._violations(table, targets, limit)
            result = self._result(node, table, bad, limit, metric, bound)
            if result.satisfied:
                best.offer(result)
            if bound >= best.threshold:
                pruned[above(node)] = True

        for flat in order.tolist():
            if prior.flat[flat] >= best.threshold:
                break
            node = tuple(nodes[flat].tolist())
            if done[node] or pruned[node] or failed[node]:
                continue
            if not passed[node]:
                path = self._upward_path(node, per_level)
                low, high = 0, len(path)
                while low < high:
                    middle = (low + high) // 2
                    probe = path[middle]
                    if failed[probe]:
                        low = middle + 1
                    elif passed[probe]:
                        high = middle
                    elif all_monotone and probe != node and not pruned[probe]:
                        # Its status is all that is asked, but meeting the targets it is a solution: keep it.
                        evaluate(probe)
                        if passed[probe]:
                            high = middle
                        else:
                            low = middle + 1
                    elif monotone_status(probe)[2]:
                        high = middle
                    else:
                        low = middle + 1
                if failed[node]:
                    continue
            evaluate(node)
        if not best.items:
            raise self._no_solution(targets, max_suppression)
        found = best.results()
        return SearchOutcome(
            found[0], tuple(found), int(touched.sum()), "exact", found[0].value, True, self.size, limit
        )


def _k_map_size(k_map: int, fraction: float) -> int:
    """The least class size ``f`` with ``f / pi >= k_map`` (in floating point, as the class test computes it)."""
    guess = max(1, math.ceil(k_map * fraction) - 1)
    candidates = np.arange(guess, guess + 3, dtype=np.float64)
    return int(candidates[np.flatnonzero(~(candidates / fraction < k_map))[0]])


def _aggregate_result(
    data: pd.DataFrame,
    counts: str,
    lattice: GeneralizationLattice,
    best: NodeResult,
    checked: int,
    levels: dict[str, int],
    resolved: dict[str, Hierarchy],
    targets: PrivacyTargets,
    metric: Metric,
    max_suppression: float,
    found: Mapping[str, Any],
) -> SearchResult:
    """The search result over an aggregate: the combinations generalized cell by cell (exact, as generalization maps
    each value alone), then the combinations of violating classes removed with all their records, as
    :func:`generalize` removes them from the rows."""
    qis = list(lattice.quasi_identifiers)
    weights = check_counts(data, counts)
    generalized = generalize(data.drop(columns=[counts]), levels, resolved, quasi_identifiers=qis)
    published = generalized.data.reset_index(drop=True)
    published[counts] = weights
    sensitive = list(targets.sensitive)
    if max_suppression > 0:
        violating = violating_combinations(published, qis, counts, targets)
        published = published.loc[without_combinations(published, violating)].reset_index(drop=True)
    classes = equivalence_classes_from_aggregate(published, qis, count=counts, sensitive=sensitive)
    step = generalized.step
    if max_suppression > 0:
        step = Step("generalize", {**step.params, "suppress": targets.to_dict(), "quasi_identifiers": qis})
    suppressed = int(weights.sum()) - classes.n_records
    transform = TransformResult(
        data=published,
        step=step,
        summary={**generalized.summary, "records_suppressed": suppressed, "aggregate": True},
        mapping=generalized.mapping,
    )
    return SearchResult(
        levels=levels,
        suppressed=suppressed,
        metric=metric,
        value=best.value,
        k=classes.k,
        targets=targets,
        max_suppression=max_suppression,
        classes=classes,
        nodes_checked=checked,
        lattice_size=lattice.size,
        transform=transform,
        **found,
    )


def _fewest_values_equal(shares: np.ndarray) -> np.ndarray:
    """Least equal distance of a class with ``d`` distinct values, for ``d = 1 .. m``: ``1 - (sum of the d largest
    shares)``. (Values absent from the class add their share ``p_i``, and those present at least
    ``|1 - sum_present p|``, so ``D = 1/2 sum |q - p| >= 1 - P(present)``.)"""
    top = np.cumsum(np.sort(shares)[::-1])
    return np.maximum(1.0 - top, 0.0)


#: Largest number of values for which the ordered distance's bound is computed (its dynamic programme is cubic).
_ORDERED_BOUND_VALUES = 128


def _fewest_values_ordered(shares: np.ndarray) -> np.ndarray | None:
    """Least ordered distance of a class with ``d`` distinct values, for ``d = 1 .. m`` (None beyond
    :data:`_ORDERED_BOUND_VALUES` values): the earth mover's distance on the line from ``p`` to a distribution on
    ``d`` points is at least the cost of moving each share to its nearest point, minimized over the points (the
    weighted ``d``-median of the values' ranks), divided by ``m - 1``."""
    m = len(shares)
    if m <= 1:
        return np.zeros(max(m, 1))
    if m > _ORDERED_BOUND_VALUES:
        return None
    positions = np.arange(m)
    # segment[a, b]: cost of the shares a..b moved to their best single point (a weighted median).
    moved = shares[None, :] * np.abs(positions[None, :] - positions[:, None])  # [point, value]
    prefix = np.concatenate([np.zeros((m, 1)), np.cumsum(moved, axis=1)], axis=1)  # [point, b + 1]
    a, b, c = np.ogrid[:m, :m, :m]
    cost = prefix[c, b + 1] - prefix[c, a]  # [a, b, point]
    cost = np.where((c >= a) & (c <= b), cost, np.inf).min(axis=2)
    cost = np.where(b[:, :, 0] >= a[:, :, 0], cost, np.inf)
    best = cost[0].copy()  # best[b]: shares 0..b on one point
    out = [best[m - 1]]
    for _ in range(2, m + 1):
        # one more point: the last segment a..b, the rest 0..a-1 on the points before
        candidates = np.concatenate([np.full((1, m), np.inf), best[:-1, None] + cost[1:, :]], axis=0)
        best = np.minimum(best, candidates.min(axis=0))
        out.append(best[m - 1])
    return np.maximum(np.array(out) / (m - 1), 0.0)


#: Class sizes up to which :func:`_fewest_records` looks for the least size that may meet t.
_RECORDS_BOUND = 4096


def _fewest_records(shares: np.ndarray, kind: str, t: float) -> int:
    """The least class size ``f`` whose best distribution (counts in whole records) is within ``t`` of ``p``
    (:data:`_RECORDS_BOUND` when none up to it is: smaller classes all violate ``t`` then too).

    Equal distance: ``|c_i - f p_i|`` is separable and convex in the whole counts ``c_i``, so the best counts are
    ``floor(f p_i)`` plus one for the ``f - sum floor`` largest fractional parts. Ordered distance: the terms
    ``|C_i - f P_i|`` of the cumulative counts are each least at ``C_i = round(f P_i)``, which is non-decreasing,
    so that is the best."""
    m = len(shares)
    if m <= 1:
        return 1
    limit = max(1, min(_RECORDS_BOUND, 4_000_000 // m))
    f = np.arange(1, limit + 1, dtype=np.float64)[:, None]
    if kind == "equal":
        x = f * shares[None, :]
        frac = x - np.floor(x)
        rest = np.rint(f[:, 0] - np.floor(x).sum(axis=1))
        ordered = -np.sort(-frac, axis=1)
        extra = np.arange(m)[None, :] < rest[:, None]
        distance = (frac.sum(axis=1) + ((1.0 - 2.0 * ordered) * extra).sum(axis=1)) / (2.0 * f[:, 0])
    else:
        x = f * np.cumsum(shares)[None, :-1]
        distance = np.abs(np.rint(x) - x).sum(axis=1) / (f[:, 0] * (m - 1))
    within = np.flatnonzero(distance <= t)
    return int(within[0]) + 1 if len(within) else limit


def _normalize_loss(raw: float, domain: int) -> float:
    """ARX's per-attribute normalization of the mean domain share: ``(x - 1/D) / (1 - 1/D)``, 0 when D = 1."""
    if domain <= 1:
        return 0.0
    return max((raw - 1.0 / domain) / (1.0 - 1.0 / domain), 0.0)


def _intensity(level: int, max_level: int) -> float:
    return level / max_level if max_level > 0 else 0.0


def suppression_limit(max_suppression: float, n: int) -> int:
    """The suppression limit in records, ``floor(max_suppression * n)``, tolerant to the binary representation of
    the fraction."""
    fraction = check_fraction(max_suppression, "max_suppression")
    return math.floor(fraction * n + 1e-9)


def suppression_budget(max_suppression: float, n: int) -> int:
    """Deprecated spelling of :func:`suppression_limit` ("budget" is the differential-privacy budget only), read
    for one release."""
    warnings.warn(
        "suppression_budget is deprecated: use suppression_limit (budget means the DP budget only)",
        DeprecationWarning,
        stacklevel=2,
    )
    return suppression_limit(max_suppression, n)


# --- the heuristic search (see privdash.search.heuristic) ------------------------------------------------


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
    """The best solutions the LIGHTNING-style search (Prasser et al. 2016) finds within ``max_checks`` checked nodes
    (and ``max_seconds``, when given): a greedy dive to a first solution, then best-first by score with a certified
    lower bound of the optimum; the algorithm is described in :mod:`privdash.search.heuristic`. Raises
    :class:`NoSolutionError` when none is found (the top of the lattice is always checked, so then no node satisfies
    the targets).
    """
    metric = Metric.parse(metric)
    lattice._check_targets(targets)
    if solutions < 1:
        raise ParameterError(f"solutions must be at least 1, got {solutions}.")
    if max_checks < 1:
        raise ParameterError(f"max_checks must be at least 1, got {max_checks}.")
    limit = suppression_limit(max_suppression, lattice.n_records)
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
        bad = lattice._violations(table, targets, limit)
        result = lattice._result(node, table, bad, limit, metric, bound)
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
        limit,
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


# --- the public search -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Solution:
    """One node meeting the targets, for the choice among solutions.

    ``value`` is the metric, ``suppressed`` the records removed, ``highest_risk`` and ``average_risk`` the
    prosecutor risks of the published records (``1 / min f_j``, ``J / n`` over the kept classes), ``classes`` the
    classes before suppression; ``frontier`` is True when no other solution listed has a value, an average risk
    and a suppression all at most as large, one of them smaller (the Pareto frontier of loss against risk and
    suppression, exact among all satisfying nodes up to the value of the last solution listed).
    """

    levels: Mapping[str, int]
    value: float
    suppressed: int
    highest_risk: float
    average_risk: float
    classes: int
    frontier: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "levels": dict(self.levels),
            "loss": self.value,
            "suppressed": self.suppressed,
            "highest_risk": self.highest_risk,
            "average_risk": self.average_risk,
            "classes": self.classes,
            "frontier": self.frontier,
        }


def _solutions(found: Sequence[NodeResult], qis: Sequence[str]) -> tuple[Solution, ...]:
    points = np.array([(r.value, r.average_risk, r.suppressed) for r in found], dtype=np.float64).reshape(-1, 3)
    out = []
    for index, result in enumerate(found):
        no_worse = (points <= points[index] + 1e-12).all(axis=1)
        better = (points < points[index] - 1e-12).any(axis=1)
        dominated = bool((no_worse & better).any())
        levels = dict(zip(qis, result.levels, strict=True))
        out.append(
            Solution(
                levels,
                result.value,
                result.suppressed,
                result.highest_risk,
                result.average_risk,
                result.classes,
                not dominated,
            )
        )
    return tuple(out)


def _only(targets: PrivacyTargets, name: str) -> PrivacyTargets:
    """The one target ``name`` of ``targets`` (``k = 1``, met by every class, unless it is ``k``)."""
    fields: dict[str, Any] = {key: None for key in TARGET_NAMES if key != "k"}
    fields[name] = getattr(targets, name)
    if name == "population_uniques":
        fields["population_uniques_estimator"] = targets.population_uniques_estimator
    return PrivacyTargets(
        k=targets.k if name == "k" else 1,
        sensitive=targets.sensitive,
        t_distance=targets.t_distance,
        **{key: value for key, value in fields.items() if key != "k"},
    )


def binding_targets(
    lattice: GeneralizationLattice, node: Sequence[int], targets: PrivacyTargets, max_suppression: float
) -> dict[str, tuple[str, ...]]:
    """Which targets stop the solution from being finer: for each QI above level 0, the targets that the node one
    level finer in that QI fails alone (judged as the search judges a node: the records it suppresses for that
    target alone, t against the records left, exceed the suppression limit or are all the records), or, when none
    fails alone, those its classes violate together (``"k+t"``); an empty tuple when that finer node meets the
    targets (it was not chosen for its larger loss, from more suppression)."""
    limit = suppression_limit(max_suppression, lattice.n_records)

    def fails(table: _Table, wanted: PrivacyTargets) -> bool:
        removed = int(table.counts[lattice._violations(table, wanted, limit)].sum())
        return removed > limit or removed >= lattice.n_records

    out: dict[str, tuple[str, ...]] = {}
    for index, name in enumerate(lattice.quasi_identifiers):
        if node[index] == 0:
            continue
        finer = tuple(int(v) - (1 if i == index else 0) for i, v in enumerate(node))
        table = lattice.table(finer)
        if not fails(table, targets):
            out[name] = ()
            continue
        alone = tuple(target for target in targets.names if fails(table, _only(targets, target)))
        if alone:
            out[name] = alone
            continue
        parts = targets.violations_by_target(lattice._classes(table))
        together = [target for target, part in parts.items() if part.any()]
        first = np.zeros(table.n_classes, dtype=bool)
        for part in parts.values():
            first |= part
        if "t" not in together and (lattice._violations(table, targets, limit) & ~first).any():
            # t fails only against the records left once the classes violating the others are suppressed
            together = [target for target in targets.names if target in together or target == "t"]
        out[name] = ("+".join(together),)
    return out


def _bound_by(binding: Mapping[str, tuple[str, ...]], targets: PrivacyTargets) -> tuple[str, ...]:
    named = {part for entries in binding.values() for entry in entries for part in entry.split("+")}
    return tuple(name for name in targets.names if name in named)


@dataclass(frozen=True, eq=False)
class SearchResult:
    """The optimal generalization and its published table.

    Attributes
    ----------
    levels
        QI -> generalization level.
    suppressed
        Records removed (those in classes violating the targets).
    metric, value
        The information-loss metric minimized and its value at the optimum.
    k
        Smallest class size among the published records.
    targets, max_suppression
        What was asked.
    classes
        Equivalence classes of the published table (the core's own diagnosis of ``transform.data``).
    nodes_checked, lattice_size
        Nodes whose class table was computed, and all nodes of the lattice.
    transform
        The published table, value mapping and a ``"generalize"`` step (hierarchies and suppression targets
        resolved) that reproduces it.
    strategy
        ``"exact"`` or ``"heuristic"`` (what ``auto`` chose).
    lower_bound, proven
        No node meeting the targets has a value below ``lower_bound``; ``proven`` when ``value`` is the optimum
        (always for the exact search). ``gap`` is then how far, at most, the value is above the optimum.
    solutions
        The best solutions found, best first (the first is this one), with the frontier of loss against risk and
        suppression among them (:class:`Solution`).
    binding, bound_by
        Per QI above level 0, the targets the node one level finer fails (:func:`binding_targets`); ``bound_by``
        names those targets, in the order k, l, t, max_risk.
    pick
        Which of the solutions this is (1: the best).
    """

    levels: Mapping[str, int]
    suppressed: int
    metric: Metric
    value: float
    k: int
    targets: PrivacyTargets
    max_suppression: float
    classes: EquivalenceClasses
    nodes_checked: int
    lattice_size: int
    transform: TransformResult = field(repr=False)
    strategy: str = "exact"
    lower_bound: float = math.nan
    proven: bool = True
    solutions: tuple[Solution, ...] = ()
    binding: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    bound_by: tuple[str, ...] = ()
    pick: int = 1

    @property
    def gap(self) -> float:
        """``(value - lower_bound) / value``: the most the value may lie above the optimum, relative (0 when
        proven optimal)."""
        if self.proven or not math.isfinite(self.lower_bound) or self.value <= 0:
            return 0.0
        return max(self.value - self.lower_bound, 0.0) / self.value

    @property
    def data(self) -> pd.DataFrame:
        """The published table (``transform.data``)."""
        return self.transform.data

    @property
    def recipe(self) -> Recipe:
        """The recipe that re-applies this fix to other data of the same schema."""
        return Recipe((self.transform.step,), max_suppression=self.max_suppression or None)

    def summary(self) -> dict[str, Any]:
        """JSON-ready facts: levels, suppressed, metric, loss (the metric value), k, classes, nodes, the search
        strategy and its distance to the optimum, what bound the solution, and the solutions."""
        return {
            "levels": dict(self.levels),
            "suppressed": self.suppressed,
            "records": self.classes.n_records + self.suppressed,
            "metric": self.metric.value,
            "loss": self.value,
            "k": self.k,
            "classes": self.classes.n_classes,
            "targets": self.targets.to_dict(),
            "suppression_limit": self.max_suppression,  # the JSON name, kept for compatibility
            "nodes_checked": self.nodes_checked,
            "lattice_size": self.lattice_size,
            "search": self.strategy,
            "proven_optimal": self.proven,
            "lower_bound": self.lower_bound,
            "gap": self.gap,
            "bound_by": list(self.bound_by),
            "binding": {name: list(entries) for name, entries in self.binding.items()},
            "solutions": [s.to_dict() for s in self.solutions],
            "pick": self.pick,
        }


def optimal_generalization(
    data: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    *,
    quasi_identifiers: Sequence[str] | None = None,
    k: int = 2,
    l: int | None = None,  # noqa: E741
    t: float | None = None,
    sensitive: Sequence[str] = (),
    t_distance: str | None = None,
    max_risk: float | None = None,
    max_suppression: float = DEFAULT_MAX_SUPPRESSION,
    metric: str | Metric = Metric.LOSS,
    max_nodes: int = DEFAULT_MAX_NODES,
    counts: str | None = None,
    search: str = "auto",
    solutions: int = 1,
    max_checks: int | None = None,
    pick: int = 1,
    targets: PrivacyTargets | None = None,
    weights: str | None = None,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    household: str | None = None,
) -> SearchResult:
    """Find the generalization levels and record suppression of least information loss meeting the targets.

    Parameters
    ----------
    data
        The table (not modified).
    hierarchies
        A hierarchy per quasi-identifier.
    quasi_identifiers
        QIs in lattice order (default: the keys of ``hierarchies``).
    k, l, t, sensitive, t_distance, max_risk
        The targets (:class:`PrivacyTargets`); every target set is met.
    max_suppression
        Suppression limit: the fraction of records that may be removed, ``0 .. 1`` (ARX's suppression limit);
        default :data:`~privdash.targets.DEFAULT_MAX_SUPPRESSION`.
    metric
        ``loss``, ``precision``, ``discernibility``, ``aecs`` or ``entropy``
        (:class:`~privdash.utility.metrics.Metric`).
    max_nodes
        The largest lattice the exact search visits (``search="exact"`` refuses larger ones, ``"auto"`` searches
        them heuristically).
    counts
        ``data`` is an aggregate with this column of record counts (see :class:`GeneralizationLattice`): the
        search, the levels, the loss and the suppressed records are those of the raw table, and ``transform.data``
        is the published aggregate (the generalized combinations that are kept, with their counts). Apply
        ``recipe`` to the rows, e.g. out of core with :func:`~privdash.engines.streaming.apply_recipe_streaming`.
    search
        One of :data:`SEARCH_STRATEGIES`.
    solutions
        How many of the best solutions to keep (``SearchResult.solutions``); the search prunes against the last.
    max_checks
        The heuristic search's limit of checked nodes (default
        :data:`~privdash.search.heuristic.DEFAULT_MAX_CHECKS`).
    pick
        Publish the ``pick``-th best solution instead of the best (1): a steward's choice among the solutions (the
        search then keeps at least ``pick`` of them). Raises :class:`ParameterError` when fewer nodes meet the
        targets.
    targets
        All the targets at once, instead of ``k`` .. ``max_risk`` (those are then ignored): with the global and
        population targets (``global_risk``, ``average_risk``, ``population_uniques``, ``k_map``,
        ``delta_presence``), judged at each node on the records it publishes
        (:mod:`privdash.transform.release_targets`); ``household_risk`` with ``household``.
    weights
        Sampling-weight column: the weighted individual risk of ``global_risk`` and, without a population size,
        ``F_j`` (sum of the weights) of ``k_map``, ``delta_presence`` and ``population_uniques``.
    population_size, sampling_fraction
        The population (one of them): ``F_j = f_j / pi``, with ``pi = n / N`` from the input table's ``n``.
    household
        The household-id column of ``household_risk`` (a missing id: a household of its own).

    Returns
    -------
    SearchResult
        Its ``transform.data`` is the published table; its ``classes`` are the diagnosis of that table.

    Raises
    ------
    NoSolutionError
        When no node satisfies the targets within the suppression limit.
    HierarchyError, ColumnError, ParameterError
        For values outside a hierarchy, unknown columns, invalid targets.
    """
    if targets is None:
        targets = PrivacyTargets(k=k, l=l, t=t, sensitive=tuple(sensitive), t_distance=t_distance, max_risk=max_risk)
    targets.require_sensitive()
    if counts is not None and targets.judged_per_node:
        raise ParameterError(
            "The global and population targets (global_risk, average_risk, population_uniques, k_map, "
            "delta_presence) are not supported on an aggregate; search the table in memory (--engine pandas)."
        )
    metric = Metric.parse(metric)
    max_suppression = check_fraction(max_suppression, "max_suppression")
    if isinstance(pick, bool) or not isinstance(pick, int) or pick < 1:
        raise ParameterError(f"pick must be a whole number of at least 1, got {pick!r}.")
    solutions = max(solutions, pick)
    strategy = str(search).lower()
    if strategy not in SEARCH_STRATEGIES:
        raise ParameterError(f"search must be one of {', '.join(SEARCH_STRATEGIES)}, got {search!r}.")
    lattice = GeneralizationLattice(
        data,
        hierarchies,
        quasi_identifiers=quasi_identifiers,
        sensitive=targets.sensitive,
        max_nodes=max_nodes,
        counts=counts,
        weights=weights,
        population_size=population_size,
        sampling_fraction=sampling_fraction,
        household=household if targets.household_risk is not None else None,
    )
    lattice._check_targets(targets)
    if strategy == "heuristic" or (strategy == "auto" and lattice.size > max_nodes):
        outcome = heuristic_search(
            lattice,
            targets=targets,
            max_suppression=max_suppression,
            metric=metric,
            solutions=solutions,
            max_checks=DEFAULT_MAX_CHECKS if max_checks is None else max_checks,
        )
    else:
        outcome = lattice.search(targets=targets, max_suppression=max_suppression, metric=metric, solutions=solutions)
    if pick > len(outcome.solutions):
        raise ParameterError(
            f"Solution {pick} was asked for, but only {len(outcome.solutions)} node(s) of the lattice meet the targets."
        )
    return _search_result(data, counts, lattice, outcome, targets, metric, max_suppression, pick)


def _search_result(
    data: pd.DataFrame,
    counts: str | None,
    lattice: GeneralizationLattice,
    outcome: SearchOutcome,
    targets: PrivacyTargets,
    metric: Metric,
    max_suppression: float,
    pick: int = 1,
) -> SearchResult:
    """The published table of the outcome's ``pick``-th best node, with what the search found around it."""
    best = outcome.solutions[pick - 1]
    qis = list(lattice.quasi_identifiers)
    levels = dict(zip(qis, best.levels, strict=True))
    resolved = dict(zip(qis, lattice.hierarchies, strict=True))
    binding = binding_targets(lattice, best.levels, targets, max_suppression)
    found: dict[str, Any] = {
        "strategy": outcome.strategy,
        "lower_bound": outcome.lower_bound,
        "proven": outcome.proven,
        "solutions": _solutions(outcome.solutions, qis),
        "binding": binding,
        "bound_by": _bound_by(binding, targets),
        "pick": pick,
    }
    if counts is not None:
        return _aggregate_result(
            data, counts, lattice, best, outcome.checked, levels, resolved, targets, metric, max_suppression, found
        )
    transform = generalize(
        data,
        levels,
        resolved,
        suppress=targets if max_suppression > 0 else None,
        quasi_identifiers=list(levels),
        weights=lattice.weights if targets.judged_per_node else None,
        sampling_fraction=lattice.sampling_fraction if targets.judged_per_node else None,
        household=lattice.household if targets.judged_per_node else None,
    )
    published = transform.data
    classes = equivalence_classes(published, qis, sensitive=list(targets.sensitive))
    return SearchResult(
        levels=levels,
        suppressed=len(data) - len(published),
        metric=metric,
        value=best.value,
        k=classes.k,
        targets=targets,
        max_suppression=max_suppression,
        classes=classes,
        nodes_checked=outcome.checked,
        lattice_size=lattice.size,
        transform=transform,
        **found,
    )
