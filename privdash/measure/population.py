"""Population class sizes and population-uniqueness estimates.

Re-identification risk depends on how many people in the *population* share a record's quasi-identifier (QI)
values, not only on how many records in the *sample* do. This module supplies that population side for the
compact :class:`~privdash.measure.classes.EquivalenceClasses` summary (never raw rows):

* :class:`PopulationCounts`: ``F_j``, the number of people in the population who match class ``j``, from one of
  four sources (a population table, sampling weights, a population size, or nothing), used by the journalist and
  marketer attacker models and by the individual risk in :mod:`privdash.measure.risk`.
* :func:`population_uniqueness`: the estimated number of population uniques from the sample's class-size
  frequency table and the sampling fraction, by the Pitman, Zayatz and SNB models and Dankar et al.'s decision
  rule, ported from ARX (``risk/RiskModelPopulationUniqueness``, ``ModelPitman``, ``ModelZayatz``, ``ModelSNB``).

Notation: ``n`` records in scope, ``J`` classes, ``f_j`` the attacker-visible size of class ``j`` (``sizes``),
``n_j`` the records having its QI pattern (``counts``; equal to ``f_j`` except under the ``wildcard`` missing
policy), ``N`` the population size and ``pi = n / N`` the sampling fraction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privdash.choices import Choice
from privdash.errors import ParameterError, check_columns, check_fraction
from privdash.measure.classes import EquivalenceClasses, MissingPolicy, compatible_sums
from privdash.measure.encoding import EncodedColumn, encode_column, group_rows

__all__ = [
    "PopulationCounts",
    "PopulationError",
    "PopulationSource",
    "PopulationUniqueness",
    "UniquenessEstimate",
    "UniquenessModel",
    "population_counts_from_sample",
    "population_counts_from_size",
    "population_counts_from_table",
    "population_counts_from_weights",
    "population_uniqueness",
    "population_uniqueness_from_sizes",
]


class PopulationError(ParameterError):
    """Population information that contradicts the sample (fewer people in the population than in the sample)."""


class PopulationSource(Choice, label="population source"):
    """Where the population class sizes ``F_j`` come from."""

    TABLE = "table"
    WEIGHTS = "weights"
    SIZE = "size"
    SAMPLE = "sample"


@dataclass(frozen=True, eq=False)
class PopulationCounts:
    """Population class sizes ``F_j`` for the classes of one :class:`EquivalenceClasses` summary.

    Attributes
    ----------
    counts
        ``F_j`` per class (float64, aligned with ``classes.sizes``); always ``F_j >= f_j``.
    kind
        The source of the counts (:class:`PopulationSource`).
    source
        A human-readable description of the source, for reports.
    population_size
        ``N``, the number of people in the population, or None when it cannot be known from the summary
        (sampling weights under the ``wildcard`` policy with missing cells, where classes overlap).
    sampling_fraction
        ``pi = n / N``, or None when ``N`` is unknown.
    """

    counts: np.ndarray
    kind: PopulationSource
    source: str
    population_size: float | None
    sampling_fraction: float | None

    @property
    def n_classes(self) -> int:
        """The number of classes the counts belong to."""
        return len(self.counts)


# --- population counts -------------------------------------------------------------------------------------------


def population_counts_from_sample(classes: EquivalenceClasses) -> PopulationCounts:
    """Population counts when nothing is known about the population: ``F_j = f_j``.

    The sample is treated as the whole population (``N = n``, ``pi = 1``). With these counts the journalist model
    equals the prosecutor model, as in ARX when no research subset is defined (``RiskModelSampleSummary``).
    """
    n = classes.n_records
    return PopulationCounts(
        counts=classes.sizes.astype(np.float64),
        kind=PopulationSource.SAMPLE,
        source="the sample itself (no population information: F_j = f_j)",
        population_size=float(n),
        sampling_fraction=1.0 if n else None,
    )


def population_counts_from_size(
    classes: EquivalenceClasses,
    *,
    population_size: float | None = None,
    sampling_fraction: float | None = None,
) -> PopulationCounts:
    """Population counts from the population size under uniform random sampling: ``F_j = f_j / pi``.

    Give exactly one of ``population_size`` (``N >= n``; it may be fractional, e.g. a sum of weights) or
    ``sampling_fraction`` (``pi`` in ``(0, 1]``); the other follows from ``pi = n / N``. ``f_j / pi`` is the
    expected population size of a class of ``f_j`` sample records when every person was sampled with probability
    ``pi`` (each record stands for ``1 / pi`` people), the population model of ARX's ``ARXPopulationModel`` for a
    known region size.

    Raises
    ------
    ParameterError
        Neither or both given, a fraction outside ``(0, 1]``, or ``N`` smaller than ``n``.
    """
    n = classes.n_records
    population, fraction = _size_and_fraction(n, population_size, sampling_fraction, round_size=False)
    counts = classes.sizes.astype(np.float64) / fraction if n else np.zeros(0, dtype=np.float64)
    return PopulationCounts(
        counts=counts,
        kind=PopulationSource.SIZE,
        source=f"population of {population:,.0f} people, sampling fraction {fraction:.4g} (F_j = f_j / pi)",
        population_size=population,
        sampling_fraction=fraction if n else None,
    )


def population_counts_from_weights(classes: EquivalenceClasses) -> PopulationCounts:
    """Population counts from sampling weights: ``F_j`` = the sum of the weights of class ``j``'s records.

    This is sdcMicro's ``Fk`` (``freqCalc``): each record stands for ``w`` people, so the weights of a class
    estimate its population size. Under the ``wildcard`` policy the sum runs over the class's compatible records,
    as sdcMicro does for missing keys with ``alpha = 1``. ``N`` is the sum of all weights; it is unknown (None)
    under ``wildcard`` when missing cells make the classes overlap.

    Raises
    ------
    ParameterError
        The classes were built without a weight column.
    PopulationError
        A class whose weights sum to less than its number of records (weights below 1 cannot stand for people).
    """
    if classes.weight_sums is None:
        raise ParameterError(
            "These equivalence classes carry no sampling weights; pass weights='<column>' when building them."
        )
    weights = np.asarray(classes.weight_sums, dtype=np.float64)
    counts = _checked_counts(classes, weights, "sum of sampling weights")
    partition = bool(np.array_equal(classes.sizes, classes.counts))
    n = classes.n_records
    population = float(weights.sum()) if partition else None
    fraction = n / population if population else None
    return PopulationCounts(
        counts=counts,
        kind=PopulationSource.WEIGHTS,
        source="sampling weights (F_j = sum of the weights in class j)",
        population_size=population,
        sampling_fraction=fraction,
    )


def population_counts_from_table(
    classes: EquivalenceClasses, population: pd.DataFrame, *, count: str | None = None
) -> PopulationCounts:
    """Population counts from a population table: ``F_j`` = the people in ``population`` who match class ``j``.

    Parameters
    ----------
    classes
        The sample's equivalence classes.
    population
        A table with the same quasi-identifier columns as the sample. Each row is one person, or, with ``count``,
        that many people. The sample is assumed to be a subset of it, as in ARX's research-subset model (the
        loaded data is the population, the research subset the sample; ``RiskModelSampleSummary``).
    count
        Optional column holding the number of people each row stands for (non-negative whole numbers).

    Notes
    -----
    Matching follows the sample's missing-value policy: ``value`` matches missing with missing; ``drop`` ignores
    population rows with a missing QI; ``wildcard`` matches a missing cell on either side with any value, with the
    same bucketed join that builds the wildcard classes (``classes.compatible_sums``). Values are compared after
    encoding the sample's class keys and the population column together, so both tables must code a value the
    same way (``39`` and ``"39"`` differ). ``N`` is the number of people in the population table (without rows
    with a missing QI under ``drop``); ``pi = n / N``.

    Raises
    ------
    ColumnError
        A QI or the count column is missing from ``population``.
    ParameterError
        Bad counts.
    PopulationError
        Some class has fewer matching people in the population than records in the sample (the message says how
        many classes and shows one), or the population is smaller than the sample.
    """
    qis = classes.quasi_identifiers
    check_columns(population, qis, role="quasi-identifier column of the population table")
    weights = _population_row_counts(population, count)
    n_classes = classes.n_classes
    keys = classes.keys()
    columns = []
    for name in qis:
        joint = pd.concat([keys[name], population[name]], ignore_index=True)
        joint.name = name
        encoded = encode_column(joint)
        columns.append(EncodedColumn(name, encoded.codes.astype(np.int64), encoded.categories))
    codes = np.column_stack([col.codes for col in columns]) if columns else np.zeros((0, 0), np.int64)
    population_codes = codes[n_classes:]
    in_scope: np.ndarray = np.ones(len(population), dtype=bool)
    if classes.missing_policy == MissingPolicy.DROP:
        in_scope = np.all(population_codes >= 0, axis=1)
    total = float(weights[in_scope].sum())
    counts: np.ndarray
    if n_classes == 0:
        counts = np.zeros(0, dtype=np.float64)
    elif classes.missing_policy == MissingPolicy.WILDCARD and (codes < 0).any():
        counts = _wildcard_population_counts(codes[:n_classes], columns, n_classes, weights)
    else:
        grouping = group_rows(columns)
        groups = grouping.row_group.astype(np.int64)
        population_groups = groups[n_classes:]
        totals = np.bincount(population_groups[in_scope], weights=weights[in_scope], minlength=grouping.n_groups)
        counts = totals[groups[:n_classes]]
    counts = _checked_counts(classes, counts, "population table")
    n = classes.n_records
    if total < n:
        raise PopulationError(
            f"The population table holds {total:,.0f} people but the sample has {n:,} records; the sample must be "
            "a subset of the population."
        )
    return PopulationCounts(
        counts=counts,
        kind=PopulationSource.TABLE,
        source=f"population table of {total:,.0f} people (F_j = people matching class j)",
        population_size=total,
        sampling_fraction=n / total if total else None,
    )


def _population_row_counts(population: pd.DataFrame, count: str | None) -> np.ndarray:
    if count is None:
        return np.ones(len(population), dtype=np.float64)
    check_columns(population, [count], role="count column")
    values = pd.to_numeric(population[count], errors="coerce")
    if values.isna().any() or (values < 0).any() or (values % 1 != 0).any() or np.isinf(values).any():
        raise ParameterError(f"The count column '{count}' must hold non-negative whole numbers in every row.")
    return values.to_numpy(dtype=np.float64)


def _wildcard_population_counts(
    class_codes: np.ndarray, columns: list[EncodedColumn], n_classes: int, weights: np.ndarray
) -> np.ndarray:
    """People compatible with each sample pattern: population rows are grouped into patterns, then joined."""
    population_columns = [EncodedColumn(c.name, c.codes[n_classes:], c.categories) for c in columns]
    grouping = group_rows(population_columns)
    pattern_weights = np.bincount(grouping.row_group.astype(np.int64), weights=weights, minlength=grouping.n_groups)
    patterns = grouping.group_codes
    stacked = np.vstack([class_codes, patterns])
    source = n_classes + np.arange(len(patterns), dtype=np.int64)
    classes_hit, _, sums = compatible_sums(stacked, source, np.zeros(len(patterns), np.int64), pattern_weights)
    mine = classes_hit < n_classes
    return np.bincount(classes_hit[mine], weights=sums[mine], minlength=n_classes)


def _checked_counts(classes: EquivalenceClasses, counts: np.ndarray, what: str) -> np.ndarray:
    """``counts`` as float64 after checking ``F_j >= f_j`` (up to rounding of weight sums)."""
    counts = np.asarray(counts, dtype=np.float64)
    sizes = classes.sizes.astype(np.float64)
    if len(counts) != len(sizes):
        raise ParameterError(f"Got {len(counts)} population counts for {len(sizes)} classes.")
    if not np.isfinite(counts).all():
        raise PopulationError(f"The {what} gives a missing or infinite population count for some class.")
    short = counts < sizes * (1.0 - 1e-9)
    if short.any():
        first = int(np.flatnonzero(short)[0])
        key = ", ".join(f"{name}={value}" for name, value in classes.keys().iloc[first].items())
        raise PopulationError(
            f"The {what} counts fewer people than sample records for {int(short.sum()):,} of {len(sizes):,} "
            f"classes (for example {key}: {int(sizes[first])} in the sample, {counts[first]:g} in the population). "
            "The sample must be a subset of the population; check that both use the same codes for each value."
        )
    return np.maximum(counts, sizes)


def _size_and_fraction(
    n: int, population_size: float | None, sampling_fraction: float | None, *, round_size: bool
) -> tuple[float, float]:
    """``(N, pi)`` from exactly one of them; with ``round_size`` N is rounded to a whole number as ARX does."""
    if (population_size is None) == (sampling_fraction is None):
        raise ParameterError("Give exactly one of population_size and sampling_fraction.")
    if sampling_fraction is not None:
        fraction = check_fraction(sampling_fraction, "sampling_fraction", inclusive_zero=False)
        population = n / fraction
        if round_size:
            population = float(round(population))
            fraction = n / population if population else fraction
        return population, fraction
    if isinstance(population_size, bool) or not isinstance(population_size, int | float):
        raise ParameterError(f"population_size must be a number, got {population_size!r}.")
    population = float(population_size)
    if not math.isfinite(population) or population <= 0:
        raise ParameterError(f"population_size must be a positive finite number, got {population_size!r}.")
    if population < n:
        raise ParameterError(f"population_size ({population:,.0f}) is smaller than the sample ({n:,} records).")
    return population, n / population


# --- population uniqueness ----------------------------------------------------------------------------------------


class UniquenessModel(Choice, label="population-uniqueness model"):
    """A population-uniqueness estimator (ARX ``PopulationUniquenessModel``)."""

    PITMAN = "pitman"
    ZAYATZ = "zayatz"
    SNB = "snb"
    DANKAR = "dankar"
    NONE = "none"


@dataclass(frozen=True)
class UniquenessEstimate:
    """One estimate of the number of population uniques.

    Attributes
    ----------
    model
        The estimator; for Dankar's rule, the estimator the rule chose (``none`` when there are no sample uniques).
    uniques
        Estimated number of people who are unique in the population on the QIs (NaN when invalid).
    fraction
        ``uniques / N`` (NaN when invalid).
    valid
        False when the estimator failed (no convergence, or a value that is not a number, zero, negative or above
        ``N``); ARX shows such estimates as unavailable.
    """

    model: UniquenessModel
    uniques: float
    fraction: float
    valid: bool


@dataclass(frozen=True)
class PopulationUniqueness:
    """Sample uniqueness and the population-uniqueness estimates for one sampling fraction.

    ``sample_uniques`` is exact: the records alone in their class. ``dankar`` is the recommended estimate.
    """

    sample_size: int
    population_size: float
    sampling_fraction: float
    n_classes: int
    sample_uniques: int
    pitman: UniquenessEstimate
    zayatz: UniquenessEstimate
    snb: UniquenessEstimate
    dankar: UniquenessEstimate

    @property
    def sample_uniqueness(self) -> float:
        """Fraction of sample records that are unique in the sample (0 for an empty sample)."""
        return self.sample_uniques / self.sample_size if self.sample_size else 0.0

    @property
    def population_uniques(self) -> float:
        """Dankar et al.'s estimate of the number of population uniques (0 when no estimator is valid)."""
        return self.dankar.uniques if self.dankar.valid else 0.0

    @property
    def population_uniqueness(self) -> float:
        """Dankar et al.'s estimate as a fraction of the population (0 when no estimator is valid)."""
        return self.dankar.fraction if self.dankar.valid else 0.0


def population_uniqueness(
    classes: EquivalenceClasses,
    *,
    sampling_fraction: float | None = None,
    population_size: float | None = None,
    snb_variant: str = "chen",
) -> PopulationUniqueness:
    """Estimate how many people in the population are unique on the quasi-identifiers.

    Give exactly one of ``sampling_fraction`` (``pi`` in ``(0, 1]``; then ``N = round(n / pi)`` as in ARX's
    ``ARXPopulationModel.create(n, pi)`` and ``pi`` is recomputed as ``n / N``) or ``population_size`` (``N >= n``,
    which may be fractional, e.g. the sum of the sampling weights).
    The estimators read only the class-size frequency table (how many classes have 1, 2, 3 ... records); see
    :func:`population_uniqueness_from_sizes` for the definitions.

    Raises
    ------
    ParameterError
        Bad ``pi`` / ``N``, or classes built with the ``wildcard`` policy whose missing cells make classes
        overlap (the estimators need a partition of the records; use ``value`` or ``drop``).
    """
    if not np.array_equal(classes.sizes, classes.counts):
        raise ParameterError(
            "Population-uniqueness estimators need classes that partition the records; with the wildcard policy "
            "and missing cells they overlap. Build the classes with missing='value' or 'drop'."
        )
    return population_uniqueness_from_sizes(
        classes.sizes, sampling_fraction=sampling_fraction, population_size=population_size, snb_variant=snb_variant
    )


def population_uniqueness_from_sizes(
    class_sizes: Any,
    *,
    sampling_fraction: float | None = None,
    population_size: float | None = None,
    snb_variant: str = "chen",
) -> PopulationUniqueness:
    """Population-uniqueness estimates from the sizes of the sample's classes (one entry per class).

    Definitions (ARX ``RiskModelPopulationUniqueness`` and the models it calls; ``c_i`` = number of sample
    classes of size ``i``, ``u = J`` the number of classes):

    * **Zayatz** (1991, ``ModelZayatz``): the probability that a sample unique is a population unique,
      ``P = c_1 h(1) / sum_i c_i h(i)`` with ``h(i) = P(X = 1)`` for ``X ~ Hypergeometric(N, i, n)`` (the sample
      class sizes stand in for population sizes, as in ARX); estimate ``c_1 P / pi``. The ratios ``h(i) / h(1)``
      are computed as products of ``(N - n + 1 - k) / (N - k)`` in log space, so large ``N`` cannot overflow.
    * **Pitman** (Hoshino 2001, ``ModelPitman``): maximum-likelihood ``(theta, alpha)`` of the Pitman sampling
      formula, solving ``sum_{i<u} 1/(theta + i alpha) = sum_{i<n} 1/(theta + i)`` and
      ``sum_{i<u} i/(theta + i alpha) = sum_{s>1} c_s sum_{j<s} 1/(j - alpha)`` by 2-D Newton-Raphson with
      digamma / trigamma closed forms (scipy), ``theta >= 0`` enforced; when that fails or disagrees with the
      direct sums, the direct-sum form is solved instead, within about ``2e7 / (u + n)`` evaluations (at least
      20). Estimate ``Gamma(theta + 1) / Gamma(theta + alpha) N^alpha``, valid only in ``[0, N]``.
    * **SNB** (Chen and Keller-McNulty 1998, ``ModelSNB``): shifted negative binomial; the number of non-empty
      population classes ``K`` by Haas et al.'s (1995) third Shlosser estimator, then ``(alpha, beta)`` solving
      the expected ``c_1`` and ``c_2`` equations by Newton-Raphson from ``(1, 1)``; estimate ``K beta^alpha``.
    * **Dankar** et al. (2012) decision rule: no sample uniques -> 0; ``pi <= 0.1`` -> Pitman, or Zayatz when
      Pitman is invalid; otherwise the smaller of Zayatz and SNB when SNB is valid, else Zayatz.

    Newton-Raphson follows ARX's solver (``de.linearbits.newtonraphson`` with ``ARXSolverConfiguration``
    defaults): converged when both equations are within 1e-6 of zero; up to 1,000 iterations per try; tries from
    the model's start value, then from the 16 points ``{0, 0.33, 0.66, 0.99}^2``. ARX's wall-clock limits are
    replaced by these iteration limits, so results are deterministic. ARX stops at the first converged try even
    when its point gives no usable estimate (for Pitman, ``theta -> inf`` with ``alpha -> -inf`` makes both
    equations vanish); here such a try counts as failed and the next start value is tried, so an estimate is found
    more often and is identical whenever ARX's first converged point is usable; for the same reason a Pitman try
    is abandoned once ``theta`` or ``|alpha|`` exceeds 1e30. An estimate is invalid when the solver fails or the
    value is not finite, zero, negative or above ``N``.

    ``snb_variant="chen"`` (default) follows the papers. ARX's code differs in two places that read as operator
    precedence slips: its ``c_2`` equation multiplies by ``(1 - (1 - pi)(1 - beta))^(alpha + 2)`` where Chen
    divides (ARX's own Jacobian is that of the dividing form), and its Shlosser denominator subtracts 1 per class
    size instead of multiplying by ``(1 + pi)^i - 1``. With those, SNB rarely converges in ARX (on Adult not for
    any ``pi`` from 0.01 to 0.8, so ARX's rule falls back to Zayatz for ``pi > 0.1``). ``snb_variant="arx"``
    reproduces ARX's code to compare numbers with ARX. Exact digamma/trigamma replace ARX's series
    approximations, which only change the Newton steps, not the roots.

    Edge cases: an empty sample or one without sample uniques gives 0 for every estimator (valid), as in ARX.
    """
    if snb_variant not in ("chen", "arx"):
        raise ParameterError(f"snb_variant must be 'chen' or 'arx', got {snb_variant!r}.")
    sizes = np.asarray(class_sizes)
    if sizes.ndim != 1 or (len(sizes) and (sizes.min() < 1 or not np.all(np.mod(sizes, 1) == 0))):
        raise ParameterError("Class sizes must be a one-dimensional array of whole numbers >= 1.")
    sizes = sizes.astype(np.int64)
    n = int(sizes.sum())
    if n == 0:
        if population_size is None and sampling_fraction is not None:
            check_fraction(sampling_fraction, "sampling_fraction", inclusive_zero=False)
        population = float(population_size) if population_size is not None else 0.0
        return _all_zero(0, population, 1.0 if sampling_fraction is None else float(sampling_fraction), 0)
    population, fraction = _size_and_fraction(n, population_size, sampling_fraction, round_size=True)
    histogram_sizes, histogram_counts = np.unique(sizes, return_counts=True)
    histogram_counts = histogram_counts.astype(np.float64)
    n_classes = len(sizes)
    c1 = float(histogram_counts[0]) if histogram_sizes[0] == 1 else 0.0
    if c1 == 0:
        return _all_zero(n, population, fraction, n_classes)
    with np.errstate(all="ignore"):
        zayatz = _zayatz(histogram_sizes, histogram_counts, n, population, fraction)
        pitman = _pitman(histogram_sizes, histogram_counts, n, population)
        snb = _snb(histogram_sizes, histogram_counts, n_classes, fraction, arx=snb_variant == "arx")
    values = {
        UniquenessModel.PITMAN: _guard(pitman, population),
        UniquenessModel.ZAYATZ: _guard(zayatz, population),
        UniquenessModel.SNB: _guard(snb, population),
    }
    if fraction <= 0.1:
        # Pitman, with Zayatz as the fallback (ARX's useZayatzAsFallback, on by default)
        chosen = UniquenessModel.PITMAN if _valid(values[UniquenessModel.PITMAN]) else UniquenessModel.ZAYATZ
    elif _valid(values[UniquenessModel.SNB]):
        # ARX compares the raw values: an invalid (NaN) Zayatz estimate loses against a valid SNB one.
        zayatz_value, snb_value = values[UniquenessModel.ZAYATZ], values[UniquenessModel.SNB]
        chosen = UniquenessModel.ZAYATZ if zayatz_value < snb_value else UniquenessModel.SNB
    else:
        chosen = UniquenessModel.ZAYATZ

    def estimate(model: UniquenessModel, value: float) -> UniquenessEstimate:
        ok = _valid(value)
        return UniquenessEstimate(model, value if ok else math.nan, value / population if ok else math.nan, ok)

    dankar = estimate(chosen, values[chosen])
    return PopulationUniqueness(
        sample_size=n,
        population_size=population,
        sampling_fraction=fraction,
        n_classes=n_classes,
        sample_uniques=int(c1),
        pitman=estimate(UniquenessModel.PITMAN, values[UniquenessModel.PITMAN]),
        zayatz=estimate(UniquenessModel.ZAYATZ, values[UniquenessModel.ZAYATZ]),
        snb=estimate(UniquenessModel.SNB, values[UniquenessModel.SNB]),
        dankar=dankar,
    )


def _all_zero(n: int, population: float, fraction: float, n_classes: int) -> PopulationUniqueness:
    def zero(model: UniquenessModel) -> UniquenessEstimate:
        return UniquenessEstimate(model, 0.0, 0.0, True)

    return PopulationUniqueness(
        sample_size=n,
        population_size=population,
        sampling_fraction=fraction,
        n_classes=n_classes,
        sample_uniques=0,
        pitman=zero(UniquenessModel.PITMAN),
        zayatz=zero(UniquenessModel.ZAYATZ),
        snb=zero(UniquenessModel.SNB),
        dankar=zero(UniquenessModel.NONE),
    )


def _guard(value: float, population: float) -> float:
    """NaN for values no estimator may return: not finite, negative or more uniques than people."""
    value = float(value)
    if not math.isfinite(value) or value < 0 or value > population:
        return math.nan
    return value


def _valid(value: float) -> bool:
    """ARX's ``isValid``: a number other than zero."""
    return not math.isnan(value) and value != 0.0


# --- Zayatz --------------------------------------------------------------------------------------------------------


def _zayatz(sizes: np.ndarray, counts: np.ndarray, n: int, population: float, fraction: float) -> float:
    """Zayatz's estimate ``c_1 P / pi`` (see :func:`population_uniqueness_from_sizes`)."""
    c1 = counts[0]
    largest = int(sizes[-1])
    # log h(i) - log h(1) = log i + sum_{k=1}^{i-1} log((N - n + 1 - k) / (N - k)); a factor <= 0 makes h(i) = 0.
    k = np.arange(1, largest, dtype=np.float64)
    numerator = population - n + 1 - k
    factors = np.where(numerator > 0, np.log(np.maximum(numerator, 1e-300)) - np.log(population - k), -np.inf)
    cumulative = np.concatenate([[0.0], np.cumsum(factors)])
    log_ratio = np.log(sizes.astype(np.float64)) + cumulative[sizes - 1]
    denominator = float(np.sum(counts * np.exp(log_ratio)))
    if denominator <= 0 or not math.isfinite(denominator):
        return math.nan
    return float(c1 * (c1 / denominator) / fraction)


# --- Newton-Raphson (ARX's de.linearbits.newtonraphson.NewtonRaphson2D) -------------------------------------------

_ACCURACY = 1e-6
_ITERATIONS_PER_TRY = 1000
_START_VALUES = tuple((a, b) for a in (0.0, 0.33, 0.66, 0.99) for b in (0.0, 0.33, 0.66, 0.99))
_DIRECT_WORK = 2e7  # element operations allowed to Pitman's direct-sum fallback (a few tenths of a second)

Evaluation = tuple[float, float, float, float, float, float]


def _newton(
    evaluate: Callable[[float, float], Evaluation],
    start: tuple[float, float],
    constraint: Callable[[float, float], bool] | None = None,
    accept: Callable[[float, float], bool] | None = None,
    max_evaluations: int | None = None,
) -> tuple[float, float]:
    """Solve ``F(x, y) = 0`` given ``evaluate -> (F1, F2, dF1/dx, dF1/dy, dF2/dx, dF2/dy)``; NaNs when no try converges.

    A try converges when ``|F1|, |F2| <= 1e-6``; it fails when a step violates ``constraint``, produces NaN, or
    after 1,000 iterations. Tries start at ``start``, then at each of ``_START_VALUES``. A converged point that
    ``accept`` rejects (one whose estimate is unusable) also fails its try; ARX instead stops there. At most
    ``max_evaluations`` evaluations are spent over all tries (ARX bounds the same search by wall-clock time).
    """
    evaluations_left = (
        max_evaluations if max_evaluations is not None else (len(_START_VALUES) + 1) * _ITERATIONS_PER_TRY
    )
    for x0, y0 in (start, *_START_VALUES):
        x, y = float(x0), float(y0)
        for iteration in range(1, _ITERATIONS_PER_TRY + 1):
            if evaluations_left <= 0:
                return math.nan, math.nan
            evaluations_left -= 1
            f1, f2, j11, j12, j21, j22 = evaluate(x, y)
            if abs(f1) <= _ACCURACY and abs(f2) <= _ACCURACY:
                if accept is None or accept(x, y):
                    return x, y
                break
            det = j11 * j22 - j12 * j21
            if det == 0 or not math.isfinite(det):
                break
            x -= (j22 * f1 - j12 * f2) / det
            y -= (j11 * f2 - j21 * f1) / det
            if constraint is not None and not constraint(x, y):
                break
            if math.isnan(x) or math.isnan(y) or iteration >= _ITERATIONS_PER_TRY:
                break
    return math.nan, math.nan


# --- Pitman --------------------------------------------------------------------------------------------------------


def _trigamma(x: Any) -> Any:
    """``psi'(x)``: the Hurwitz zeta ``zeta(2, x)`` for ``x > 0``, the reflection formula below 0.

    scipy's ``zeta(2, x)`` is also right for negative ``x`` but takes time linear in ``|x|`` there.
    """
    from scipy import special  # imported on use: scipy adds ~0.15 s to start-up

    if isinstance(x, float | np.floating):  # the Newton loop's scalars: skip the array machinery
        scalar = float(x)
        if scalar >= 0 or math.isnan(scalar):
            return special.zeta(2.0, scalar)
        return (math.pi / math.sin(math.pi * scalar)) ** 2 - special.zeta(2.0, 1.0 - scalar)
    values = np.asarray(x, dtype=np.float64)
    negative = values < 0
    if not negative.any():
        return special.zeta(2.0, values)
    reflected = special.zeta(2.0, np.where(negative, 1.0 - values, values))
    return np.where(negative, (np.pi / np.sin(np.pi * values)) ** 2 - reflected, reflected)


def _pitman(sizes: np.ndarray, counts: np.ndarray, n: int, population: float) -> float:
    """Pitman's estimate (see :func:`population_uniqueness_from_sizes`), NaN when it fails."""
    from scipy import special  # imported on use: scipy adds ~0.15 s to start-up

    c1 = float(counts[0]) if sizes[0] == 1 else 0.0
    c2 = float(counts[sizes == 2].sum()) or 1.0  # ARX: "overestimate" when there are no classes of size 2
    u = float(counts.sum())
    nf = float(n)
    c = c1 * (c1 - 1) / c2
    try:
        t = (nf * u * c - c1 * (nf - 1) * (2 * u + c)) / ((2 * c1 * u + c1 * c) - nf * c)
        a = (t * (c1 - nf) + (nf - 1) * c1) / (nf * u)
    except ZeroDivisionError:
        t = a = math.nan
    big = sizes != 1
    big_sizes = sizes[big].astype(np.float64)
    big_counts = counts[big]

    def closed(t_: float, a_: float) -> Evaluation:
        # numpy scalars: a division by zero yields inf/NaN (as in Java) and fails the try instead of raising
        t, a = np.float64(t_), np.float64(a_)
        z = t / a
        val0 = u - 1.0
        val1 = special.digamma(val0 + z + 1.0)
        val2 = _trigamma((a + t + a * val0) / a)
        val3 = _trigamma(z + 1.0)
        val4 = special.digamma(z + 1.0)
        val5 = a * a
        d1 = (val3 - val2) / val5
        d5 = ((a * val1 + t * val2) - a * val4 - t * val3) / (val5 * a)
        d3 = ((val5 * val0 - t * t * val2 + t * t * val3) - 2 * a * t * val1 + 2 * a * t * val4) / (val5 * val5)
        o1 = (val1 - val4) / a
        o3 = (-t * val1 + a * val0 + t * val4) / (a * a)
        o2 = special.digamma(nf + t) - special.digamma(t + 1.0)
        d2 = _trigamma(t + 1.0) - _trigamma(nf + t)
        shifted = big_sizes - a
        d4 = np.dot(big_counts, _trigamma(1.0 - a) - _trigamma(shifted))
        o4 = np.dot(big_counts, special.digamma(shifted) - special.digamma(1.0 - a))
        return float(o1 - o2), float(o3 - o4), float(d2 - d1), float(-d5), float(-d5), float(-d3 - d4)

    i_u = np.arange(1, max(int(u), 1), dtype=np.float64)
    i_n = np.arange(1, n, dtype=np.float64)
    j_max = np.arange(1, int(sizes[-1]), dtype=np.float64)
    big_index = sizes[big] - 2  # index of j = s - 1 in the cumulative sums over j

    i_u2 = i_u * i_u

    def direct(t: float, a: float) -> Evaluation:
        inv = np.reciprocal(t + i_u * a)
        inv2 = inv * inv
        o1, o3 = float(inv.sum()), float(np.dot(i_u, inv))
        d1, d5, d3 = float(inv2.sum()), float(np.dot(i_u, inv2)), float(np.dot(i_u2, inv2))
        if len(big_index):
            w = np.reciprocal(j_max - a)
            o4 = float(np.dot(big_counts, np.cumsum(w)[big_index]))
            d4 = float(np.dot(big_counts, np.cumsum(w * w)[big_index]))
        else:
            o4 = d4 = 0.0
        w_n = np.reciprocal(t + i_n)
        o2, d2 = float(w_n.sum()), float(np.dot(w_n, w_n))
        return o1 - o2, o3 - o4, d2 - d1, -d5, -d5, -d3 - d4

    # The direct sums cost O(u + n) per evaluation: bound their total work (ARX bounds the search by a 1 s clock).
    direct_evaluations = max(20, int(_DIRECT_WORK // (u + n)))

    def theta_nonnegative(t: float, a: float) -> bool:
        # ARX's constraint is theta >= 0. Beyond 1e30 a try has diverged: no estimate there can lie in [0, N],
        # so it is abandoned at once instead of after 1,000 iterations.
        return 0 <= t <= 1e30 and abs(a) <= 1e30

    def usable(t: float, a: float) -> bool:
        return not math.isnan(_pitman_uniques(t, a, population))

    result = _newton(closed, (t, a), theta_nonnegative, usable)
    if math.isnan(result[0]) or math.isnan(result[1]):
        result = _newton(direct, (t, a), theta_nonnegative, usable, direct_evaluations)
    else:
        check = direct(*result)
        if not (abs(check[0]) <= _ACCURACY and abs(check[1]) <= _ACCURACY):
            result = _newton(direct, (t, a), theta_nonnegative, usable, direct_evaluations)
    return _pitman_uniques(result[0], result[1], population)


def _pitman_uniques(t: float, a: float, population: float) -> float:
    """``Gamma(t + 1) / Gamma(t + a) N^a`` two ways (log-gamma and gamma), keeping values in ``[0, N]`` (ARX)."""
    from scipy import special  # imported on use: scipy adds ~0.15 s to start-up

    if math.isnan(t) or math.isnan(a) or a == 0:
        return math.nan
    power = float(np.power(population, a))
    candidates = []
    if t + a > 0:  # commons-math logGamma is NaN for arguments <= 0
        candidates.append(float(np.exp(special.gammaln(t + 1.0) - special.gammaln(t + a))) * power)
    candidates.append(float(special.gamma(t + 1.0) / special.gamma(t + a)) * power)
    valid = [value for value in candidates if 0.0 <= value <= population]
    return max(valid) if valid else math.nan


# --- SNB -----------------------------------------------------------------------------------------------------------


def _snb(sizes: np.ndarray, counts: np.ndarray, n_classes: int, f: float, *, arx: bool) -> float:
    """Chen and Keller-McNulty's SNB estimate (see :func:`population_uniqueness_from_sizes`), NaN when it fails.

    ``arx`` reproduces ARX's ModelSNB literally (see the variants in the public docstring).
    """
    c1 = float(counts[0]) if sizes[0] == 1 else 0.0
    c2 = float(counts[sizes == 2].sum())
    s = sizes.astype(np.float64)
    # Haas et al. (1995) Shlosser estimator 3 of the number of non-empty population classes.
    var1 = float(np.sum(s * f * f * np.power(1 - f * f, s - 1) * counts))
    if arx:
        var2 = float(np.sum(np.power(1 - f, s) * counts * np.power(1 + f, s) - 1))
    else:
        # (1 - f)^i ((1 + f)^i - 1) written without (1 + f)^i, which overflows for large classes
        var2 = float(np.sum(counts * (np.power(1 - f * f, s) - np.power(1 - f, s))))
    var3 = float(np.sum(np.power(1 - f, s) * counts))
    var4 = float(np.sum(s * f * np.power(1 - f, s - 1) * counts))
    if var3 == 0:
        k = float(n_classes)  # pi = 1: every class is observed, the correction term vanishes
    else:
        k = float(n_classes + c1 * (np.float64(var1) / var2) * (np.float64(var3) / var4) ** 2)

    def evaluate(a_: float, b_: float) -> Evaluation:
        a, b = np.float64(a_), np.float64(b_)
        d = (1 - f) * (1 - b)
        one_minus_d = 1 - d
        base = np.power(b / one_minus_d, a)
        f1 = float(k * f * base * ((a * d) / one_minus_d + 1) - c1)
        if arx:
            f2 = float(
                k * a * np.power(b, a) * (f * f) * (1 - b) / 2 * np.power(one_minus_d, a + 2) * (2 - (1 - a) * d) - c2
            )
        else:
            f2 = float(
                k * a * np.power(b, a) * (f * f) * (1 - b) / (2 * np.power(one_minus_d, a + 2)) * (2 - (1 - a) * d) - c2
            )
        # The Jacobian as derived in ARX's ModelSNB (symbolic derivatives of the two equations above).
        val0 = (b - 1) * (f - 1)
        val1 = val0 - 1
        val2 = 1 - val0
        val3 = a * val0 / val1 - 1
        val4 = np.power(-b / val1, a)
        val6 = f * f
        val7 = np.power(b, a)
        val9 = a * val7 * val6 * k
        val10 = 2 * np.power(val2, a + 2)
        val11 = val1 * val1
        val13 = f * k
        val14 = f - 1
        val15 = a - 1
        val16 = b - 1
        val17 = val15 * val0
        val18 = val6 * k
        val19 = val17 + 2
        val20 = val18 * val19
        x1 = -val13 * np.log(-b / val1) * val3 * val4 - (val13 * val4 * val0) / val1
        x2 = a * val13 * (1 / val1 - (b * val14) / val11) * val3 * np.power(-b / val1, val15) - val13 * val4 * (
            (a * val14) / val1 - (a * val16 * val14 * val14) / val11
        )
        y1 = (
            (val9 * np.log(val2) * val19 * val16) / val10
            - (val9 * val16 * val16 * val14) / val10
            - (val7 * val20 * val16) / val10
            - (a * val7 * val18 * np.log(b) * val19 * val16) / val10
        )
        y2 = (
            -(val9 * val19) / val10
            - (a * a * np.power(b, val15) * val20 * val16) / val10
            - (a * val7 * val18 * val17) / val10
            - (a * val7 * val20 * (a + 2) * val0) / (2 * np.power(val2, a + 3))
        )
        return f1, f2, float(x1), float(x2), float(y1), float(y2)

    if not math.isfinite(k):
        return math.nan

    def usable(a: float, b: float) -> bool:
        value = float(k * np.power(b, a))
        return math.isfinite(value) and value >= 0

    a, b = _newton(evaluate, (1.0, 1.0), accept=usable)
    return float(k * np.power(b, a))
