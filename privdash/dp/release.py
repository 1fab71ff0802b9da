"""Differentially private releases of aggregates: counts, histograms (the class-size table among them), sums and
means, each with its noise scale, privacy cost and error bar.

Contribution bound: by default every person contributes at most one row, so neighbouring tables differ by one row (see
:mod:`privdash.dp.mechanisms` for the definitions and the noise). With ``entity`` (the person-id column)
and ``max_rows_per_person`` = c, each person's rows are first truncated to at most c
(:func:`~privdash.dp.contributions.bound_contributions`), neighbouring tables differ by at most c rows,
and every measurement is calibrated by OpenDP at d_in = c: the sensitivities below are multiplied by c (for a float
sum, OpenDP's map at c rows). The queries and their one-row sensitivities:

- count: the number of rows; Δ = 1.
- histogram: the number of rows per category of a column; class-size table: the number of rows per combination
  of quasi-identifier values (the equivalence-class sizes). Δ₁ = Δ₂ = 1, because one row changes one count.
- sum: Σ clamp(x, L, U) over the rows with a value (missing values are dropped, which changes at most the one
  row a person adds); Δ = max(|L|, |U|). The bounds (L, U) are declared by the analyst, never taken from the data.
- mean: a DP sum and a DP count of the rows with a value, each at half of (ε, δ) (sequential composition),
  released as clamp(S̃ / max(C̃, 1), L, U).

The domain rule: the categories of a histogram are public knowledge declared by the analyst (a list of values,
a file, or for the class-size table the product of the per-QI domains or hierarchy leaves). Values of the data
outside the domain are not counted, and no category is ever taken from the data's own distinct values, since the
mere presence of a rare value would reveal the person who holds it. Without a domain, categories can be chosen by
DP key selection (δ > 0): every distinct value's count gets discrete Laplace noise and only keys whose noisy count
reaches a threshold τ are released (the stability histogram of Korolova et al. 2009 and Bun, Nissim and Stemmer
2016). Its δ is the chance that a key held by one person is released, r^(τ-1)/(1 + r) with r = e^-ε
(:func:`key_selection_delta`), and τ is the smallest integer that keeps it within the budget's δ. With c rows per
person, the scale is c/ε and δ is the largest chance, over the ways of spreading c rows over keys no one else holds,
that at least one of those keys is released (computed exactly by a small dynamic programme over the partitions of c).

Error bars: ``error`` is the half-width of the interval that holds the noise with probability ``confidence``
(per cell, not simultaneously over all cells of a histogram). For a mean it is the first-order bound
(a_S + |mean| a_C) / max(C̃, 1) with each part at confidence 1 - α/2 (a union bound), an approximation.
True values are returned only when asked for (``include_true=True``) and are the exact values of the same query
(on clamped values for sums and means); they are for the data owner and never belong in a released file.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import privdash.dp._opendp as dp
from privdash.data.fingerprint import category_text
from privdash.dp.contributions import ContributionBound, bound_contributions, most_rows_per_person
from privdash.dp.mechanisms import (
    D_IN,
    DEFAULT_CONFIDENCE,
    Calibrated,
    Mechanism,
    PrivacyBudget,
    accuracy,
    calibrate,
    check_confidence,
    out_of_range,
    uses_contrib,
)
from privdash.errors import ColumnError, DataReadError, ParameterError, check_columns
from privdash.measure.classes import MISSING_LABEL

__all__ = [
    "DP_ERROR",
    "DP_TRUE_VALUE",
    "DP_VALUE",
    "MAX_DOMAIN_CELLS",
    "MAX_KEY_SELECTION_ROWS",
    "MAX_THRESHOLD",
    "QUERIES",
    "DPRelease",
    "category_text",
    "dp_class_sizes",
    "dp_count",
    "dp_histogram",
    "dp_mean",
    "dp_sum",
    "key_selection_delta",
    "key_selection_threshold",
    "read_domain_file",
    "sum_measurement",
]

#: The queries of :func:`release`-style calls, in the order the CLI lists them.
QUERIES = ("count", "histogram", "sum", "mean")
#: Column names of a release table: the DP value, its error bar, and (data owner only) the true value.
DP_VALUE, DP_ERROR, DP_TRUE_VALUE = "dp_value", "error", "true_value"
#: The largest histogram domain (cells) accepted, e.g. the product of the per-QI domains of a class-size table.
MAX_DOMAIN_CELLS = 1_000_000
#: Joins the values of several QIs into one category key (a control character no real value holds).
_SEP = "\x1f"


@dataclass(frozen=True)
class DPRelease:
    """One differentially private release and how to read it.

    ``table`` holds one row per released cell: the key columns (none for count, sum and mean), :data:`DP_VALUE` and
    :data:`DP_ERROR` (the half-width of the ``confidence`` interval of the noise). ``epsilon`` and ``delta`` are the
    privacy loss OpenDP proves for the whole release (the δ of key selection is the exact one of
    :func:`key_selection_delta`); ``scale`` is the noise scale (Laplace b or Gaussian σ; for a
    mean, of the sum, with ``count_scale`` that of the count); ``sensitivity`` is Δ of the (sum) query.
    ``key_selection_threshold`` is τ of DP key selection (None with a declared domain; ``threshold`` is its old
    name, read for one release); ``true_table`` holds the exact values only
    when they were asked for (of the same query on the same, truncated, rows). ``contribution`` is how the rows were
    bounded to at most c per person of a person-id column (None: one row per person, d_in = 1).
    """

    query: str
    columns: tuple[str, ...]
    mechanism: Mechanism
    epsilon: float
    delta: float
    sensitivity: float
    scale: float
    confidence: float
    expected_error: float
    table: pd.DataFrame
    bounds: tuple[float, float] | None = None
    key_selection_threshold: float | None = None
    domain_size: int | None = None
    count_scale: float | None = None
    true_table: pd.DataFrame | None = field(default=None, repr=False)
    contribution: ContributionBound | None = None

    @property
    def threshold(self) -> float | None:
        """Deprecated name of :attr:`key_selection_threshold` ("threshold" alone names other things elsewhere)."""
        warnings.warn(
            "DPRelease.threshold is deprecated: use DPRelease.key_selection_threshold", DeprecationWarning, stacklevel=2
        )
        return self.key_selection_threshold

    @property
    def max_rows_per_person(self) -> int:
        """The rows one person may contribute: the declared bound c, or 1 without a person-id column."""
        return self.contribution.max_rows_per_person if self.contribution is not None else 1

    @property
    def contribution_text(self) -> str:
        """The unit of privacy in words: one row per person, or at most c rows per person of the id column."""
        if self.contribution is None:
            return "one row per person"
        c = self.contribution.max_rows_per_person
        return f"at most {c} row{'s' if c != 1 else ''} per person (person id '{self.contribution.entity}')"

    @property
    def cost(self) -> PrivacyBudget:
        """The privacy loss (ε, δ) to charge to the dataset's budget."""
        return PrivacyBudget(self.epsilon, self.delta)

    @property
    def value(self) -> float:
        """The DP value of a count, sum or mean (a histogram has one per row of :attr:`table`)."""
        if self.query not in ("count", "sum", "mean"):
            raise ParameterError(f"A {self.query} release has one value per category: read its table.")
        return float(self.table[DP_VALUE].iloc[0])

    @property
    def true_value(self) -> float | None:
        """The exact value of a count, sum or mean, when it was asked for (data owner only)."""
        if self.true_table is None or self.query not in ("count", "sum", "mean"):
            return None
        return float(self.true_table[DP_TRUE_VALUE].iloc[0])

    def to_frame(self, *, include_true: bool = False) -> pd.DataFrame:
        """The release as a table; ``include_true`` adds the exact values (never for a file that is released)."""
        frame = self.table.copy()
        if include_true:
            if self.true_table is None:
                raise ParameterError("The true values were not computed: release with include_true=True.")
            frame[DP_TRUE_VALUE] = self.true_table[DP_TRUE_VALUE].to_numpy()
        return frame

    def to_dict(self, *, include_true: bool = False, include_counts: bool = False) -> dict[str, Any]:
        """The release as JSON values: parameters, cost, error bars and the cells. With a person-id column, the
        bound (``entity``, ``max_rows_per_person``) is always there; ``include_counts`` adds ``truncation``, the
        exact counts of people and of rows dropped (for the data owner, like ``include_true``)."""
        keys = [c for c in self.table.columns if c not in (DP_VALUE, DP_ERROR)]
        frame = self.to_frame(include_true=include_true)
        cells = [
            {
                **({"key": {k: row[k] for k in keys}} if keys else {}),
                "value": row[DP_VALUE],
                "error": row[DP_ERROR],
                **({"true_value": row[DP_TRUE_VALUE]} if include_true else {}),
            }
            for row in frame.to_dict(orient="records")
        ]
        return {
            "query": self.query,
            "columns": list(self.columns),
            "mechanism": self.mechanism.value,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "sensitivity": self.sensitivity,
            "scale": self.scale,
            **({"count_scale": self.count_scale} if self.count_scale is not None else {}),
            **({"bounds": list(self.bounds)} if self.bounds is not None else {}),
            # "threshold" is the old key of key_selection_threshold, kept one release for readers of the JSON
            **(
                {"key_selection_threshold": self.key_selection_threshold, "threshold": self.key_selection_threshold}
                if self.key_selection_threshold is not None
                else {}
            ),
            **({"domain_size": self.domain_size} if self.domain_size is not None else {}),
            "confidence": self.confidence,
            "expected_error": self.expected_error,
            "contribution": self.contribution_text,
            **(
                {"entity": self.contribution.entity, "max_rows_per_person": self.contribution.max_rows_per_person}
                if self.contribution is not None
                else {}
            ),
            **({"truncation": self.contribution.to_dict()} if include_counts and self.contribution is not None else {}),
            "cells": cells,
        }


# --- the queries ---------------------------------------------------------------------------------------------


@uses_contrib
def dp_count(
    data: pd.DataFrame,
    *,
    epsilon: float,
    delta: float = 0.0,
    mechanism: Mechanism | str = Mechanism.LAPLACE,
    confidence: float = DEFAULT_CONFIDENCE,
    include_true: bool = False,
    entity: str | None = None,
    max_rows_per_person: int | None = None,
    seed: int | None = None,
) -> DPRelease:
    """The number of rows of ``data`` with noise of ``mechanism`` at (ε, δ); Δ = 1, or c with ``entity`` and
    ``max_rows_per_person`` = c (the rows are first truncated to c per person, see :func:`bound_contributions`;
    ``seed`` makes the truncation reproducible)."""
    budget, kind, confidence = PrivacyBudget(epsilon, delta), Mechanism.parse(mechanism), check_confidence(confidence)
    data, bound = _bounded(data, entity, max_rows_per_person, seed, ())
    d_in = _d_in(bound)
    rows = np.zeros(len(data), dtype=np.int64)  # one entry per row: the count only sees how many there are
    domain = dp.vector_domain(dp.atom_domain(T=dp.i64))
    transformation = dp.t.make_count(domain, dp.symmetric_distance(), TO=dp.i64 if kind.discrete else float)
    calibrated = calibrate(transformation, kind, budget, d_in)
    value = calibrated.measurement(rows)
    release = _scalar("count", (), kind, calibrated, confidence, value, len(data), include_true)
    return _with(release, contribution=bound)


@uses_contrib
def dp_sum(
    data: pd.DataFrame,
    column: str,
    bounds: tuple[float, float],
    *,
    epsilon: float,
    delta: float = 0.0,
    mechanism: Mechanism | str = Mechanism.LAPLACE,
    confidence: float = DEFAULT_CONFIDENCE,
    include_true: bool = False,
    entity: str | None = None,
    max_rows_per_person: int | None = None,
    seed: int | None = None,
) -> DPRelease:
    """Σ clamp(x, L, U) over the rows of ``column`` with a value, with noise at (ε, δ); Δ = max(|L|, |U|), or
    OpenDP's map at c rows with ``entity`` and ``max_rows_per_person`` = c (see :func:`dp_count`)."""
    budget, kind, confidence = PrivacyBudget(epsilon, delta), Mechanism.parse(mechanism), check_confidence(confidence)
    check_columns(data, [column])
    data, bound = _bounded(data, entity, max_rows_per_person, seed, (column,))
    values, low, high = _numeric(data, column, bounds, kind)
    calibrated = sum_measurement((low, high), kind, budget, _d_in(bound))
    with out_of_range(f"The sum of '{column}' within [{low:g}, {high:g}]"):
        value = calibrated.measurement(values)
    exact = float(np.clip(values, low, high).sum())
    release = _scalar("sum", (column,), kind, calibrated, confidence, value, exact, include_true)
    return _with(release, bounds=(low, high), contribution=bound)


@uses_contrib
def sum_measurement(
    bounds: tuple[float, float], mechanism: Mechanism | str, budget: PrivacyBudget, d_in: int = D_IN
) -> Calibrated:
    """The OpenDP measurement of a bounded sum (clamp into ``bounds``, add up, add noise) calibrated to ``budget``
    for ``d_in`` rows per person; it takes a list of numbers (integers for geometric noise). :func:`dp_sum` runs it
    once on a column."""
    kind = Mechanism.parse(mechanism)
    low, high = _bounds(bounds)
    domain, clamp_bounds = _value_domain(kind, low, high)
    with out_of_range(f"The bounds [{low:g}, {high:g}]"):
        transformation = dp.t.make_clamp(domain, dp.symmetric_distance(), bounds=clamp_bounds) >> dp.t.then_sum()
        transformation.map(d_in)
    return calibrate(transformation, kind, budget, d_in)


@uses_contrib
def dp_mean(
    data: pd.DataFrame,
    column: str,
    bounds: tuple[float, float],
    *,
    epsilon: float,
    delta: float = 0.0,
    mechanism: Mechanism | str = Mechanism.LAPLACE,
    confidence: float = DEFAULT_CONFIDENCE,
    include_true: bool = False,
    entity: str | None = None,
    max_rows_per_person: int | None = None,
    seed: int | None = None,
) -> DPRelease:
    """The mean of clamp(x, L, U) over the rows of ``column`` with a value: a DP sum over a DP count, each at half
    of (ε, δ), composed by OpenDP; clamped into [L, U]. The error bar is a first-order approximation. With
    ``entity`` and ``max_rows_per_person`` = c, both are calibrated at c rows per person (see :func:`dp_count`)."""
    budget, kind, confidence = PrivacyBudget(epsilon, delta), Mechanism.parse(mechanism), check_confidence(confidence)
    check_columns(data, [column])
    data, bound = _bounded(data, entity, max_rows_per_person, seed, (column,))
    d_in = _d_in(bound)
    values, low, high = _numeric(data, column, bounds, kind)
    domain, _ = _value_domain(kind, low, high)
    metric, half = dp.symmetric_distance(), budget.split(2)
    summed = sum_measurement((low, high), kind, half, d_in)
    counted = calibrate(dp.t.make_count(domain, metric, TO=dp.i64 if kind.discrete else float), kind, half, d_in)
    with out_of_range(f"The mean of '{column}' within [{low:g}, {high:g}] at ε = {budget.epsilon:g}"):
        composed = dp.c.make_composition([summed.measurement, counted.measurement])
        noisy_sum, noisy_count = composed(values)
        cost = _cost(composed.map(d_in))
    denominator = max(float(noisy_count), 1.0)
    mean = float(np.clip(float(noisy_sum) / denominator, low, high))
    # Each part at confidence 1 - α/2, so both hold together with probability >= confidence (union bound).
    part_confidence = 1 - (1 - confidence) / 2
    error_sum = accuracy(kind, summed.scale, part_confidence)
    error_count = accuracy(kind, counted.scale, part_confidence)
    error = (error_sum + abs(mean) * error_count) / denominator
    clamped = np.clip(values, low, high)
    exact = float(clamped.mean()) if len(clamped) else float("nan")
    return DPRelease(
        query="mean",
        columns=(column,),
        mechanism=kind,
        epsilon=cost.epsilon,
        delta=cost.delta,
        sensitivity=summed.sensitivity,
        scale=summed.scale,
        confidence=confidence,
        expected_error=error,
        table=pd.DataFrame({DP_VALUE: [mean], DP_ERROR: [error]}),
        bounds=(low, high),
        count_scale=counted.scale,
        true_table=pd.DataFrame({DP_TRUE_VALUE: [exact]}) if include_true else None,
        contribution=bound,
    )


@uses_contrib
def dp_histogram(
    data: pd.DataFrame,
    column: str,
    *,
    epsilon: float,
    delta: float = 0.0,
    domain: Sequence[Any] | None = None,
    mechanism: Mechanism | str = Mechanism.LAPLACE,
    confidence: float = DEFAULT_CONFIDENCE,
    include_true: bool = False,
    entity: str | None = None,
    max_rows_per_person: int | None = None,
    seed: int | None = None,
) -> DPRelease:
    """The number of rows per value of ``column``, for the values of the public ``domain`` (values outside it
    are not counted); without a domain, DP key selection (needs δ > 0) decides which values are released. With
    ``entity`` and ``max_rows_per_person`` = c, calibrated at c rows per person (see :func:`dp_count`)."""
    (name,) = check_columns(data, [column])
    domains = {name: domain} if domain is not None else None
    data, bound = _bounded(data, entity, max_rows_per_person, seed, (name,))
    kind = Mechanism.parse(mechanism)
    release = _histogram(data, (name,), domains, "histogram", epsilon, delta, kind, confidence, include_true, bound)
    return _with(release, contribution=bound)


@uses_contrib
def dp_class_sizes(
    data: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    *,
    epsilon: float,
    delta: float = 0.0,
    domains: Mapping[str, Sequence[Any]] | None = None,
    mechanism: Mechanism | str = Mechanism.LAPLACE,
    confidence: float = DEFAULT_CONFIDENCE,
    include_true: bool = False,
    entity: str | None = None,
    max_rows_per_person: int | None = None,
    seed: int | None = None,
) -> DPRelease:
    """The class-size table: the number of rows per combination of quasi-identifier values, over the product of
    the public per-QI ``domains`` (every QI needs one), or chosen by DP key selection (δ > 0) without domains. With
    ``entity`` and ``max_rows_per_person`` = c, calibrated at c rows per person (see :func:`dp_count`)."""
    names = check_columns(data, quasi_identifiers, role="quasi-identifier")
    if domains is not None:
        missing = [n for n in names if n not in domains]
        if missing:
            raise ParameterError(
                f"No public domain declared for {', '.join(missing)}: the class-size table needs the domain of every "
                "quasi-identifier (or none at all, for DP key selection with δ > 0)."
            )
    data, bound = _bounded(data, entity, max_rows_per_person, seed, names)
    kind = Mechanism.parse(mechanism)
    release = _histogram(data, names, domains, "class_sizes", epsilon, delta, kind, confidence, include_true, bound)
    return _with(release, contribution=bound)


# --- histograms ----------------------------------------------------------------------------------------------


def _histogram(
    data: pd.DataFrame,
    columns: tuple[str, ...],
    domains: Mapping[str, Sequence[Any]] | None,
    query: str,
    epsilon: float,
    delta: float,
    mechanism: Mechanism | str,
    confidence: float,
    include_true: bool,
    bound: ContributionBound | None = None,
) -> DPRelease:
    budget, kind, confidence = PrivacyBudget(epsilon, delta), Mechanism.parse(mechanism), check_confidence(confidence)
    if domains is None:
        return _key_selection(data, columns, query, budget, kind, confidence, include_true, _d_in(bound))
    keys = _keys(data, columns)
    cells = _domain_cells(columns, domains)
    categories = _join(cells, columns).tolist()
    number_type = dp.i64 if kind.discrete else float
    metric_type = dp.L2Distance[float] if kind is Mechanism.GAUSSIAN else dp.L1Distance[number_type]
    # Each row becomes the position of its key in the public domain (-1 outside it, never counted): a row-by-row
    # map fixed before seeing the data, so the histogram runs on an integer array instead of millions of strings.
    codes = np.array(pd.Index(categories).get_indexer(keys.to_numpy()), dtype=np.int64)
    transformation = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(T=dp.i64)),
        dp.symmetric_distance(),
        categories=list(range(len(categories))),
        null_category=False,
        MO=metric_type,
        TOA=number_type,
    )
    calibrated = calibrate(transformation, kind, budget, _d_in(bound))
    noisy = np.asarray(calibrated.measurement(codes), dtype=np.int64 if kind.discrete else float)
    error = accuracy(kind, calibrated.scale, confidence)
    table = cells.copy()
    table[DP_VALUE], table[DP_ERROR] = noisy, error
    true_table = None
    if include_true:
        counts = keys.value_counts()
        true_table = pd.DataFrame({DP_TRUE_VALUE: counts.reindex(categories, fill_value=0).to_numpy(dtype=np.int64)})
    return DPRelease(
        query=query,
        columns=columns,
        mechanism=kind,
        epsilon=calibrated.cost.epsilon,
        delta=calibrated.cost.delta,
        sensitivity=calibrated.sensitivity,
        scale=calibrated.scale,
        confidence=confidence,
        expected_error=error,
        table=table,
        domain_size=len(categories),
        true_table=true_table,
    )


def _key_selection(
    data: pd.DataFrame,
    columns: tuple[str, ...],
    query: str,
    budget: PrivacyBudget,
    kind: Mechanism,
    confidence: float,
    include_true: bool,
    d_in: int = D_IN,
) -> DPRelease:
    """Counts of the data's own keys with discrete Laplace noise, released only when they reach the threshold;
    ``d_in`` is the bound c on rows per person (the rows already truncated to it)."""
    if budget.delta <= 0:
        raise ParameterError(
            "The categories of a DP histogram must come from a declared public domain (--domain), or from DP key "
            "selection, which needs δ > 0 (--delta, e.g. 1e-6): the data's own values would reveal rare ones."
        )
    if kind is Mechanism.GAUSSIAN:
        raise ParameterError(
            "DP key selection uses discrete Laplace noise with a threshold: choose --mechanism laplace or geometric, "
            "or declare a public domain (--domain) for the Gaussian mechanism."
        )
    if d_in > MAX_KEY_SELECTION_ROWS:
        raise ParameterError(
            f"DP key selection accounts for at most {MAX_KEY_SELECTION_ROWS:,} rows per person, got {d_in:,}: "
            "declare a public domain (--domain) or a smaller bound on rows per person."
        )
    keys = _keys(data, columns)
    counting = dp.t.make_count_by(dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance(), TV=int)
    # One person changes at most c keys, by at most c each and c in all (Δ₀ = Δ₁ = Δ∞ = c; 1 for one row each).
    sensitivity = float(counting.map(d_in)[1])
    scale = sensitivity / budget.epsilon
    with out_of_range(f"DP key selection at ε = {budget.epsilon:g}, δ = {budget.delta:g}"):
        if not math.isfinite(scale):
            raise OverflowError(f"the noise scale {sensitivity:g}/ε is {scale:g}")
        threshold = key_selection_threshold(scale, budget.delta, d_in)
        measurement = counting >> dp.m.then_laplace_threshold(scale=scale, threshold=threshold)
        proven = _cost(measurement.map(d_in))
        accuracy(Mechanism.GEOMETRIC, scale, confidence)
    if proven.epsilon > budget.epsilon * (1 + 1e-9):
        raise ParameterError(f"DP key selection cannot meet ε = {budget.epsilon:g}; use a larger ε.")
    exact = key_selection_delta(scale, threshold, d_in)
    # One row per person: OpenDP 0.16's map charges P[Z > τ - 1], a factor e^ε below the chance that a one-person
    # key is kept (opendp/opendp#2922); the charge is the exact δ, or OpenDP's if a later version proves more.
    # Several rows: OpenDP's map is 1 - (1 - P[Z > τ - Δ∞])^Δ₀, as if c keys each held c rows (which no person can
    # do, Δ₁ = c), with the same off-by-one: above the exact δ for some (ε, c), below it for others (c rows on one
    # key at ε = 2, c = 2). The charge is the exact δ over the ways c rows can be spread over keys.
    cost = PrivacyBudget(proven.epsilon, max(exact, proven.delta) if d_in == 1 else exact)
    with out_of_range(f"DP key selection at ε = {budget.epsilon:g}, δ = {budget.delta:g}"):
        released: dict[str, int] = measurement(keys.tolist())
    selected = pd.Series(released, dtype=np.int64).sort_index()
    cells = _split(pd.Index(selected.index, dtype=object), columns)
    error = accuracy(Mechanism.GEOMETRIC, scale, confidence)
    table = cells.copy()
    table[DP_VALUE], table[DP_ERROR] = selected.to_numpy(dtype=np.int64), error
    true_table = None
    if include_true:
        true_table = pd.DataFrame({DP_TRUE_VALUE: keys.value_counts().reindex(selected.index).to_numpy(dtype=np.int64)})
    return DPRelease(
        query=query,
        columns=columns,
        mechanism=Mechanism.GEOMETRIC,
        epsilon=cost.epsilon,
        delta=cost.delta,
        sensitivity=sensitivity,
        scale=scale,
        confidence=confidence,
        expected_error=error,
        table=table,
        key_selection_threshold=float(threshold),
        true_table=true_table,
    )


#: The largest threshold of DP key selection (OpenDP counts keys in 32-bit integers).
MAX_THRESHOLD = 2**31 - 1
#: The largest bound on rows per person for DP key selection (its exact δ costs c² operations).
MAX_KEY_SELECTION_ROWS = 1000
#: Relative upward rounding of the exact δ of key selection (its floating-point error is a few parts in 10^16, or
#: about c parts in 10^16 for c rows per person).
_DELTA_ROUNDING = 1e-12


@uses_contrib
def key_selection_delta(scale: float, threshold: int, max_rows_per_person: int = 1) -> float:
    """The exact δ of DP key selection: the chance that a key held by one person is released (with c rows per
    person, that at least one of the keys held by that person alone is released, at worst).

    A count a gets discrete Laplace noise Z, P[Z = z] = (1 - r)/(1 + r) · r^|z| with r = e^(-1/scale), and the key is
    kept when a + Z >= τ, with probability p(a) = P[Z >= τ - a] = r^(τ-a)/(1 + r) for a <= τ (and
    1 - r^(a-τ+1)/(1 + r) above). One row per person (c = 1): δ = p(1) = r^(τ-1)/(1 + r). Every other neighbouring
    pair (a count >= 2 changed by one) is covered by ε: the threshold is post-processing of a noisy count.

    c rows per person: the person's rows fall a₁, ..., a_m on keys no one else holds (Σ aᵢ <= c) and the rest on
    keys others hold too. The keys of others are covered by ε = c/scale (the counts move by at most c in all), so
    the δ of that table pair is P[at least one of the person's own keys is released] = 1 - Π (1 - p(aᵢ)), which is
    reached by the event "one of those keys is in the output" (the table without the person never releases them);
    the reverse direction needs no more. δ is its largest value over the partitions of c (more rows only raise it),
    found by a dynamic programme over n = 1..c: L(n) = min over a of L(n - a) + ln(1 - p(a)), δ = 1 - e^L(c).
    Rounded up by one part in 10^12 so the charge is never below the exact value.
    """
    if threshold < 1:
        raise ParameterError(f"The threshold of DP key selection must be at least 1, got {threshold}.")
    c = int(max_rows_per_person)
    if c < 1:
        raise ParameterError(f"The bound on rows per person must be at least 1, got {max_rows_per_person!r}.")
    rate = 1.0 / scale  # r = e^-rate
    if c == 1:
        log_delta = -(threshold - 1) * rate - math.log1p(math.exp(-rate))
        return math.exp(log_delta) * (1 + _DELTA_ROUNDING)
    if c > MAX_KEY_SELECTION_ROWS:
        raise ParameterError(f"DP key selection accounts for at most {MAX_KEY_SELECTION_ROWS:,} rows per person.")
    log_near = math.log1p(math.exp(-rate))  # ln(1 + r)
    steps = threshold - np.arange(1, c + 1, dtype=float)  # τ - a for a = 1..c
    # ln(1 - p(a)): ln(1 - r^(τ-a)/(1 + r)) for τ - a >= 0, else ln(r^(a-τ+1)/(1 + r)).
    with np.errstate(under="ignore", divide="ignore"):  # p(a) = 1 (tiny scale): ln 0 = -inf, δ = 1
        keep_out = np.where(
            steps >= 0,
            np.log1p(-np.exp(-np.maximum(steps, 0) * rate - log_near)),
            -(1 - steps) * rate - log_near,
        )
    best = np.zeros(c + 1)
    for n in range(1, c + 1):  # over the bound c, never over rows: c² / 2 additions in all
        best[n] = np.min(best[n - 1 :: -1] + keep_out[:n]) if n > 1 else keep_out[0]
    return min(1.0, max(0.0, float(-math.expm1(best[c])) * (1 + _DELTA_ROUNDING)))


@uses_contrib
def key_selection_threshold(scale: float, delta: float, max_rows_per_person: int = 1) -> int:
    """The smallest threshold τ >= 1 whose exact δ (:func:`key_selection_delta`) is at most ``delta``: about
    1 + scale · ln(1 / ((1 + r) δ)), r = e^(-1/scale), for one row per person; found by bisection for c rows per
    person. :class:`ParameterError` beyond :data:`MAX_THRESHOLD`."""
    if not 0 < delta < 1:
        raise ParameterError(f"DP key selection needs 0 < δ < 1, got {delta:g}.")
    c = int(max_rows_per_person)
    if c > 1:
        return _threshold_for_rows(scale, delta, c)
    rate = 1.0 / scale
    steps = (-math.log(delta) - math.log1p(math.exp(-rate))) / rate
    if not math.isfinite(steps) or steps > MAX_THRESHOLD:
        raise ParameterError(
            f"DP key selection at ε = {rate:g}, δ = {delta:g} would need a threshold above 2^31 rows; use a larger "
            "ε or δ."
        )
    threshold = max(1, 1 + math.ceil(steps))
    while key_selection_delta(scale, threshold) > delta:  # the closed form, rounded: settle it on the exact test
        threshold += 1
    while threshold > 1 and key_selection_delta(scale, threshold - 1) <= delta:
        threshold -= 1
    if threshold > MAX_THRESHOLD:
        raise ParameterError(
            f"DP key selection at ε = {rate:g}, δ = {delta:g} would need a threshold above 2^31 rows; use a larger "
            "ε or δ."
        )
    return threshold


def _threshold_for_rows(scale: float, delta: float, rows: int) -> int:
    """Bisection for the smallest τ with key_selection_delta(scale, τ, rows) <= ``delta`` (δ falls as τ grows)."""
    rate = 1.0 / scale
    # Above τ = c + scale · ln(c / ((1 + r) δ)) even c keys each kept with probability p(c) fit: an upper end.
    steps = (math.log(rows) - math.log(delta) - math.log1p(math.exp(-rate))) / rate
    if not math.isfinite(steps) or rows + steps > MAX_THRESHOLD - 1:
        raise ParameterError(
            f"DP key selection at noise scale {scale:g}, δ = {delta:g} and {rows} rows per person would need a "
            "threshold above 2^31 rows; use a larger ε or δ."
        )
    low, high = 1, rows + max(0, math.ceil(steps)) + 1
    while key_selection_delta(scale, high, rows) > delta:  # never more than a step or two (rounding)
        high += 1
        if high > MAX_THRESHOLD:
            raise ParameterError(f"DP key selection at δ = {delta:g} would need a threshold above 2^31 rows.")
    if key_selection_delta(scale, low, rows) <= delta:
        return low
    while high - low > 1:  # invariant: δ(low) > delta >= δ(high)
        middle = (low + high) // 2
        if key_selection_delta(scale, middle, rows) <= delta:
            high = middle
        else:
            low = middle
    return high


def _text(values: pd.Series) -> pd.Series:
    """The category text of each value (missing as :data:`MISSING_LABEL`), computed once per distinct value."""
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    labels = np.append(np.asarray(category_text(pd.Index(uniques)), dtype=object), MISSING_LABEL)
    return pd.Series(labels[codes], index=values.index, dtype=object)  # code -1 (missing) picks the last label


def _keys(data: pd.DataFrame, columns: tuple[str, ...]) -> pd.Series:
    texts = [_text(data[c]) for c in columns]
    if len(texts) > 1 and any(t.str.contains(_SEP, regex=False).any() for t in texts):
        raise ParameterError("A quasi-identifier value holds the control character U+001F, which keys cannot hold.")
    return _concat(texts)


def _domain_cells(columns: tuple[str, ...], domains: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """The product of the per-column domains (in declared order, duplicates dropped) as one row per cell."""
    levels = []
    for column in columns:
        values = domains[column]
        if isinstance(values, str | bytes) or not len(values):
            raise ParameterError(f"The domain of '{column}' must be a non-empty list of values.")
        levels.append(category_text(list(values)).unique())
    size = int(np.prod([len(level) for level in levels], dtype=float))
    if size > MAX_DOMAIN_CELLS:
        raise ParameterError(
            f"The declared domain has {size:,} cells, more than {MAX_DOMAIN_CELLS:,}: coarsen the quasi-identifiers "
            "or declare smaller domains."
        )
    return pd.MultiIndex.from_product(levels, names=list(columns)).to_frame(index=False)


def _join(cells: pd.DataFrame, columns: tuple[str, ...]) -> pd.Series:
    return _concat([cells[c].astype(object) for c in columns])


def _concat(texts: list[pd.Series]) -> pd.Series:
    """Element-wise ``a + SEP + b + ...`` of text columns (one key per row)."""
    keys = texts[0]
    for text in texts[1:]:
        keys = keys + _SEP + text
    return keys


def _split(keys: pd.Index, columns: tuple[str, ...]) -> pd.DataFrame:
    if len(columns) == 1:
        return pd.DataFrame({columns[0]: np.asarray(keys, dtype=object)})
    parts = pd.Series(keys, dtype=object).str.split(_SEP, expand=True, regex=False)
    parts = parts.reindex(columns=range(len(columns)))
    parts.columns = list(columns)
    return parts.astype(object)


# --- shared --------------------------------------------------------------------------------------------------


def _numeric(
    data: pd.DataFrame, column: str, bounds: tuple[float, float], kind: Mechanism
) -> tuple[np.ndarray, float, float]:
    """The non-missing values of a numeric column (int64 for geometric noise) and the checked bounds."""
    (name,) = check_columns(data, [column])
    low, high = _bounds(bounds)
    series = data[name]
    if pd.api.types.is_bool_dtype(series.dtype) or not pd.api.types.is_numeric_dtype(series.dtype):
        converted = pd.to_numeric(series, errors="coerce")
        bad = series[converted.isna() & series.notna()]
        if len(bad) or pd.api.types.is_bool_dtype(series.dtype):
            example = f" such as {bad.iloc[0]!r}" if len(bad) else ""
            raise ColumnError(
                f"Column '{name}' is not numeric (it holds values{example}); sum and mean need a numeric column."
            )
        series = converted
    values = np.array(series.dropna().to_numpy(dtype=float), dtype=float)  # writable: OpenDP reads a buffer
    if not np.isfinite(values).all():
        raise ColumnError(f"Column '{name}' holds infinite values; sum and mean need finite numbers.")
    if kind.discrete:
        if low != round(low) or high != round(high):
            raise ParameterError(f"Geometric noise needs integer bounds, got ({low:g}, {high:g}).")
        if (values != np.round(values)).any():
            raise ColumnError(f"Column '{name}' holds non-integer values; geometric noise needs integers.")
        return values.astype(np.int64), low, high
    return values, low, high


def _bounded(
    data: pd.DataFrame, entity: str | None, max_rows: Any, seed: int | None, released: Sequence[str]
) -> tuple[pd.DataFrame, ContributionBound | None]:
    """``data`` truncated to at most ``max_rows`` rows per person of ``entity`` and how (unchanged, None without a
    person-id column). The person id cannot be one of the ``released`` columns (its values would be published)."""
    if entity is None:
        if max_rows is not None:
            raise ParameterError(
                "A bound on rows per person (--max-rows-per-person) needs the person-id column (--entity)."
            )
        return data, None
    (name,) = check_columns(data, [entity], role="person-id column")
    if name in released:
        raise ParameterError(
            f"'{name}' is the person-id column: it cannot also be released (as a key, category or summed column); "
            "choose another column."
        )
    if max_rows is None:
        most = most_rows_per_person(data, name)
        raise ParameterError(
            f"Declare the most rows one person may contribute (max_rows_per_person, --max-rows-per-person on the "
            f"command line): in this table a person of '{name}' has up to {most:,} row(s). A smaller bound drops "
            "the extra rows at random and needs less noise."
        )
    return bound_contributions(data, name, max_rows, seed=seed)


def _d_in(bound: ContributionBound | None) -> int:
    """The rows one person adds or removes: the bound c, or 1."""
    return bound.max_rows_per_person if bound is not None else D_IN


def _bounds(bounds: tuple[float, float]) -> tuple[float, float]:
    try:
        low, high = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ParameterError(f"Bounds are two numbers (L, U), got {bounds!r}.") from None
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ParameterError(f"Bounds must be finite numbers, got ({low:g}, {high:g}).")
    if low >= high:
        raise ParameterError(f"Bounds need L < U, got L = {low:g} and U = {high:g}.")
    return low, high


def _value_domain(kind: Mechanism, low: float, high: float) -> tuple[Any, tuple[Any, Any]]:
    if kind.discrete:
        return dp.vector_domain(dp.atom_domain(T=dp.i64)), (int(low), int(high))
    return dp.vector_domain(dp.atom_domain(T=float, nan=False)), (low, high)


def _cost(loss: Any) -> PrivacyBudget:
    if isinstance(loss, tuple):
        return PrivacyBudget(float(loss[0]), float(loss[1]))
    return PrivacyBudget(float(loss), 0.0)


def _scalar(
    query: str,
    columns: tuple[str, ...],
    kind: Mechanism,
    calibrated: Calibrated,
    confidence: float,
    value: Any,
    exact: float,
    include_true: bool,
) -> DPRelease:
    error = accuracy(kind, calibrated.scale, confidence)
    number = int(value) if kind.discrete else float(value)
    return DPRelease(
        query=query,
        columns=columns,
        mechanism=kind,
        epsilon=calibrated.cost.epsilon,
        delta=calibrated.cost.delta,
        sensitivity=calibrated.sensitivity,
        scale=calibrated.scale,
        confidence=confidence,
        expected_error=error,
        table=pd.DataFrame({DP_VALUE: [number], DP_ERROR: [error]}),
        true_table=pd.DataFrame({DP_TRUE_VALUE: [exact]}) if include_true else None,
    )


def _with(release: DPRelease, **changes: Any) -> DPRelease:
    return replace(release, **changes)


def read_domain_file(path: str | os.PathLike[str]) -> list[str] | dict[str, list[str]]:
    """Read a public domain: a JSON list of values, a JSON object of lists (one per column), or a text file with
    one value per line (blank lines skipped)."""
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataReadError(f"Cannot read the domain file {target}: {exc}.") from None
    if target.suffix.lower() == ".json":
        try:
            payload = json.loads(text)
        except ValueError as exc:
            raise DataReadError(f"The domain file {target} is not valid JSON ({exc}).") from None
        if isinstance(payload, list):
            return [str(v) for v in payload]
        if isinstance(payload, dict) and all(isinstance(v, list) for v in payload.values()):
            return {str(k): [str(v) for v in values] for k, values in payload.items()}
        raise DataReadError(f"The domain file {target} must hold a list of values or an object of lists per column.")
    values = [line.strip() for line in text.splitlines() if line.strip()]
    if not values:
        raise DataReadError(f"The domain file {target} holds no values.")
    return values
