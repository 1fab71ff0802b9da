"""Re-identification risk of the records, from the equivalence-class summary.

Three attacker models after El Emam ("Guide to the De-Identification of Personal Health Information", 2013) as
implemented by ARX (``risk/RiskModelSampleSummary``), and sdcMicro's individual risk for survey data
(``R/indivRisk.R``, Benedetti-Franconi). Everything reads the compact
:class:`~privdash.measure.classes.EquivalenceClasses` summary and, where the population matters, a
:class:`~privdash.measure.population.PopulationCounts`; no function touches raw rows.

Notation: ``n`` records in scope, ``J`` classes, ``f_j`` the attacker-visible size of class ``j`` (``sizes``),
``n_j`` the records having the class's QI pattern (``counts``; ``n_j = f_j`` except under the ``wildcard``
missing policy, where a record's class size counts every compatible record), ``F_j`` the number of people in the
population matching class ``j``, ``tau`` the highest acceptable risk of one record (``max_risk``). Risks are
probabilities of a correct re-identification, in ``(0, 1]``.

* **Prosecutor**: the attacker knows the target is in the data. A record's risk is ``1 / f_j``.
* **Journalist**: the attacker knows the target is in the population the data were drawn from. A record's risk
  is ``1 / F_j``.
* **Marketer**: the attacker tries to re-identify as many records as possible; only the average (the expected
  fraction of records re-identified) is meaningful. Its per-record values are the journalist ones.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from privdash.errors import ParameterError, check_fraction
from privdash.measure.classes import EquivalenceClasses
from privdash.measure.population import (
    PopulationCounts,
    population_counts_from_sample,
    population_counts_from_weights,
)

__all__ = [
    "AttackerRisk",
    "IndividualRisk",
    "RiskCurve",
    "RiskSummary",
    "individual_risk",
    "journalist_risk",
    "marketer_risk",
    "prosecutor_risk",
    "records_at_risk_by_k",
    "records_at_risk_curve",
    "risk_summary",
]

DEFAULT_MAX_RISK = 0.2


@dataclass(frozen=True, eq=False)
class AttackerRisk:
    """The re-identification risk of the records under one attacker model (ARX ``RiskModelSampleSummary``).

    Attributes
    ----------
    model
        ``"prosecutor"``, ``"journalist"`` or ``"marketer"``.
    highest
        The largest per-record risk (ARX "highest risk"); 0 for an empty table.
    lowest
        The smallest per-record risk; 0 for an empty table.
    average
        The expected fraction of records an attacker re-identifies (ARX "success rate"; see each model's function).
    records_at_risk
        Fraction of records whose risk is strictly greater than ``max_risk`` (ARX ``1 / size > threshold``).
    max_risk
        ``tau``, the highest acceptable risk of a single record.
    class_risk
        Per class, the risk of each of its records.
    class_counts
        Per class, the number of records having its pattern (``n_j``), to weigh ``class_risk`` by records.
    """

    model: str
    highest: float
    lowest: float
    average: float
    records_at_risk: float
    max_risk: float
    class_risk: np.ndarray
    class_counts: np.ndarray

    @property
    def n_records(self) -> int:
        """The number of records the risks are about."""
        return int(self.class_counts.sum())

    @property
    def n_records_at_risk(self) -> int:
        """The number of records whose risk is strictly greater than ``max_risk``."""
        return int(self.class_counts.sum(where=self.class_risk > self.max_risk))


@dataclass(frozen=True, eq=False)
class RiskCurve:
    """Records at risk as a function of a parameter ``x`` (a risk threshold, or a k).

    ``records[i]`` records (``fraction[i]`` of ``n_records``) are at risk at ``x[i]``.
    """

    x: np.ndarray
    records: np.ndarray
    fraction: np.ndarray
    n_records: int


@dataclass(frozen=True, eq=False)
class RiskSummary:
    """The three attacker models for one table, one population and one ``max_risk`` (the dashboard's diagnosis)."""

    prosecutor: AttackerRisk
    journalist: AttackerRisk
    marketer: AttackerRisk
    population: PopulationCounts
    max_risk: float

    @property
    def models(self) -> tuple[AttackerRisk, AttackerRisk, AttackerRisk]:
        """The prosecutor, journalist and marketer results, in that order."""
        return self.prosecutor, self.journalist, self.marketer


@dataclass(frozen=True, eq=False)
class IndividualRisk:
    """sdcMicro's individual risk (``indivRisk``, method ``approx``) and the global risk derived from it.

    Attributes
    ----------
    class_risk
        ``r_j``: the risk of each record of class ``j``.
    class_counts
        ``n_j``: records having the class's pattern.
    sample_frequency
        ``f_j`` (sdcMicro ``fk``).
    population_frequency
        ``F_j`` (sdcMicro ``Fk``).
    expected_reidentifications
        ``ER = sum over records of r`` (sdcMicro ``global_risk_ER``).
    global_risk
        ``ER / n`` (sdcMicro ``global_risk``; multiply by 100 for ``global_risk_pct``); 0 for an empty table.
    highest
        The largest ``r_j`` (0 for an empty table).
    population
        The source of ``F_j``.
    """

    class_risk: np.ndarray
    class_counts: np.ndarray
    sample_frequency: np.ndarray
    population_frequency: np.ndarray
    expected_reidentifications: float
    global_risk: float
    highest: float
    population: PopulationCounts

    @property
    def n_records(self) -> int:
        """The number of records the risks are about."""
        return int(self.class_counts.sum())

    def records_above(self, max_risk: float) -> int:
        """The number of records whose individual risk is strictly greater than ``max_risk``."""
        tau = check_fraction(max_risk, "max_risk")
        return int(self.class_counts[self.class_risk > tau].sum())


# --- attacker models -----------------------------------------------------------------------------------------------


def prosecutor_risk(classes: EquivalenceClasses, *, max_risk: float = DEFAULT_MAX_RISK) -> AttackerRisk:
    """Prosecutor re-identification risk (El Emam; ARX ``RiskModelSampleSummary.getProsecutorRisk``).

    A record in class ``j`` has risk ``1 / f_j``. ``highest = 1 / min f_j``, ``lowest = 1 / max f_j``,
    ``average = (1 / n) sum_j n_j / f_j`` (the mean risk over records; without the ``wildcard`` policy this is
    ``J / n``, ARX's success rate), ``records_at_risk = (1 / n) sum_{j: 1/f_j > tau} n_j`` (strictly greater).

    Parameters
    ----------
    classes
        The table's equivalence classes (any missing-value policy; records dropped by ``drop`` are out of scope).
    max_risk
        ``tau``, the highest acceptable risk of one record, in ``[0, 1]``.

    Notes
    -----
    ARX leaves records whose QIs are all suppressed out of the risk; here a record is in scope unless the
    ``drop`` policy removed it. An empty table gives 0 for every number.
    """
    tau = check_fraction(max_risk, "max_risk")
    sizes = classes.sizes.astype(np.float64)
    return _attacker_risk("prosecutor", classes, sizes, tau)


def journalist_risk(
    classes: EquivalenceClasses,
    population: PopulationCounts | None = None,
    *,
    max_risk: float = DEFAULT_MAX_RISK,
) -> AttackerRisk:
    """Journalist re-identification risk (El Emam; ARX ``RiskModelSampleSummary.getJournalistRisk``).

    A record in class ``j`` has risk ``1 / F_j``. ``highest = 1 / min F_j``, ``lowest = 1 / max F_j`` (over the
    classes of the sample), ``records_at_risk = (1 / n) sum_{j: 1/F_j > tau} n_j`` (strictly greater), and
    ``average = max(J' / sum_j F_j, (1 / n) sum_j n_j / F_j)`` with ``J' = sum_j n_j / f_j`` (``J' = J``, and
    the formula ARX's, unless the ``wildcard`` policy makes classes overlap).

    Parameters
    ----------
    classes
        The sample's equivalence classes.
    population
        ``F_j`` (see :mod:`privdash.measure.population`); None uses the sample itself (``F_j = f_j``), which makes
        this model equal to the prosecutor model.
    max_risk
        ``tau``, the highest acceptable risk of one record, in ``[0, 1]``.
    """
    tau = check_fraction(max_risk, "max_risk")
    counts = _population_counts(classes, population)
    return _journalist_of(_attacker_risk("marketer", classes, counts, tau), classes, counts)


def marketer_risk(
    classes: EquivalenceClasses,
    population: PopulationCounts | None = None,
    *,
    max_risk: float = DEFAULT_MAX_RISK,
) -> AttackerRisk:
    """Marketer re-identification risk (El Emam; ARX ``RiskModelSampleSummary.getMarketerRisk``).

    ``average = (1 / n) sum_j n_j / F_j``: the expected fraction of records re-identified when the attacker
    links every record (ARX's marketer success rate ``(1 / n) sum_j f_j / F_j``). The marketer model is an
    average-risk model; ARX reports only that number. ``highest``, ``lowest``, ``records_at_risk`` and
    ``class_risk`` here use the per-record risk ``1 / F_j``, so they equal the journalist values. Without a
    population (``F_j = f_j``) the average is ``J / n``, the prosecutor average.
    """
    tau = check_fraction(max_risk, "max_risk")
    counts = _population_counts(classes, population)
    return _attacker_risk("marketer", classes, counts, tau)


def risk_summary(
    classes: EquivalenceClasses,
    population: PopulationCounts | None = None,
    *,
    max_risk: float = DEFAULT_MAX_RISK,
) -> RiskSummary:
    """The prosecutor, journalist and marketer risks for one ``max_risk`` (ARX's "attacker models" table).

    ``population`` None uses the sample itself (``F_j = f_j``), as ARX does without a research subset.
    """
    tau = check_fraction(max_risk, "max_risk")
    sizes = classes.sizes.astype(np.float64)
    counts = sizes if population is None else _population_counts(classes, population)
    resolved = population if population is not None else population_counts_from_sample(classes)
    # The three models share the records of each class; the journalist's risks are the marketer's (1 / F_j), but
    # for the average: each array is made once (a million classes: 0.028 -> 0.012 s).
    records = classes.counts.astype(np.int64)
    prosecutor = _attacker_risk("prosecutor", classes, sizes, tau, counts=records)
    # Without population counts F_j = f_j: the marketer's figures and arrays are the prosecutor's.
    marketer = (
        replace(prosecutor, model="marketer")
        if population is None
        else _attacker_risk("marketer", classes, counts, tau, counts=records)
    )
    return RiskSummary(
        prosecutor=prosecutor,
        journalist=_journalist_of(marketer, classes, counts),
        marketer=marketer,
        population=resolved,
        max_risk=tau,
    )


def _journalist_of(marketer: AttackerRisk, classes: EquivalenceClasses, risk_size: np.ndarray) -> AttackerRisk:
    """The journalist risk from the marketer risk of the same population counts ``risk_size`` (``F_j``): the same
    per-record risks, and the average ``max(J' / sum_j F_j, marketer average)`` (see :func:`journalist_risk`)."""
    n = int(marketer.class_counts.sum())
    if n == 0:
        return replace(marketer, model="journalist")
    effective_classes = float((marketer.class_counts / classes.sizes).sum())
    average = max(effective_classes / float(risk_size.sum()), marketer.average)
    return replace(marketer, model="journalist", average=average)


def _population_counts(classes: EquivalenceClasses, population: PopulationCounts | None) -> np.ndarray:
    if population is None:
        return classes.sizes.astype(np.float64)
    if not isinstance(population, PopulationCounts):
        raise ParameterError(
            f"population must be PopulationCounts (see privdash.measure.population), got {type(population).__name__}."
        )
    if population.n_classes != classes.n_classes:
        raise ParameterError(
            f"The population counts are for {population.n_classes:,} classes but the table has "
            f"{classes.n_classes:,}; build them from the same equivalence classes."
        )
    return np.asarray(population.counts, dtype=np.float64)


def _attacker_risk(
    model: str,
    classes: EquivalenceClasses,
    risk_size: np.ndarray,
    tau: float,
    *,
    counts: np.ndarray | None = None,
) -> AttackerRisk:
    """Common part of the three models (the journalist's average is then :func:`_journalist_of`'s); ``risk_size``
    is ``f_j`` (prosecutor) or ``F_j``; ``counts``: the records of each class as int64, when another model made
    them already."""
    counts = classes.counts.astype(np.int64) if counts is None else counts
    n = int(counts.sum())
    if n == 0:
        empty = np.zeros(len(counts), dtype=np.float64)
        return AttackerRisk(model, 0.0, 0.0, 0.0, 0.0, tau, empty, counts)
    class_risk = 1.0 / risk_size
    # numpy's pairwise sums rather than np.dot: the same figure whatever the machine's BLAS threads (OpenBLAS
    # splits a long dot product between them, and they then spin until the process ends: 0.2 s of CPU).
    average = float((counts * class_risk).sum()) / n
    at_risk = float(counts.sum(where=class_risk > tau)) / n
    return AttackerRisk(
        model=model,
        highest=float(class_risk.max()),
        lowest=float(class_risk.min()),
        average=average,
        records_at_risk=at_risk,
        max_risk=tau,
        class_risk=class_risk,
        class_counts=counts,
    )


# --- curves -------------------------------------------------------------------------------------------------------


def records_at_risk_curve(risk: AttackerRisk, thresholds: Any = None) -> RiskCurve:
    """Records whose risk is strictly greater than each threshold (the dashboard's risk curve).

    Parameters
    ----------
    risk
        An attacker-model result.
    thresholds
        Values of ``tau``; by default 0 and every distinct per-record risk (the points where the step curve drops).

    Returns
    -------
    RiskCurve
        ``x = thresholds``; ``records[i]`` = records with risk ``> x[i]``. Non-increasing in ``x``.
    """
    if thresholds is None:
        x = np.unique(np.concatenate([[0.0], risk.class_risk]))
    else:
        x = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        if np.isnan(x).any():
            raise ParameterError("Risk thresholds must be numbers, not NaN.")
    order = np.argsort(risk.class_risk, kind="stable")
    sorted_risk = risk.class_risk[order]
    cumulative = np.concatenate([[0], np.cumsum(risk.class_counts[order])])
    n = int(cumulative[-1])
    at_or_below = cumulative[np.searchsorted(sorted_risk, x, side="right")]
    records = (n - at_or_below).astype(np.int64)
    return RiskCurve(x=x, records=records, fraction=records / n if n else np.zeros(len(x)), n_records=n)


def records_at_risk_by_k(classes: EquivalenceClasses, k_values: Any = None) -> RiskCurve:
    """Records in classes smaller than ``k`` (the records violating k-anonymity), for each ``k``.

    Parameters
    ----------
    classes
        The equivalence classes; class sizes are the attacker-visible ``f_j``, records are counted by ``n_j``.
    k_values
        The values of ``k`` (whole numbers >= 1); by default ``1, 2, ..., max f_j + 1`` (the last one puts every
        record at risk).

    Returns
    -------
    RiskCurve
        ``x = k``; ``records[i]`` = records in classes with ``f_j < k_i`` (strictly). Non-decreasing in ``k``.
    """
    sizes = classes.sizes
    if k_values is None:
        largest = int(sizes.max()) if len(sizes) else 0
        k = np.arange(1, largest + 2, dtype=np.int64)
    else:
        raw = np.asarray(k_values).reshape(-1)
        if len(raw) and (not np.all(np.isfinite(raw.astype(np.float64))) or np.any(np.mod(raw, 1) != 0)):
            raise ParameterError("k values must be whole numbers.")
        k = raw.astype(np.int64)
        if len(k) and k.min() < 1:
            raise ParameterError(f"k values must be at least 1, got {int(k.min())}.")
    order = np.argsort(sizes, kind="stable")
    sorted_sizes = sizes[order]
    cumulative = np.concatenate([[0], np.cumsum(classes.counts[order])])
    n = int(cumulative[-1])
    records = cumulative[np.searchsorted(sorted_sizes, k, side="left")].astype(np.int64)
    return RiskCurve(x=k, records=records, fraction=records / n if n else np.zeros(len(k)), n_records=n)


# --- sdcMicro individual risk --------------------------------------------------------------------------------------


def individual_risk(classes: EquivalenceClasses, population: PopulationCounts | None = None) -> IndividualRisk:
    """sdcMicro's individual risk ``r_k`` per class and the global risk (``indivRisk`` approx, ``measure_risk``).

    With ``p = f / F`` (sample over population frequency of the class; Benedetti and Franconi 1998, Franconi and
    Polettini 2004)::

        r = (p / (1 - p)) ln(1 / p)                           if f = 1
        r = p / (1 - p) - (p / (1 - p))^2 ln(1 / p)           if f = 2
        r = p / (f - (1 - p))                                 if f > 2
        r = 1 / f                                             if F = f (relative tolerance 1e-12)

    ``ER = sum over records of r`` (expected number of re-identifications), global risk ``ER / n``.

    Parameters
    ----------
    classes
        The sample's equivalence classes. Under the ``wildcard`` policy ``f`` and ``F`` count the compatible
        records, as sdcMicro's ``freqCalc`` with missing keys (``alpha = 1``).
    population
        ``F_j``; by default the classes' sampling weights (sdcMicro's ``Fk``), or ``F_j = f_j`` when the classes
        carry no weights, which gives ``r = 1 / f`` (sdcMicro with ``survey = FALSE``).

    Raises
    ------
    PopulationError
        Weights summing to less than a class's size (``F < f``).
    """
    if population is None:
        if classes.weight_sums is not None:
            population = population_counts_from_weights(classes)
        else:
            population = population_counts_from_sample(classes)
    big_f = _population_counts(classes, population)
    f = classes.sizes.astype(np.float64)
    counts = classes.counts.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = f / big_f
        odds = p / (1.0 - p)
        log_inverse = -np.log(p)
        risk = np.where(
            f == 1,
            odds * log_inverse,
            np.where(f == 2, odds - odds * odds * log_inverse, p / (f - (1.0 - p))),
        )
    risk = np.where(np.isclose(big_f, f, rtol=1e-12, atol=0.0), 1.0 / np.maximum(f, 1.0), risk)
    n = int(counts.sum())
    expected = float(np.dot(counts, risk)) if n else 0.0
    return IndividualRisk(
        class_risk=risk,
        class_counts=counts,
        sample_frequency=classes.sizes.copy(),
        population_frequency=big_f,
        expected_reidentifications=expected,
        global_risk=expected / n if n else 0.0,
        highest=float(risk.max()) if len(risk) else 0.0,
        population=population,
    )
