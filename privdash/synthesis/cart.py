"""Sequential CART synthesis in the manner of synthpop (Nowok, Raab and Dibben 2016), on scikit-learn's trees.

The columns are visited in an order. The first column that is drawn takes its values from its own marginal (a
bootstrap: each synthetic value is the value of an original record drawn uniformly with replacement). Each next
column ``c`` is drawn from a tree fitted on the original records, with ``c`` as the target and the columns visited
before it as predictors: the tree puts the synthetic record into a leaf (from its values of the earlier columns),
and the synthetic value is the value of ``c`` of an original record drawn uniformly from the records of that leaf
(synthpop's ``cart`` method without smoothing). Columns that are kept (partial synthesis) come first in the order
and act only as predictors.

Encoding of the predictors (the trees split on numbers):

- a numeric column (numbers, booleans, dates) is its value, with a missing value replaced by the column's median
  and a second predictor that is 1 for a missing value and 0 otherwise;
- any other column is an ordinal code of its values (sorted as text), and a missing value is one more code of its
  own (missing is a category).

Targets: a text column is fitted with a classification tree (Gini) on those codes, so a missing value is a category
that can be drawn; a numeric column with a regression tree (squared error) on two outputs, the value (missing
replaced by the median) and the missing flag scaled to the value's standard deviation, so the leaves also separate
the records with a missing value. Either way the drawn value is an original record's value, missing or not, and the
synthetic column has the original's dtype. A column with a single value (missing included) is not modelled: every
synthetic record gets that value, and the model line says so.

Everything is vectorized: the original records are sorted by leaf once per column (offsets and counts per leaf),
and every synthetic record draws one random position inside its leaf's range.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CartModel", "encode", "fit_sample"]

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class CartModel:
    """What :func:`fit_sample` did: the order of the drawn columns, the constant ones and the leaf size."""

    order: tuple[str, ...]
    constant: tuple[str, ...]
    min_leaf: int

    def describe(self, kept: Sequence[str] = ()) -> str:
        """One line: the method, the leaf size, the order and the columns kept or constant."""
        text = f"sequential CART (synthpop's method, donor drawn from the leaf), min leaf {self.min_leaf}"
        if kept:
            text += f", kept as predictors: {', '.join(kept)}"
        text += f", order: {', '.join(self.order) if self.order else '(none)'}"
        if self.constant:
            text += f"; one value only, copied as is: {', '.join(self.constant)}"
        return text


def is_numeric(series: pd.Series) -> bool:
    """Numbers, booleans and dates are numeric predictors; everything else is categorical."""
    return bool(
        pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_datetime64_any_dtype(series.dtype)
    ) and not isinstance(series.dtype, pd.CategoricalDtype)


def encode(series: pd.Series) -> tuple[np.ndarray, bool]:
    """The predictor columns of ``series`` (rows x 1 or 2, float) and whether it is numeric (module docstring)."""
    if is_numeric(series):
        if pd.api.types.is_datetime64_any_dtype(series.dtype):
            missing = series.isna().to_numpy()
            values = series.to_numpy(dtype="datetime64[ns]").astype("int64").astype(float)
            values[missing] = np.nan
        else:
            values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        missing = np.isnan(values)
        if missing.any():
            filled = np.where(missing, np.nanmedian(values) if (~missing).any() else 0.0, values)
            return np.column_stack([filled, missing.astype(float)]), True
        return values.reshape(-1, 1), True
    codes = category_codes(series)
    return codes.astype(float).reshape(-1, 1), False


def category_codes(series: pd.Series) -> np.ndarray:
    """Ordinal codes of the values sorted as text; a missing value gets one more code of its own."""
    missing = series.isna().to_numpy()
    text = series.astype(object).where(~series.isna(), None)
    present = text[~missing].astype(str)
    uniques = np.sort(present.unique())
    codes = np.full(len(series), len(uniques), dtype=np.int64)
    codes[~missing] = np.searchsorted(uniques, present.to_numpy())
    return codes


def _target(series: pd.Series) -> tuple[np.ndarray, bool]:
    """The tree's target: codes for a categorical column, (value, scaled missing flag) for a numeric one."""
    if not is_numeric(series):
        return category_codes(series), False
    columns, _ = encode(series)
    if columns.shape[1] == 1:
        return columns[:, 0], True
    scale = float(np.std(columns[:, 0])) or 1.0
    return np.column_stack([columns[:, 0], columns[:, 1] * scale]), True


def _donors(leaf_original: np.ndarray, leaf_synthetic: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each synthetic record, the position of an original record drawn uniformly from the same leaf."""
    order = np.argsort(leaf_original, kind="stable")
    leaves, starts, counts = np.unique(leaf_original[order], return_index=True, return_counts=True)
    where = np.searchsorted(leaves, leaf_synthetic)
    # Every leaf of a tree holds training records, and the trees are fitted on every original record.
    offsets = (rng.random(len(leaf_synthetic)) * counts[where]).astype(np.int64)
    return order[starts[where] + offsets]


def fit_sample(
    table: pd.DataFrame,
    draw: Sequence[str],
    *,
    kept: Sequence[str] = (),
    rows: np.ndarray | None = None,
    n: int | None = None,
    min_leaf: int = 5,
    rng: np.random.Generator,
    progress: Progress | None = None,
) -> tuple[dict[str, np.ndarray], CartModel]:
    """Draw the columns ``draw`` (in that order) for synthetic records, by sequential CART on ``table``.

    ``kept`` columns are predictors whose values are not drawn: the synthetic records are the original records
    at positions ``rows`` (partial synthesis). Without ``kept`` the synthetic records are ``n`` new records
    (``len(table)`` by default). Returns, for each drawn column, the positions of the donor records (so the value
    is ``table[column].iloc[positions]``), and the model.
    """
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    size = len(table)
    count = len(rows) if rows is not None else (n if n is not None else size)
    original: list[np.ndarray] = []
    synthetic: list[np.ndarray] = []
    for column in kept:
        features, _ = encode(table[column])
        original.append(features)
        synthetic.append(features[rows] if rows is not None else features[:count])
    donors: dict[str, np.ndarray] = {}
    order: list[str] = []
    constant: list[str] = []
    steps = max(len(draw), 1)
    for index, column in enumerate(draw):
        if progress is not None:
            progress(index / steps, f"drawing {column} ({index + 1} of {len(draw)})")
        series = table[column]
        if series.nunique(dropna=False) <= 1:
            constant.append(column)
            donors[column] = np.zeros(count, dtype=np.int64)
            continue
        if not original:
            picked = rng.integers(0, size, count)
        else:
            x_original, x_synthetic = np.hstack(original), np.hstack(synthetic)
            target, numeric = _target(series)
            seed = int(rng.integers(0, 2**31 - 1))
            tree: DecisionTreeClassifier | DecisionTreeRegressor
            if numeric:
                tree = DecisionTreeRegressor(min_samples_leaf=min_leaf, random_state=seed)
            else:
                tree = DecisionTreeClassifier(min_samples_leaf=min_leaf, random_state=seed)
            with warnings.catch_warnings():
                # A text column with a value per record or so is still drawn from its leaves (the donor rule does
                # not need the classes to repeat); scikit-learn's hint that it may be a regression target is noise.
                warnings.filterwarnings("ignore", message="The number of unique classes", category=UserWarning)
                tree.fit(x_original, target)
            picked = _donors(tree.apply(x_original), tree.apply(x_synthetic), rng)
        donors[column] = picked
        order.append(column)
        features, _ = encode(series)
        original.append(features)
        synthetic.append(features[picked])
    if progress is not None:
        progress(1.0, "drawn")
    return donors, CartModel(tuple(order), tuple(constant), min_leaf)
