"""Household (hierarchical) re-identification risk: a record's risk is that of its household.

Members of one household can be linked through it: re-identifying one member discloses the household and with it
the others. The risk of a household is therefore the probability that at least one of its members is
re-identified, assuming the members' re-identifications independent (µ-ARGUS household risk; sdcMicro
``measure_risk(hid=)``, ``R/measure_risk.R`` with ``fast_hier = TRUE``, its default; IHSN SDC Practice Guide §
"Household risk")::

    hr_h = 1 - prod over members i of h of (1 - r_i)

with ``r_i`` the member's individual risk (:func:`~dashboard.core.measure.risk.individual_risk`: sdcMicro's
Benedetti-Franconi approximation with sampling weights, ``1 / f`` without). Every member of ``h`` has risk
``hr_h``. The expected number of re-identifications is the sum over records, ``ER_h = sum_i hr_{h(i)}`` (sdcMicro
``hier_risk_ER``), and the household global risk ``ER_h / n`` (sdcMicro ``hier_risk``; ``* 100`` is
``hier_risk_pct``).

Missing household id: sdcMicro gives such records no household risk (NA, left out of ``ER_h`` but counted in
``n``). privdash treats a record without a household id as a household of its own (``hr = r``), so it is never
left out of the risk; :class:`HouseholdRisk` counts them in ``records_without_household``.

The product is computed as ``exp(sum log1p(-r))`` per household, in one pass over the (household, class) pairs;
``r = 1`` gives ``hr = 1`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dashboard.core.errors import ParameterError
from dashboard.core.measure.risk import IndividualRisk

__all__ = ["HouseholdRisk", "household_risk"]


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
    """

    household_risk: np.ndarray
    household_members: np.ndarray
    expected_reidentifications: float
    global_risk: float
    highest: float
    records_without_household: int = 0
    weighted: bool = False

    @property
    def n_households(self) -> int:
        return len(self.household_risk)

    @property
    def n_records(self) -> int:
        return int(self.household_members.sum())

    def records_above(self, max_risk: float) -> int:
        """Records whose household risk is strictly greater than ``max_risk``."""
        return int(self.household_members[self.household_risk > max_risk].sum())


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
        The individual risk per class (:func:`~dashboard.core.measure.risk.individual_risk`).
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
