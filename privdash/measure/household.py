"""Household (hierarchical) re-identification risk: a record's risk is that of its household.

Members of one household can be linked through it: re-identifying one member discloses the household and with it
the others. The risk of a household is therefore the probability that at least one of its members is
re-identified, assuming the members' re-identifications independent (µ-ARGUS household risk; sdcMicro
``measure_risk(hid=)``, ``R/measure_risk.R`` with ``fast_hier = TRUE``, its default; IHSN SDC Practice Guide §
"Household risk")::

    hr_h = 1 - prod over members i of h of (1 - r_i)

with ``r_i`` the member's individual risk (:func:`~privdash.measure.risk.individual_risk`: sdcMicro's
Benedetti-Franconi approximation with sampling weights, ``1 / f`` without). Every member of ``h`` has risk
``hr_h``. The expected number of re-identifications is the sum over records, ``ER_h = sum_i hr_{h(i)}`` (sdcMicro
``hier_risk_ER``), and the household global risk ``ER_h / n`` (sdcMicro ``hier_risk``; ``* 100`` is
``hier_risk_pct``).

Missing household id: sdcMicro gives such records no household risk (NA, left out of ``ER_h`` but counted in
``n``). privdash treats a record without a household id as a household of its own (``hr = r``), so it is never
left out of the risk; :class:`HouseholdRisk` counts them in ``records_without_household``.

The product is computed as ``exp(sum log1p(-r))`` per household, in one pass over the (household, class) pairs;
``r = 1`` gives ``hr = 1`` exactly.

:func:`household_risk_of_records` takes the household ids as they are (from the rows, or from an engine's aggregate
grouped by the QIs and the household column) and puts the (household, class) pairs in one canonical order, the
household ids sorted and the classes in their own order, so that every engine sums the same numbers in the same order
and gives the same household risk to the last digit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from privdash.errors import DataReadError, ParameterError
from privdash.measure.encoding import encode_column
from privdash.measure.risk import IndividualRisk

__all__ = ["HouseholdRisk", "household_risk", "household_risk_of_records", "record_household_risk"]


@dataclass(frozen=True, eq=False)
class HouseholdRisk:
    """The household risk of the records (see the module docstring).

    Attributes
    ----------
    household_risk
        ``hr_h`` per household (in the order of the household codes given).
    household_members
        Records in each household.
    expected_reidentifications
        ``ER_h = sum over records of hr`` (sdcMicro ``hier_risk_ER``).
    global_risk
        ``ER_h / n`` (sdcMicro ``hier_risk``); 0 for an empty table.
    highest
        The largest ``hr_h`` (0 for an empty table).
    records_without_household
        Records with a missing household id, each counted as a household of its own.
    weighted
        Whether the individual risks used sampling weights (sdcMicro's survey risk) or were ``1 / f``.
    household_ids
        The id of each of the first ``len(household_ids)`` households (:func:`household_risk_of_records`); the
        households after them are records without an id. None when the codes were given directly.
    """

    household_risk: np.ndarray
    household_members: np.ndarray
    expected_reidentifications: float
    global_risk: float
    highest: float
    records_without_household: int = 0
    weighted: bool = False
    household_ids: pd.Index | None = None

    @property
    def n_households(self) -> int:
        return len(self.household_risk)

    @property
    def n_records(self) -> int:
        return int(self.household_members.sum())

    def records_above(self, max_risk: float) -> int:
        """Records whose household risk is strictly greater than ``max_risk``."""
        return int(self.household_members[self.household_risk > max_risk].sum())

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain JSON-able values (``privdash diagnose --json``'s ``household_risk``)."""
        return {
            "expected_reidentifications": self.expected_reidentifications,
            "global_risk": self.global_risk,
            "highest": self.highest,
            "households": self.n_households,
            "records_without_household": self.records_without_household,
            "weighted": self.weighted,
        }


def household_risk(
    individual: IndividualRisk,
    household: np.ndarray,
    record_class: np.ndarray,
    counts: np.ndarray | None = None,
    *,
    n_households: int | None = None,
    records_without_household: int = 0,
) -> HouseholdRisk:
    """Household risk from the individual risk of each class and the household of each record.

    Parameters
    ----------
    individual
        The individual risk per class (:func:`~privdash.measure.risk.individual_risk`).
    household
        Household code (``0 .. H-1``) of each record, or of each (household, class) pair when ``counts`` is given.
        A record without a household id must already have a code of its own.
    record_class
        Class of each record (or pair); ``-1`` for records outside every class (``drop`` policy), which are left
        out.
    counts
        Records of each (household, class) pair, when the input is an aggregate (every engine gives one).
    n_households
        ``H``; by default ``household.max() + 1``.
    records_without_household
        Reported as such (see the module docstring).
    """
    household = np.asarray(household, dtype=np.int64)
    record_class = np.asarray(record_class, dtype=np.int64)
    if household.shape != record_class.shape:
        raise ParameterError("household and record_class must have one value per record.")
    weight = np.ones(len(household)) if counts is None else np.asarray(counts, dtype=np.float64)
    if weight.shape != household.shape:
        raise ParameterError("counts must have one value per (household, class) pair.")
    kept = record_class >= 0
    household, record_class, weight = household[kept], record_class[kept], weight[kept]
    if len(household) and household.min() < 0:
        raise ParameterError("Household codes must be non-negative; give a record without a household its own code.")
    size = int(n_households) if n_households is not None else (int(household.max()) + 1 if len(household) else 0)
    risk = np.asarray(individual.class_risk, dtype=np.float64)[record_class]
    with np.errstate(divide="ignore"):
        log_safe = np.log1p(-np.minimum(risk, 1.0))
    # weight * -inf is -inf for every positive count, so a member certain to be re-identified makes hr exactly 1
    log_survival = np.bincount(
        household, weights=np.where(np.isneginf(log_safe), -np.inf, weight * log_safe), minlength=size
    )
    members = np.bincount(household, weights=weight, minlength=size)
    present = members > 0
    hr = np.where(present, -np.expm1(log_survival), 0.0)
    n = float(members.sum())
    expected = float(np.dot(members, hr))
    return HouseholdRisk(
        household_risk=hr,
        household_members=members.astype(np.int64),
        expected_reidentifications=expected,
        global_risk=expected / n if n else 0.0,
        highest=float(hr[present].max()) if present.any() else 0.0,
        records_without_household=int(records_without_household),
        weighted=individual.population.kind.value == "weights",
    )


def household_risk_of_records(
    individual: IndividualRisk,
    ids: pd.Series,
    record_class: np.ndarray,
    counts: np.ndarray | None = None,
) -> HouseholdRisk:
    """Household risk from the household id of each record (or of each aggregate row, with ``counts``).

    Parameters
    ----------
    individual
        The individual risk per class.
    ids
        Household id of each record or aggregate row; missing (None, NaN) for a record without a household, which
        is a household of its own (see the module docstring).
    record_class
        Class of each record or row; ``-1`` for those outside every class (``drop`` policy), left out.
    counts
        Records of each aggregate row (None: one record per row).

    The households are those of the records in scope, their ids sorted (:func:`encode_column`), then one household
    per record without an id, in class order: the result does not depend on the order of the rows, nor on whether
    they came one per record or aggregated.
    """
    record_class = np.asarray(record_class, dtype=np.int64)
    if len(ids) != len(record_class):
        raise ParameterError("ids and record_class must have one value per record.")
    weight = np.ones(len(record_class), dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    kept = (record_class >= 0) & (weight > 0)
    values = pd.Series(ids).reset_index(drop=True)[kept]
    cls, weight = record_class[kept], weight[kept]
    encoded = encode_column(values.reset_index(drop=True))
    code = np.asarray(encoded.codes, dtype=np.int64)
    n_ids = len(encoded.categories)
    n_classes = len(individual.class_risk)
    known = code >= 0
    # (household, class) pairs of the records with an id, in sorted order, with their records
    pair_household, pair_class, pair_count = _pairs(code[known], cls[known], weight[known])
    # a record without an id: a household of its own, in class order
    alone = np.bincount(cls[~known], weights=weight[~known], minlength=n_classes).astype(np.int64)
    n_alone = int(alone.sum())
    households = np.concatenate([pair_household, n_ids + np.arange(n_alone, dtype=np.int64)])
    classes = np.concatenate([pair_class, np.repeat(np.arange(n_classes, dtype=np.int64), alone)])
    members = np.concatenate([pair_count, np.ones(n_alone, dtype=np.int64)])
    result = household_risk(
        individual,
        households,
        classes,
        members,
        n_households=n_ids + n_alone,
        records_without_household=n_alone,
    )
    return replace(result, household_ids=pd.Index(encoded.categories))


def _pairs(household: np.ndarray, cls: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (household, class) pairs sorted by household then class, and the records of each."""
    if not len(household):
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    order = np.lexsort((cls, household))
    household, cls, weight = household[order], cls[order], weight[order]
    starts = np.flatnonzero(np.r_[True, (household[1:] != household[:-1]) | (cls[1:] != cls[:-1])])
    return household[starts], cls[starts], np.add.reduceat(weight, starts).astype(np.int64)


def record_household_risk(
    result: HouseholdRisk, individual: IndividualRisk, ids: pd.Series, record_class: np.ndarray
) -> np.ndarray:
    """The household risk of each record (NaN for records in no class), from its household id and class, for the
    households of ``result`` (:func:`household_risk_of_records` on these records, or on the table they come from
    when they are a batch of it). A record without an id has its individual risk.

    Raises :class:`DataReadError` when a record's household id is not one of ``result``'s households (the table
    changed since ``result`` was measured).
    """
    if result.household_ids is None:
        raise ParameterError("This household risk was measured from household codes; give it the household ids.")
    record_class = np.asarray(record_class, dtype=np.int64)
    values = pd.Series(ids).reset_index(drop=True)
    local, distinct = pd.factorize(values, use_na_sentinel=True)
    position = result.household_ids.get_indexer(pd.Index(distinct)) if len(distinct) else np.empty(0, np.intp)
    household = np.where(local >= 0, position[np.maximum(local, 0)] if len(distinct) else -1, -1)
    in_class = record_class >= 0
    unknown = in_class & (local >= 0) & (household < 0)
    if unknown.any():
        raise DataReadError(
            "Some records' household ids are in no household counted: the table changed since its household risk "
            "was measured. Diagnose it again."
        )
    class_risk = np.append(np.asarray(individual.class_risk, dtype=np.float64), np.nan)
    own = class_risk[np.where(in_class, record_class, len(class_risk) - 1)]
    hr = np.append(result.household_risk, np.nan)
    return np.where(~in_class, np.nan, np.where(household >= 0, hr[np.maximum(household, 0)], own))
