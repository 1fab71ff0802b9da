"""Local recoding as a recipe step: each record published at the levels of the first class of a list it matches.

Registers the step kind ``"local_recoding"`` (see :mod:`privdash.transform.steps`), which records the result of
the local recoding search (:mod:`privdash.search.local`).

A per-record assignment of levels could not be re-applied to other data. The top-down search is a decision tree
(each split sends a record to a split-off child or to the remainder), and the step records its leaves as an ordered
list of classes: for each published class, its level per QI and its
published value per QI (the generalized values are the key). A record gets the levels of the *first* class in the
list whose values equal the record's own values generalized to that class's levels. The list is in the tree's
depth-first order with split-off children before their remainder, so the first match is the partition the search
put the record in: on the table the search ran on, the step reproduces the published table exactly; on other data
with the same schema, each record follows the same tree. A record that matches no class (a combination of
missing values the search never saw) is suppressed. With ``suppress``, classes violating the targets in the
result are then suppressed, as the ``"generalize"`` step does, again until none does (t compares each class with the
distribution of the records left, which suppression changes)::

    {"kind": "local_recoding",
     "params": {"quasi_identifiers": ["age", "sex"],
                "hierarchies": {"age": {"rows": [...]}, "sex": {"rows": [...]}},
                "classes": {"levels": [[1, 0], [2, 1]], "values": [["35-39", "Male"], ["30-39", "*"]]},
                "suppress": {"k": 5, ...}}}

"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import ParameterError, check_columns
from privdash.measure.classes import equivalence_classes
from privdash.targets import PrivacyTargets
from privdash.transform.hierarchy import Hierarchy, HierarchyError
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = ["apply_local_recoding", "factorize_rows", "local_recoding_step"]


def factorize_rows(codes: np.ndarray) -> np.ndarray:
    """One id per distinct row of an integer matrix (ids in order of first appearance)."""
    if codes.shape[1] == 0:
        return np.zeros(len(codes), dtype=np.int64)
    key = np.zeros(len(codes), dtype=np.int64)
    for column in codes.T:
        key, _ = pd.factorize(key * (int(column.max()) + 1) + column)
        key = np.asarray(key, dtype=np.int64)
    return key


def apply_local_recoding(
    data: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    classes: Mapping[str, Sequence[Sequence[Any]]],
    *,
    quasi_identifiers: Sequence[str],
    suppress: PrivacyTargets | None = None,
    built_over_data: bool = False,
) -> TransformResult:
    """Publish each record at the levels of the first class of ``classes`` it matches (module docstring).

    ``classes`` holds ``levels`` and ``values``, one list per class in the order of the search's tree; records that
    match no class are suppressed; with ``suppress``, so are the records of classes violating the targets in the
    result. The summary has ``classes``, ``unmatched``, ``records_suppressed``, ``rows_in``, ``rows_out`` and, per
    QI, the records at each level (``levels``).
    """
    qis = list(check_columns(data, list(quasi_identifiers), role="quasi-identifier"))
    missing_hierarchy = [c for c in qis if c not in hierarchies]
    if missing_hierarchy:
        raise HierarchyError(f"No hierarchy given for: {', '.join(repr(c) for c in missing_hierarchy)}.")
    levels = np.asarray(classes.get("levels", []), dtype=object)
    values = classes.get("values", [])
    if levels.ndim != 2 or levels.shape[1] != len(qis) or len(values) != len(levels):
        raise ParameterError(
            f"Local recoding: 'classes' needs 'levels' and 'values', one list of {len(qis)} entries (one per "
            "quasi-identifier) per class, as many of each."
        )
    if suppress is not None:
        suppress.require_sensitive()
    resolved = {c: hierarchies[c] if built_over_data else hierarchies[c].for_values(data[c]) for c in qis}
    n_classes = len(levels)
    level_matrix = np.zeros((n_classes, len(qis)), dtype=np.int64)
    class_codes = np.zeros((n_classes, len(qis)), dtype=np.int64)
    leaves = []
    for j, column in enumerate(qis):
        hierarchy = resolved[column]
        level_matrix[:, j] = [hierarchy.check_level(v, f"Level of '{column}'") for v in levels[:, j]]
        given = pd.Series([row[j] for row in values], dtype=object)
        codes = np.full(n_classes, -2, dtype=np.int64)
        for level in np.unique(level_matrix[:, j]).tolist():
            at = level_matrix[:, j] == level
            codes[at] = hierarchy.codes_for(given[at], level, strict=False)
        if (codes == -2).any():
            bad = given[codes == -2].iloc[0]
            raise HierarchyError(f"Local recoding: the value {bad!r} of '{column}' is not a label of its hierarchy.")
        class_codes[:, j] = codes
        leaves.append(hierarchy.leaf_codes(data[column]))
    leaf_matrix = np.column_stack(leaves) if leaves else np.zeros((len(data), 0), dtype=np.int64)
    # Distinct combinations of the records' leaves, each matched once.
    combo = factorize_rows(leaf_matrix + 1)
    n_combos = int(combo.max()) + 1 if len(combo) else 0
    representative = np.zeros(n_combos, dtype=np.int64)
    representative[combo] = np.arange(len(combo))
    combo_leaves = leaf_matrix[representative]
    match = np.full(n_combos, n_classes, dtype=np.int64)
    vectors, which = np.unique(level_matrix, axis=0, return_inverse=True)
    which = which.reshape(-1)
    ancestors = [
        [_ancestor(resolved[c], level, combo_leaves[:, j]) for level in range(resolved[c].n_levels)]
        for j, c in enumerate(qis)
    ]
    for index, vector in enumerate(vectors.tolist()):
        # One key per combination of codes at these levels (missing as one more code), classes and records alike.
        members = np.flatnonzero(which == index)
        radices = [len(resolved[c].labels[level]) + 1 for c, level in zip(qis, vector, strict=True)]
        at_levels = np.column_stack([ancestors[j][level] for j, level in enumerate(vector)])
        if math.prod(radices) < 2**62:
            class_key, combo_key = _mixed_radix(class_codes[members], radices), _mixed_radix(at_levels, radices)
        else:
            both = factorize_rows(np.concatenate([class_codes[members], at_levels]) + 1)
            class_key, combo_key = both[: len(members)], both[len(members) :]
        keys, first = np.unique(class_key, return_index=True)  # the first class of the list with each key
        position = np.minimum(np.searchsorted(keys, combo_key), len(keys) - 1)
        hit = keys[position] == combo_key
        match = np.where(hit, np.minimum(match, members[first[position]]), match)
    record_class = match[combo] if len(combo) else np.zeros(0, dtype=np.int64)
    matched = record_class < n_classes
    out = data.copy()
    record_levels = level_matrix[np.minimum(record_class, max(n_classes - 1, 0))] if n_classes else None
    summary_levels: dict[str, dict[str, int]] = {}
    for j, column in enumerate(qis):
        hierarchy = resolved[column]
        leaf = leaf_matrix[:, j]
        published = data[column].to_numpy(dtype=object).copy()
        level_of = record_levels[:, j] if record_levels is not None else np.zeros(len(data), dtype=np.int64)
        for level in range(1, hierarchy.n_levels):
            at = matched & (level_of == level) & (leaf >= 0)
            if at.any():
                published[at] = np.asarray(hierarchy.labels[level].take(hierarchy.codes[level][leaf[at]]), dtype=object)
        if (level_of[matched] > 0).any():
            out[column] = pd.Series(published, index=data.index, dtype=object)
        used, times = np.unique(level_of[matched], return_counts=True)
        summary_levels[column] = {str(u): int(c) for u, c in zip(used.tolist(), times.tolist(), strict=True)}
    keep = matched.copy()
    # Suppression changes the distribution t compares with: repeat until the records left meet the targets.
    while suppress is not None and keep.any():
        kept = out.iloc[np.flatnonzero(keep)]
        found = equivalence_classes(kept, qis, sensitive=list(suppress.sensitive))
        assert found.record_class is not None
        bad = suppress.class_violations(found)[found.record_class]
        if not bad.any():
            break
        keep[np.flatnonzero(keep)[bad]] = False
    kept_rows = None
    if not keep.all():
        kept_rows = np.flatnonzero(keep)
        out = out.iloc[kept_rows]
    params: dict[str, Any] = {
        "quasi_identifiers": qis,
        "hierarchies": {c: resolved[c].to_dict() for c in qis},
        "classes": {"levels": level_matrix.tolist(), "values": [list(v) for v in values]},
    }
    if suppress is not None:
        params["suppress"] = suppress.to_dict()
    summary = {
        "classes": n_classes,
        "levels": summary_levels,
        "unmatched": int((~matched).sum()),
        "records_suppressed": len(data) - len(out),
        "rows_in": len(data),
        "rows_out": len(out),
    }
    return TransformResult(data=out, step=Step("local_recoding", params), summary=summary, kept_rows=kept_rows)


def _mixed_radix(codes: np.ndarray, radices: Sequence[int]) -> np.ndarray:
    """One integer per row of codes (``-1``, missing, as the last code of each radix)."""
    key = np.zeros(len(codes), dtype=np.int64)
    for j, radix in enumerate(radices):
        key = key * radix + np.where(codes[:, j] < 0, radix - 1, codes[:, j])
    return key


def _ancestor(hierarchy: Hierarchy, level: int, leaf: np.ndarray) -> np.ndarray:
    """The code at ``level`` of each leaf code; missing (``-1``) stays ``-1``."""
    return np.where(leaf < 0, -1, hierarchy.codes[level][np.maximum(leaf, 0)])


@register_step("local_recoding")
def local_recoding_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    """The ``"local_recoding"`` step: ``quasi_identifiers``, ``hierarchies``, ``classes`` and optional ``suppress``
    (module docstring)."""
    unknown = sorted(set(params) - {"quasi_identifiers", "hierarchies", "classes", "suppress"})
    if unknown:
        raise ParameterError(
            f"Step 'local_recoding': unknown parameter(s) {', '.join(unknown)}; use quasi_identifiers, hierarchies, "
            "classes, suppress."
        )
    qis = params.get("quasi_identifiers")
    specs = params.get("hierarchies")
    classes = params.get("classes")
    if not isinstance(qis, list) or not qis or not all(isinstance(c, str) for c in qis):
        raise ParameterError("Step 'local_recoding': 'quasi_identifiers' must be a list of column names.")
    if not isinstance(specs, Mapping) or not isinstance(classes, Mapping):
        raise ParameterError("Step 'local_recoding': give 'hierarchies' and 'classes' objects.")
    check_columns(data, qis, role="quasi-identifier")
    hierarchies = {}
    for name in qis:
        if name not in specs:
            raise HierarchyError(f"Step 'local_recoding': no hierarchy for '{name}'.")
        hierarchies[name] = Hierarchy.from_dict(specs[name], data[str(name)])
    suppress = params.get("suppress")
    targets = PrivacyTargets.from_dict(suppress) if suppress is not None else None
    return apply_local_recoding(
        data, hierarchies, classes, quasi_identifiers=qis, suppress=targets, built_over_data=True
    )
