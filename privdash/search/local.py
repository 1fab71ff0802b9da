"""Local recoding: a quasi-identifier generalized to different levels in different parts of the table.

Full-domain (global) recoding publishes every value of a column at one level of its hierarchy
(:mod:`privdash.search.lattice`). Local recoding lets the level vary from one group of records to another: the
records of a large group keep fine values, while a rare combination is generalized further, only where it is rare.

Method: top-down specialization over the hierarchies (Fung, Wang & Yu, "Top-down specialization for information and
privacy preservation", ICDE 2005; the multidimensional partitioning of LeFevre, DeWitt & Ramakrishnan, "Mondrian
multidimensional k-anonymity", ICDE 2006, with hierarchy nodes instead of numeric ranges)
-------------------------------------------------------------------------------------------------------------------
A *partition* is a set of records together with one hierarchy node per QI (a *box*); its records are published as
those nodes' labels, at the nodes' levels. A partition is *valid* when its records, as one class, meet the targets
(:class:`~privdash.targets.PrivacyTargets`: ``k``, ``max_risk``, distinct ``l``, ``t``).

*Start.* Two starting points are tried and the better end result is kept:

* the top: every record at the top node of every QI (one partition per pattern of missing values), and
* the global optimum (the full-domain search with the same targets and suppression limit, exact or, beyond the
  exact search's node limit, the heuristic one): one partition per class of the optimal node. Every split below
  lowers the loss, so the result is never worse than the global optimum.

Partitions that violate the targets at the start are suppressed (removed): the classes the global optimum
suppresses, or at the top the patterns of missing values too rare to meet the targets. This is where the
suppression limit is spent; the splits below suppress nothing.

*Specialize.* In each round, every partition tries each QI whose node is above the leaves: its records are grouped by
the child node (one level finer) of that QI. Children that are valid on their own are *split off* (they become
partitions at the child node); the other records stay together as the *remainder*, at the parent node. When the
remainder is non-empty but below the size the targets need, the smallest split-off children join it until it is large
enough. The split is allowed when at least one child is split off and the remainder is empty or valid. Of the allowed
splits of a partition, the one that lowers the metric most is made (a split that lowers it by nothing moves every
record to one child of the same leaves: a finer label at no cost, made too); all partitions split at once, and rounds
repeat until no partition can split (each split lowers a level, so this ends). Records of a remainder keep the
parent's label, distinct from its children's labels, so published classes are exactly the partitions (two partitions
could share labels only if a hierarchy repeated a label for different groups of leaves; the published table is checked
anyway, below).

*Metrics.* ``loss`` and ``precision`` are sums of per-cell costs (the normalized domain share of the published
value, or its level over the height; a suppressed record costs 1 per QI), so the gain of a split is exact and the
result's loss is at most the global optimum's. ``entropy`` uses the per-cell cost ``log2 c(g)``, the count over
the original records of the published node (the mixed-level value reported is ARX's, see
:mod:`privdash.utility.metrics`); ``discernibility`` and ``aecs`` use the change of ``sum f^2`` and of the
number of classes. The value reported is always that of :func:`~privdash.utility.metrics.information_loss`
on the published table, which reads each published value's level per record.

*Checked as published.* The published table is grouped into classes by the core's ordinary diagnosis
(:func:`~privdash.measure.classes.equivalence_classes`, over the published values, mixed levels included);
any class that violates a target there is suppressed, and the result is refused if the records removed in all
exceed the suppression limit.

The recipe step
---------------
The result is recorded as a ``"local_recoding"`` step (:mod:`privdash.transform.local_recoding`): the ordered
list of published classes (the leaves of the search's tree, in depth-first order with split-off children before
their remainder), each with its levels and published values. Re-applied, a record gets the levels of the first class
its values generalize to, so the table the search ran on is reproduced exactly and other data of the same schema
follows the same tree.

Local recoding publishes overlapping values (``35-39`` and ``30-39`` in one column). Each published class meets
the targets, but an attacker who knows the algorithm may learn from the remainder's coarser label that its records
are not in the split-off children (the minimality attack, Wong et al., "Minimality attack in privacy preserving
data publishing", VLDB 2007), as for any local recoding.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privdash.constants import RECODING_CHOICES
from privdash.errors import ParameterError, check_fraction
from privdash.measure.classes import (
    EquivalenceClasses,
    MissingPolicy,
    SensitiveDistribution,
    equivalence_classes,
)
from privdash.search.heuristic import heuristic_search
from privdash.search.lattice import (
    GeneralizationLattice,
    NoSolutionError,
    SearchResult,
    optimal_generalization,
    suppression_limit,
)
from privdash.targets import DEFAULT_MAX_SUPPRESSION, PrivacyTargets
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.local_recoding import apply_local_recoding, factorize_rows
from privdash.transform.steps import Recipe, TransformResult
from privdash.utility.metrics import InformationLoss, Metric, information_loss

__all__ = ["RECODING_CHOICES", "LocalRecodingResult", "anonymize", "local_recoding"]

#: Rounds of specialization at most (each round splits every partition that can split once).
_MAX_ROUNDS = 10_000


# --- encoding --------------------------------------------------------------------------------------------------------


@dataclass
class _Encoded:
    """The table at the finest node, as the lattice encoded it: one row per distinct combination of the QIs (leaf
    codes, missing as the code ``n_leaves``), its record count, and per QI the code and cost of every leaf's
    ancestor at every level (``code[j][level, leaf]``; missing keeps its own code, of cost 0)."""

    leaves: np.ndarray  # (J, q)
    counts: np.ndarray  # (J,)
    code: list[np.ndarray]  # per QI: (levels, leaves + 1)
    cost: list[np.ndarray]  # per QI: (levels, codes + 1), per record
    base: EquivalenceClasses  # the classes of the rows above (sensitive distributions for l and t)
    suppressed_cost: float  # cost of a suppressed record, summed over the QIs


def _encode(lattice: GeneralizationLattice, metric: Metric) -> _Encoded:
    """The lattice's finest class table with the per-level codes and per-cell costs of ``metric``."""
    bottom = lattice.bottom
    code, cost = [], []
    for index, hierarchy in enumerate(lattice.hierarchies):
        levels = hierarchy.n_levels
        width = max(len(labels) for labels in hierarchy.labels) + 1
        table = np.empty((levels, hierarchy.n_leaves + 1), dtype=np.int64)
        per_code = np.zeros((levels, width))
        counts = np.bincount(bottom.codes[:, index], weights=bottom.counts, minlength=hierarchy.n_leaves + 1)
        domain = hierarchy.n_leaves
        for level in range(levels):
            n_labels = len(hierarchy.labels[level])
            table[level] = np.append(hierarchy.codes[level], n_labels)
            if metric == Metric.LOSS and domain > 1:
                share = hierarchy.leaf_counts(level) / domain
                per_code[level, :n_labels] = (share - 1.0 / domain) / (1.0 - 1.0 / domain)
            elif metric == Metric.PRECISION and hierarchy.max_level > 0:
                per_code[level, :n_labels] = level / hierarchy.max_level
            elif metric == Metric.ENTROPY:
                grouped = np.bincount(hierarchy.codes[level], weights=counts[:-1], minlength=n_labels)
                per_code[level, :n_labels] = np.log2(np.maximum(grouped, 1.0))
        code.append(table)
        cost.append(per_code)
    if metric == Metric.ENTROPY:
        suppressed = len(lattice.hierarchies) * math.log2(max(lattice.n_records, 1))
    else:
        suppressed = float(len(lattice.hierarchies))
    return _Encoded(
        leaves=bottom.codes,
        counts=bottom.counts,
        code=code,
        cost=cost,
        base=lattice.classes((0,) * len(lattice.quasi_identifiers)),
        suppressed_cost=suppressed,
    )


def _reference(encoded: _Encoded, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Per sensitive attribute, the counts of its values over ``rows``: the distribution t-closeness compares with,
    that of the published records (the kept rows)."""
    kept = np.zeros(len(encoded.counts), dtype=bool)
    kept[rows] = True
    out = {}
    for name, dist in encoded.base.sensitive.items():
        take = kept[dist.class_index]
        out[name] = np.bincount(dist.value_index[take], weights=dist.counts[take], minlength=dist.n_values).astype(
            np.asarray(dist.overall).dtype
        )
    return out


def _group_classes(
    encoded: _Encoded, rows: np.ndarray, groups: np.ndarray, n_groups: int, reference: Mapping[str, np.ndarray]
) -> EquivalenceClasses:
    """The classes formed by ``groups`` (a group id per row of ``rows``, positions in the encoded table), with the
    sensitive distributions summed from the encoded rows and ``reference`` as the overall distributions."""
    base = encoded.base
    sizes = np.bincount(groups, weights=encoded.counts[rows], minlength=n_groups).astype(np.int64)
    of_row = np.full(len(encoded.counts), -1, dtype=np.int64)
    of_row[rows] = groups
    sensitive = {}
    for name, dist in base.sensitive.items():
        group = of_row[dist.class_index]
        keep = group >= 0
        m = dist.n_values
        pair = group[keep] * m + dist.value_index[keep]
        present, where = np.unique(pair, return_inverse=True)
        sums = np.bincount(where.reshape(-1), weights=dist.counts[keep], minlength=len(present)).astype(np.int64)
        sensitive[name] = SensitiveDistribution(
            name=name,
            labels=dist.labels,
            ordered=dist.ordered,
            class_index=present // m,
            value_index=present % m,
            counts=sums,
            overall=reference[name],
            n_classes=n_groups,
        )
    return EquivalenceClasses(
        quasi_identifiers=("partition",),
        missing_policy=MissingPolicy.VALUE,
        class_codes=np.arange(n_groups, dtype=np.int64)[:, None],
        categories=(pd.RangeIndex(n_groups),),
        sizes=sizes,
        counts=sizes,
        sensitive=sensitive,
    )


def _violating(
    encoded: _Encoded,
    targets: PrivacyTargets,
    rows: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    reference: Mapping[str, np.ndarray],
) -> np.ndarray:
    """Boolean per group: as one class, it violates the targets (an empty group violates nothing; t against the
    ``reference`` distributions)."""
    sizes = np.bincount(groups, weights=encoded.counts[rows], minlength=n_groups).astype(np.int64)
    bad = np.zeros(n_groups, dtype=bool)
    present = np.flatnonzero(sizes > 0)
    if targets.l is None and targets.t is None:
        bad[present] = targets.size_violations(sizes[present])
        return bad
    if len(present):
        compact = np.searchsorted(present, groups)
        bad[present] = targets.class_violations(_group_classes(encoded, rows, compact, len(present), reference))
    return bad


def _least_size(targets: PrivacyTargets, n: int) -> int:
    """The smallest class size the size-only targets (k, max_risk) allow."""
    sizes = np.arange(1, max(n, 1) + 1, dtype=np.int64)
    ok = np.flatnonzero(~targets.size_violations(sizes))
    return int(sizes[ok[0]]) if len(ok) else n + 1


# --- the search ------------------------------------------------------------------------------------------------------


@dataclass
class _State:
    """Partitions of the kept rows: rows (positions in the encoded table), their levels and partition, and each
    partition's rank in the tree's depth-first order."""

    rows: np.ndarray
    levels: np.ndarray  # (rows, q)
    partition: np.ndarray  # (rows,)
    rank: np.ndarray  # (partitions,)
    suppressed: int
    reference: Mapping[str, np.ndarray]  # value counts of the sensitive attributes over the kept rows
    rounds: int = 0


def _start(encoded: _Encoded, levels: Sequence[int], targets: PrivacyTargets, limit: int) -> _State | None:
    """Partitions at one node of the lattice (its classes); violating ones suppressed. None when they exceed the
    limit."""
    n_rows, q = encoded.leaves.shape
    node = np.asarray(levels, dtype=np.int64)
    level_rows = np.broadcast_to(node, (n_rows, q)).copy()
    codes = np.column_stack([encoded.code[j][node[j], encoded.leaves[:, j]] for j in range(q)])
    missing = np.column_stack([encoded.leaves[:, j] == encoded.code[j].shape[1] - 1 for j in range(q)])
    level_rows[missing] = 0  # a missing value stays missing: nothing to specialize
    groups = factorize_rows(codes)
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    # t compares each class with the distribution of the published records, which suppression changes: suppress
    # until no class violates the targets against the records that are left.
    keep = np.ones(n_rows, dtype=bool)
    while True:
        rows = np.flatnonzero(keep)
        reference = _reference(encoded, rows)
        bad = _violating(encoded, targets, rows, groups[rows], n_groups, reference)
        if not bad.any():
            break
        keep &= ~bad[groups]
        if int(encoded.counts[~keep].sum()) > limit:
            return None
    suppressed = int(encoded.counts[~keep].sum())
    kept_groups, compact = np.unique(groups[keep], return_inverse=True)
    return _State(
        rows=rows,
        levels=level_rows[keep],
        partition=compact.reshape(-1),
        rank=np.arange(len(kept_groups), dtype=np.int64),
        suppressed=suppressed,
        reference=reference,
    )


def _specialize(encoded: _Encoded, state: _State, targets: PrivacyTargets, metric: Metric, least: int) -> _State:
    """Rounds of splits until no partition can split (see the module docstring)."""
    q = encoded.leaves.shape[1]
    counts = encoded.counts
    while state.rounds < _MAX_ROUNDS:
        rows, levels, part = state.rows, state.levels, state.partition
        n_parts = len(state.rank)
        weight = counts[rows].astype(np.float64)
        sizes = np.bincount(part, weights=weight, minlength=n_parts)
        best_gain = np.full(n_parts, -1.0)
        best_column = np.full(n_parts, -1, dtype=np.int64)
        split_child = np.full((len(rows), q), -1, dtype=np.int64)  # per row and QI: its split-off child, or -1
        for j in range(q):
            can = np.flatnonzero(levels[:, j] > 0)  # a partition's rows share their levels: all or none can
            if not len(can):
                continue
            level = levels[can, j]
            leaf = encoded.leaves[rows[can], j]
            child_code = encoded.code[j][level - 1, leaf]
            key, _ = pd.factorize(part[can] * (encoded.code[j].max() + 2) + child_code)
            key = np.asarray(key, dtype=np.int64)
            n_children = int(key.max()) + 1
            child_part = np.zeros(n_children, dtype=np.int64)
            child_part[key] = part[can]
            child_size = np.bincount(key, weights=weight[can], minlength=n_children)
            ok = ~_violating(encoded, targets, rows[can], key, n_children, state.reference)
            # The smallest children that meet the targets join a remainder too small for the size targets.
            remainder = sizes - np.bincount(child_part, weights=child_size * ok, minlength=n_parts)
            need = np.where((remainder > 0) & (remainder < least), least - remainder, 0.0)
            order = np.lexsort((child_size, child_part))
            ordered_size = np.where(ok[order], child_size[order], 0.0)
            running = np.cumsum(ordered_size)
            first = np.r_[True, child_part[order][1:] != child_part[order][:-1]]
            before = running - ordered_size
            before -= np.maximum.accumulate(np.where(first, before, 0.0))  # within the partition
            padded = np.zeros(n_children, dtype=bool)
            padded[order] = ok[order] & (before < need[child_part[order]])
            split = ok & ~padded
            row_split = split[key]
            n_split = np.bincount(child_part, weights=split, minlength=n_parts)
            split_sizes = np.where(split, child_size, 0.0)
            rest = sizes - np.bincount(child_part, weights=split_sizes, minlength=n_parts)
            in_rest = np.ones(len(rows), dtype=bool)
            in_rest[can[row_split]] = False
            rest_bad = _violating(encoded, targets, rows[in_rest], part[in_rest], n_parts, state.reference)
            rest_ok = (rest <= 0) | ~rest_bad
            if metric == Metric.DISCERNIBILITY:
                gain = sizes**2 - np.bincount(child_part, weights=split_sizes**2, minlength=n_parts) - rest**2
            elif metric == Metric.AECS:
                gain = n_split + (rest > 0) - 1.0
            else:
                delta = encoded.cost[j][level, encoded.code[j][level, leaf]] - encoded.cost[j][level - 1, child_code]
                weighted = np.where(row_split, delta * weight[can], 0.0)
                gain = np.bincount(part[can], weights=weighted, minlength=n_parts)
            # A split of gain 0 moves all the records to one child of as many leaves: a finer label, free.
            valid = (n_split >= 1) & rest_ok & (gain >= -1e-12)
            better = valid & (gain > best_gain)
            best_gain[better] = gain[better]
            best_column[better] = j
            split_child[can[row_split], j] = key[row_split]
        if not (best_column >= 0).any():
            break
        column = best_column[part]
        chosen = np.where(column >= 0, split_child[np.arange(len(rows)), np.maximum(column, 0)], -1)
        moved = chosen >= 0
        levels = levels.copy()
        levels[np.flatnonzero(moved), column[moved]] -= 1
        # New partitions: (old partition, child) for split-off rows, (old partition, remainder) for the rest.
        sub = np.where(moved, chosen + 1, 0)
        combined, first_rows = np.unique(part * (len(rows) + 2) + sub, return_index=True)
        new_part = np.searchsorted(combined, part * (len(rows) + 2) + sub)
        old = part[first_rows]
        is_rest = sub[first_rows] == 0
        order = np.lexsort((sub[first_rows], is_rest, state.rank[old]))
        rank = np.empty(len(combined), dtype=np.int64)
        rank[order] = np.arange(len(combined))
        state = _State(rows, levels, new_part, rank, state.suppressed, state.reference, state.rounds + 1)
    return state


def _state_cost(encoded: _Encoded, state: _State, metric: Metric) -> float:
    """The search's own estimate of the metric (to pick the better start; the reported value is recomputed)."""
    counts = encoded.counts[state.rows].astype(np.float64)
    if metric in (Metric.DISCERNIBILITY, Metric.AECS):
        sizes = np.bincount(state.partition, weights=counts)
        n = float(encoded.counts.sum())
        if metric == Metric.DISCERNIBILITY:
            return float((sizes**2).sum() + n * state.suppressed)
        return n / (len(sizes) + (1 if state.suppressed else 0))
    total = state.suppressed * encoded.suppressed_cost
    for j in range(encoded.leaves.shape[1]):
        level = state.levels[:, j]
        codes = encoded.code[j][level, encoded.leaves[state.rows, j]]
        total += float(counts @ encoded.cost[j][level, codes])
    return total


# --- the step --------------------------------------------------------------------------------------------------------


def _class_spec(encoded: _Encoded, state: _State, hierarchies: Sequence[Hierarchy]) -> dict[str, list[list[Any]]]:
    """The ordered class list of the step: per partition (depth-first order), its levels and published values."""
    first = np.unique(state.partition, return_index=True)[1]
    order = np.argsort(state.rank)
    rows = state.rows[first][order]
    levels = state.levels[first][order]
    columns = []
    for j, hierarchy in enumerate(hierarchies):
        leaf = encoded.leaves[rows, j]
        missing = leaf == hierarchy.n_leaves
        codes = encoded.code[j][levels[:, j], leaf]
        column = np.empty(len(rows), dtype=object)
        for level in np.unique(levels[:, j]).tolist():
            at = (levels[:, j] == level) & ~missing
            column[at] = [_json_value(v) for v in hierarchy.labels[level].take(codes[at])]
        column[missing] = None
        columns.append(column)
    return {"levels": levels.tolist(), "values": np.column_stack(columns).tolist()}


def _json_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


# --- the public search -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LocalRecodingResult:
    """A local recoding and its published table.

    Attributes
    ----------
    levels
        Per QI, the records published at each level (``{"age": {1: 20000, 2: 8000}}``), over the kept records.
    suppressed
        Records removed.
    metric, value
        The metric minimized and its value on the published table
        (:func:`~privdash.utility.metrics.information_loss`, per-record levels).
    global_value, global_levels, global_search
        The global optimum with the same targets and suppression limit (the start of one of the two searches), and
        how it was found (``"exact"``, or ``"heuristic"`` beyond the exact search's node limit: then the best
        global solution found).
    start
        The start the result came from: ``"top"`` or ``"global"``.
    k
        Smallest class of the published table, by the core's diagnosis.
    classes
        Equivalence classes of the published table (the ordinary diagnosis, over the published values).
    information_loss
        All five metrics of the published table.
    transform
        The published table and the ``"local_recoding"`` step that reproduces it.
    rounds, seconds
        Rounds of specialization and wall time.
    """

    levels: Mapping[str, Mapping[int, int]]
    suppressed: int
    metric: Metric
    value: float
    global_value: float
    global_levels: Mapping[str, int]
    global_search: str
    start: str
    k: int
    targets: PrivacyTargets
    max_suppression: float
    classes: EquivalenceClasses
    information_loss: InformationLoss
    transform: TransformResult = field(repr=False)
    rounds: int = 0
    seconds: float = 0.0

    @property
    def data(self) -> pd.DataFrame:
        """The published table."""
        return self.transform.data

    @property
    def recipe(self) -> Recipe:
        """The recipe that re-applies this recoding (its class list) to this table or other data of its schema."""
        return Recipe((self.transform.step,), max_suppression=self.max_suppression or None)

    def summary(self) -> dict[str, Any]:
        """JSON-ready facts: the recoding, the levels used per QI, the metric and the global optimum beside it."""
        return {
            "recoding": "local",
            "levels": {c: {str(k): v for k, v in counts.items()} for c, counts in self.levels.items()},
            "suppressed": self.suppressed,
            "records": self.classes.n_records + self.suppressed,
            "metric": self.metric.value,
            "loss": self.value,
            "global_loss": self.global_value,
            "global_levels": dict(self.global_levels),
            "global_search": self.global_search,
            "start": self.start,
            "k": self.k,
            "classes": self.classes.n_classes,
            "targets": self.targets.to_dict(),
            "suppression_limit": self.max_suppression,
            "rounds": self.rounds,
            "seconds": self.seconds,
        }


def local_recoding(
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
) -> LocalRecodingResult:
    """Local recoding by top-down specialization over the hierarchies, meeting the targets on the published table.

    Parameters are those of :func:`~privdash.search.lattice.optimal_generalization`; see the module docstring
    for the method. Raises :class:`~privdash.search.lattice.NoSolutionError` when not even the most general
    levels meet the targets within the suppression limit.
    """
    started = time.perf_counter()
    targets = PrivacyTargets(k=k, l=l, t=t, sensitive=tuple(sensitive), t_distance=t_distance, max_risk=max_risk)
    targets.require_sensitive()
    metric = Metric.parse(metric)
    max_suppression = check_fraction(max_suppression, "max_suppression")
    lattice = GeneralizationLattice(data, hierarchies, quasi_identifiers=quasi_identifiers, sensitive=targets.sensitive)
    qis = list(lattice.quasi_identifiers)
    limit = suppression_limit(max_suppression, lattice.n_records)
    encoded = _encode(lattice, metric)
    least = _least_size(targets, lattice.n_records)
    if lattice.size <= lattice.max_nodes:
        outcome = lattice.search(targets=targets, max_suppression=max_suppression, metric=metric)
    else:
        outcome = heuristic_search(lattice, targets=targets, max_suppression=max_suppression, metric=metric)
    global_levels = tuple(int(v) for v in outcome.best.levels)
    starts = {"top": tuple(int(h) - 1 for h in lattice.heights), "global": global_levels}
    candidates = []
    for name, node in starts.items():
        state = _start(encoded, node, targets, limit)
        if state is None:
            continue
        state = _specialize(encoded, state, targets, metric, least)
        candidates.append((_state_cost(encoded, state, metric), name, state))
    if not candidates:
        raise NoSolutionError(f"No local recoding meets {targets.describe()} within the suppression limit.")
    _cost, start, state = min(candidates, key=lambda item: item[0])
    spec = _class_spec(encoded, state, lattice.hierarchies)
    resolved = dict(zip(qis, lattice.hierarchies, strict=True))
    transform = apply_local_recoding(
        data, resolved, spec, quasi_identifiers=qis, suppress=targets, built_over_data=True
    )
    published = transform.data
    suppressed = len(data) - len(published)
    if suppressed > limit:
        raise NoSolutionError(
            f"The local recoding removes {suppressed:,} records as published, more than the {limit:,} the "
            f"suppression limit allows; relax the targets or allow more suppression."
        )
    classes = equivalence_classes(published, qis, sensitive=list(targets.sensitive))
    metrics = information_loss(data, published, resolved, quasi_identifiers=qis, kept_rows=transform.kept_rows)
    per_level = {
        c: {int(key): value for key, value in counts.items()} for c, counts in transform.summary["levels"].items()
    }
    return LocalRecodingResult(
        levels=per_level,
        suppressed=suppressed,
        metric=metric,
        value=metrics.value(metric),
        global_value=float(outcome.best.value),
        global_levels=dict(zip(qis, global_levels, strict=True)),
        global_search=outcome.strategy,
        start=start,
        k=classes.k,
        targets=targets,
        max_suppression=max_suppression,
        classes=classes,
        information_loss=metrics,
        transform=transform,
        rounds=state.rounds,
        seconds=time.perf_counter() - started,
    )


def anonymize(
    data: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    *,
    recoding: str = "global",
    quasi_identifiers: Sequence[str] | None = None,
    k: int = 2,
    l: int | None = None,  # noqa: E741
    t: float | None = None,
    sensitive: Sequence[str] = (),
    t_distance: str | None = None,
    max_risk: float | None = None,
    max_suppression: float = DEFAULT_MAX_SUPPRESSION,
    metric: str | Metric = Metric.LOSS,
    **search_options: Any,
) -> SearchResult | LocalRecodingResult:
    """The least-lossy generalization meeting the targets, by ``recoding`` (one of :data:`RECODING_CHOICES`):
    ``"global"`` is :func:`~privdash.search.lattice.optimal_generalization` (``search_options`` such as
    ``search``, ``solutions``, ``counts`` go to it), ``"local"`` is :func:`local_recoding`, which takes none."""
    choice = str(recoding).lower()
    if choice not in RECODING_CHOICES:
        raise ParameterError(f"recoding must be one of {', '.join(RECODING_CHOICES)}, got {recoding!r}.")
    options: dict[str, Any] = {
        "quasi_identifiers": quasi_identifiers,
        "k": k,
        "l": l,
        "t": t,
        "sensitive": sensitive,
        "t_distance": t_distance,
        "max_risk": max_risk,
        "max_suppression": max_suppression,
        "metric": metric,
    }
    if choice == "global":
        return optimal_generalization(data, hierarchies, **options, **search_options)
    if search_options:
        raise ParameterError(
            f"Local recoding has its own search; {', '.join(sorted(search_options))} belong to the global one."
        )
    return local_recoding(data, hierarchies, **options)
