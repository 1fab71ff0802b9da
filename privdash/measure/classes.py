"""Equivalence classes over quasi-identifiers, as a compact per-class summary.

An *equivalence class* is a set of records that share the same values on every quasi-identifier (QI); an
attacker who knows a person's QI values cannot tell the records of that person's class apart (Sweeney 2002,
"k-anonymity: a model for protecting privacy"). All privacy models and risk measures in privdash read the
:class:`EquivalenceClasses` summary built here, never the raw rows: one row per class with its QI codes, its
size, and per sensitive attribute the count of each value in the class. That summary is what any group-by engine
(pandas, DuckDB, Spark) can produce; :func:`equivalence_classes_from_aggregate` builds it from such an
aggregate, :func:`equivalence_classes` from raw rows.

Missing QI values
-----------------
``value`` (default)
    A missing value is a category of its own: two records match when they agree on every QI, missing included.
    This is ARX's and pyCANON-with-``dropna=False``'s behaviour. It is the default because a missing value that
    is published is visible to an attacker like any other value, and because it never reports a lower risk than
    ``wildcard`` does (``wildcard`` classes are supersets of ``value`` classes).
``wildcard``
    A missing cell matches any value, as sdcMicro's ``alpha = 1`` and ARX's ``RiskModelSampleWildcard``: use it
    for cells the publisher suppressed. Records with the same QI *pattern* (missing kept as a marker) form a
    class; the class *size* ``f_j`` is the number of records compatible with the pattern, i.e. records that, on
    every QI, either agree with it or where one of the two is missing. Sizes then no longer sum to the number of
    records; ``counts`` keeps the number of records that have the pattern. Sensitive-value distributions of a
    class are taken over its compatible records too.
``drop``
    Records with a missing value in any QI are left out of every class, metric and denominator, and counted in
    ``n_dropped``.

Missing sensitive values are counted as one more sensitive value (shown as ``(missing)``), placed after all
others in an ordered attribute; weights must not be missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from privdash.choices import Choice
from privdash.errors import ColumnError, ParameterError, check_columns
from privdash.measure.encoding import EncodedColumn, class_sizes, encode_column, encode_columns, group_rows

__all__ = [
    "MISSING_LABEL",
    "EquivalenceClasses",
    "MissingPolicy",
    "SensitiveDistribution",
    "class_size_frequencies",
    "equivalence_classes",
    "equivalence_classes_from_aggregate",
    "equivalence_classes_from_aggregate_rows",
    "weight_sums_by_class",
]

MISSING_LABEL = "(missing)"


class MissingPolicy(Choice, label="missing-value policy"):
    """How missing quasi-identifier values form classes (see the module docstring)."""

    VALUE = "value"
    WILDCARD = "wildcard"
    DROP = "drop"


@dataclass(frozen=True, eq=False)
class SensitiveDistribution:
    """Counts of one sensitive attribute's values inside every class, and over all records.

    The class counts are sparse: ``(class_index[r], value_index[r])`` holds ``counts[r] > 0`` records, sorted by
    class then value. Value ``v`` is ``labels[v]``; ``overall[v]`` counts it over all records in scope (the
    reference distribution of t-closeness, delta-disclosure and beta-likeness). For an ``ordered`` attribute
    values are indexed in ascending order.
    """

    name: str
    labels: pd.Index
    ordered: bool
    class_index: np.ndarray
    value_index: np.ndarray
    counts: np.ndarray
    overall: np.ndarray
    n_classes: int

    @property
    def n_values(self) -> int:
        """m: the number of distinct values of the attribute over all records in scope."""
        return len(self.labels)

    @cached_property
    def class_starts(self) -> np.ndarray:
        """Position of each class's first entry (every class has at least one), computed once for all models."""
        return np.searchsorted(self.class_index, np.arange(self.n_classes))

    @property
    def overall_frequency(self) -> np.ndarray:
        """p: relative frequency of each value over all records in scope."""
        return self.overall / self.overall.sum()

    def class_totals(self) -> np.ndarray:
        """Records counted in each class's distribution (equal to the class sizes)."""
        return np.bincount(self.class_index, weights=self.counts, minlength=self.n_classes).astype(np.int64)

    def class_frequency(self) -> np.ndarray:
        """q: relative frequency of each sparse entry inside its class."""
        return self.counts / self.class_totals()[self.class_index]

    def distinct_values(self) -> np.ndarray:
        """Number of distinct values present in each class."""
        return np.bincount(self.class_index, minlength=self.n_classes)

    def dense(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Counts of classes ``start:stop`` as a dense ``(classes, values)`` array (for block-wise metrics)."""
        stop = self.n_classes if stop is None else stop
        lo, hi = np.searchsorted(self.class_index, [start, stop])
        block = np.zeros((stop - start, self.n_values), dtype=np.int64)
        block[self.class_index[lo:hi] - start, self.value_index[lo:hi]] = self.counts[lo:hi]
        return block


@dataclass(frozen=True, eq=False)
class EquivalenceClasses:
    """Per-class summary of a table grouped by its quasi-identifiers (see the module docstring).

    Attributes
    ----------
    quasi_identifiers
        QI column names, in grouping order.
    missing_policy
        How missing QI values formed the classes.
    class_codes
        ``(J, len(quasi_identifiers))`` codes of each class's QI values; ``-1`` is missing.
    categories
        Per QI, the value of each code.
    sizes
        ``f_j``: records an attacker cannot distinguish from class ``j`` (its size).
    counts
        ``n_j``: records whose QI values are those of class ``j`` (equal to ``sizes`` unless ``wildcard``).
    n_dropped
        Records left out (``drop`` policy).
    record_class
        Class of each input row (``-1`` for dropped rows), or None when built from an aggregate.
    sensitive
        Per sensitive attribute, its value distribution per class.
    weight_sums
        Per class, the sum of the sampling weights of its (compatible) records, when a weight column was given.
    pattern_weight_sums, inverse_weight_sums
        Per class, the sum of the weights ``w`` and of the inclusion probabilities ``1/w`` of the records that have
        the class's own QI values (the records of ``counts``), when a weight column was given; under ``wildcard``
        ``pattern_weight_sums`` differs from ``weight_sums``, which adds the compatible records. sdcMicro's
        model-based risk (:mod:`.model_risk`) reads these.
    """

    quasi_identifiers: tuple[str, ...]
    missing_policy: MissingPolicy
    class_codes: np.ndarray
    categories: tuple[pd.Index, ...]
    sizes: np.ndarray
    counts: np.ndarray
    n_dropped: int = 0
    record_class: np.ndarray | None = None
    sensitive: Mapping[str, SensitiveDistribution] = field(default_factory=dict)
    weight_sums: np.ndarray | None = None
    pattern_weight_sums: np.ndarray | None = None
    inverse_weight_sums: np.ndarray | None = None

    @property
    def n_classes(self) -> int:
        """J: the number of classes."""
        return len(self.sizes)

    @property
    def n_records(self) -> int:
        """n: records in scope (all rows except dropped ones)."""
        return int(self.counts.sum())

    @property
    def k(self) -> int:
        """The size of the smallest class (0 for an empty table)."""
        return int(self.sizes.min()) if len(self.sizes) else 0

    @property
    def sample_uniques(self) -> int:
        """Records whose class has size 1."""
        return int(self.counts.sum(where=self.sizes == 1))

    def records_below(self, k: int) -> int:
        """Records in classes smaller than ``k`` (strictly), i.e. the records that violate k-anonymity."""
        return int(self.counts.sum(where=self.sizes < k))

    def classes_below(self, k: int) -> int:
        """Classes smaller than ``k`` (strictly)."""
        return int((self.sizes < k).sum())

    def size_frequencies(self) -> pd.DataFrame:
        """Class-size frequency table: for each class size, the number of classes and of records in them.

        Columns ``size``, ``classes``, ``records`` (sorted by size); ``records`` counts records whose own class
        has that size, so it sums to ``n_records`` under every policy.
        """
        return self._size_table.copy()  # made once (a pass over the classes), a copy for each caller to keep

    @cached_property
    def _size_table(self) -> pd.DataFrame:
        if not self.n_classes:
            return pd.DataFrame({"size": [], "classes": [], "records": []}, dtype=np.int64)
        largest = int(self.sizes.max())
        if self.sizes.dtype.kind in "iu" and self.sizes.min() >= 0 and largest <= max(1 << 16, self.n_classes):
            # A count for every size up to the largest (sizes are whole numbers no larger than n): no sort of the
            # sizes, whose number is the number of classes (a million classes: 0.017 -> 0.005 s).
            per_size = np.bincount(self.sizes, minlength=largest + 1)
            sizes = np.flatnonzero(per_size)
            classes = per_size[sizes]
            records = np.bincount(self.sizes, weights=self.counts, minlength=largest + 1)[sizes].astype(np.int64)
            return pd.DataFrame({"size": sizes, "classes": classes, "records": records})
        sizes, inverse = np.unique(self.sizes, return_inverse=True)
        classes = np.bincount(inverse, minlength=len(sizes))
        records = np.bincount(inverse, weights=self.counts, minlength=len(sizes)).astype(np.int64)
        return pd.DataFrame({"size": sizes, "classes": classes, "records": records})

    def keys(self) -> pd.DataFrame:
        """The QI values of each class, one row per class (missing values as NA)."""
        columns = {}
        for index, (name, categories) in enumerate(zip(self.quasi_identifiers, self.categories, strict=True)):
            codes = self.class_codes[:, index]
            columns[name] = categories.take(codes, allow_fill=True, fill_value=None)
        return pd.DataFrame(columns)

    def record_sizes(self) -> np.ndarray:
        """Size of the class of each input row (0 for dropped rows)."""
        if self.record_class is None:
            raise ValueError("These classes were built from an aggregate; per-record sizes are not available.")
        padded = np.append(self.sizes, 0)
        return padded[self.record_class]


def equivalence_classes(
    data: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    sensitive: Sequence[str] = (),
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    weights: str | None = None,
    orders: Mapping[str, Sequence[Any]] | None = None,
    ordered: Sequence[str] | None = None,
) -> EquivalenceClasses:
    """Group the rows of ``data`` into equivalence classes over ``quasi_identifiers``.

    Parameters
    ----------
    data
        One row per person.
    quasi_identifiers
        Columns an attacker may know.
    sensitive
        Columns whose value distribution per class the attribute-disclosure models need.
    missing
        ``"value"``, ``"wildcard"`` or ``"drop"`` (see the module docstring).
    weights
        Column of sampling weights (each record stands for that many people), for survey risk measures.
    orders
        Declared value orders of ordinal columns.
    ordered
        Sensitive columns to treat as ordered (numbers sort ascending; ordinal ones by ``orders``). By default:
        numeric and date columns, and those with a declared order.
    """
    qis = check_columns(data, quasi_identifiers, role="quasi-identifier")
    sensitive_names = check_columns(data, sensitive, role="sensitive attribute", allow_empty=True)
    overlap = sorted(set(qis) & set(sensitive_names))
    if overlap:
        raise ColumnError(f"A column cannot be both quasi-identifier and sensitive: {', '.join(overlap)}.")
    policy = MissingPolicy.parse(missing)
    orders = dict(orders or {})
    encoded = encode_columns(data, qis, orders=orders)
    weight_values = _weights(data, weights) if weights is not None else None
    exclude = None
    if policy == MissingPolicy.DROP:
        exclude = np.zeros(len(data), dtype=bool)
        for column in encoded:
            if column.has_missing:
                exclude |= column.missing
    grouping = group_rows(encoded, exclude=exclude)
    record_class = grouping.row_group
    kept = record_class >= 0
    distributions = {}
    for name in sensitive_names:
        is_ordered = _is_ordered(data[name], name, orders, ordered)
        column = encode_column(data[name], order=orders.get(name), sort=is_ordered or None)
        distributions[name] = _sensitive_distribution(
            name, column, record_class[kept], grouping.n_groups, is_ordered, kept
        )
    weight_sums = inverse_sums = None
    if weight_values is not None:
        weight_sums, inverse_sums = _weight_and_inverse_sums(
            record_class[kept], weight_values[kept], None, grouping.n_groups
        )
    return _finish(
        qis,
        policy,
        grouping.group_codes,
        tuple(col.categories for col in encoded),
        grouping.sizes,
        int((~kept).sum()),
        record_class,
        distributions,
        weight_sums,
        inverse_sums,
    )


def class_size_frequencies(
    data: pd.DataFrame, quasi_identifiers: Sequence[str], *, missing: str | MissingPolicy = MissingPolicy.VALUE
) -> pd.DataFrame:
    """Class-size frequency table (``size``, ``classes``, ``records``) straight from the rows.

    Same result as ``equivalence_classes(data, qis, missing=missing).size_frequencies()``; under the ``value``
    policy it takes the fast path that counts classes without assigning a class to every row.
    """
    qis = check_columns(data, quasi_identifiers, role="quasi-identifier")
    policy = MissingPolicy.parse(missing)
    if policy != MissingPolicy.VALUE:
        return equivalence_classes(data, qis, missing=policy).size_frequencies()
    sizes, classes = np.unique(class_sizes(encode_columns(data, qis)), return_counts=True)
    return pd.DataFrame({"size": sizes, "classes": classes, "records": sizes * classes})


def equivalence_classes_from_aggregate(
    aggregate: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    count: str = "count",
    sensitive: Sequence[str] = (),
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    orders: Mapping[str, Sequence[Any]] | None = None,
    ordered: Sequence[str] | None = None,
    weights: str | None = None,
) -> EquivalenceClasses:
    """Build the summary from an aggregate ``GROUP BY qis, sensitive`` table with a ``count`` column.

    With ``weights``, the aggregate also groups by the weight column: ``count`` records of the row have that
    weight (see :func:`weight_sums_by_class`).

    This is the seam for other engines: run ``SELECT qi..., sa..., COUNT(*) AS count ... GROUP BY ALL`` in DuckDB
    or Spark and pass the (small) result here. The classes, sizes and distributions equal those of
    :func:`equivalence_classes` on the raw rows; per-record outputs (``record_class``) are not available
    (:func:`equivalence_classes_from_aggregate_rows` also gives the class of each aggregate row).
    """
    classes, _ = equivalence_classes_from_aggregate_rows(
        aggregate,
        quasi_identifiers,
        count=count,
        sensitive=sensitive,
        missing=missing,
        orders=orders,
        ordered=ordered,
        weights=weights,
    )
    return classes


def equivalence_classes_from_aggregate_rows(
    aggregate: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    count: str = "count",
    sensitive: Sequence[str] = (),
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    orders: Mapping[str, Sequence[Any]] | None = None,
    ordered: Sequence[str] | None = None,
    weights: str | None = None,
) -> tuple[EquivalenceClasses, np.ndarray]:
    """:func:`equivalence_classes_from_aggregate` and the class of each row of ``aggregate`` (``-1`` for rows of
    zero records and rows the ``drop`` policy leaves out), for measures that need more than the class of a record,
    e.g. the household of each record (the aggregate then also groups by the household column)."""
    check_columns(aggregate, [*quasi_identifiers, count], role="column")
    frequency = _frequencies(aggregate[count], count)
    positive = frequency > 0
    every_row = bool(positive.all())  # an engine's aggregate: no row of zero records, nothing to copy
    table = aggregate if every_row else aggregate.loc[positive].reset_index(drop=True)
    frequency = frequency if every_row else frequency[positive]
    qis = check_columns(table, quasi_identifiers, role="quasi-identifier")
    policy = MissingPolicy.parse(missing)
    orders = dict(orders or {})
    encoded = encode_columns(table, qis, orders=orders)
    exclude = None
    if policy == MissingPolicy.DROP:
        exclude = np.zeros(len(table), dtype=bool)
        for column in encoded:
            exclude |= column.missing
    grouping = group_rows(encoded, exclude=exclude)
    row_class = grouping.row_group
    kept = row_class >= 0
    every_kept = exclude is None or bool(kept.all())
    kept_class = row_class if every_kept else row_class[kept]
    kept_frequency = frequency if every_kept else frequency[kept]
    if len(kept_class) == grouping.n_groups:  # each row a class of its own (many classes): no sums to make
        sizes = np.empty(grouping.n_groups, dtype=np.int64)
        sizes[kept_class] = kept_frequency
    else:
        sizes = np.bincount(kept_class, weights=kept_frequency, minlength=grouping.n_groups).astype(np.int64)
    weight_sums = inverse_sums = None
    if weights is not None:
        weight_values = _weights(table, weights)
        weight_sums, inverse_sums = _weight_and_inverse_sums(
            kept_class, weight_values[kept], kept_frequency, grouping.n_groups
        )
    distributions = {}
    for name in check_columns(table, sensitive, role="sensitive attribute", allow_empty=True):
        is_ordered = _is_ordered(table[name], name, orders, ordered)
        column = encode_column(table[name], order=orders.get(name), sort=is_ordered or None)
        distributions[name] = _sensitive_distribution(
            name, column, kept_class, grouping.n_groups, is_ordered, kept, kept_frequency
        )
    if every_row:
        aggregate_row_class = row_class.astype(np.int64, copy=False)
    else:
        aggregate_row_class = np.full(len(positive), -1, dtype=np.int64)
        aggregate_row_class[positive] = row_class
    classes = _finish(
        qis,
        policy,
        grouping.group_codes,
        tuple(col.categories for col in encoded),
        sizes,
        0 if every_kept else int(frequency[~kept].sum()),
        None,
        distributions,
        weight_sums,
        inverse_sums,
    )
    return classes, aggregate_row_class


def _frequencies(counts: pd.Series, name: str) -> np.ndarray:
    """The records of each aggregate row as int64, checked to be whole numbers >= 0 (an engine's integer counts
    need only the sign checked)."""
    if counts.dtype.kind in "iu":
        frequency = counts.to_numpy(dtype=np.int64)
        if len(frequency) and frequency.min() < 0:
            raise ParameterError(f"The '{name}' column must hold non-negative whole numbers.")
        return frequency
    numbers = pd.to_numeric(counts, errors="coerce")
    if numbers.isna().any() or (numbers < 0).any() or (numbers % 1 != 0).any():
        raise ParameterError(f"The '{name}' column must hold non-negative whole numbers.")
    return numbers.to_numpy(dtype=np.int64)


def _finish(
    qis: tuple[str, ...],
    policy: MissingPolicy,
    class_codes: np.ndarray,
    categories: tuple[pd.Index, ...],
    counts: np.ndarray,
    n_dropped: int,
    record_class: np.ndarray | None,
    distributions: dict[str, SensitiveDistribution],
    weight_sums: np.ndarray | None,
    inverse_sums: np.ndarray | None = None,
) -> EquivalenceClasses:
    sizes = counts
    pattern_weight_sums = weight_sums
    if policy == MissingPolicy.WILDCARD and (class_codes < 0).any():
        ids, zeros = np.arange(len(counts)), np.zeros(len(counts), np.int64)
        sizes = _sum_by_class(compatible_sums(class_codes, ids, zeros, counts), len(counts)).astype(np.int64)
        distributions = {name: _wildcard_distribution(dist, class_codes) for name, dist in distributions.items()}
        if weight_sums is not None:
            weight_sums = _sum_by_class(compatible_sums(class_codes, ids, zeros, weight_sums), len(counts))
    return EquivalenceClasses(
        quasi_identifiers=qis,
        missing_policy=policy,
        class_codes=class_codes,
        categories=categories,
        sizes=np.asarray(sizes),
        counts=np.asarray(counts, dtype=np.int64),
        n_dropped=n_dropped,
        record_class=record_class,
        sensitive=distributions,
        weight_sums=weight_sums,
        pattern_weight_sums=pattern_weight_sums,
        inverse_weight_sums=inverse_sums,
    )


def weight_sums_by_class(
    class_index: np.ndarray, weights: np.ndarray, counts: np.ndarray | None, n_classes: int
) -> np.ndarray:
    """Per class, the sum of the weights of its records, computed the same way from rows or from an aggregate.

    ``counts[i]`` records of class ``class_index[i]`` have weight ``weights[i]`` (``counts`` None: one record each).
    Equal (class, weight) pairs are merged and each class sums ``count x weight`` over its distinct weights in
    ascending order: the result depends only on the multiset of (class, weight) pairs, so raw rows and any engine's
    aggregate give the same floating-point sums to the last digit.
    """
    return _weight_and_inverse_sums(class_index, weights, counts, n_classes)[0]


def _weight_and_inverse_sums(
    class_index: np.ndarray, weights: np.ndarray, counts: np.ndarray | None, n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per class, the sums of ``w`` (:func:`weight_sums_by_class`) and of ``1/w``, from one sort and in the same
    engine-independent order."""
    ones = np.ones(len(class_index), dtype=np.float64) if counts is None else np.asarray(counts, dtype=np.float64)
    order = np.lexsort((weights, class_index))
    cls, weight, count = class_index[order], weights[order], ones[order]
    starts = np.r_[True, (cls[1:] != cls[:-1]) | (weight[1:] != weight[:-1])] if len(cls) else np.zeros(0, bool)
    run = np.cumsum(starts) - 1
    run_counts = np.bincount(run, weights=count) if len(run) else np.zeros(0)
    sums = np.bincount(cls[starts], weights=run_counts * weight[starts], minlength=n_classes)
    inverse = np.bincount(cls[starts], weights=run_counts / weight[starts], minlength=n_classes)
    return sums, inverse


def _weights(data: pd.DataFrame, name: str) -> np.ndarray:
    check_columns(data, [name], role="weight column")
    values = pd.to_numeric(data[name], errors="coerce")
    if values.isna().any() or (values <= 0).any():
        raise ColumnError(f"Weight column '{name}' must hold a positive number in every row.")
    return values.to_numpy(dtype=np.float64)


def _is_ordered(
    column: pd.Series, name: str, orders: Mapping[str, Sequence[Any]], ordered: Sequence[str] | None
) -> bool:
    if ordered is not None:
        return name in ordered
    if name in orders:
        return True
    if isinstance(column.dtype, pd.CategoricalDtype):
        return bool(column.dtype.ordered)
    return bool(
        (pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column))
        or pd.api.types.is_datetime64_any_dtype(column)
    )


def _sensitive_distribution(
    name: str,
    column: EncodedColumn,
    classes_of_kept: np.ndarray,
    n_classes: int,
    ordered: bool,
    kept: np.ndarray,
    frequency: np.ndarray | None = None,
) -> SensitiveDistribution:
    codes = column.codes[kept].astype(np.int64)
    labels = column.categories
    # Keep only values that occur in scope, so m counts distinct values actually present.
    weights = frequency
    observed = codes >= 0
    present_counts = np.bincount(
        codes[observed], minlength=len(labels), weights=None if weights is None else weights[observed]
    )
    used = np.flatnonzero(present_counts > 0)
    remap = np.full(len(labels) + 1, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    labels = labels[used]
    value_codes = remap[codes]  # -1 stays -1 via the extra last slot
    if (value_codes < 0).any():
        value_codes = np.where(value_codes < 0, len(labels), value_codes)
        labels = pd.Index([*labels.tolist(), MISSING_LABEL], dtype=object)
    m = len(labels)
    pair = classes_of_kept.astype(np.int64) * m + value_codes
    if n_classes * m <= max(1 << 24, 4 * len(pair)):
        pair_counts = np.bincount(pair, weights=weights, minlength=n_classes * m)
        present = np.flatnonzero(pair_counts)
        counts = pair_counts[present]
    else:
        present, inverse = np.unique(pair, return_inverse=True)
        counts = np.bincount(inverse, weights=weights, minlength=len(present))
    overall = np.bincount(value_codes, weights=weights, minlength=m)
    return SensitiveDistribution(
        name=name,
        labels=labels,
        ordered=ordered,
        class_index=present // m,
        value_index=present % m,
        counts=counts.astype(np.int64),
        overall=overall.astype(np.int64),
        n_classes=n_classes,
    )


# --- wildcard matching -------------------------------------------------------------------------------------------


def _row_keys(matrix: np.ndarray) -> np.ndarray:
    """An int64 key per row of a non-negative code matrix, equal iff the rows are equal."""
    if matrix.shape[1] == 0:
        return np.zeros(matrix.shape[0], dtype=np.int64)
    radices = matrix.max(axis=0).astype(np.int64) + 1
    if float(np.prod(radices.astype(np.float64))) < 2.0**62:
        return np.ravel_multi_index(matrix.T, tuple(int(r) for r in radices)).astype(np.int64)
    return np.unique(matrix, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def compatible_sums(
    class_codes: np.ndarray, source_class: np.ndarray, source_value: np.ndarray, source_weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every class j and value v: the sum of ``source_weight`` over source rows whose class is compatible.

    Two QI patterns are compatible when, on every QI, they agree or either is missing. Source rows are sparse
    ``(class, value, weight)`` triples. Patterns are bucketed by their set of missing QIs; for each pair of
    buckets the patterns are compared on the QIs observed in both, by joining integer keys.
    Returns sparse ``(class, value, sum)`` sorted by class then value.
    """
    missing = class_codes < 0
    bits = (missing * (1 << np.arange(class_codes.shape[1], dtype=np.int64))).sum(axis=1)
    masks = np.unique(bits)
    source_bits = bits[source_class]
    if np.asarray(source_weight).dtype.kind in "iub":
        return _compatible_counts(class_codes, bits, masks, source_class, source_value, source_weight, source_bits)
    parts_class, parts_value, parts_weight = [], [], []
    for query_mask in masks:
        query_classes = np.flatnonzero(bits == query_mask)
        for source_mask in masks:
            rows = np.flatnonzero(source_bits == source_mask)
            if not len(rows):
                continue
            shared = np.flatnonzero(((query_mask | source_mask) >> np.arange(class_codes.shape[1])) & 1 == 0)
            stacked = np.vstack([class_codes[query_classes][:, shared], class_codes[source_class[rows]][:, shared]])
            keys = _row_keys(stacked)
            query_keys, source_keys = keys[: len(query_classes)], keys[len(query_classes) :]
            grouped = (
                pd.DataFrame({"key": source_keys, "value": source_value[rows], "weight": source_weight[rows]})
                .groupby(["key", "value"], sort=False)["weight"]
                .sum()
                .reset_index()
            )
            joined = pd.DataFrame({"key": query_keys, "cls": query_classes}).merge(grouped, on="key")
            parts_class.append(joined["cls"].to_numpy())
            parts_value.append(joined["value"].to_numpy())
            parts_weight.append(joined["weight"].to_numpy())
    total = (
        pd.DataFrame(
            {
                "cls": np.concatenate(parts_class),
                "value": np.concatenate(parts_value),
                "w": np.concatenate(parts_weight),
            }
        )
        .groupby(["cls", "value"], sort=True)["w"]
        .sum()
    )
    index = total.index
    return (
        index.get_level_values(0).to_numpy(np.int64),
        index.get_level_values(1).to_numpy(np.int64),
        total.to_numpy(),
    )


def _compatible_counts(
    class_codes: np.ndarray,
    bits: np.ndarray,
    masks: np.ndarray,
    source_class: np.ndarray,
    source_value: np.ndarray,
    source_weight: np.ndarray,
    source_bits: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`compatible_sums` for integer weights (counts), with sorted arrays instead of pandas joins; integer sums
    do not depend on the order of addition, so the result is the same."""
    weights = np.asarray(source_weight).astype(np.int64)
    values = np.asarray(source_value).astype(np.int64)
    parts_class, parts_value, parts_weight = [], [], []
    n_qis = class_codes.shape[1]
    # Per bucket (set of missing QIs): its classes and their codes; its source rows' codes, values and weights.
    by_bits = np.argsort(bits, kind="stable")
    bounds = np.searchsorted(bits[by_bits], np.append(masks, np.iinfo(np.int64).max))
    by_source = np.argsort(source_bits, kind="stable")
    source_bounds = np.searchsorted(source_bits[by_source], np.append(masks, np.iinfo(np.int64).max))
    buckets = []
    for i in range(len(masks)):
        classes = by_bits[bounds[i] : bounds[i + 1]]
        rows = by_source[source_bounds[i] : source_bounds[i + 1]]
        buckets.append((classes, class_codes[classes], class_codes[source_class[rows]], values[rows], weights[rows]))
    for query_mask, (query_classes, query_codes, _, _, _) in zip(masks.tolist(), buckets, strict=True):
        for source_mask, (_, _, source_codes, source_values, source_weights) in zip(
            masks.tolist(), buckets, strict=True
        ):
            if not len(source_codes):
                continue
            shared = np.flatnonzero(((query_mask | source_mask) >> np.arange(n_qis)) & 1 == 0)
            keys = _row_keys(np.vstack([query_codes[:, shared], source_codes[:, shared]]))
            query_keys, source_keys = keys[: len(query_classes)], keys[len(query_classes) :]
            # Source rows summed by (key, value), sorted by key then value.
            order = _order_pairs(source_keys, source_values)
            key, value, weight = source_keys[order], source_values[order], source_weights[order]
            starts = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]) | (value[1:] != value[:-1])])
            key, value, weight = key[starts], value[starts], np.add.reduceat(weight, starts)
            # Each query class joins the run of its key.
            low = np.searchsorted(key, query_keys, side="left")
            high = np.searchsorted(key, query_keys, side="right")
            lengths = high - low
            total = int(lengths.sum())
            if not total:
                continue
            offsets = np.repeat(low - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)
            parts_class.append(np.repeat(query_classes, lengths))
            parts_value.append(value[offsets])
            parts_weight.append(weight[offsets])
    if not parts_class:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), empty.copy()
    cls, value, weight = np.concatenate(parts_class), np.concatenate(parts_value), np.concatenate(parts_weight)
    order = _order_pairs(cls, value)
    cls, value, weight = cls[order], value[order], weight[order]
    starts = np.flatnonzero(np.r_[True, (cls[1:] != cls[:-1]) | (value[1:] != value[:-1])])
    return cls[starts], value[starts], np.add.reduceat(weight, starts)


def _order_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The permutation sorting non-negative pairs by ``first`` then ``second`` (one int64 key when it fits)."""
    if not len(first):
        return np.zeros(0, dtype=np.int64)
    width = int(second.max()) + 1
    if (int(first.max()) + 1) * width < 2**62:
        return np.argsort(first.astype(np.int64) * width + second, kind="stable")
    return np.lexsort((second, first))


def _sum_by_class(sparse: tuple[np.ndarray, np.ndarray, np.ndarray], n_classes: int) -> np.ndarray:
    """Total of sparse ``(class, value, weight)`` triples per class."""
    classes, _, weights = sparse
    return np.bincount(classes, weights=weights, minlength=n_classes)


def _wildcard_distribution(dist: SensitiveDistribution, class_codes: np.ndarray) -> SensitiveDistribution:
    classes, values, sums = compatible_sums(class_codes, dist.class_index, dist.value_index, dist.counts)
    return SensitiveDistribution(
        name=dist.name,
        labels=dist.labels,
        ordered=dist.ordered,
        class_index=classes,
        value_index=values,
        counts=np.asarray(sums, dtype=np.int64),
        overall=dist.overall,
        n_classes=dist.n_classes,
    )
