"""The fix a report describes: a recipe re-applied (:func:`recipe_fix`) or the least-lossy search
(:func:`search_fix`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from privdash.application.report.definitions import describe_targets
from privdash.application.report.model import AppliedFix
from privdash.data.contract import DataContract
from privdash.errors import ColumnError, ParameterError
from privdash.measure.entities import EntityKey
from privdash.search.entities import people_generalization
from privdash.search.lattice import optimal_generalization
from privdash.targets import DEFAULT_MAX_SUPPRESSION, PrivacyTargets
from privdash.transform.hierarchy import Hierarchy, HierarchyError, search_hierarchy
from privdash.transform.steps import Recipe, apply_recipe

__all__ = ["recipe_fix", "search_fix"]


def search_fix(
    data: pd.DataFrame,
    contract: DataContract,
    targets: PrivacyTargets,
    *,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    max_suppression: float = DEFAULT_MAX_SUPPRESSION,
    metric: str = "loss",
    population_size: float | None = None,
    sampling_fraction: float | None = None,
    entity_key: str = EntityKey.SET.value,
) -> AppliedFix:
    """The least-lossy generalization and record suppression meeting ``targets``
    (:func:`~privdash.search.lattice.optimal_generalization`), over ``hierarchies`` or, without them, the
    hierarchy the dashboard's search uses for each quasi-identifier's type
    (:func:`~privdash.transform.hierarchy.search_hierarchy`). With a global or population target
    (``global_risk``, ``k_map`` ...) the contract's weight column and ``population_size`` or ``sampling_fraction``
    give the population (:mod:`privdash.transform.release_targets`).

    With a person id in the contract (``contract.entity``) the search is judged on people
    (:func:`~privdash.search.entities.people_generalization`, ``entity_key`` the person key): k, l, t and
    max_risk count people, suppression removes whole people and ``max_suppression`` is a share of the people."""
    qis = list(contract.quasi_identifiers)
    if not qis:
        raise ColumnError("The least-lossy search needs at least one quasi-identifier.")
    if entity_key != EntityKey.SET.value and contract.entity is None:
        raise ParameterError(
            "The person key chooses how a person's rows form their key; the contract marks no person id."
        )
    if hierarchies is None:
        chosen = {name: search_hierarchy(data[name], contract[name].statistical_type, targets.k) for name in qis}
    else:
        chosen = {name: hierarchies[name] for name in qis if name in hierarchies}
        absent = [name for name in qis if name not in chosen]
        if absent:
            raise HierarchyError(f"No hierarchy given for: {', '.join(repr(name) for name in absent)}.")
    wants_sensitive = targets.l is not None or targets.t is not None
    if contract.entity is not None:
        return _people_fix(data, contract, targets, chosen, entity_key, max_suppression, metric, wants_sensitive)
    release: dict[str, Any] = {}
    if targets.judged_per_node:
        release = {
            "targets": replace(targets, sensitive=tuple(targets.sensitive or contract.sensitive))
            if wants_sensitive
            else replace(targets, sensitive=()),
            "weights": contract.weight,
            "population_size": population_size,
            "sampling_fraction": sampling_fraction,
        }
    sensitive = (targets.sensitive or contract.sensitive) if wants_sensitive else ()
    result = optimal_generalization(
        data,
        chosen,
        quasi_identifiers=qis,
        k=targets.k,
        l=targets.l,
        t=targets.t,
        sensitive=sensitive,
        t_distance=targets.t_distance,
        max_risk=targets.max_risk,
        max_suppression=max_suppression,
        metric=metric,
        **release,
    )
    description = (
        f"Least-lossy generalization meeting {describe_targets(result.targets, sensitive)}, with at most "
        f"{result.max_suppression:.2%} of the records suppressed (metric: {result.metric.value}); "
        f"{result.nodes_checked:,} of {result.lattice_size:,} lattice nodes checked."
    )
    return AppliedFix(
        description=description,
        recipe=result.recipe,
        data=result.data,
        kept_rows=_positions(result.transform.kept_rows),
        results=(result.transform,),
        hierarchies=chosen,
        search=result,
    )


def _people_fix(
    data: pd.DataFrame,
    contract: DataContract,
    targets: PrivacyTargets,
    hierarchies: Mapping[str, Hierarchy],
    entity_key: str,
    max_suppression: float,
    metric: str,
    wants_sensitive: bool,
) -> AppliedFix:
    """:func:`search_fix` with a person id: the least-lossy search judged on people."""
    entity = contract.entity
    assert entity is not None
    others = [name for name in targets.names if name not in ("k", "l", "t", "max_risk")]
    if others:
        raise ParameterError(
            f"The least-lossy search on people meets k, l, t and max_risk; {', '.join(others)} cannot be searched "
            f"with a person id ('{entity}'): leave them out of the targets of the fix."
        )
    sensitive = (targets.sensitive or contract.sensitive) if wants_sensitive else ()
    result = people_generalization(
        data,
        hierarchies,
        entity=entity,
        quasi_identifiers=list(contract.quasi_identifiers),
        entity_key=entity_key,
        k=targets.k,
        l=targets.l,
        t=targets.t,
        sensitive=sensitive,
        t_distance=targets.t_distance,
        max_risk=targets.max_risk,
        max_suppression=max_suppression,
        metric=metric,
    )
    description = (
        f"Least-lossy generalization meeting {describe_targets(result.targets, sensitive)} counted in people "
        f"(person id '{entity}', key: the {result.entity_key.value} of each person's QI tuples), with at most "
        f"{max_suppression:.2%} of the people suppressed, whole people (metric: {result.metric.value}); "
        f"{result.people_suppressed:,} people ({result.rows_suppressed:,} rows) suppressed; "
        f"{result.nodes_counted:,} of {result.nodes:,} lattice nodes checked."
    )
    return AppliedFix(
        description=description,
        recipe=result.recipe,
        data=result.transform.data,
        kept_rows=_positions(result.transform.kept_rows),
        results=(result.transform,),
        hierarchies=dict(hierarchies),
    )


def recipe_fix(
    data: pd.DataFrame, recipe: Recipe, *, name: str = "the recipe", secrets: Mapping[str, Any] | None = None
) -> AppliedFix:
    """``recipe`` re-applied to ``data`` (:func:`~privdash.transform.steps.apply_recipe`); ``secrets`` as
    there (the pseudonymization key)."""
    published, results = apply_recipe(data, recipe, secrets=secrets)
    kept: np.ndarray | None = None
    hierarchies: dict[str, Hierarchy] = {}
    for result in results:
        rows = _positions(result.kept_rows)
        if rows is not None:
            kept = rows if kept is None else kept[rows]
        if result.step.kind == "generalize":
            for column, spec in dict(result.step.params.get("columns", {})).items():
                if column in data.columns and column not in hierarchies:
                    hierarchies[str(column)] = Hierarchy.from_dict(spec["hierarchy"], data[str(column)])
    kinds = ", ".join(result.step.kind for result in results) or "no step"
    return AppliedFix(
        description=f"{name} re-applied: {len(results)} step{'s' if len(results) != 1 else ''} ({kinds}).",
        recipe=recipe,
        data=published,
        kept_rows=kept,
        results=tuple(results),
        hierarchies=hierarchies,
        wildcard=any(result.step.kind == "local_suppression" for result in results),
    )


def _positions(rows: Any) -> np.ndarray | None:
    return None if rows is None else np.asarray(rows, dtype=np.int64)
