"""The verdict: does a diagnosed table meet the privacy targets, and if not, why not.

One :class:`Verdict` answers the question a privacy officer signs off on. It is computed from a
:class:`~privdash.measure.diagnose.Diagnosis` and :class:`~privdash.targets.PrivacyTargets` only
(:func:`check_targets`, also :meth:`Diagnosis.check`), so the dashboard, ``privdash diagnose --targets`` (exit
code 0 / 1) and the API give the same answer from the same numbers.

Per target (definitions in :mod:`privdash.targets`; comparisons as the models define them):

``k``
    passes iff no record is in a class smaller than ``k`` (``f_j >= k`` for every class) and at least one record
    is in scope (no verdict passes on no records); *achieved* is the smallest class size.
``l``
    passes iff every class has at least ``l`` distinct values of each sensitive attribute; *achieved* is the
    smallest such count over the attributes.
``t``
    passes iff every class's distance to the table's distribution is at most ``t`` for each sensitive attribute,
    with the distance the diagnosis measured (:attr:`TClosenessResult.distance`); *achieved* is the largest.
``max_risk``
    passes iff no record's prosecutor risk ``1 / f_j`` is strictly above ``max_risk``; *achieved* is the highest
    prosecutor risk. Journalist and marketer risks are never higher, so this bounds all three attacker models.

``global_risk``
    passes iff ``ER / n <= global_risk`` (non-strict), ``ER`` the sum of the records' individual risks (the
    diagnosis's :class:`~privdash.measure.risk.IndividualRisk`, Benedetti-Franconi with sampling weights; without
    weights ``1 / f_j``, sdcMicro without survey weights); *achieved* is ``ER / n``.
``household_risk``
    passes iff the household global risk ``ER_h / n <= household_risk``; the diagnosis's ``household_risk`` (None
    without a household column: not measured, fails).
``average_risk``
    passes iff the prosecutor average risk (ARX success rate) ``<= average_risk``.
``k_map``
    passes iff every class has ``F_j >= k_map`` people in the population (the diagnosis's population counts: a
    population table, a population size or sampling fraction, or sampling weights; with none, not measured);
    *achieved* is the smallest ``F_j``.
``delta_presence``
    passes iff every class has ``f_j / F_j <= delta_presence``; *achieved* is the largest ratio (not measured
    without a population, as ``k_map``).
``population_uniques``
    passes iff the estimated share of population uniques (uniques over ``N``, by the targets' estimator) is at most
    ``population_uniques``; not measured without a population size, or when the estimator gives no estimate.

The global targets (``global_risk``, ``household_risk``, ``average_risk``, ``population_uniques``) are properties of
the table, not of a class: their ``records_failing`` is 0 and they add no record to the records at risk. A target
that cannot be measured fails with a reason naming what is missing, and *achieved* NaN (null in JSON), never 0.

*Records at risk* is the number of records whose class fails at least one target: what a fix has to change.
A diagnosis without sensitive attributes cannot judge ``l`` or ``t``: those targets then fail with that reason
(a release cannot be signed off on a target nobody measured).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privdash.measure.population import PopulationSource
from privdash.measure.risk import individual_risk
from privdash.targets import PrivacyTargets

if TYPE_CHECKING:
    from privdash.measure.diagnose import Diagnosis

__all__ = ["TargetCheck", "Verdict", "check_targets"]


@dataclass(frozen=True)
class TargetCheck:
    """One target judged against a table.

    Attributes
    ----------
    target
        A name of :data:`~privdash.targets.TARGET_NAMES`.
    required
        The target value.
    achieved
        The table's value of the same measure (NaN when it could not be measured).
    passed
        Whether the table meets the target.
    records_failing
        Records in classes that fail this target.
    attribute
        For ``l`` and ``t``: the sensitive attribute with the worst value.
    reason
        One plain sentence saying what passed or failed and by how much.
    """

    target: str
    required: float
    achieved: float
    passed: bool
    records_failing: int
    attribute: str | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "required": self.required,
            "achieved": None if np.isnan(self.achieved) else self.achieved,
            "passed": self.passed,
            "records_failing": self.records_failing,
            "attribute": self.attribute,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Verdict:
    """Whether a table meets every target, per target, and in one sentence.

    Attributes
    ----------
    passed
        True iff every target passes.
    checks
        One :class:`TargetCheck` per target set, in the order of :attr:`PrivacyTargets.names`.
    records
        Records in scope (the diagnosis's ``n_records``).
    records_at_risk
        Records whose class fails at least one target.
    sample_uniques
        Records alone in their class (``f_j = 1``).
    quasi_identifiers
        The attributes the classes are formed over.
    """

    passed: bool
    checks: tuple[TargetCheck, ...]
    records: int
    records_at_risk: int
    sample_uniques: int
    quasi_identifiers: tuple[str, ...]

    @property
    def status(self) -> str:
        """``"pass"`` or ``"fail"``."""
        return "pass" if self.passed else "fail"

    @property
    def failed(self) -> tuple[TargetCheck, ...]:
        return tuple(check for check in self.checks if not check.passed)

    def sentence(self) -> str:
        """The verdict in plain language, e.g. "Not safe to release: 8,841 of 30,162 records (29.3%) are unique on
        these 8 attributes; the targets leave 15,353 records at risk (k = 5: ...)."."""
        n = self.records
        count = len(self.quasi_identifiers)
        attributes = f"these {count} attributes" if count != 1 else "this attribute"
        if not n:
            return "Not safe to release: no record is in scope, so no target can be met."
        if self.passed:
            met = "; ".join(check.reason for check in self.checks)
            return f"Meets every target on {attributes}: {met}."
        unique = (
            f"{self.sample_uniques:,} of {n:,} records ({_percent(self.sample_uniques, n)}) are unique on {attributes}"
            if self.sample_uniques
            else f"no record is unique on {attributes}"
        )
        failed = "; ".join(check.reason for check in self.failed)
        return (
            f"Not safe to release: {unique}; the targets leave {self.records_at_risk:,} records "
            f"({_percent(self.records_at_risk, n)}) at risk. {failed}."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "passed": self.passed,
            "sentence": self.sentence(),
            "records": self.records,
            "records_at_risk": self.records_at_risk,
            "sample_uniques": self.sample_uniques,
            "checks": [check.to_dict() for check in self.checks],
        }


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "0%"


def check_targets(diagnosis: Diagnosis, targets: PrivacyTargets) -> Verdict:
    """Judge ``diagnosis`` against ``targets`` (definitions in the module docstring)."""
    classes = diagnosis.classes
    counts = np.asarray(classes.counts)
    sizes = np.asarray(classes.sizes)
    failing = np.zeros(classes.n_classes, dtype=bool)
    checks: list[TargetCheck] = []

    below = sizes < targets.k
    failing |= below
    records_below = int(counts[below].sum())
    # No record in scope (an empty table, or every record dropped): nothing is met, whatever the sizes say.
    empty = diagnosis.n_records == 0
    k_passed = records_below == 0 and not empty
    k_reason = (
        "k cannot be judged: no record is in scope"
        if empty
        else f"k = {diagnosis.k:,} meets k ≥ {targets.k}"
        if k_passed
        else f"k = {diagnosis.k:,} is below the target k = {targets.k}: "
        f"{records_below:,} records are in smaller classes"
    )
    checks.append(TargetCheck("k", float(targets.k), float(diagnosis.k), k_passed, records_below, None, k_reason))

    wanted = targets.sensitive or diagnosis.sensitive
    models = [diagnosis.sensitive_models[name] for name in wanted if name in diagnosis.sensitive_models]
    unmeasured = [name for name in wanted if name not in diagnosis.sensitive_models]
    for target, value in (("l", targets.l), ("t", targets.t)):
        if value is None:
            continue
        if not models or unmeasured:
            if unmeasured:
                names = ", ".join(unmeasured)
                reason = f"{target} cannot be judged: {names} was not diagnosed as a sensitive attribute"
            else:
                reason = f"{target} cannot be judged: no sensitive attribute was diagnosed"
            checks.append(TargetCheck(target, float(value), float("nan"), False, 0, None, reason))
            continue
        if target == "l":
            results = [(m.attribute, m.l_distinct) for m in models]
            worst_name, worst = min(results, key=lambda item: item[1].value)
        else:
            results = [(m.attribute, m.t_closeness) for m in models]
            worst_name, worst = max(results, key=lambda item: item[1].value)
        bad = np.zeros(classes.n_classes, dtype=bool)
        for _, result in results:
            bad |= ~result.class_satisfies(value)
        failing |= bad
        records = int(counts[bad].sum())
        achieved = float(worst.value)
        sign = "≥" if target == "l" else "≤"
        shown = f"{achieved:g}" if target == "l" else f"{achieved:.4g}"
        if records == 0:
            reason = f"{target} = {shown} meets {target} {sign} {value:g} (worst on {worst_name})"
        else:
            reason = (
                f"{target} = {shown} on {worst_name} misses the target {target} {sign} {value:g}: "
                f"{records:,} records are in classes that fail it"
            )
        checks.append(TargetCheck(target, float(value), achieved, records == 0, records, worst_name, reason))

    if targets.max_risk is not None:
        prosecutor = diagnosis.risk.prosecutor
        risky = np.zeros(classes.n_classes, dtype=bool)
        if classes.n_classes:
            risky = 1.0 / np.maximum(sizes, 1) > targets.max_risk
        failing |= risky
        records = int(counts[risky].sum())
        highest = float(prosecutor.highest)
        if records == 0:
            reason = f"highest risk {highest:.1%} meets max_risk ≤ {targets.max_risk:.1%}"
        else:
            reason = (
                f"highest risk {highest:.1%} is above max_risk = {targets.max_risk:.1%}: "
                f"{records:,} records are at higher risk"
            )
        checks.append(TargetCheck("max_risk", float(targets.max_risk), highest, records == 0, records, None, reason))

    checks.extend(_global_checks(diagnosis, targets))
    population_checks, population_failing = _population_checks(diagnosis, targets)
    checks.extend(population_checks)
    if population_failing is not None:
        failing |= population_failing
    order = {name: index for index, name in enumerate(targets.names)}
    checks.sort(key=lambda check: order.get(check.target, len(order)))

    return Verdict(
        passed=all(check.passed for check in checks),
        checks=tuple(checks),
        records=diagnosis.n_records,
        records_at_risk=int(counts[failing].sum()),
        sample_uniques=int(diagnosis.sample_uniques),
        quasi_identifiers=tuple(diagnosis.quasi_identifiers),
    )


_NO_POPULATION = (
    "needs the population: a population table, a population size or sampling fraction, or sampling weights "
    "(--population, --sampling-fraction or --weights)"
)


def _not_measured(target: str, value: float, why: str) -> TargetCheck:
    return TargetCheck(target, float(value), float("nan"), False, 0, None, f"{target} was not measured: {why}")


def _at_most(target: str, value: float, achieved: float, what: str) -> TargetCheck:
    passed = achieved <= value
    verb = "meets" if passed else "is above"
    return TargetCheck(
        target, float(value), achieved, passed, 0, None, f"{what} {achieved:.4g} {verb} {target} ≤ {value:g}"
    )


def _global_checks(diagnosis: Diagnosis, targets: PrivacyTargets) -> list[TargetCheck]:
    """The checks of the table-wide targets (no record of their own fails them)."""
    out: list[TargetCheck] = []
    empty = diagnosis.n_records == 0
    if targets.global_risk is not None:
        if empty:
            out.append(_not_measured("global_risk", targets.global_risk, "no record is in scope"))
        else:
            individual = diagnosis.individual_risk or individual_risk(diagnosis.classes)
            out.append(_at_most("global_risk", targets.global_risk, individual.global_risk, "global risk ER/n ="))
    if targets.household_risk is not None:
        household = diagnosis.household_risk
        if household is None:
            out.append(
                _not_measured(
                    "household_risk",
                    targets.household_risk,
                    "no household column (give the household id: --household, household=)",
                )
            )
        elif empty:
            out.append(_not_measured("household_risk", targets.household_risk, "no record is in scope"))
        else:
            out.append(
                _at_most("household_risk", targets.household_risk, household.global_risk, "household risk ER_h/n =")
            )
    if targets.average_risk is not None:
        if empty:
            out.append(_not_measured("average_risk", targets.average_risk, "no record is in scope"))
        else:
            average = float(diagnosis.risk.prosecutor.average)
            out.append(_at_most("average_risk", targets.average_risk, average, "prosecutor average risk ="))
    if targets.population_uniques is not None:
        value = targets.population_uniques
        uniqueness = diagnosis.population_uniqueness
        if empty:
            out.append(_not_measured("population_uniques", value, "no record is in scope"))
        elif uniqueness is None:
            why = (
                "needs a population size: a population table, --population N, --sampling-fraction or --weights"
                if diagnosis.population.kind == PopulationSource.SAMPLE
                else "the classes overlap (wildcard policy with missing values)"
            )
            out.append(_not_measured("population_uniques", value, why))
        else:
            estimate = getattr(uniqueness, targets.estimator)
            if not estimate.valid:
                out.append(_not_measured("population_uniques", value, f"the {targets.estimator} estimator failed"))
            else:
                out.append(
                    _at_most(
                        "population_uniques",
                        value,
                        float(estimate.fraction),
                        f"estimated population uniqueness ({targets.estimator}) =",
                    )
                )
    return out


def _population_checks(diagnosis: Diagnosis, targets: PrivacyTargets) -> tuple[list[TargetCheck], np.ndarray | None]:
    """The checks of k-map and delta-presence, and the classes failing them (None when none is set or measured)."""
    out: list[TargetCheck] = []
    if targets.k_map is None and targets.delta_presence is None:
        return out, None
    population = diagnosis.population
    measured = population.kind != PopulationSource.SAMPLE and diagnosis.n_records > 0
    classes = diagnosis.classes
    counts = np.asarray(classes.counts)
    big_f = np.asarray(population.counts, dtype=np.float64)
    sizes = np.asarray(classes.sizes, dtype=np.float64)
    failing = np.zeros(classes.n_classes, dtype=bool)
    why = _NO_POPULATION if diagnosis.n_records else "no record is in scope"
    if targets.k_map is not None:
        if not measured:
            out.append(_not_measured("k_map", targets.k_map, why))
        else:
            bad = big_f < targets.k_map
            failing |= bad
            records = int(counts[bad].sum())
            smallest = float(big_f.min())
            reason = (
                f"smallest population class F_j = {smallest:,.4g} meets k_map ≥ {targets.k_map}"
                if not records
                else f"smallest population class F_j = {smallest:,.4g} is below k_map = {targets.k_map}: "
                f"{records:,} records are in classes with fewer people in the population"
            )
            out.append(TargetCheck("k_map", float(targets.k_map), smallest, not records, records, None, reason))
    if targets.delta_presence is not None:
        if not measured:
            out.append(_not_measured("delta_presence", targets.delta_presence, why))
        else:
            ratio = sizes / big_f
            bad = ratio > targets.delta_presence
            failing |= bad
            records = int(counts[bad].sum())
            largest = float(ratio.max())
            reason = (
                f"largest f_j / F_j = {largest:.4g} meets delta_presence ≤ {targets.delta_presence:g}"
                if not records
                else f"largest f_j / F_j = {largest:.4g} is above delta_presence = {targets.delta_presence:g}: "
                f"{records:,} records are in classes that fail it"
            )
            out.append(
                TargetCheck(
                    "delta_presence", float(targets.delta_presence), largest, not records, records, None, reason
                )
            )
    return out, failing
