"""Full-domain generalization: publish every value of a column at one level of its hierarchy.

Registers the step kind ``"generalize"`` (see :mod:`privdash.transform.steps`). Its JSON parameters::

    {"columns": {"age": {"level": 2, "hierarchy": {"rows": [["39", "35-39", "30-39", ...], ...]}},
                 "zip": {"level": 1, "hierarchy": {"rule": {"builder": "masking", "steps": 5, ...}}}},
     "suppress": {"k": 5, "l": null, "t": null, "sensitive": [], "t_distance": null, "max_risk": null},
     "quasi_identifiers": ["age", "zip", "sex"]}

With a person id (several rows per person), ``"entity": {"column": "patient_id", "key": "set"}`` judges the
``suppress`` targets on the person-level classes of the generalized rows (:mod:`privdash.measure.entities`)
and removes whole people: every row of every person of a violating class.

``columns`` gives the level of each generalized column and its hierarchy (a table, or a builder rule that is
rebuilt over the values of the data it is applied to, see :meth:`Hierarchy.for_values`). The optional
``suppress`` removes, after generalizing, every record whose equivalence class over ``quasi_identifiers`` (every
QI, generalized or not) violates the targets (:class:`~privdash.targets.PrivacyTargets`): the record
suppression of ARX's suppression limit. Missing values stay missing at every level.

*Judged as published.* t-closeness compares each class with the distribution of the records published, and removing
classes changes that distribution, so a class within ``t`` of the whole table may be farther from the records left.
The suppression is therefore repeated (:func:`suppressed_classes`): the classes violating the targets are removed,
``t`` is judged again against the records left, and the classes now violating it are removed too, until none does.
Every class left then meets every target as the diagnosis of the published table measures it
(:meth:`~privdash.measure.diagnose.Diagnosis.check`). ``k``, ``l`` and ``max_risk`` depend on a class alone, so
without ``t`` one round is all there is. ``k_map`` and ``delta_presence`` are judged per class with the population
(a ``sampling_fraction`` parameter, else the sampling weights of the ``weights`` column), and the global targets
(``global_risk``, ``average_risk``, ``population_uniques``) on the records left, removing further classes in decreasing
order of risk until they are met (:mod:`privdash.transform.release_targets`); the step's JSON then also holds
``"weights"``, ``"sampling_fraction"`` and ``"household"`` (the household-id column of ``household_risk``) when given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import ParameterError, check_columns
from privdash.measure.classes import (
    EquivalenceClasses,
    MissingPolicy,
    SensitiveDistribution,
    equivalence_classes,
    equivalence_classes_from_aggregate,
)
from privdash.measure.entities import EntityKey, entity_classes
from privdash.targets import GLOBAL_TARGETS, POPULATION_TARGETS, PrivacyTargets
from privdash.transform.hierarchy import Hierarchy, HierarchyError, canonical_text
from privdash.transform.release_targets import (
    Households,
    check_release_targets,
    global_suppression,
    population_violations,
)
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = ["generalization_step", "generalize", "kept_classes", "suppressed_classes"]


def generalize(
    data: pd.DataFrame,
    levels: Mapping[str, int],
    hierarchies: Mapping[str, Hierarchy],
    *,
    suppress: PrivacyTargets | None = None,
    quasi_identifiers: Sequence[str] | None = None,
    built_over_data: bool = False,
    entity: str | None = None,
    entity_key: str = "set",
    weights: str | None = None,
    sampling_fraction: float | None = None,
    household: str | None = None,
) -> TransformResult:
    """Generalize each column of ``levels`` to its level; optionally suppress records of violating classes.

    Parameters
    ----------
    data
        The table (not modified).
    levels
        Column -> level (0 publishes the column unchanged, ``max_level`` its most general value).
    hierarchies
        Column -> hierarchy, for every column in ``levels``. A rule-based hierarchy is rebuilt over the column's
        values; a table hierarchy must cover every non-missing value (else :class:`HierarchyError`).
    suppress
        Targets whose violating classes are removed: after generalizing, classes over ``quasi_identifiers``
        (missing values as a value of their own) are formed and every record of a class that violates any target
        is dropped (``kept_rows`` lists the rows kept), ``t`` judged against the records left, round by round
        (:func:`suppressed_classes`), so the published table meets the targets as its diagnosis measures them.
    quasi_identifiers
        Every quasi-identifier of the table, generalized or not; required with ``suppress``. Classes formed over
        the generalized columns alone would be larger than the real ones and suppress too little.
    weights, sampling_fraction
        The sampling-weight column and the sampling fraction ``pi`` the population targets and the weighted
        individual risk of ``suppress`` are judged with (:mod:`privdash.transform.release_targets`).
    household
        The household-id column ``household_risk`` of ``suppress`` is judged with.
    built_over_data
        The rule-based hierarchies were just built over these columns of ``data``, so they are not rebuilt (a
        postcode or date hierarchy over a large column costs a noticeable part of a second).
    entity, entity_key
        With ``suppress``: the person-id column; the targets are then judged on people (person key ``entity_key``,
        ``"set"`` or ``"multiset"``) and whole people are removed.

    Returns
    -------
    TransformResult
        ``data``: generalized columns hold the level's labels (text) except at level 0; the rest is unchanged.
        ``mapping``: one row per column and distinct original value. ``summary``: ``levels``,
        ``cells_changed`` (non-missing cells whose published text differs from the original's),
        ``records_suppressed``, ``rows_in``, ``rows_out``. ``step``: a ``"generalize"`` step with the
        hierarchies and targets resolved, which reproduces the result on this data.
    """
    columns = check_columns(data, list(levels), role="generalized column")
    qis: list[str] = []
    if suppress is not None:
        if quasi_identifiers is None:
            raise ParameterError(
                "generalize(..., suppress=...) needs quasi_identifiers=[...]: the classes whose records are "
                "suppressed are formed over every quasi-identifier, not only the generalized columns."
            )
        qis = list(check_columns(data, list(quasi_identifiers), role="quasi-identifier"))
        suppress.require_sensitive()
        if weights is not None:
            check_columns(data, [weights], role="weight column")
        if household is not None:
            check_columns(data, [household], role="household-id column")
        check_release_targets(
            suppress,
            weighted=weights is not None,
            sampling_fraction=sampling_fraction,
            households=household is not None,
        )
    elif entity is not None:
        raise ParameterError("generalize(..., entity=...) judges the suppression on people: give suppress=... too.")
    if entity is not None:
        entity_key = EntityKey.parse(entity_key).value
        assert suppress is not None
        beyond = [name for name in (*GLOBAL_TARGETS, *POPULATION_TARGETS) if getattr(suppress, name) is not None]
        if beyond or household is not None or sampling_fraction is not None:
            raise ParameterError(
                "With a person id the suppression is judged on people for k, l, t and max_risk only; "
                f"{', '.join(beyond) or 'a household or population setting'} cannot be judged on people."
            )
    missing_hierarchy = [c for c in columns if c not in hierarchies]
    if missing_hierarchy:
        raise HierarchyError(f"No hierarchy given for: {', '.join(repr(c) for c in missing_hierarchy)}.")
    out = data.copy()
    mappings = []
    resolved: dict[str, Any] = {}
    cells_changed = 0
    for column in columns:
        hierarchy = hierarchies[column] if built_over_data else hierarchies[column].for_values(data[column])
        level = hierarchy.check_level(levels[column], f"Level of '{column}'")
        leaf = hierarchy.leaf_codes(data[column])
        present = np.unique(leaf[leaf >= 0])
        published_labels = hierarchy.labels[level].take(hierarchy.codes[level][present])
        changed = np.asarray(canonical_text(hierarchy.leaves[present])) != np.asarray(canonical_text(published_labels))
        if level > 0:
            codes = np.where(leaf < 0, -1, hierarchy.codes[level][np.maximum(leaf, 0)])
            values = hierarchy.labels[level].take(codes, allow_fill=True, fill_value=None)
            out[column] = pd.Series(np.asarray(values, dtype=object), index=data.index, dtype=object)
            per_leaf = np.zeros(hierarchy.n_leaves, dtype=np.int64)
            per_leaf[present] = changed
            cells_changed += int(per_leaf[leaf[leaf >= 0]].sum())
        originals = _original_values(data[column], leaf, present)
        mappings.append(
            pd.DataFrame(
                {
                    "column": column,
                    "original": pd.Series(originals, dtype=object),
                    "published": pd.Series(originals if level == 0 else np.asarray(published_labels), dtype=object),
                }
            )
        )
        resolved[column] = {"level": level, "hierarchy": hierarchy.to_dict()}
    mapping = pd.concat(mappings, ignore_index=True) if mappings else None
    params: dict[str, Any] = {"columns": resolved}
    kept_rows = None
    if suppress is not None:
        params["suppress"] = suppress.to_dict()
        params["quasi_identifiers"] = list(qis)
        if weights is not None:
            params["weights"] = weights
        if sampling_fraction is not None:
            params["sampling_fraction"] = sampling_fraction
        if household is not None:
            params["household"] = household
        if entity is not None:
            params["entity"] = {"column": entity, "key": entity_key}
            keep = ~_violating_people(out, entity, entity_key, qis, suppress)
        else:
            keep = ~_violating_records(out, qis, suppress, weights, sampling_fraction, household)
        if not keep.all():
            kept_rows = np.flatnonzero(keep)
            out = out.iloc[kept_rows]
    suppressed = len(data) - len(out)
    summary = {
        "levels": {c: resolved[c]["level"] for c in columns},
        "cells_changed": cells_changed,
        "records_suppressed": suppressed,
        "rows_in": len(data),
        "rows_out": len(out),
    }
    return TransformResult(
        data=out, step=Step("generalize", params), summary=summary, mapping=mapping, kept_rows=kept_rows
    )


def _original_values(values: pd.Series, leaf: np.ndarray, present: np.ndarray) -> np.ndarray:
    """One original data value per present leaf (the data's own representation, e.g. 39 rather than '39')."""
    rows = np.empty(len(present), dtype=np.int64)
    valid = np.flatnonzero(leaf >= 0)
    rows[np.searchsorted(present, leaf[valid])] = valid
    return np.asarray(values.to_numpy(dtype=object)[rows], dtype=object)


def _violating_records(
    data: pd.DataFrame,
    columns: list[str],
    targets: PrivacyTargets,
    weights: str | None = None,
    sampling_fraction: float | None = None,
    household: str | None = None,
) -> np.ndarray:
    """Boolean per row: its class over ``columns`` is suppressed for ``targets`` (:func:`suppressed_classes`; the
    classes are the core's own)."""
    if not len(data):
        return np.zeros(0, dtype=bool)
    classes = equivalence_classes(data, columns, sensitive=list(targets.sensitive), weights=weights)
    assert classes.record_class is not None
    households = (
        Households.from_records(data[household].reset_index(drop=True), classes.record_class)
        if household is not None and targets.household_risk is not None
        else None
    )
    violating = suppressed_classes(classes, targets, sampling_fraction=sampling_fraction, households=households)
    return violating[classes.record_class]


def _violating_people(
    data: pd.DataFrame, entity: str, key: str, columns: list[str], targets: PrivacyTargets
) -> np.ndarray:
    """Boolean per row: its person's class of people over ``columns`` is suppressed for ``targets``."""
    if not len(data):
        return np.zeros(0, dtype=bool)
    people = entity_classes(data, entity, columns, entity_key=key, sensitive=list(targets.sensitive))
    classes = people.classes
    violating = np.append(suppressed_classes(classes, targets), False)
    assert classes.record_class is not None
    return violating[classes.record_class]


def kept_classes(classes: EquivalenceClasses, keep: np.ndarray) -> EquivalenceClasses:
    """The classes ``keep`` selects (a boolean per class), as the diagnosis of a table of their records alone finds
    them: the same sizes and per-class sensitive counts, and each sensitive attribute's overall counts (the reference
    distribution of t-closeness) summed over the kept classes, values no longer present left out (so the ordered
    distance's ``m`` and ranks are those of the records kept). Needs classes that partition the records (the
    ``value`` or ``drop`` policy); no per-record classes."""
    if classes.missing_policy == MissingPolicy.WILDCARD:
        raise ParameterError("Classes under the wildcard policy overlap: removing some changes the sizes of others.")
    keep = np.asarray(keep, dtype=bool)
    index = np.flatnonzero(keep)
    compact = np.full(classes.n_classes, -1, dtype=np.int64)
    compact[index] = np.arange(len(index), dtype=np.int64)
    sensitive = {}
    for name, dist in classes.sensitive.items():
        take = keep[np.asarray(dist.class_index, dtype=np.int64)]
        values = np.asarray(dist.value_index, dtype=np.int64)[take]
        counts = np.asarray(dist.counts, dtype=np.int64)[take]
        overall = np.bincount(values, weights=counts, minlength=dist.n_values).astype(np.int64)
        used = np.flatnonzero(overall > 0)
        remap = np.full(dist.n_values, -1, dtype=np.int64)
        remap[used] = np.arange(len(used), dtype=np.int64)
        sensitive[name] = SensitiveDistribution(
            name=dist.name,
            labels=dist.labels[used],
            ordered=dist.ordered,
            class_index=compact[np.asarray(dist.class_index, dtype=np.int64)[take]],
            value_index=remap[values],
            counts=counts,
            overall=overall[used],
            n_classes=len(index),
        )
    return EquivalenceClasses(
        quasi_identifiers=classes.quasi_identifiers,
        missing_policy=classes.missing_policy,
        class_codes=classes.class_codes[index],
        categories=classes.categories,
        sizes=np.asarray(classes.sizes)[index],
        counts=np.asarray(classes.counts)[index],
        sensitive=sensitive,
        weight_sums=None if classes.weight_sums is None else classes.weight_sums[index],
    )


def suppressed_classes(
    classes: EquivalenceClasses,
    targets: PrivacyTargets,
    limit: int | None = None,
    *,
    sampling_fraction: float | None = None,
    households: Households | None = None,
) -> np.ndarray:
    """Boolean per class: its records are suppressed to meet ``targets`` (see the module docstring).

    The classes violating any target (``t`` against the distribution of all records) are removed; then, while some
    class left is farther than ``t`` from the distribution of the records left (:func:`kept_classes`), those classes
    are removed too. The classes left meet every target as the diagnosis of their records measures them. With
    ``limit``, the rounds stop as soon as more than ``limit`` records are removed (the suppression limit is
    exceeded whatever follows: removals only add up).

    ``k_map`` and ``delta_presence`` join the class-level targets (with ``F_j`` from ``sampling_fraction`` or the
    classes' weight sums); the global targets are then met by removing further classes in decreasing order of risk
    (:func:`~privdash.transform.release_targets.global_suppression`), and ``t`` judged again, until neither
    removes anything."""
    bad = np.asarray(targets.class_violations(classes), dtype=bool).copy()
    bad |= population_violations(classes, targets, sampling_fraction)
    if targets.t is None and not targets.judged_per_node:
        return bad
    counts = np.asarray(classes.counts)
    while True:
        before = bad.copy()
        while targets.t is not None and bad.any() and not bad.all():
            if limit is not None and int(counts[bad].sum()) > limit:
                return bad
            left = np.flatnonzero(~bad)
            farther = targets.violations_by_target(kept_classes(classes, ~bad), ("t",))["t"]
            if not farther.any():
                break
            bad[left[farther]] = True
        if limit is not None and int(counts[bad].sum()) > limit:
            return bad
        bad = global_suppression(classes, targets, bad, limit, sampling_fraction, households)
        if np.array_equal(bad, before) or bad.all():
            return bad


def violating_combinations(
    aggregate: pd.DataFrame, columns: Sequence[str], count: str, targets: PrivacyTargets
) -> pd.DataFrame:
    """The combinations of ``columns`` whose classes violate ``targets``, from an aggregate (one row per distinct
    combination of the QIs and the targets' sensitive attributes, ``count`` records each).

    The classes and the suppression (:func:`suppressed_classes`, ``t`` judged against the records left) are the
    same as :func:`_violating_records` finds on the raw rows, so removing the records of these combinations is the
    suppression of :func:`generalize`, computed without the rows.
    """
    if targets.judged_per_node:
        raise ParameterError(
            "The global and population targets (global_risk, average_risk, population_uniques, k_map, "
            "delta_presence) are judged on the records with their weights and population, which an aggregate of "
            "combinations does not carry: apply this recipe to the table in memory (--engine pandas)."
        )
    names = list(columns)
    classes = equivalence_classes_from_aggregate(aggregate, names, count=count, sensitive=list(targets.sensitive))
    violating = suppressed_classes(classes, targets)
    return classes.keys().loc[violating, names].reset_index(drop=True)


def without_combinations(data: pd.DataFrame, combinations: pd.DataFrame) -> np.ndarray:
    """Boolean per row of ``data``: its values in the columns of ``combinations`` are none of its rows (missing
    values match missing values, as they form one class)."""
    if not len(combinations) or not len(data):
        return np.ones(len(data), dtype=bool)
    names = list(combinations.columns)
    flagged = data[names].reset_index(drop=True).merge(combinations.assign(__flag=True), on=names, how="left")
    return np.asarray(flagged["__flag"].isna().to_numpy(), dtype=bool)


@register_step("generalize")
def generalization_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    """The ``"generalize"`` step: ``columns`` and optional ``suppress`` as in the module docstring."""
    known = {"columns", "suppress", "quasi_identifiers", "weights", "sampling_fraction", "household", "entity"}
    unknown = sorted(set(params) - known)
    if unknown:
        raise ParameterError(
            f"Step 'generalize': unknown parameter(s) {', '.join(unknown)}; use columns, suppress, quasi_identifiers, "
            "weights, sampling_fraction, household, entity."
        )
    columns = params.get("columns")
    suppress = params.get("suppress")
    if not isinstance(columns, Mapping) or not columns:
        raise ParameterError("Step 'generalize': 'columns' must be an object mapping column names to settings.")
    levels: dict[str, int] = {}
    hierarchies: dict[str, Hierarchy] = {}
    check_columns(data, list(columns), role="generalized column")
    for name, spec in columns.items():
        if not isinstance(spec, Mapping) or "level" not in spec or "hierarchy" not in spec:
            raise ParameterError(f"Step 'generalize', column '{name}': give a 'level' and a 'hierarchy'.")
        levels[name] = spec["level"]
        hierarchies[name] = Hierarchy.from_dict(spec["hierarchy"], data[str(name)])
    targets = PrivacyTargets.from_dict(suppress) if suppress is not None else None
    # Recipes list the quasi-identifiers; recipes written before they did listed every QI among the columns.
    qis = params.get("quasi_identifiers", list(levels) if targets is not None else None)
    person = params.get("entity")
    if person is not None and (not isinstance(person, Mapping) or not isinstance(person.get("column"), str)):
        raise ParameterError("Step 'generalize': 'entity' must be an object with the person-id 'column' (and 'key').")
    return generalize(
        data,
        levels,
        hierarchies,
        suppress=targets,
        quasi_identifiers=qis,
        built_over_data=True,
        entity=person["column"] if person is not None else None,
        entity_key=str(person.get("key", "set")) if person is not None else "set",
        weights=params.get("weights"),
        sampling_fraction=params.get("sampling_fraction"),
        household=params.get("household"),
    )
