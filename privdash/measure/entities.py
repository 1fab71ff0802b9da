"""Equivalence classes of *people* when a person has several rows (health visits, benefit payments).

When a column identifies the person each row belongs to (the contract's ``is_entity_id`` role), counting rows as
people understates the risk: a person whose rows *together* are unique is exposed even when each of their rows
lies in a large class. privdash then follows the ``entity_id`` option of Google Cloud DLP's risk analysis
(``PrivacyMetric.KAnonymityConfig.entity_id``, https://cloud.google.com/sensitive-data-protection/docs/reference/rest/
v2/projects.dlpJobs#kanonymityconfig): every person gets one *key* built from all their rows (DLP: "the entire
collection of tuples as the composite quasi-identifier"), and people with equal keys form an equivalence class.

Person key
----------
``set`` (default)
    The set of the person's distinct quasi-identifier tuples: two people match when the same tuples occur among
    their rows, however often. It treats an attacker who knows where a person went, not how often.
``multiset`` (DLP's own definition)
    Each distinct tuple with the number of the person's rows that have it: two people match when they have the
    same tuples the same number of times. DLP documents its collection as a multiset ("the order in which the
    different tuples appear in the dataset is ignored, but their frequency is taken into account"). Multiset classes
    split set classes, so ``multiset`` never reports a lower risk than ``set``.

Everything is counted in people: class sizes, k, sample uniques, prosecutor/journalist/marketer risk and records
at risk (a "record" of the person-level classes is a person). Sampling weights are per person: a person's weight
must be the same on all their rows, and is that value. For the attribute-disclosure models (l-diversity,
t-closeness, ...) each person contributes each of their *distinct* sensitive values once: the distribution of a
class counts (person, value) pairs, and the reference distribution counts them over all people.

Missing values: under ``value`` a missing QI value is a value inside the tuple; under ``drop`` rows with a missing
QI are removed before the keys are formed (a person all of whose rows are dropped is in no class); ``wildcard`` is
refused, since matching sets of tuples with wildcards is not defined. A row with no person id is an error.

Method
------
Everything starts from an aggregate grouped by (person, QIs, sensitive attributes, weight) with a row count, the
table any engine (pandas, DuckDB, Spark, PostgreSQL) returns (:func:`~privdash.engines.aggregate.
aggregate_table`), so every engine gives the same classes by construction. The QI tuples are encoded to codes
ordered by value; the distinct (person, tuple) pairs and their row counts are found by one sort. Each person's key
is the sorted sequence of their element codes (tuple codes, or codes of (tuple, count) pairs for ``multiset``).
People with keys of the same length L form an ``(people, L)`` matrix whose equal rows are found exactly by
:func:`numpy.unique` over rows; the loop runs over the distinct key lengths, never over people or rows. Classes are
numbered by key length, then by key in lexicographic order of the codes: a function of the values alone, so every
engine numbers them alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from privdash.choices import Choice
from privdash.errors import ColumnError, ParameterError, check_columns, format_values
from privdash.measure.classes import (
    MISSING_LABEL,
    EquivalenceClasses,
    MissingPolicy,
    _is_ordered,
    _sensitive_distribution,
    _weights,
    weight_sums_by_class,
)
from privdash.measure.encoding import EncodedColumn, encode_column, encode_columns, group_rows

__all__ = [
    "PERSON_KEY",
    "EntityClasses",
    "EntityKey",
    "entity_classes",
    "entity_classes_from_aggregate",
    "entity_columns",
]

#: The one key column of person-level classes: ``classes.keys()`` lists each class's tuples in it as text.
PERSON_KEY = "person_key"


class EntityKey(Choice, label="person key"):
    """What makes two people match (see the module docstring)."""

    SET = "set"
    MULTISET = "multiset"


@dataclass(frozen=True, eq=False)
class EntityClasses:
    """Equivalence classes of people, and how the rows map to them.

    Attributes
    ----------
    entity
        The person-id column.
    entity_key
        ``set`` or ``multiset``.
    quasi_identifiers
        The QI columns the tuples are made of.
    classes
        The classes over people, for every risk and model function: ``sizes`` and ``counts`` count people,
        ``quasi_identifiers`` is ``(PERSON_KEY,)`` and ``keys()`` gives each class's key as text, e.g.
        ``(age=30, sex=F); (age=31, sex=F)`` (``set``) or ``2 x (age=30, sex=F)`` (``multiset``); ``n_dropped``
        counts people all of whose rows were dropped; ``record_class`` (built from rows) is the class of each row's
        person.
    person_ids
        Every person's id, sorted (people with dropped rows only included).
    person_class
        Class of each person of ``person_ids`` (``-1``: all their rows were dropped).
    person_rows
        Rows of each person.
    rows
        Rows in the input.
    rows_dropped
        Rows left out by the ``drop`` policy.
    qi_categories
        Per QI, its distinct values over the rows in scope.
    """

    entity: str
    entity_key: EntityKey
    quasi_identifiers: tuple[str, ...]
    classes: EquivalenceClasses
    person_ids: pd.Index
    person_class: np.ndarray
    person_rows: np.ndarray
    rows: int
    rows_dropped: int
    qi_categories: tuple[pd.Index, ...]

    @property
    def people(self) -> int:
        """People in scope (in some class)."""
        return self.classes.n_records

    @property
    def rows_in_scope(self) -> int:
        return self.rows - self.rows_dropped

    def person_sizes(self) -> np.ndarray:
        """Class size of each person (0 for a person in no class)."""
        return np.append(self.classes.sizes, 0)[self.person_class]

    def row_classes(self, ids: pd.Series | np.ndarray) -> np.ndarray:
        """Class of the person of each row whose person id is in ``ids`` (``-1``: a person in no class)."""
        position = self.person_ids.get_indexer(pd.Index(ids))
        if (position < 0).any():
            unknown = pd.Index(ids)[position < 0]
            raise ColumnError(
                f"Person id(s) {format_values(list(unknown.unique()))} of '{self.entity}' are not among the people "
                "counted: the rows changed since their classes were counted."
            )
        return self.person_class[position]


def entity_classes(
    data: pd.DataFrame,
    entity: str,
    quasi_identifiers: Sequence[str],
    *,
    entity_key: str | EntityKey = EntityKey.SET,
    sensitive: Sequence[str] = (),
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    weights: str | None = None,
    orders: Mapping[str, Sequence[Any]] | None = None,
    ordered: Sequence[str] | None = None,
) -> EntityClasses:
    """Person-level classes of the rows of ``data`` (several rows per person; see the module docstring).

    Groups the rows by (person, QIs, sensitive, weight) in pandas and calls :func:`entity_classes_from_aggregate`;
    ``classes.record_class`` then holds the class of each row's person, so ``classes.record_sizes()`` gives every
    row its person's class size.
    """
    sensitive = tuple(sensitive)
    columns = entity_columns(entity, quasi_identifiers, sensitive, weights)
    check_columns(data, columns, role="column")
    count = "__privdash_rows"
    aggregate = data.groupby(list(columns), dropna=False, sort=False, observed=True).size().rename(count)
    result = entity_classes_from_aggregate(
        aggregate.reset_index(),
        entity,
        quasi_identifiers,
        count=count,
        entity_key=entity_key,
        sensitive=sensitive,
        missing=missing,
        weights=weights,
        orders=orders,
        ordered=ordered,
    )
    record_class = result.row_classes(data[entity]) if len(data) else np.zeros(0, np.int64)
    return replace(result, classes=replace(result.classes, record_class=record_class))


def entity_columns(entity: str, qis: Sequence[str], sensitive: Sequence[str], weights: str | None) -> tuple[str, ...]:
    """The grouping columns, after checking that the person id has no other role."""
    if not isinstance(entity, str) or not entity:
        raise ColumnError("The person-id column must be a column name.")
    roles = {"quasi-identifier": tuple(qis), "sensitive attribute": tuple(sensitive)}
    if weights is not None:
        roles["weight column"] = (weights,)
    for role, names in roles.items():
        if entity in names:
            raise ColumnError(
                f"'{entity}' is the person-id column and cannot also be a {role}: the person id groups the rows, "
                "it is not a value an attacker matches."
            )
    return (entity, *qis, *sensitive, *((weights,) if weights is not None else ()))


def entity_classes_from_aggregate(
    aggregate: pd.DataFrame,
    entity: str,
    quasi_identifiers: Sequence[str],
    *,
    count: str = "count",
    entity_key: str | EntityKey = EntityKey.SET,
    sensitive: Sequence[str] = (),
    missing: str | MissingPolicy = MissingPolicy.VALUE,
    weights: str | None = None,
    orders: Mapping[str, Sequence[Any]] | None = None,
    ordered: Sequence[str] | None = None,
) -> EntityClasses:
    """Person-level classes from an aggregate ``GROUP BY entity, qis, sensitive, weight`` with a ``count`` column.

    The aggregate may have several rows per combination (they are summed) and any row order. Raises
    :class:`ColumnError` for rows without a person id, a person whose weight differs between rows, or a person id
    column that is also a QI, sensitive or weight column; :class:`ParameterError` for the ``wildcard`` policy.
    """
    key_kind = EntityKey.parse(entity_key)
    policy = MissingPolicy.parse(missing)
    if policy == MissingPolicy.WILDCARD:
        raise ParameterError(
            "The 'wildcard' missing-value policy is not defined with a person id: a person's key is a set of QI "
            "tuples, and matching sets of tuples with wildcards is not defined. Use 'value' or 'drop'."
        )
    qis = check_columns(aggregate, quasi_identifiers, role="quasi-identifier")
    sensitive_names = check_columns(aggregate, sensitive, role="sensitive attribute", allow_empty=True)
    overlap = sorted(set(qis) & set(sensitive_names))
    if overlap:
        raise ColumnError(f"A column cannot be both quasi-identifier and sensitive: {', '.join(overlap)}.")
    columns = entity_columns(entity, qis, sensitive_names, weights)
    check_columns(aggregate, [*columns, count], role="column")
    frequency = pd.to_numeric(aggregate[count], errors="coerce")
    if frequency.isna().any() or (frequency < 0).any() or (frequency % 1 != 0).any():
        raise ParameterError(f"The '{count}' column must hold non-negative whole numbers.")
    positive = frequency.to_numpy(dtype=np.int64) > 0
    table = aggregate.loc[positive].reset_index(drop=True)
    freq = frequency.to_numpy(dtype=np.int64)[positive]
    rows = int(freq.sum())

    no_id = table[entity].isna().to_numpy()
    if no_id.any():
        raise ColumnError(
            f"{int(freq[no_id].sum()):,} row(s) have no value in the person-id column '{entity}': every row must name "
            "the person it belongs to (fill the ids in, or drop those rows)."
        )
    person = encode_column(table[entity], sort=True)
    person_code = person.codes.astype(np.int64)
    n_people = person.cardinality
    person_rows = np.bincount(person_code, weights=freq, minlength=n_people).astype(np.int64)

    orders = dict(orders or {})
    encoded = encode_columns(table, qis, orders=orders)
    exclude = None
    if policy == MissingPolicy.DROP:
        exclude = np.zeros(len(table), dtype=bool)
        for column in encoded:
            exclude |= column.missing
    grouping = group_rows(encoded, exclude=exclude)
    tuple_code = grouping.row_group.astype(np.int64)
    kept = tuple_code >= 0
    rows_dropped = int(freq[~kept].sum())

    person_weight = _person_weights(table, weights, person, person_code) if weights is not None else None

    # Distinct (person, tuple) pairs with their numbers of rows, sorted by person then tuple.
    pair_person, pair_tuple, pair_rows = _distinct_pairs(person_code[kept], tuple_code[kept], freq[kept])
    qi_categories = tuple(col.categories for col in encoded)
    tuple_text = _tuple_text(qis, qi_categories, grouping.group_codes)
    if key_kind == EntityKey.SET:
        element, element_text = pair_tuple, tuple_text
    else:  # (tuple, rows) pairs, coded in lexicographic order: still ascending within a person
        element_tuple, element_rows, element = _distinct_pairs(pair_tuple, pair_rows, None, inverse=True)
        element_text = _multiset_text(tuple_text, element_tuple, element_rows)
    person_class, n_classes, representative = _classes_of_people(pair_person, element, n_people)

    present = person_class >= 0
    sizes = np.bincount(person_class[present], minlength=n_classes).astype(np.int64)
    key_text = _key_text(element_text, pair_person, element, representative)

    distributions = {}
    for name in sensitive_names:
        is_ordered = _is_ordered(table[name], name, orders, ordered)
        column = encode_column(table[name], order=orders.get(name), sort=is_ordered or None)
        value_person, value_code, _ = _distinct_pairs(person_code[kept], column.codes[kept].astype(np.int64), None)
        pairs = EncodedColumn(name, value_code, column.categories)
        distributions[name] = _sensitive_distribution(
            name, pairs, person_class[value_person], n_classes, is_ordered, np.ones(len(value_code), dtype=bool)
        )
    weight_sums = None
    if person_weight is not None:
        weight_sums = weight_sums_by_class(person_class[present], person_weight[present], None, n_classes)
    classes = EquivalenceClasses(
        quasi_identifiers=(PERSON_KEY,),
        missing_policy=policy,
        class_codes=np.arange(n_classes, dtype=np.int64).reshape(-1, 1),
        categories=(pd.Index(key_text, dtype=object),),
        sizes=sizes,
        counts=sizes.copy(),
        n_dropped=int((~present).sum()),
        record_class=None,
        sensitive=distributions,
        weight_sums=weight_sums,
    )
    return EntityClasses(
        entity=entity,
        entity_key=key_kind,
        quasi_identifiers=qis,
        classes=classes,
        person_ids=pd.Index(person.categories),
        person_class=person_class,
        person_rows=person_rows,
        rows=rows,
        rows_dropped=rows_dropped,
        qi_categories=qi_categories,
    )


def _person_weights(table: pd.DataFrame, weights: str, person: EncodedColumn, person_code: np.ndarray) -> np.ndarray:
    """Each person's weight; raises when a person's rows carry different weights."""
    values = _weights(table, weights)
    order = np.lexsort((values, person_code))
    sorted_person, sorted_value = person_code[order], values[order]
    differs = (sorted_person[1:] == sorted_person[:-1]) & (sorted_value[1:] != sorted_value[:-1])
    if differs.any():
        at = int(np.flatnonzero(differs)[0])
        who = person.categories[sorted_person[at]]
        n_bad = len(np.unique(sorted_person[1:][differs]))
        raise ColumnError(
            f"The weight column '{weights}' must hold one weight per person, but person {who!r} has rows with weights "
            f"{sorted_value[at]:g} and {sorted_value[at + 1]:g} ({n_bad:,} person(s) have more than one weight)."
        )
    out = np.zeros(person.cardinality, dtype=np.float64)
    out[person_code] = values
    return out


def _distinct_pairs(
    first: np.ndarray, second: np.ndarray, weight: np.ndarray | None, *, inverse: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct ``(first, second)`` pairs sorted lexicographically, with the sum of ``weight`` over each (or, with
    ``inverse``, the pair number of each input entry instead)."""
    order = np.lexsort((second, first))
    a, b = first[order], second[order]
    starts = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])] if len(a) else np.zeros(0, dtype=bool)
    if inverse:
        codes = np.empty(len(a), dtype=np.int64)
        codes[order] = np.cumsum(starts) - 1
        return a[starts], b[starts], codes
    if weight is None:
        return a[starts], b[starts], np.zeros(int(starts.sum()), dtype=np.int64)
    sums = np.add.reduceat(weight[order], np.flatnonzero(starts)) if len(a) else np.zeros(0, dtype=np.int64)
    return a[starts], b[starts], sums.astype(np.int64)


def _classes_of_people(
    pair_person: np.ndarray, element: np.ndarray, n_people: int
) -> tuple[np.ndarray, int, np.ndarray]:
    """Class of each person (``-1``: no pair), the number of classes, and each class's first pair's person.

    ``pair_person`` is sorted and each person's ``element`` codes ascend, so a person's key is the run of their
    elements. Keys of one length are compared as rows of a matrix (exactly, with :func:`numpy.unique`)."""
    person_class = np.full(n_people, -1, dtype=np.int64)
    if not len(pair_person):
        return person_class, 0, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, pair_person[1:] != pair_person[:-1]])
    people = pair_person[starts]
    lengths = np.diff(np.r_[starts, len(pair_person)])
    representatives = []
    offset = 0
    for length in np.unique(lengths):
        chosen = np.flatnonzero(lengths == length)
        matrix = element[starts[chosen][:, None] + np.arange(length)]
        _, first, inverse = np.unique(matrix, axis=0, return_index=True, return_inverse=True)
        person_class[people[chosen]] = offset + inverse.reshape(-1)
        representatives.append(people[chosen[first]])
        offset += len(first)
    return person_class, offset, np.concatenate(representatives)


def _text(values: pd.Index, codes: np.ndarray) -> Any:
    """``values`` taken at ``codes`` as an Arrow string array (``-1``: the missing label)."""
    import pyarrow as pa

    labels = np.array([*values.astype(str).tolist(), MISSING_LABEL], dtype=object)
    return pa.array(labels[np.where(codes < 0, len(labels) - 1, codes)], type=pa.string())


def _tuple_text(qis: Sequence[str], categories: Sequence[pd.Index], group_codes: np.ndarray) -> Any:
    """``(qi1=v1, qi2=v2)`` for every distinct tuple."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = [
        pc.binary_join_element_wise(pa.scalar(f"{name}="), _text(values, group_codes[:, i]), "")
        for i, (name, values) in enumerate(zip(qis, categories, strict=True))
    ]
    joined = pc.binary_join_element_wise(*parts, ", ") if len(parts) > 1 else parts[0]
    return pc.binary_join_element_wise("(", joined, ")", "")


def _multiset_text(tuple_text: Any, element_tuple: np.ndarray, element_rows: np.ndarray) -> Any:
    """``n x (qi1=v1, ...)`` for every distinct (tuple, rows) element."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = pa.array(element_rows.astype(str).astype(object), type=pa.string())
    return pc.binary_join_element_wise(rows, " x ", tuple_text.take(pa.array(element_tuple)), "")


def _key_text(
    element_text: Any, pair_person: np.ndarray, element: np.ndarray, representative: np.ndarray
) -> np.ndarray:
    """Each class's key: its representative person's elements joined by ``; ``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not len(representative):
        return np.zeros(0, dtype=object)
    first = np.searchsorted(pair_person, representative, side="left")
    last = np.searchsorted(pair_person, representative, side="right")
    lengths = last - first
    positions = np.repeat(first - np.r_[0, np.cumsum(lengths)[:-1]], lengths) + np.arange(lengths.sum())
    offsets = pa.array(np.r_[0, np.cumsum(lengths)].astype(np.int32))
    values = element_text.take(pa.array(element[positions]))
    return pc.binary_join(pa.ListArray.from_arrays(offsets, values), "; ").to_numpy(zero_copy_only=False)
