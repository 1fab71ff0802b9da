"""What a fix costs: information-loss metrics, value distributions and classifier accuracy, before and after.

Information-loss metrics (ARX definitions; ``n`` = records of the original table, ``S`` = records suppressed,
i.e. present in the original but not in the transformed table; QI = quasi-identifier with hierarchy of ``D``
leaves and ``h + 1`` levels)
-------------------------------------------------------------------------------------------------------------------
``loss`` (granularity; Iyengar 2002, ARX ``QualityModelColumnOrientedLoss`` / ``MetricMDNMLoss``)
    Per QI: the mean over all ``n`` records of the *domain share* of the published value (leaves under it
    divided by ``D``; a leaf has ``1/D``; a suppressed record counts 1), normalized by ARX as
    ``(x - 1/D) / (1 - 1/D)`` (0 when ``D = 1``). The metric is the arithmetic mean over QIs: 0 = nothing
    generalized or suppressed, 1 = everything fully generalized or suppressed.
``precision`` (generalization intensity; Sweeney 2002, ARX ``MetricMDNMPrecision``)
    Per QI: mean over records of ``level / h`` (0 when ``h = 0``; a suppressed record counts 1); arithmetic mean
    over QIs.
``discernibility`` (Bayardo & Agrawal 2005, ARX ``MetricSDNMDiscernability``)
    ``sum_j f_j^2 + n * S`` over the classes of the published records.
``aecs`` (average equivalence class size; LeFevre et al. 2006, ARX ``MetricSDAECS``)
    ``n / (J + [S > 0])``: the suppressed records form one class.
``entropy`` (non-uniform entropy; de Waal & Willenborg 1999, Gionis & Tassa 2009; ARX
``QualityModelColumnOrientedNonUniformEntropy``, equal to ``MetricMDNUNMEntropy`` for full-domain generalization)
    Per QI, in bits: ``-sum_records log2(c(a) / c(g(a)))`` where ``a`` is the original value, ``g(a)`` the
    published one and ``c`` counts over the original records; a suppressed record adds the step from its
    generalized value to the suppressed value, ``-log2(c_S(g(a)) / S)`` with ``c_S`` counting over suppressed
    records (ARX's treatment of records at different levels, levels processed in increasing order). Summed over
    QIs.

A published value's level is the lowest level whose ancestor of the original value equals it (ARX's inverse
generalization), found per record, so records at different levels (local recoding) are handled. Missing values
are published as missing at every level and cost nothing unless the record is suppressed (level 0 in every
metric; a value of its own in the classes and in ``c_S``).

Distributions, cells changed and classifier accuracy: see :func:`value_distributions`, :func:`cells_changed` and
:func:`classifier_accuracy`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdash.constants import Metric
from privdash.errors import ColumnError, ParameterError, check_columns, check_fraction
from privdash.measure.classes import MISSING_LABEL
from privdash.measure.encoding import EncodedColumn, encode_column, group_rows
from privdash.transform.hierarchy import Hierarchy, HierarchyError, canonical_text, lookup

__all__ = [
    "SUPPRESSED_LABEL",
    "ClassifierComparison",
    "InformationLoss",
    "Metric",
    "UtilityReport",
    "cells_changed",
    "classifier_accuracy",
    "information_loss",
    "information_loss_with_baseline",
    "utility_report",
    "value_distributions",
]

SUPPRESSED_LABEL = "(suppressed)"


@dataclass(frozen=True, eq=False)
class InformationLoss:
    """The five metrics of one transformed table against its original.

    ``per_column`` has one row per QI with ``loss``, ``precision``, ``entropy`` (that QI's contribution, before
    averaging / summing) and ``levels`` (the published levels found, e.g. ``"2"`` or ``"0, 2"``).
    """

    loss: float
    precision: float
    discernibility: float
    aecs: float
    entropy: float
    records: int
    suppressed: int
    classes: int
    per_column: pd.DataFrame

    def value(self, metric: str | Metric) -> float:
        """The value of one metric."""
        return float(getattr(self, Metric.parse(metric).value))

    def to_dict(self) -> dict[str, Any]:
        return {
            "loss": self.loss,
            "precision": self.precision,
            "discernibility": self.discernibility,
            "aecs": self.aecs,
            "entropy": self.entropy,
            "records": self.records,
            "suppressed": self.suppressed,
            "classes": self.classes,
            "per_column": self.per_column.to_dict(orient="records"),
        }


def _kept_positions(original: pd.DataFrame, transformed: pd.DataFrame, kept_rows: Any) -> np.ndarray:
    if kept_rows is None:
        if len(transformed) != len(original):
            raise ParameterError(
                f"The transformed table has {len(transformed):,} rows and the original {len(original):,}; pass "
                "kept_rows (the positions of the original rows that were kept) to align them."
            )
        return np.arange(len(original))
    kept = np.asarray(kept_rows, dtype=np.int64).reshape(-1)
    if len(kept) != len(transformed):
        raise ParameterError(f"kept_rows lists {len(kept):,} rows but the transformed table has {len(transformed):,}.")
    if len(kept) and (kept.min() < 0 or kept.max() >= len(original) or (np.diff(kept) <= 0).any()):
        raise ParameterError("kept_rows must be increasing positions of rows of the original table.")
    return kept


def _level_codes(hierarchy: Hierarchy, encoded: EncodedColumn, level: int) -> np.ndarray:
    """:meth:`Hierarchy.codes_for` (lenient: ``-2`` unmatched, ``-1`` missing) of an already encoded column."""
    position = lookup(hierarchy.labels[level], encoded.categories)
    position = np.where(position < 0, -2, position)
    value_codes = np.asarray(encoded.codes, dtype=np.int64)
    return np.where(value_codes < 0, -1, np.append(position, -1)[value_codes])


def _published_levels(
    hierarchy: Hierarchy, leaf: np.ndarray, published: pd.Series, column: str, encoded: EncodedColumn | None = None
) -> np.ndarray:
    """Per kept record, the lowest level whose ancestor of the original leaf is the published value (``encoded``:
    the published column's encoding, when at hand)."""
    levels = np.full(len(leaf), -1, dtype=np.int64)
    published_missing = published.isna().to_numpy()
    levels[(leaf < 0) & published_missing] = 0
    todo = levels < 0
    # The published column is encoded once; each level matches its distinct values.
    encoded = encode_column(published) if encoded is None else encoded
    for level in range(hierarchy.n_levels):
        if not todo.any():
            break
        codes = _level_codes(hierarchy, encoded, level)
        ancestor = np.where(leaf < 0, -3, hierarchy.codes[level][np.maximum(leaf, 0)])
        hit = todo & (codes == ancestor)
        levels[hit] = level
        todo &= ~hit
    if todo.any():
        first = int(np.flatnonzero(todo)[0])
        raise HierarchyError(
            f"Column '{column}': {int(todo.sum()):,} published value(s) are not a generalization of the original "
            f"value in the hierarchy (first: {published.iloc[first]!r})."
        )
    return levels


def information_loss(
    original: pd.DataFrame,
    transformed: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    *,
    quasi_identifiers: Sequence[str] | None = None,
    kept_rows: Any = None,
) -> InformationLoss:
    """The five information-loss metrics of ``transformed`` against ``original`` (module docstring).

    Parameters
    ----------
    original, transformed
        The table before and after the fix; rows removed by the fix are the suppressed records.
    hierarchies
        The hierarchy of each QI (rule-based ones are rebuilt over the original's values).
    quasi_identifiers
        The QIs (default: the keys of ``hierarchies``).
    kept_rows
        Positions in ``original`` of the rows of ``transformed`` (``TransformResult.kept_rows``); may be omitted
        when no row was removed (rows are then aligned by position).

    With ``transformed`` equal to ``original`` every metric gives the untransformed baseline (loss, precision
    and entropy 0).
    """
    qis = check_columns(
        original, list(hierarchies) if quasi_identifiers is None else quasi_identifiers, role="quasi-identifier"
    )
    check_columns(transformed, qis, role="quasi-identifier")
    return _information_loss(original, transformed, _Leaves(original, hierarchies), qis, kept_rows)


def information_loss_with_baseline(
    original: pd.DataFrame,
    transformed: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    *,
    quasi_identifiers: Sequence[str] | None = None,
    kept_rows: Any = None,
) -> tuple[InformationLoss, InformationLoss]:
    """:func:`information_loss` of ``original`` against itself (the untransformed baseline) and of ``transformed``,
    the original's hierarchies and leaf codes computed once for both."""
    qis = check_columns(
        original, list(hierarchies) if quasi_identifiers is None else quasi_identifiers, role="quasi-identifier"
    )
    check_columns(transformed, qis, role="quasi-identifier")
    leaves = _Leaves(original, hierarchies)
    after = _information_loss(original, transformed, leaves, qis, kept_rows)  # first: it may find them undefined
    return _information_loss(original, original, leaves, qis, None), after


class _Leaves(dict[str, tuple[Hierarchy, np.ndarray, EncodedColumn]]):
    """Per QI, on first use: its hierarchy over the original's values, the leaf code of each original record and the
    column's encoding (computed once for the baseline and the transformed table)."""

    def __init__(self, original: pd.DataFrame, hierarchies: Mapping[str, Hierarchy]) -> None:
        super().__init__()
        self.original = original
        self.hierarchies = hierarchies

    def __missing__(self, column: str) -> tuple[Hierarchy, np.ndarray, EncodedColumn]:
        if column not in self.hierarchies:
            raise HierarchyError(f"No hierarchy for quasi-identifier '{column}'.")
        values = self.original[column]
        hierarchy = self.hierarchies[column].for_values(values)
        encoded = encode_column(values)
        leaf = _level_codes(hierarchy, encoded, 0)
        if (leaf == -2).any():  # values that are no leaves: the hierarchy's own message
            leaf = hierarchy.leaf_codes(values)
        self[column] = (hierarchy, leaf, encoded)
        return self[column]


def _same_values(original: pd.Series, published: pd.Series) -> bool:
    """Whether two aligned columns of one (non-object) dtype hold equal values, missing in the same rows."""
    if original.dtype != published.dtype or original.dtype == object:
        return False
    missing = original.isna().to_numpy()
    if not np.array_equal(missing, published.isna().to_numpy()):
        return False
    equal = (original.reset_index(drop=True) == published.reset_index(drop=True)).to_numpy(dtype=bool, na_value=False)
    return bool(equal[~missing].all())


def _information_loss(
    original: pd.DataFrame,
    transformed: pd.DataFrame,
    leaves: _Leaves,
    qis: Sequence[str],
    kept_rows: Any,
) -> InformationLoss:
    kept = _kept_positions(original, transformed, kept_rows)
    n = len(original)
    if n == 0:
        raise ParameterError("The original table has no rows.")
    suppressed_mask = np.ones(n, dtype=bool)
    suppressed_mask[kept] = False
    suppressed = int(suppressed_mask.sum())
    rows = []
    published_codes = []
    for column in qis:
        hierarchy, leaf, encoded = leaves[column]
        if transformed is original or _same_values(original[column].iloc[kept], transformed[column]):
            # Every value is published as it is: its leaf is its level-0 label (missing stays missing): level 0.
            levels_kept = np.zeros(len(kept), dtype=np.int64)
            published = EncodedColumn(column, encoded.codes[kept], encoded.categories)
        else:
            published = encode_column(transformed[column])
            values = transformed[column].reset_index(drop=True)
            levels_kept = _published_levels(hierarchy, leaf[kept], values, column, published)
        published_codes.append(published)
        rows.append(
            {
                "column": column,
                "levels": ", ".join(str(v) for v in np.unique(levels_kept)),
                "loss": _column_loss(hierarchy, leaf, kept, levels_kept, suppressed, n),
                "precision": _column_precision(hierarchy, leaf, kept, levels_kept, suppressed, n),
                "entropy": _column_entropy(hierarchy, leaf, kept, levels_kept, suppressed_mask),
            }
        )
    per_column = pd.DataFrame(rows, columns=["column", "levels", "loss", "precision", "entropy"])
    if len(transformed):
        # The classes of equivalence_classes(transformed, qis) (missing as a value), from the encodings at hand.
        sizes = group_rows(published_codes).sizes.astype(np.float64)
        n_classes = len(sizes)
    else:
        sizes = np.zeros(0)
        n_classes = 0
    discernibility = float((sizes**2).sum() + float(n) * suppressed)
    aecs = n / (n_classes + (1 if suppressed else 0))
    return InformationLoss(
        loss=math.fsum(per_column["loss"]) / len(qis),
        precision=math.fsum(per_column["precision"]) / len(qis),
        discernibility=discernibility,
        aecs=aecs,
        entropy=math.fsum(per_column["entropy"]),
        records=n,
        suppressed=suppressed,
        classes=n_classes,
        per_column=per_column,
    )


def _column_loss(
    hierarchy: Hierarchy, leaf: np.ndarray, kept: np.ndarray, levels: np.ndarray, suppressed: int, n: int
) -> float:
    domain = hierarchy.n_leaves
    leaf_kept = leaf[kept]
    share = np.full(len(kept), 1.0 / domain)
    for level in np.unique(levels):
        at = (levels == level) & (leaf_kept >= 0)
        sizes = hierarchy.leaf_counts(int(level))
        share[at] = sizes[hierarchy.codes[int(level)][leaf_kept[at]]] / domain
    raw = (math.fsum(share) + suppressed) / n
    if domain <= 1:
        return 0.0
    return max((raw - 1.0 / domain) / (1.0 - 1.0 / domain), 0.0)


def _column_precision(
    hierarchy: Hierarchy, leaf: np.ndarray, kept: np.ndarray, levels: np.ndarray, suppressed: int, n: int
) -> float:
    height = hierarchy.max_level
    intensity = levels / height if height > 0 else np.zeros(len(levels))
    intensity = np.where(leaf[kept] < 0, 0.0, intensity)
    return (math.fsum(intensity) + suppressed) / n


def _column_entropy(
    hierarchy: Hierarchy, leaf: np.ndarray, kept: np.ndarray, levels_kept: np.ndarray, suppressed: np.ndarray
) -> float:
    n = len(leaf)
    virtual = hierarchy.n_levels  # suppression: one more level, above the hierarchy, holding every value
    levels = np.full(n, virtual, dtype=np.int64)
    levels[kept] = levels_kept
    levels[leaf < 0] = np.where(suppressed[leaf < 0], virtual, 0)
    # Codes per level with the missing value as its own code (never merged) and one code for "suppressed".
    leaf_code = np.where(leaf < 0, hierarchy.n_leaves, leaf)

    def code_at(level: int) -> np.ndarray:
        if level == virtual:
            return np.zeros(n, dtype=np.int64)
        return np.append(hierarchy.codes[level], len(hierarchy.labels[level]))[leaf_code]

    total = 0.0
    previous: int | None = None
    for level in np.unique(levels).tolist():
        rows = levels >= level
        source = leaf_code if previous is None else code_at(previous)
        target = code_at(level)
        source_counts = np.bincount(source[rows])
        target_counts = np.bincount(target[rows])
        total += float(np.log2(source_counts[source[rows]] / target_counts[target[rows]]).sum())
        previous = level
    return -total if total else 0.0


# --- distributions -------------------------------------------------------------------------------------------------


def value_distributions(
    original: pd.DataFrame, transformed: pd.DataFrame, columns: Sequence[str], *, kept_rows: Any = None
) -> pd.DataFrame:
    """Value counts of each column before and after, as a tidy table.

    One row per column and value (its canonical text; missing values as ``(missing)``), columns ``column``,
    ``value``, ``original``, ``transformed`` (counts; 0 when the value does not occur), ``original_share``,
    ``transformed_share`` (count / records of the original). Suppressed records (rows of the original absent
    from the transformed table) appear in the transformed counts as the value ``(suppressed)``, so both shares
    sum to 1. ``kept_rows`` is only used to check the row counts (see :func:`information_loss`).
    """
    names = check_columns(original, columns, role="column")
    check_columns(transformed, names, role="column")
    kept = _kept_positions(original, transformed, kept_rows) if kept_rows is not None else None
    n = len(original)
    if kept is None and len(transformed) > n:
        raise ParameterError("The transformed table has more rows than the original.")
    suppressed = n - len(transformed)
    frames = []
    for name in names:
        before = _text_counts(original[name])
        after = _text_counts(transformed[name])
        if suppressed:
            after[SUPPRESSED_LABEL] = after.get(SUPPRESSED_LABEL, 0) + suppressed
        values = list(dict.fromkeys([*before, *after]))
        frame = pd.DataFrame(
            {
                "column": name,
                "value": pd.Series(values, dtype=object),
                "original": np.array([before.get(v, 0) for v in values], dtype=np.int64),
                "transformed": np.array([after.get(v, 0) for v in values], dtype=np.int64),
            }
        )
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    table["original_share"] = table["original"] / n if n else 0.0
    table["transformed_share"] = table["transformed"] / n if n else 0.0
    return table


def _text_counts(values: pd.Series) -> dict[str, int]:
    counts = values.value_counts(dropna=False, sort=True)
    labels = [
        MISSING_LABEL if pd.isna(v) else t for v, t in zip(counts.index, canonical_text(counts.index), strict=True)
    ]
    out: dict[str, int] = {}
    for label, count in zip(labels, counts.to_numpy().tolist(), strict=True):
        out[label] = out.get(label, 0) + int(count)
    return out


def cells_changed(original: pd.DataFrame, transformed: pd.DataFrame, *, kept_rows: Any = None) -> pd.DataFrame:
    """Per column of the transformed table that the original has: cells of the kept records whose published value
    differs from the original one.

    Columns ``column``, ``changed``, ``share`` (``changed`` over the kept records; 0 without records). Two numeric
    columns are compared as numbers (39 and 39.0 are equal), anything else as text; a cell blanked or filled in
    counts as changed, a cell missing on both sides does not. Suppressed records are not counted (see
    :func:`value_distributions`); ``kept_rows`` aligns the tables as in :func:`information_loss`.
    """
    kept = _kept_positions(original, transformed, kept_rows)
    rows = []
    for name in transformed.columns:
        if name not in original.columns:
            continue
        before = original[name].iloc[kept].reset_index(drop=True)
        after = transformed[name].reset_index(drop=True)
        missing_before, missing_after = before.isna().to_numpy(), after.isna().to_numpy()
        if all(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) for s in (before, after)):
            same = before.to_numpy(dtype=np.float64, na_value=np.nan) == after.to_numpy(
                dtype=np.float64, na_value=np.nan
            )
        elif isinstance(before.dtype, pd.StringDtype) and before.dtype == after.dtype:
            same = (before == after).to_numpy(dtype=bool, na_value=False)  # text already: str(x) is x
        else:
            same = before.astype(str).to_numpy() == after.astype(str).to_numpy()
        changed = (~same & ~(missing_before & missing_after)) | (missing_before != missing_after)
        count = int(changed.sum())
        rows.append((str(name), count, count / len(kept) if len(kept) else 0.0))
    return pd.DataFrame(rows, columns=["column", "changed", "share"])


# --- classifier accuracy --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassifierComparison:
    """Accuracy of the same classifier trained on the original and on the transformed data.

    The original rows are split once into train and test positions (``test_size``, stratified by the target
    when every class has at least two records, ``seed``). *Original*: trained on the original train
    rows, accuracy on the original test rows. *Transformed*: trained on the transformed rows whose original
    position is in the train part, accuracy on the transformed rows whose original position is in the test part
    (suppressed records are in neither). ``baseline`` is the accuracy of always predicting the most frequent
    target value of the original train rows, on the original test rows.
    """

    target: str
    features: tuple[str, ...]
    model: str
    original_accuracy: float
    transformed_accuracy: float
    baseline_accuracy: float
    train_records: int
    test_records: int
    transformed_train_records: int
    transformed_test_records: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["features"] = list(self.features)
        return out


_MODELS = ("logistic", "tree")


def _renamed_seed(seed: int, random_state: int | None) -> int:
    """``seed``, or the value of its old keyword ``random_state`` with a :class:`DeprecationWarning`."""
    if random_state is None:
        return seed
    warnings.warn("random_state is deprecated: the keyword is seed", DeprecationWarning, stacklevel=3)
    return random_state


def _one_hot(frame: pd.DataFrame) -> pd.DataFrame:
    text = pd.DataFrame(
        {c: pd.Series(np.asarray(canonical_text(frame[c]), dtype=object), index=frame.index) for c in frame.columns}
    )
    for column in frame.columns:
        text.loc[frame[column].isna().to_numpy(), column] = MISSING_LABEL
    return text


def classifier_accuracy(
    original: pd.DataFrame,
    transformed: pd.DataFrame,
    *,
    target: str,
    features: Sequence[str],
    kept_rows: Any = None,
    model: str = "logistic",
    test_size: float = 0.3,
    seed: int = 0,
    random_state: int | None = None,
) -> ClassifierComparison:
    """Train a simple scikit-learn classifier on original vs transformed data (see :class:`ClassifierComparison`).

    Every feature is one-hot encoded as text (a generalized number becomes its interval label, so numbers are
    categories on both sides; missing is a category). ``model``: ``"logistic"`` (``LogisticRegression``,
    lbfgs, ``max_iter=1000``; ARX's default classifier) or ``"tree"`` (``DecisionTreeClassifier`` with
    ``min_samples_leaf=5``). Categories unseen in training are ignored at prediction time. Rows with a
    missing target are left out. Raises :class:`ParameterError` when a split has fewer than two target values.

    ``seed`` (a measurement's fixed default, 0: the same call gives the same accuracy) seeds the split and the
    tree; ``random_state`` is its old name, read for one release with a :class:`DeprecationWarning`.
    """
    seed = _renamed_seed(seed, random_state)
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder
    from sklearn.tree import DecisionTreeClassifier

    names = check_columns(original, features, role="feature")
    check_columns(original, [target], role="target column")
    if target in names:
        raise ColumnError(f"The target '{target}' cannot also be a feature.")
    check_columns(transformed, [*names, target], role="column")
    if model not in _MODELS:
        raise ParameterError(f"Unknown classifier {model!r}; use one of {', '.join(_MODELS)}.")
    fraction = check_fraction(test_size, "test_size", inclusive_zero=False, inclusive_one=False)
    kept = _kept_positions(original, transformed, kept_rows)
    labelled = original[target].notna().to_numpy()
    positions = np.flatnonzero(labelled)
    y_all = np.asarray(canonical_text(original[target]), dtype=object)
    values, counts = np.unique(y_all[positions].astype(str), return_counts=True)
    if len(values) < 2:
        raise ParameterError(f"The target '{target}' needs at least two values to train a classifier.")
    stratify = y_all[positions] if counts.min() >= 2 else None
    train_pos, test_pos = train_test_split(positions, test_size=fraction, random_state=seed, stratify=stratify)
    in_train = np.zeros(len(original), dtype=bool)
    in_train[train_pos] = True
    in_test = np.zeros(len(original), dtype=bool)
    in_test[test_pos] = True

    def fit_score(frame: pd.DataFrame, y: np.ndarray, train: np.ndarray, test: np.ndarray) -> float:
        if len(np.unique(y[train].astype(str))) < 2:
            raise ParameterError(f"The training part has a single value of '{target}'; cannot train a classifier.")
        estimator: Any = (
            LogisticRegression(max_iter=1000)
            if model == "logistic"
            else DecisionTreeClassifier(min_samples_leaf=5, random_state=seed)
        )
        pipeline = make_pipeline(OneHotEncoder(handle_unknown="ignore"), estimator)
        x = _one_hot(frame[list(names)])
        pipeline.fit(x.iloc[train], y[train].astype(str))
        if not len(test):
            return math.nan
        return float((pipeline.predict(x.iloc[test]) == y[test].astype(str)).mean())

    original_accuracy = fit_score(original.reset_index(drop=True), y_all, train_pos, test_pos)
    published = transformed.reset_index(drop=True)
    y_published = np.asarray(canonical_text(published[target]), dtype=object)
    published_labelled = published[target].notna().to_numpy()
    train_t = np.flatnonzero(in_train[kept] & published_labelled)
    test_t = np.flatnonzero(in_test[kept] & published_labelled)
    transformed_accuracy = fit_score(published, y_published, train_t, test_t)
    majority = pd.Series(y_all[train_pos].astype(str)).value_counts().index[0]
    baseline = float((y_all[test_pos].astype(str) == majority).mean())
    return ClassifierComparison(
        target=target,
        features=tuple(names),
        model=model,
        original_accuracy=original_accuracy,
        transformed_accuracy=transformed_accuracy,
        baseline_accuracy=baseline,
        train_records=len(train_pos),
        test_records=len(test_pos),
        transformed_train_records=len(train_t),
        transformed_test_records=len(test_t),
        seed=seed,
    )


# --- everything together -------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class UtilityReport:
    """Before (the original against itself) and after (the transformed table) side by side."""

    before: InformationLoss
    after: InformationLoss
    distributions: pd.DataFrame
    classifier: ClassifierComparison | None

    def metrics_table(self) -> pd.DataFrame:
        """One row per metric: ``metric``, ``before``, ``after``."""
        return pd.DataFrame(
            {
                "metric": [m.value for m in Metric],
                "before": [self.before.value(m) for m in Metric],
                "after": [self.after.value(m) for m in Metric],
            }
        )


def utility_report(
    original: pd.DataFrame,
    transformed: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy],
    *,
    quasi_identifiers: Sequence[str] | None = None,
    kept_rows: Any = None,
    target: str | None = None,
    features: Sequence[str] | None = None,
    model: str = "logistic",
    seed: int = 0,
    random_state: int | None = None,
) -> UtilityReport:
    """Metrics before and after, distributions of the QIs, and (with ``target``) classifier accuracy.

    ``features`` default to the QIs. See :func:`information_loss`, :func:`value_distributions` and
    :func:`classifier_accuracy` (``seed``; ``random_state`` is its old name, read for one release).
    """
    seed = _renamed_seed(seed, random_state)
    qis = list(hierarchies) if quasi_identifiers is None else list(quasi_identifiers)
    before = information_loss(original, original, hierarchies, quasi_identifiers=qis)
    after = information_loss(original, transformed, hierarchies, quasi_identifiers=qis, kept_rows=kept_rows)
    distributions = value_distributions(original, transformed, qis, kept_rows=kept_rows)
    classifier = None
    if target is not None:
        classifier = classifier_accuracy(
            original,
            transformed,
            target=target,
            features=qis if features is None else features,
            kept_rows=kept_rows,
            model=model,
            seed=seed,
        )
    return UtilityReport(before, after, distributions, classifier)
