"""Optimal full-domain generalization: the levels (one per quasi-identifier) and record suppression that meet
privacy targets with the least information loss, over the whole generalization lattice.

Problem (ARX's, Prasser & Kohlmayer, "Putting statistical disclosure control into practice: the ARX data
anonymization tool", 2015; Kohlmayer et al., "Flash: efficient, stable and optimal k-anonymity", 2012)
-------------------------------------------------------------------------------------------------------------
A *node* of the lattice is a vector of levels, one per QI; ``u <= v`` (``v`` is a successor, coarser) when every
level of ``u`` is at most that of ``v``. At a node, the records form equivalence classes over the generalized QIs
(missing values as a value of their own). A class *violates* the targets (:class:`PrivacyTargets`) when its size
is below ``k``, its prosecutor risk ``1 / f_j`` exceeds ``max_risk``, or, for some sensitive attribute, it has
fewer than ``l`` distinct values or its t-closeness distance exceeds ``t``. The node *satisfies* the targets when
the records of violating classes number at most ``floor(max_suppression * n)`` (ARX's suppression limit); those
records are then suppressed (removed). The result is a satisfying node of least information loss for the chosen
:class:`~dashboard.core.utility.metrics.Metric`, with suppressed records counted as described there.

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
suppression). Then a failing node marks all its predecessors as failing. t-closeness is monotone only without
suppression (a satisfying class merged with a violating one may violate), so with t and a positive suppression
limit no node is inferred to fail.

The result is the exact minimum over all satisfying nodes (ties: the first in the visiting order: bound, then
total level, then levels lexicographically); the tests compare it with a brute-force evaluation of every node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dashboard.core.errors import (
    ColumnError,
    ParameterError,
    check_columns,
    check_counts,
    check_fraction,
)
from dashboard.core.measure.classes import (
    EquivalenceClasses,
    MissingPolicy,
    SensitiveDistribution,
    equivalence_classes,
    equivalence_classes_from_aggregate,
)
from dashboard.core.targets import PrivacyTargets
from dashboard.core.transform.generalization import generalize, violating_combinations, without_combinations
from dashboard.core.transform.hierarchy import Hierarchy, HierarchyError
from dashboard.core.transform.steps import Recipe, Step, TransformResult
from dashboard.core.utility.metrics import Metric

__all__ = [
    "DEFAULT_MAX_NODES",
    "GeneralizationLattice",
    "NoSolutionError",
    "NodeResult",
    "SearchResult",
    "optimal_generalization",
    "suppression_budget",
]

#: Largest lattice searched (the visiting order and pruning marks are kept for every node).
DEFAULT_MAX_NODES = 2_000_000
#: Name under which record counts of an aggregate travel inside the lattice.
_COUNT = "__privdash_records"
#: Cached class tables, in rows over all cached nodes (each row: one code per QI and a count).
_CACHE_ROWS = 2_000_000
_DENSE_KEYS = 1 << 16


class NoSolutionError(ParameterError):
    """No node of the lattice meets the targets within the suppression limit."""


# --- class tables --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Table:
    """Classes of one node: QI codes at the node's levels, record counts, sparse sensitive counts."""

    levels: tuple[int, ...]
    codes: np.ndarray  # (J, q)
    counts: np.ndarray  # (J,) int64
    sensitive: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # class, value, count (sorted)

    @property
    def n_classes(self) -> int:
        return len(self.counts)


class _TableCache:
    """Class tables of computed nodes; finds the smallest cached table finer than a node (a roll-up source).

    Holds at most about :data:`_CACHE_ROWS` rows; when full, the largest tables go first (small tables are the
    cheap sources of later roll-ups). The finest table is always kept.
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
        self._count = len(keys)
        self._rows = int(self._sizes.sum())

    def get(self, levels: tuple[int, ...]) -> _Table | None:
        return self._tables.get(levels)

    def source_for(self, levels: tuple[int, ...]) -> _Table:
        count = self._count
        finer = (self._levels[:count] <= np.asarray(levels)).all(axis=1)
        sizes = np.where(finer, self._sizes[:count], np.iinfo(np.int64).max)
        return self._tables[self._keys[int(sizes.argmin())]]

    def add(self, table: _Table) -> None:
        self._tables[table.levels] = table
        self._rows += table.n_classes
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
        self._keys.append(table.levels)
        self._levels[self._count] = table.levels
        self._sizes[self._count] = table.n_classes
        self._count += 1


@dataclass(frozen=True)
class NodeResult:
    """One node evaluated: whether it satisfies the targets, the records it suppresses and its metric value.

    ``violating`` counts the records in violating classes; ``suppressed`` equals it when the node satisfies
    (else 0, nothing is published); ``value`` is the metric (NaN when the node does not satisfy); ``bound`` is
    the metric with nothing suppressed.
    """

    levels: tuple[int, ...]
    satisfied: bool
    violating: int
    suppressed: int
    classes: int
    value: float
    bound: float


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
        sensitive attributes, as :func:`~dashboard.core.engines.aggregate.aggregate_table` returns it) and this
        column holds its number of records. The search reads only class counts, so the result is the same as on the
        raw rows, for tables of any size.

    Raises :class:`HierarchyError` when a QI value is not a leaf of its hierarchy, :class:`ParameterError` when
    the lattice has more than ``max_nodes`` nodes.
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
        weights = None if counts is None else check_counts(data, counts)
        self.n_records = len(data) if weights is None else int(weights.sum())
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
        if size > max_nodes:
            raise ParameterError(
                f"The lattice has {size:,} nodes (levels per QI: "
                f"{', '.join(f'{c}={h}' for c, h in zip(qis, self.heights, strict=True))}), more than the "
                f"{max_nodes:,} searched; use fewer quasi-identifiers or hierarchies with fewer levels."
            )
        self.size = size
        frame = pd.DataFrame(leaf_frame, index=pd.RangeIndex(len(data)))
        for name in sens:
            frame[name] = data[name].reset_index(drop=True)
        if weights is None:
            bottom = equivalence_classes(frame, qis, sensitive=sens, missing=MissingPolicy.VALUE)
        else:
            frame[_COUNT] = weights
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
        self.bottom = _Table((0,) * len(qis), codes.astype(np.int64), np.asarray(bottom.counts, np.int64), sens_sparse)
        # Value counts per QI leaf (missing last), for the column-separable metric parts.
        self._leaf_counts = [
            np.bincount(self.bottom.codes[:, i], weights=self.bottom.counts, minlength=h.n_leaves + 1).astype(np.int64)
            for i, h in enumerate(resolved)
        ]
        self._cache = _TableCache(self.bottom)
        self._bounds: dict[Metric, list[np.ndarray] | None] = {}
        self.rollups = 0

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

    def table(self, levels: tuple[int, ...]) -> _Table:
        """The class table at ``levels``, rolled up from the smallest cached finer table."""
        cached = self._cache.get(levels)
        if cached is not None:
            return cached
        result = self._rollup(self._cache.source_for(levels), levels)
        self._cache.add(result)
        return result

    def _rollup(self, source: _Table, levels: tuple[int, ...]) -> _Table:
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
        if space <= max(_DENSE_KEYS, 2 * n):
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
        sensitive = {}
        for name, (cls, val, cnt) in source.sensitive.items():
            m = self._templates[name].n_values
            pair = inverse[cls] * m + val
            if n_new * m <= max(1 << 20, 4 * len(pair)):
                dense = np.bincount(pair, weights=cnt, minlength=n_new * m)
                present = np.flatnonzero(dense)
                sums = dense[present]
            else:
                present, where = np.unique(pair, return_inverse=True)
                sums = np.bincount(where.reshape(-1), weights=cnt, minlength=len(present))
            sensitive[name] = (present // m, present % m, sums.astype(np.int64))
        return _Table(levels, codes, counts, sensitive)

    def classes(self, levels: Mapping[str, int] | Sequence[int]) -> EquivalenceClasses:
        """The equivalence classes at ``levels`` (from the roll-up; no per-record classes)."""
        return self._classes(self.table(self.check_levels(levels)))

    def _classes(self, table: _Table) -> EquivalenceClasses:
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
                self._templates.items(), (table.sensitive[n] for n in self._templates), strict=True
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
        hierarchy = self.hierarchies[column]
        return np.append(hierarchy.leaf_counts(level), 1) / hierarchy.n_leaves

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
        max_suppression: float = 0.0,
        metric: str | Metric = Metric.LOSS,
    ) -> NodeResult:
        """Evaluate one node: violating records, whether they fit the suppression limit, and the metric."""
        node = self.check_levels(levels)
        metric = Metric.parse(metric)
        budget = suppression_budget(max_suppression, self.n_records)
        table = self.table(node)
        bad = self._violations(table, targets)
        violating = int(table.counts[bad].sum())
        prior = float(self.prior_bounds(metric, np.array([node]))[0])
        bound = self._posterior_bound(metric, table, prior)
        satisfied = violating <= budget
        value = self._metric(metric, table, bad) if satisfied else math.nan
        return NodeResult(node, satisfied, violating, violating if satisfied else 0, table.n_classes, value, bound)

    def _violations(self, table: _Table, targets: PrivacyTargets) -> np.ndarray:
        if targets.l is None and targets.t is None:
            return targets.size_violations(table.counts)
        return targets.class_violations(self._classes(table))

    def _upward_path(self, node: tuple[int, ...]) -> list[tuple[int, ...]]:
        """A chain from ``node`` to the top, raising one level at a time, always in the QI with the lowest
        relative level (so the chain runs near the lattice's diagonal, where failing nodes cover the most)."""
        current = list(node)
        tops = [int(h) - 1 for h in self.heights]
        path = [tuple(current)]
        while current != tops:
            open_ = [i for i in range(len(current)) if current[i] < tops[i]]
            step = min(open_, key=lambda i: (current[i] / tops[i], i))
            current[step] += 1
            path.append(tuple(current))
        return path

    def search(
        self, *, targets: PrivacyTargets, max_suppression: float = 0.0, metric: str | Metric = Metric.LOSS
    ) -> tuple[NodeResult, int]:
        """The satisfying node of least metric (see the module docstring) and the number of nodes checked.

        Nodes are visited in increasing prior bound. With monotone targets, before a node is checked the first
        satisfying node on a chain from it to the top is found by binary search (Flash's strategy): every
        failing node checked marks all its predecessors as failing, every satisfying one all its successors as
        satisfying. Raises :class:`NoSolutionError` when even the most general node violates the targets beyond
        the limit.
        """
        metric = Metric.parse(metric)
        missing_sa = sorted(set(targets.sensitive) - set(self.sensitive))
        if missing_sa:
            raise ColumnError(
                f"Sensitive attribute(s) {', '.join(missing_sa)} were not given when the lattice was built."
            )
        budget = suppression_budget(max_suppression, self.n_records)
        monotone = targets.monotone_with_suppression or budget == 0
        nodes = self.nodes()
        shape = tuple(int(h) for h in self.heights)
        prior = self.prior_bounds(metric, nodes).reshape(shape)
        order = np.lexsort(
            (*(nodes[:, i] for i in range(nodes.shape[1] - 1, -1, -1)), nodes.sum(axis=1), prior.ravel())
        )
        failed = np.zeros(shape, dtype=bool)  # known to violate beyond the limit (monotone targets)
        passed = np.zeros(shape, dtype=bool)  # known to satisfy (monotone targets)
        pruned = np.zeros(shape, dtype=bool)  # bound not below the best value found
        done = np.zeros(shape, dtype=bool)
        best: list[Any] = [math.inf, None]
        checked = 0

        def check(node: tuple[int, ...], need_status: bool) -> bool | None:
            nonlocal checked
            table = self.table(node)
            if not done[node]:
                checked += 1
                done[node] = True
            bound = self._posterior_bound(metric, table, float(prior[node]))
            if bound >= best[0] and not need_status:
                pruned[tuple(slice(v, None) for v in node)] = True
                return None
            bad = self._violations(table, targets)
            violating = int(table.counts[bad].sum())
            satisfied = violating <= budget
            if not satisfied:
                if monotone:
                    failed[tuple(slice(0, v + 1) for v in node)] = True
            else:
                if monotone:
                    passed[tuple(slice(v, None) for v in node)] = True
                value = self._metric(metric, table, bad)
                if value < best[0]:
                    best[0] = value
                    best[1] = NodeResult(node, True, violating, violating, table.n_classes, value, bound)
            if bound >= best[0]:
                pruned[tuple(slice(v, None) for v in node)] = True
            return satisfied

        for flat in order.tolist():
            if prior.flat[flat] >= best[0]:
                break
            node = tuple(nodes[flat].tolist())
            if done[node] or pruned[node] or failed[node]:
                continue
            if monotone and not passed[node]:
                path = self._upward_path(node)
                low, high = 0, len(path)
                while low < high:
                    middle = (low + high) // 2
                    probe = path[middle]
                    if failed[probe]:
                        low = middle + 1
                    elif passed[probe] or check(probe, need_status=True):
                        high = middle
                    else:
                        low = middle + 1
                continue
            check(node, need_status=False)
        result = best[1]
        if result is None:
            top = tuple(int(h) - 1 for h in self.heights)
            table = self.table(top)
            violating = int(table.counts[self._violations(table, targets)].sum())
            raise NoSolutionError(
                f"No generalization meets {targets.describe()} with at most {budget:,} suppressed records "
                f"({max_suppression:.2%} of {self.n_records:,}): even the most general levels leave {violating:,} "
                "records in violating classes. Allow more suppression or relax the targets."
            )
        return result, checked


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
    )


def _normalize_loss(raw: float, domain: int) -> float:
    """ARX's per-attribute normalization of the mean domain share: ``(x - 1/D) / (1 - 1/D)``, 0 when D = 1."""
    if domain <= 1:
        return 0.0
    return max((raw - 1.0 / domain) / (1.0 - 1.0 / domain), 0.0)


def _intensity(level: int, max_level: int) -> float:
    return level / max_level if max_level > 0 else 0.0


def suppression_budget(max_suppression: float, n: int) -> int:
    """``floor(max_suppression * n)`` records, tolerant to the binary representation of the fraction."""
    fraction = check_fraction(max_suppression, "max_suppression")
    return math.floor(fraction * n + 1e-9)


# --- the public search -----------------------------------------------------------------------------------------


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

    @property
    def data(self) -> pd.DataFrame:
        """The published table (``transform.data``)."""
        return self.transform.data

    @property
    def recipe(self) -> Recipe:
        """The recipe that re-applies this fix to other data of the same schema."""
        return Recipe((self.transform.step,), max_suppression=self.max_suppression or None)

    def summary(self) -> dict[str, Any]:
        """JSON-ready facts: levels, suppressed, metric, loss (the metric value), k, classes, nodes."""
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
    max_suppression: float = 0.0,
    metric: str | Metric = Metric.LOSS,
    max_nodes: int = DEFAULT_MAX_NODES,
    counts: str | None = None,
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
        The targets (:class:`PrivacyTargets`).
    max_suppression
        Suppression limit: the fraction of records that may be removed, ``0 .. 1`` (ARX's suppression limit).
    metric
        ``loss``, ``precision``, ``discernibility``, ``aecs`` or ``entropy``
        (:class:`~dashboard.core.utility.metrics.Metric`).
    max_nodes
        Refuse lattices larger than this.
    counts
        ``data`` is an aggregate with this column of record counts (see :class:`GeneralizationLattice`): the
        search, the levels, the loss and the suppressed records are those of the raw table, and ``transform.data``
        is the published aggregate (the generalized combinations that are kept, with their counts). Apply
        ``recipe`` to the rows, e.g. out of core with :func:`~dashboard.core.engines.streaming.apply_recipe_streaming`.

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
    targets = PrivacyTargets(k=k, l=l, t=t, sensitive=tuple(sensitive), t_distance=t_distance, max_risk=max_risk)
    targets.require_sensitive()
    metric = Metric.parse(metric)
    max_suppression = check_fraction(max_suppression, "max_suppression")
    lattice = GeneralizationLattice(
        data,
        hierarchies,
        quasi_identifiers=quasi_identifiers,
        sensitive=targets.sensitive,
        max_nodes=max_nodes,
        counts=counts,
    )
    best, checked = lattice.search(targets=targets, max_suppression=max_suppression, metric=metric)
    levels = dict(zip(lattice.quasi_identifiers, best.levels, strict=True))
    resolved = dict(zip(lattice.quasi_identifiers, lattice.hierarchies, strict=True))
    if counts is not None:
        return _aggregate_result(
            data, counts, lattice, best, checked, levels, resolved, targets, metric, max_suppression
        )
    transform = generalize(
        data,
        levels,
        resolved,
        suppress=targets if max_suppression > 0 else None,
        quasi_identifiers=list(levels),
    )
    published = transform.data
    classes = equivalence_classes(published, list(lattice.quasi_identifiers), sensitive=list(targets.sensitive))
    return SearchResult(
        levels=levels,
        suppressed=len(data) - len(published),
        metric=metric,
        value=best.value,
        k=classes.k,
        targets=targets,
        max_suppression=max_suppression,
        classes=classes,
        nodes_checked=checked,
        lattice_size=lattice.size,
        transform=transform,
    )
