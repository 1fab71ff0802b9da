"""Least-lossy full-domain generalization judged on *people* when a person has several rows.

With a person-id column (:mod:`privdash.measure.entities`) the generalization is applied to the rows, as
:func:`~privdash.transform.generalization.generalize` applies it, but the result is judged on the
person-level classes of the generalized rows: a class of people violates the targets (:class:`PrivacyTargets`:
``k`` and ``max_risk`` on the number of people, ``l`` and ``t`` on the (person, value) pairs) exactly as the
diagnosis with ``entity=`` measures it, and suppression removes *whole people* (every row of every person of a
violating class; ``t`` is judged again on the people left, round by round, as
:func:`~privdash.transform.generalization.suppressed_classes` does). A node of the lattice satisfies the targets
when the people suppressed number at most ``floor(max_suppression * people)`` and some people are published. Among
satisfying nodes the one of least information loss (:func:`~privdash.utility.metrics.information_loss` of the
published rows against the input rows, suppressed rows counted as the metric counts them) is chosen; ties: least
total level, then levels in lexicographic order.

Search: every node of the lattice, up to ``max_nodes``. Under generalization the keys of two people that are equal
stay equal (the image of equal sets, or multisets, of tuples), so classes of people only merge, and without ``t`` the
people violating ``k``, ``l`` or ``max_risk`` at a node include those of every coarser node: nodes are visited from the
most general down, and a node finer than one that fails (beyond the limit) is marked failing without being counted.
The loop runs over nodes, never over rows or people.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdash.constants import DEFAULT_MAX_PEOPLE_NODES
from privdash.errors import ColumnError, ParameterError, check_columns, check_fraction, check_positive_int
from privdash.measure.entities import EntityKey, entity_classes, entity_columns
from privdash.search.lattice import NoSolutionError
from privdash.targets import DEFAULT_MAX_SUPPRESSION, PrivacyTargets
from privdash.transform.generalization import generalize, suppressed_classes
from privdash.transform.hierarchy import Hierarchy
from privdash.transform.steps import Recipe, TransformResult
from privdash.utility.metrics import Metric, information_loss

__all__ = ["DEFAULT_MAX_PEOPLE_NODES", "PeopleSearchResult", "people_generalization"]


@dataclass(frozen=True, eq=False)
class PeopleSearchResult:
    """The chosen node: its levels, the published rows, and what was counted.

    ``transform.data`` holds the generalized rows of the people kept (``transform.kept_rows`` their positions in the
    input); ``people``/``rows`` count the input, ``people_suppressed``/``rows_suppressed`` what was removed.
    """

    entity: str
    entity_key: EntityKey
    quasi_identifiers: tuple[str, ...]
    levels: Mapping[str, int]
    transform: TransformResult
    targets: PrivacyTargets
    metric: Metric
    value: float
    people: int
    rows: int
    people_suppressed: int
    rows_suppressed: int
    nodes: int
    nodes_counted: int

    @property
    def recipe(self) -> Recipe:
        """The fix as a recipe: one ``generalize`` step whose suppression removes whole people (re-applied in
        memory; no suppression limit is recorded, since the limit counts people and a recipe's check counts rows)."""
        return Recipe((self.transform.step,))

    def summary(self) -> dict[str, Any]:
        """JSON-able facts of the result."""
        return {
            "entity": self.entity,
            "entity_key": self.entity_key.value,
            "quasi_identifiers": list(self.quasi_identifiers),
            "levels": dict(self.levels),
            "targets": self.targets.to_dict(),
            "metric": self.metric.value,
            "value": self.value,
            "people": self.people,
            "rows": self.rows,
            "people_suppressed": self.people_suppressed,
            "rows_suppressed": self.rows_suppressed,
            "nodes": self.nodes,
            "nodes_counted": self.nodes_counted,
        }


def people_generalization(
    data: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    *,
    entity: str,
    quasi_identifiers: Sequence[str] | None = None,
    entity_key: str | EntityKey = EntityKey.SET,
    k: int = 2,
    l: int | None = None,  # noqa: E741
    t: float | None = None,
    sensitive: Sequence[str] = (),
    t_distance: str | None = None,
    max_risk: float | None = None,
    max_suppression: float = DEFAULT_MAX_SUPPRESSION,
    metric: str | Metric = Metric.LOSS,
    max_nodes: int = DEFAULT_MAX_PEOPLE_NODES,
) -> PeopleSearchResult:
    """The generalization levels and whole-people suppression of least information loss meeting the targets on
    people (see the module docstring).

    A QI without a hierarchy stays at level 0. Raises :class:`NoSolutionError` when no node satisfies the targets
    within the limit, :class:`ParameterError` for a lattice over ``max_nodes`` and the errors of
    :func:`~privdash.measure.entities.entity_classes` for a bad person id.
    """
    qis = check_columns(
        data, list(hierarchies) if quasi_identifiers is None else quasi_identifiers, role="quasi-identifier"
    )
    check_columns(data, [entity], role="person-id column")
    missing_hierarchy = [name for name in qis if name not in hierarchies]
    if missing_hierarchy:
        raise ParameterError(f"No hierarchy given for: {', '.join(repr(name) for name in missing_hierarchy)}.")
    targets = PrivacyTargets(k=k, l=l, t=t, sensitive=tuple(sensitive), t_distance=t_distance, max_risk=max_risk)
    targets.require_sensitive()
    entity_columns(entity, qis, targets.sensitive, None)  # the person id has no other role
    key = EntityKey.parse(entity_key)
    chosen_metric = Metric.parse(metric)
    max_suppression = check_fraction(max_suppression, "max_suppression")
    max_nodes = check_positive_int(max_nodes, "max_nodes")
    if not len(data):
        raise ParameterError("The table has no rows.")
    if data[entity].isna().any():
        raise ColumnError(
            f"{int(data[entity].isna().sum()):,} row(s) have no value in the person-id column '{entity}': every row "
            "must name the person it belongs to."
        )
    built = {name: hierarchies[name].for_values(data[name]) for name in qis}
    heights = [built[name].n_levels for name in qis]
    n_nodes = math.prod(heights)
    if n_nodes > max_nodes:
        raise ParameterError(
            f"The lattice has {n_nodes:,} nodes; the search on people counts at most {max_nodes:,}: give fewer "
            "quasi-identifiers or shorter hierarchies."
        )
    leaves = {name: built[name].leaf_codes(data[name]) for name in qis}
    base = data[[entity, *targets.sensitive]].reset_index(drop=True)

    def judge(levels: tuple[int, ...]) -> tuple[bool, np.ndarray, int]:
        """Whether the node satisfies, the rows removed, and the number of people removed."""
        columns = {}
        for name, level in zip(qis, levels, strict=True):
            leaf = leaves[name]
            codes = pd.Series(built[name].codes[level][np.maximum(leaf, 0)])
            columns[name] = codes.where(leaf >= 0)  # missing stays missing
        people = entity_classes(base.assign(**columns), entity, qis, entity_key=key, sensitive=targets.sensitive)
        classes = people.classes
        limit = math.floor(max_suppression * classes.n_records)
        bad = suppressed_classes(classes, targets, limit=limit)
        removed_people = int(classes.counts[bad].sum())
        assert classes.record_class is not None
        return removed_people <= limit and removed_people < classes.n_records, bad[classes.record_class], removed_people

    nodes = sorted(itertools.product(*(range(h) for h in heights)), key=lambda node: (-sum(node), node))
    failing = np.zeros((0, len(qis)), dtype=np.int64)
    monotone = targets.monotone_with_suppression
    best: tuple[float, int, tuple[int, ...]] | None = None
    best_removed = np.zeros(len(data), dtype=bool)
    best_people = 0
    counted = 0
    for node in nodes:
        vector = np.asarray(node, dtype=np.int64)
        if monotone and len(failing) and bool((failing >= vector).all(axis=1).any()):
            continue  # finer than a failing node: fails too
        counted += 1
        satisfied, removed, removed_people = judge(node)
        if not satisfied:
            if monotone:
                failing = np.vstack([failing, vector])
            continue
        published = _published(data, qis, node, built, removed)
        loss = information_loss(data, published.data, built, quasi_identifiers=qis, kept_rows=published.kept_rows)
        candidate = (loss.value(chosen_metric), sum(node), node)
        if best is None or candidate < best:
            best, best_removed, best_people = candidate, removed, removed_people
    if best is None:
        raise NoSolutionError(
            f"No generalization meets {', '.join(targets.names)} on people within the suppression limit of "
            f"{max_suppression:g} of the people; allow more suppression, give coarser hierarchies or lower the targets."
        )
    levels = dict(zip(qis, best[2], strict=True))
    # The published table as the recipe's step reproduces it: generalized, whole people of violating classes removed.
    transform = generalize(
        data,
        levels,
        built,
        suppress=targets,
        quasi_identifiers=qis,
        built_over_data=True,
        entity=entity,
        entity_key=key.value,
    )
    removed = np.ones(len(data), dtype=bool)
    removed[transform.kept_rows if transform.kept_rows is not None else np.arange(len(data))] = False
    if not np.array_equal(removed, best_removed):  # the same judgement: a mismatch is a bug, never a silent output
        raise AssertionError("The published table differs from the node's judgement.")
    transform = TransformResult(
        data=transform.data,
        step=transform.step,
        summary={**transform.summary, "people_suppressed": best_people},
        mapping=transform.mapping,
        kept_rows=transform.kept_rows,
    )
    return PeopleSearchResult(
        entity=entity,
        entity_key=key,
        quasi_identifiers=tuple(qis),
        levels=levels,
        transform=transform,
        targets=targets,
        metric=chosen_metric,
        value=best[0],
        people=int(data[entity].nunique()),
        rows=len(data),
        people_suppressed=best_people,
        rows_suppressed=int(best_removed.sum()),
        nodes=n_nodes,
        nodes_counted=counted,
    )


def _published(
    data: pd.DataFrame,
    qis: Sequence[str],
    levels: Sequence[int],
    built: Mapping[str, Hierarchy],
    removed: np.ndarray,
) -> TransformResult:
    """The rows of the people kept, generalized to ``levels`` (``kept_rows``: their positions in ``data``)."""
    result = generalize(data, dict(zip(qis, levels, strict=True)), built, built_over_data=True)
    if not removed.any():
        return result
    kept = np.flatnonzero(~removed)
    summary = {**result.summary, "records_suppressed": int(removed.sum()), "rows_out": len(kept)}
    return TransformResult(
        data=result.data.iloc[kept], step=result.step, summary=summary, mapping=result.mapping, kept_rows=kept
    )
