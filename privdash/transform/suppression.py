"""Top and bottom coding, record suppression within the suppression limit, and cell (local) suppression.

Every function here is a pure step (see :mod:`privdash.transform.steps`): it returns a new table, the step with
every parameter resolved, a summary, and a value mapping where one exists.

Top and bottom coding (sdcMicro ``topBotCoding``)
    Values above a top threshold ``t`` are published as ``t``; values below a bottom threshold ``b`` as ``b``.
    The published ``t`` then reads "``t`` or more" (and ``b`` "``b`` or less"). The column stays numeric. With
    ``replacement="label"`` the column becomes text instead: every value ``>= t`` reads ``">= t"`` and every value
    ``<= b`` reads ``"<= b"``, the other values their number as text (whole numbers without ``.0``). A threshold
    can be given as a quantile of the non-missing values; it is resolved to an observed value (the inverted
    empirical CDF: the smallest value whose cumulative share reaches the quantile) and recorded as a number in the
    step. Missing values stay missing.

Record suppression (ARX's suppression limit, with a report instead of a refusal)
    The records of classes smaller than ``k`` are removed, smallest classes first (ties: the class listed first by
    :func:`~privdash.measure.classes.equivalence_classes`), as long as
    the total removed stays within ``max_suppression`` of the rows. A class that does not fit is kept whole, and so
    is every larger one; the summary says whether k was reached. ARX rejects such a transformation outright; we
    report it so the preview can show how far the suppression limit goes.

Cell (local) suppression (in the spirit of sdcMicro ``kAnon`` / ``localSuppression``)
    QI cells are set to missing until every record is in a class of at least ``k`` records under the *wildcard*
    policy (a missing cell matches any value; :mod:`privdash.measure.classes`). QIs are tried from the least to
    the most important. For the QI being tried, a violating record is a candidate when blanking that one cell would
    put it with at least ``k`` records; among the candidates that share all other QI values, records are blanked
    smallest class first, only until the rest of them reach ``k`` too (each blanked record joins every one of
    them). When no single cell helps any violating record, each violating record loses its least important
    remaining QI value, and the search repeats. Every round blanks at least one cell and a record with every QI
    blank matches all ``n >= k`` records, so the search ends. The number of blanked cells is minimised greedily,
    not optimally (the exact problem is NP-hard; Meyerson & Williams 2004).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privdash._deprecation import deprecated_alias
from privdash.errors import (
    ColumnError,
    ParameterError,
    check_columns,
    check_fraction,
    check_positive_int,
    format_values,
)
from privdash.measure.classes import MissingPolicy, equivalence_classes
from privdash.measure.encoding import encode_columns, group_rows
from privdash.targets import PrivacyTargets
from privdash.transform.release_targets import Households, global_suppression
from privdash.transform.steps import Step, TransformResult, register_step

__all__ = [
    "local_suppression",
    "record_suppression",
    "top_bottom_coding",
]


# --- top and bottom coding -----------------------------------------------------------------------------------------


def _number(value: Any) -> int | float:
    """A JSON-friendly number: an int when the value is whole."""
    number = float(value)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _label_number(value: float) -> str:
    number = _number(value)
    return str(number) if isinstance(number, int) else repr(number)


def _threshold(
    values: pd.Series, fixed: object, quantile: object, name: str
) -> tuple[int | float | None, float | None]:
    if fixed is not None and quantile is not None:
        raise ParameterError(f"Give either {name} or {name}_quantile, not both.")
    if quantile is not None:
        q = check_fraction(quantile, f"{name}_quantile")
        present = values.dropna().to_numpy(dtype=np.float64)
        if not len(present):
            raise ParameterError(f"Cannot resolve {name}_quantile: the column has no values.")
        return _number(np.quantile(present, q, method="inverted_cdf")), q
    if fixed is None:
        return None, None
    if isinstance(fixed, bool) or not isinstance(fixed, int | float | np.number) or not math.isfinite(float(fixed)):
        raise ParameterError(f"{name} must be a finite number, got {fixed!r}.")
    return _number(fixed), None


def top_bottom_coding(
    data: pd.DataFrame,
    /,
    *,
    column: str,
    top: float | None = None,
    bottom: float | None = None,
    top_quantile: float | None = None,
    bottom_quantile: float | None = None,
    replacement: str = "threshold",
) -> TransformResult:
    """Top- and/or bottom-code one numeric column (see the module docstring).

    Parameters
    ----------
    data
        The table; not modified.
    column
        A numeric column.
    top, bottom
        Thresholds: values strictly above ``top`` become ``top``, strictly below ``bottom`` become ``bottom``.
    top_quantile, bottom_quantile
        Thresholds as quantiles in [0, 1] of the non-missing values (instead of ``top`` / ``bottom``).
    replacement
        ``"threshold"`` (keep the column numeric) or ``"label"`` (text, ``">= t"`` / ``"<= b"``).

    Returns
    -------
    TransformResult
        ``step`` holds the resolved numeric thresholds; ``mapping`` one row per distinct recoded value;
        ``summary`` the thresholds, the quantiles asked for, and the number of cells top- and bottom-coded.
    """
    (name,) = check_columns(data, [column], role="column")
    series = data[name]
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise ColumnError(f"Top and bottom coding needs a numeric column; '{name}' holds {series.dtype} values.")
    if replacement not in ("threshold", "label"):
        raise ParameterError(f"replacement must be 'threshold' or 'label', got {replacement!r}.")
    top_value, top_q = _threshold(series, top, top_quantile, "top")
    bottom_value, bottom_q = _threshold(series, bottom, bottom_quantile, "bottom")
    if top_value is None and bottom_value is None:
        raise ParameterError("Give a top or a bottom threshold (or quantile).")
    if top_value is not None and bottom_value is not None and bottom_value > top_value:
        raise ParameterError(f"The bottom threshold {bottom_value} is above the top threshold {top_value}.")

    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    present = ~np.isnan(values)
    label = replacement == "label"
    # In label mode the threshold itself is relabelled too, so that the label describes every value it covers.
    top_mask = np.zeros(len(values), dtype=bool)
    bottom_mask = np.zeros(len(values), dtype=bool)
    if top_value is not None:
        top_mask = present & ((values >= top_value) if label else (values > top_value))
    if bottom_value is not None:
        bottom_mask = present & ((values <= bottom_value) if label else (values < bottom_value)) & ~top_mask
    out: pd.Series
    if label:
        whole = pd.api.types.is_float_dtype(series) and bool((series.dropna() % 1 == 0).all())
        # Floats that are whole numbers (a float column only because of gaps) are written without ".0".
        out = (series.astype("Int64") if whole else series).astype("str").where(series.notna())
        if top_value is not None:
            out[top_mask] = f">= {_label_number(top_value)}"
        if bottom_value is not None:
            out[bottom_mask] = f"<= {_label_number(bottom_value)}"
    else:
        out = series.copy()
        if top_value is not None:
            out = out.where(~top_mask, top_value)
        if bottom_value is not None:
            out = out.where(~bottom_mask, bottom_value)
    changed = top_mask | bottom_mask
    mapping = (
        pd.DataFrame({"column": name, "original": series[changed].to_numpy(), "published": out[changed].to_numpy()})
        .drop_duplicates(subset="original")
        .sort_values("original", kind="stable")
        .reset_index(drop=True)
    )
    result = data.copy()
    result[name] = out
    step = Step(
        "top_bottom_coding",
        {"column": name, "top": top_value, "bottom": bottom_value, "replacement": replacement},
    )
    summary = {
        "column": name,
        "top": top_value,
        "bottom": bottom_value,
        "top_quantile": top_q,
        "bottom_quantile": bottom_q,
        "cells_top_coded": int(top_mask.sum()),
        "cells_bottom_coded": int(bottom_mask.sum()),
        "replacement": replacement,
    }
    return TransformResult(result, step, summary, mapping)


# --- record suppression ------------------------------------------------------------------------------------------


#: The table-wide targets record suppression meets (the others need a population or generalization).
SUPPRESSION_RISK_TARGETS = ("global_risk", "household_risk", "average_risk")


def record_suppression(
    data: pd.DataFrame,
    /,
    *,
    quasi_identifiers: Sequence[str],
    max_suppression: float,
    k: int | None = None,
    missing: str = "value",
    orders: Mapping[str, Sequence[Any]] | None = None,
    violating: np.ndarray | None = None,
    risk_targets: Mapping[str, float] | None = None,
    weights: str | None = None,
    household: str | None = None,
) -> TransformResult:
    """Remove the records of small classes, smallest first, within the suppression limit (see the module
    docstring).

    Parameters
    ----------
    data
        The table; not modified.
    quasi_identifiers
        The QIs that form the classes.
    max_suppression
        Largest share of the rows that may be removed, in [0, 1] (``floor(max_suppression * n)`` rows).
    k
        Remove the records of classes with fewer than ``k`` records.
    missing
        Missing-value policy of the classes (``value``, ``wildcard`` or ``drop``). Under ``wildcard`` removing
        records can shrink other classes, so rounds repeat while the limit allows. Under ``drop``, records with a
        missing QI are out of scope and kept.
    orders
        Declared orders of ordinal QIs (only used to encode them).
    violating
        Instead of ``k``: a boolean per row marking records that violate a privacy model (e.g. the records of
        classes that are not l-diverse). The classes holding them are removed, smallest first. Not part of a
        reusable recipe (the step records ``k = None``).
    risk_targets
        Table-wide targets met after ``k`` (or alone): ``global_risk`` (sdcMicro ER/n), ``household_risk`` (ER_h/n,
        with ``household``) and ``average_risk`` (prosecutor average), as
        :class:`~privdash.targets.PrivacyTargets` defines them. While one fails, the classes of the riskiest
        records are removed first, within the suppression limit
        (:func:`~privdash.transform.release_targets.global_suppression`, the search's own rule); when the
        limit cannot meet them, nothing more is removed and ``target_reached`` is false.
    weights
        Sampling-weight column of the individual risks of ``global_risk`` and ``household_risk`` (``1 / f`` without).
    household
        Household-id column of ``household_risk``.

    Returns
    -------
    TransformResult
        ``data`` without the removed rows (original index and order kept); ``kept_rows`` their positions;
        ``summary`` with ``rows_removed``, ``classes_removed``, ``limit_rows``, ``target_reached`` and
        ``k_achieved`` (smallest class after removal; 0 for an empty result).
    """
    qis = check_columns(data, quasi_identifiers, role="quasi-identifier")
    fraction = check_fraction(max_suppression, "max_suppression")
    policy = MissingPolicy.parse(missing)
    goals = _risk_goals(risk_targets, household)
    if violating is not None and (k is not None or goals is not None):
        raise ParameterError("violating (a row mask) cannot go with k or risk targets.")
    if k is None and violating is None and goals is None:
        raise ParameterError(
            "Give a target: k (remove classes smaller than k), risk_targets (global_risk, household_risk, "
            "average_risk) or violating (a row mask)."
        )
    for name, role in ((weights, "weight column"), (household, "household-id column")):
        if name is not None:
            check_columns(data, [name], role=role)
    n = len(data)
    if k is not None:
        k = check_positive_int(k, "k", minimum=2)
    flags: np.ndarray | None = None
    if violating is not None:
        flags = np.asarray(violating)
        if flags.dtype != np.bool_ or flags.shape != (n,):
            raise ParameterError(f"violating must be a boolean array with one value per row ({n}).")
    limit = math.floor(fraction * n + 1e-9)
    step = Step(
        "record_suppression",
        {
            "quasi_identifiers": list(qis),
            "max_suppression": fraction,
            "k": k,
            "missing": policy.value,
            "orders": {name: list(v) for name, v in (orders or {}).items()},
            **(
                {"risk_targets": dict(risk_targets or {}), "weights": weights, "household": household}
                if goals is not None
                else {}
            ),
        },
    )
    kept = np.ones(n, dtype=bool)
    removed_classes = 0
    violating_before = -1
    while True:
        positions = np.flatnonzero(kept)
        classes = equivalence_classes(data.iloc[positions], qis, missing=policy, orders=orders)
        record_class = classes.record_class
        assert record_class is not None
        if flags is not None:
            target = np.zeros(classes.n_classes, dtype=bool)
            target[record_class[flags[positions] & (record_class >= 0)]] = True
        else:
            target = classes.sizes < (k or 1)
        bad = np.flatnonzero(target)
        still = int(classes.counts[bad].sum())
        if violating_before < 0:
            violating_before = still
        if not len(bad):
            break
        ranking = bad[np.lexsort((bad, classes.sizes[bad]))]
        spent = n - len(positions)
        fits = ranking[np.cumsum(classes.counts[ranking]) <= limit - spent]
        if not len(fits):
            # Classes are tried smallest first, so no larger one fits either. Under ``wildcard`` a removal can
            # shrink other classes, hence the rounds; under the other policies the second round ends here.
            break
        kept[positions[np.isin(record_class, fits)]] = False
        removed_classes += len(fits)
    risk_reached = True
    if goals is not None and len(positions):
        # the table-wide targets, on the records the size target left (their classes no longer change)
        published = data.iloc[positions]
        classes = equivalence_classes(published, qis, missing=policy, orders=orders, weights=weights)
        assert classes.record_class is not None
        homes = Households.from_records(published[household], classes.record_class) if household is not None else None
        room = limit - (n - len(positions))
        extra = global_suppression(classes, goals, np.zeros(classes.n_classes, dtype=bool), room, None, homes)
        if extra.all() and int(classes.counts.sum()) > room:  # the targets cannot be met within the limit
            risk_reached = False
        elif extra.any():
            drop = np.isin(classes.record_class, np.flatnonzero(extra))
            kept[positions[drop]] = False
            removed_classes += int(extra.sum())
            positions = np.flatnonzero(kept)
            classes = equivalence_classes(data.iloc[positions], qis, missing=policy, orders=orders)
    summary = {
        "rows": n,
        "rows_removed": int(n - len(positions)),
        "classes_removed": removed_classes,
        "limit_rows": limit,
        "records_violating_before": violating_before,
        "records_still_violating": still,
        "target_reached": still == 0 and risk_reached,
        "k": k,
        "k_achieved": classes.k,
    }
    return TransformResult(data.iloc[positions].copy(), step, summary, None, positions)


# --- cell (local) suppression --------------------------------------------------------------------------------------


def _row_keys(matrix: np.ndarray) -> np.ndarray:
    """An int64 key per row of an integer matrix (codes >= -1), equal iff the rows are equal."""
    if matrix.shape[1] == 0:
        return np.zeros(len(matrix), dtype=np.int64)
    shifted = matrix.astype(np.int64) + 1
    radices = shifted.max(axis=0) + 1 if len(matrix) else np.ones(matrix.shape[1], np.int64)
    if float(np.prod(radices.astype(np.float64))) < 2.0**62:
        return np.asarray(np.ravel_multi_index(shifted.T, tuple(int(r) for r in radices)), dtype=np.int64)
    return np.unique(shifted, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _compatible_counts(query: np.ndarray, source: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """For each query pattern, the total weight of the source patterns compatible with it.

    Two patterns (rows of QI codes, ``-1`` = missing) are compatible when on every QI they agree or either is
    missing: the wildcard class size of :func:`privdash.measure.classes.equivalence_classes`. Patterns are
    bucketed by their set of missing QIs and every pair of buckets is joined on the QIs observed in both.
    """
    out = np.zeros(len(query), dtype=np.float64)
    if not len(query) or not len(source):
        return out
    m = query.shape[1]
    powers = 1 << np.arange(m, dtype=np.int64)
    query_bits = ((query < 0) * powers).sum(axis=1)
    source_bits = ((source < 0) * powers).sum(axis=1)
    source_masks = np.unique(source_bits)
    source_rows = {int(mask): np.flatnonzero(source_bits == mask) for mask in source_masks}
    for query_mask in np.unique(query_bits).tolist():
        rows_q = np.flatnonzero(query_bits == query_mask)
        for source_mask, rows_s in source_rows.items():
            shared = np.flatnonzero(((query_mask | source_mask) >> np.arange(m)) & 1 == 0)
            if not len(shared):
                out[rows_q] += weights[rows_s].sum()
                continue
            keys = _row_keys(np.vstack([query[np.ix_(rows_q, shared)], source[np.ix_(rows_s, shared)]]))
            query_keys, source_keys = keys[: len(rows_q)], keys[len(rows_q) :]
            unique_keys, inverse = np.unique(source_keys, return_inverse=True)
            totals = np.bincount(inverse.reshape(-1), weights=weights[rows_s], minlength=len(unique_keys))
            where = np.searchsorted(unique_keys, query_keys)
            where = np.minimum(where, len(unique_keys) - 1)
            hit = unique_keys[where] == query_keys
            out[rows_q[hit]] += totals[where[hit]]
    return out


def _merge_patterns(
    patterns: np.ndarray, counts: np.ndarray, row_pattern: np.ndarray, sizes: np.ndarray, active: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merge identical patterns; return patterns, counts, row mapping, sizes and which sizes must be recomputed."""
    keys = _row_keys(patterns)
    unique_keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    merged = patterns[first]
    merged_counts = np.bincount(inverse, weights=counts, minlength=len(unique_keys)).astype(np.int64)
    merged_active = np.bincount(inverse, weights=active.astype(np.float64), minlength=len(unique_keys)) > 0
    merged_sizes = np.zeros(len(unique_keys), dtype=np.float64)
    np.maximum.at(merged_sizes, inverse, sizes)
    return merged, merged_counts, inverse[row_pattern], merged_sizes, merged_active


def _default_importance(data: pd.DataFrame, qis: tuple[str, ...]) -> list[str]:
    """sdcMicro's default: QIs with fewer distinct values are more important (ties: the given order)."""
    distinct = [int(data[name].nunique(dropna=True)) for name in qis]
    ranking = sorted(range(len(qis)), key=lambda i: (distinct[i], i))
    return [qis[i] for i in ranking]


def local_suppression(
    data: pd.DataFrame,
    /,
    *,
    quasi_identifiers: Sequence[str],
    k: int,
    importance: Sequence[str] | None = None,
    orders: Mapping[str, Sequence[Any]] | None = None,
) -> TransformResult:
    """Blank QI cells until the table is k-anonymous under the wildcard policy (see the module docstring).

    Parameters
    ----------
    data
        The table; not modified.
    quasi_identifiers
        The QI columns.
    k
        Target class size (at least 2).
    importance
        The QIs from most to least important; the least important are blanked first. Default (sdcMicro's): QIs
        with fewer distinct values first.
    orders
        Declared orders of ordinal QIs (only used to encode them).

    Returns
    -------
    TransformResult
        Same rows and order; blanked cells are missing (integer columns become the nullable ``Int64`` dtype so
        their values stay whole). ``summary``: ``cells_suppressed`` per QI and in total, ``records_affected``,
        ``k_achieved`` (smallest wildcard class of the output), ``rounds``. An empty table is returned unchanged.

    Raises
    ------
    ParameterError
        k < 2, a table with fewer than k rows (k cannot be reached), an importance list that is not a
        permutation of the QIs.
    """
    qis = check_columns(data, quasi_identifiers, role="quasi-identifier")
    k = check_positive_int(k, "k", minimum=2)
    if importance is None:
        ranked = _default_importance(data, qis)
    else:
        ranked = list(importance)
        if sorted(map(str, ranked)) != sorted(qis) or len(ranked) != len(qis):
            raise ParameterError(
                f"importance must list every quasi-identifier exactly once; got {format_values(ranked)} for "
                f"{format_values(list(qis))}."
            )
    step = Step(
        "local_suppression",
        {
            "quasi_identifiers": list(qis),
            "k": k,
            "importance": ranked,
            "orders": {name: list(v) for name, v in (orders or {}).items()},
        },
    )
    n = len(data)
    if n == 0:
        return TransformResult(data.copy(), step, {"k": k, "k_achieved": 0, "cells_suppressed": 0})
    if n < k:
        raise ParameterError(f"The table has {n} rows, fewer than k = {k}: k-anonymity cannot be reached.")
    encoded = encode_columns(data, qis, orders=orders)
    grouping = group_rows(encoded)
    original = grouping.group_codes.copy()
    patterns = grouping.group_codes.copy()
    counts = grouping.sizes.astype(np.int64)
    row_pattern = grouping.row_group.astype(np.int64)
    sizes = _compatible_counts(patterns, patterns, counts.astype(np.float64))
    # Columns to try, least important first.
    trial = [qis.index(name) for name in reversed(ranked)]
    rounds = 0
    while (sizes < k).any():
        rounds += 1
        progress = False
        for j in trial:
            violating = np.flatnonzero(sizes < k)
            if not len(violating):
                break
            candidates = violating[patterns[violating, j] >= 0]
            if not len(candidates):
                continue
            reduced = patterns[candidates].copy()
            reduced[:, j] = -1
            helpful = _compatible_counts(reduced, patterns, counts.astype(np.float64)) >= k
            if not helpful.any():
                continue
            candidates, reduced = candidates[helpful], reduced[helpful]
            group = _row_keys(reduced)
            ranking = np.lexsort((candidates, sizes[candidates], group))
            candidates, group = candidates[ranking], group[ranking]
            running = np.cumsum(counts[candidates])
            starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
            before = running - counts[candidates]
            before -= np.repeat(before[starts], np.diff(np.r_[starts, len(group)]))
            # Each record blanked in a group joins every other record of it, so blank smallest-first only until
            # the rest reach k with them.
            chosen = candidates[sizes[candidates] + before < k]
            patterns[chosen, j] = -1
            active = sizes < k
            active[chosen] = True
            patterns, counts, row_pattern, sizes, active = _merge_patterns(patterns, counts, row_pattern, sizes, active)
            sizes[active] = _compatible_counts(patterns[active], patterns, counts.astype(np.float64))
            progress = True
        if not progress:
            violating = np.flatnonzero(sizes < k)
            observed = patterns[np.ix_(violating, np.asarray(trial))] >= 0
            column = np.asarray(trial)[np.argmax(observed, axis=1)]
            patterns[violating, column] = -1
            active = sizes < k
            patterns, counts, row_pattern, sizes, active = _merge_patterns(patterns, counts, row_pattern, sizes, active)
            sizes[active] = _compatible_counts(patterns[active], patterns, counts.astype(np.float64))

    blanked = (patterns[row_pattern] < 0) & (original[grouping.row_group] >= 0)
    result = data.copy()
    per_column: dict[str, int] = {}
    for index, name in enumerate(qis):
        mask = blanked[:, index]
        per_column[name] = int(mask.sum())
        if mask.any():
            column = result[name]
            if pd.api.types.is_integer_dtype(column) and not isinstance(column.dtype, pd.api.extensions.ExtensionDtype):
                column = column.astype("Int64")
            result[name] = column.mask(pd.Series(mask, index=column.index))
    # Final sizes of every pattern, recounted from scratch (the loop only refreshed the ones that were short).
    achieved = int(_compatible_counts(patterns, patterns, counts.astype(np.float64)).min())
    if achieved < k:  # the loop only stops at k; a failure here is a bug, never a result to publish
        raise AssertionError(f"local suppression stopped at a wildcard class of {achieved} < k = {k} records")
    summary = {
        "k": k,
        "k_achieved": achieved,
        "cells_suppressed": int(blanked.sum()),
        "cells_suppressed_by_column": per_column,
        "records_affected": int(blanked.any(axis=1).sum()),
        "rounds": rounds,
        "importance": ranked,
    }
    return TransformResult(result, step, summary)


@register_step("top_bottom_coding")
def _top_bottom_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return top_bottom_coding(data, **params)


def _risk_goals(risk_targets: Mapping[str, float] | None, household: str | None) -> PrivacyTargets | None:
    """The table-wide targets record suppression meets, checked (None without any)."""
    if not risk_targets:
        if household is not None:
            raise ParameterError("household is the household-id column of risk_targets' household_risk.")
        return None
    if not isinstance(risk_targets, Mapping):
        raise ParameterError("risk_targets must map target names to values, e.g. {'global_risk': 0.01}.")
    unknown = sorted(set(risk_targets) - set(SUPPRESSION_RISK_TARGETS))
    if unknown:
        raise ParameterError(
            f"Record suppression meets {', '.join(SUPPRESSION_RISK_TARGETS)}; not {', '.join(map(str, unknown))}."
        )
    values: dict[str, Any] = {str(name): value for name, value in risk_targets.items()}
    goals = PrivacyTargets(k=1, **values)
    if goals.household_risk is not None and household is None:
        raise ParameterError("household_risk needs the household-id column (household=...).")
    return goals


@register_step("record_suppression")
def _record_suppression_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    if "max_fraction" in params and "max_suppression" not in params:
        # Recipes saved before the parameter took the name max_suppression.
        params["max_suppression"] = params.pop("max_fraction")
    return record_suppression(data, **params)


@register_step("local_suppression")
def _local_suppression_step(data: pd.DataFrame, /, **params: Any) -> TransformResult:
    return local_suppression(data, **params)


# Old names, kept for one release (a call warns with a DeprecationWarning).
top_bottom_code = deprecated_alias(top_bottom_coding, "top_bottom_code")
suppress_records = deprecated_alias(record_suppression, "suppress_records")
suppress_cells = deprecated_alias(local_suppression, "suppress_cells")
