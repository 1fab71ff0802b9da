"""Suppression for the release targets beyond class size: k-map, delta-presence and the global targets.

The least-lossy search (:mod:`privdash.search.lattice`) and the ``generalize`` step's suppression
(:func:`~privdash.transform.generalization.suppressed_classes`) judge a node as published: the classes that
violate a class-level target are removed, then the global targets (:data:`~privdash.targets.GLOBAL_TARGETS`)
are measured on the records left and, while one fails, further classes are removed in decreasing order of their
records' risk until it is met (or the suppression limit is passed: the node then fails). Everything here reads an
:class:`~privdash.measure.classes.EquivalenceClasses` summary; nothing loops over rows or classes.

The population
--------------
``F_j`` (what ``k_map``, ``delta_presence`` and the weighted individual risk need) comes, as in the diagnosis, from a
sampling fraction ``pi`` (``F_j = f_j / pi``) when one is given, else from the classes' sampling weights (``F_j`` =
their sum, at least ``f_j``). A population size ``N`` is turned into ``pi = n / N`` with ``n`` the records of the
*input* table, once: the published table, with fewer records, then has ``F_j`` computed with that same ``pi``. Its
diagnosis with ``--sampling-fraction pi`` gives the same numbers; with ``--population N`` it finds ``pi' = n' / N <=
pi``, so larger ``F_j``: k-map and delta-presence hold a fortiori, and the individual risks are no larger. A
population *table* is not supported in the search (the population would have to be generalized with the sample).

Per node
--------
``k_map``
    a class violates iff ``F_j < k_map`` (with ``pi``: ``f_j < k_map pi``).
``delta_presence``
    a class violates iff ``f_j / F_j > delta_presence`` (with ``pi`` every class has ``f_j / F_j = pi``).
``global_risk``
    ``ER / n`` over the records kept, with each class's individual risk ``r_j``
    (:func:`~privdash.measure.risk.individual_risk`: Benedetti-Franconi with ``F_j`` when the classes carry
    weights, ``1 / f_j`` without), which does not change when other classes are removed. Classes are removed in
    decreasing ``r_j`` (ties: the smaller class first) while ``ER / n > global_risk``: the cumulative sums of
    ``n_j r_j`` and ``n_j`` give every prefix at once, and the first prefix that meets the target is taken.
``average_risk``
    the prosecutor average ``(sum_j n_j / f_j) / n`` over the records kept, removed likewise in decreasing ``1 / f_j``.
``population_uniques``
    the estimate of the chosen estimator on the sizes of the classes kept, with ``N' = n' / pi`` (or the sum of the
    weights kept); while it is above the target (or the estimator fails), sample-unique classes are removed (with
    weights, the smallest weights first): the least number of them is found by bisection over all of them, whatever
    the suppression limit, so that the search and the published table make the same choice (with every sample unique
    removed every estimate is 0).

``household_risk``
    the household global risk ``ER_h / n`` of the records kept (:func:`~privdash.measure.household.household_risk`
    over the (household, class) pairs of the records kept, each member with its class's individual risk), with the
    household of each record (:class:`Households`). A household loses the members suppressed. Classes are removed in
    decreasing ``r_j`` (ties: the smaller class first); the households tie the classes together, so the least prefix
    that meets the target is found by bisection over all the prefixes (each evaluated in one pass over the pairs),
    whatever the suppression limit, the prefix taken being one that meets it; classes equally at risk are taken in the
    order of their first record in the table, so the search and the published table remove the same ones. Without
    household ids the target cannot be judged and is refused.

To keep the diagnosis of the published table on the right side of a non-strict threshold whatever the order of
floating-point sums, a prefix is taken only when it meets the global target with a relative margin of ``1e-9`` (a
table exactly at the threshold meets it in the verdict, but the search suppresses one more class).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from privdash.errors import ParameterError
from privdash.measure.classes import EquivalenceClasses
from privdash.measure.household import HouseholdRisk, household_risk
from privdash.measure.population import (
    population_counts_from_size,
    population_counts_from_weights,
    population_uniqueness_from_sizes,
)
from privdash.measure.risk import IndividualRisk, individual_risk
from privdash.targets import PrivacyTargets

if TYPE_CHECKING:
    from privdash.measure.diagnose import Diagnosis
    from privdash.measure.verdict import Verdict

__all__ = [
    "Households",
    "check_release_targets",
    "class_population",
    "global_suppression",
    "household_risk_of",
    "population_violations",
    "release_verdict",
]

#: Relative margin by which a prefix of suppressed classes must meet a global target.
_MARGIN = 1e-9


@dataclass(frozen=True, eq=False)
class Households:
    """The households of the records of some classes, as (household, class, records) triples.

    ``household`` holds codes ``0 .. n_households - 1`` in the order of first appearance in the table (a record
    without a household id has a code of its own), ``klass`` the class of the records (``-1``: outside every class),
    ``counts`` how many records of that household are in that class. ``first_row`` is, per class, the position of its
    first record in the table: the order of classes equally at risk, the same whichever way the classes were counted
    (rolled up in the lattice or grouped from the published rows)."""

    household: np.ndarray
    klass: np.ndarray
    counts: np.ndarray
    n_households: int
    first_row: np.ndarray

    @classmethod
    def from_records(cls, household: pd.Series, record_class: np.ndarray) -> Households:
        """The triples of one household id per record (missing: a household of its own) and its class."""
        codes, uniques = pd.factorize(household, sort=False)
        codes = np.asarray(codes, dtype=np.int64)
        missing = codes < 0
        codes[missing] = len(uniques) + np.arange(int(missing.sum()), dtype=np.int64)
        n_households = len(uniques) + int(missing.sum())
        record_class = np.asarray(record_class, dtype=np.int64)
        n_classes = int(record_class.max()) + 1 if len(record_class) else 0
        first_row = np.full(n_classes, np.iinfo(np.int64).max, dtype=np.int64)
        inside = record_class >= 0
        np.minimum.at(first_row, record_class[inside], np.flatnonzero(inside))
        return cls.from_pairs(codes, record_class, None, n_households, first_row)

    @classmethod
    def from_pairs(
        cls,
        household: np.ndarray,
        klass: np.ndarray,
        counts: np.ndarray | None,
        n_households: int,
        first_row: np.ndarray,
    ) -> Households:
        """The triples, with equal (household, class) pairs merged."""
        household = np.asarray(household, dtype=np.int64)
        klass = np.asarray(klass, dtype=np.int64)
        weight = np.ones(len(household), dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
        width = int(klass.max()) + 2 if len(klass) else 1
        key = household * width + (klass + 1)
        unique, inverse = np.unique(key, return_inverse=True)
        summed = np.bincount(inverse.reshape(-1), weights=weight, minlength=len(unique)).astype(np.int64)
        return cls(unique // width, unique % width - 1, summed, int(n_households), first_row)

    def mapped(self, class_map: np.ndarray, n_classes: int) -> Households:
        """The same records with their classes renamed by ``class_map`` (e.g. the finest classes rolled up into
        ``n_classes``)."""
        class_map = np.asarray(class_map, dtype=np.int64)
        klass = np.where(self.klass >= 0, class_map[np.maximum(self.klass, 0)], -1)
        first_row = np.full(n_classes, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_row, class_map, self.first_row)
        return Households.from_pairs(self.household, klass, self.counts, self.n_households, first_row)


def household_risk_of(
    classes: EquivalenceClasses, household: pd.Series, sampling_fraction: float | None = None
) -> HouseholdRisk:
    """The household risk of the records of ``classes`` (built from rows: ``record_class`` known), with the household
    id of each row and each member's individual risk as the search measures it (weighted when the classes carry
    weights). What ``household_risk`` is judged against in the search."""
    if classes.record_class is None:
        raise ParameterError("The household risk needs the class of each record (classes built from rows).")
    households = Households.from_records(household.reset_index(drop=True), classes.record_class)
    return household_risk(
        _member_risk(classes),
        households.household,
        households.klass,
        households.counts,
        n_households=households.n_households,
    )


def release_verdict(
    diagnosis: Diagnosis,
    targets: PrivacyTargets,
    *,
    household: pd.Series | None = None,
    sampling_fraction: float | None = None,
) -> Verdict:
    """``diagnosis.check(targets)``, with the household risk measured from ``household`` (one id per row of the
    diagnosed table, which must be in memory) when ``household_risk`` is a target and the diagnosis has none: how
    ``privdash anonymize`` shows the published table's value of every target it searched for."""
    if targets.household_risk is not None and household is not None and diagnosis.household_risk is None:
        diagnosis = replace(diagnosis, household_risk=household_risk_of(diagnosis.classes, household))
    return diagnosis.check(targets)


def check_release_targets(
    targets: PrivacyTargets, *, weighted: bool, sampling_fraction: float | None, households: bool = False
) -> None:
    """Raise :class:`ParameterError` for targets the search cannot judge: ``household_risk`` without household ids,
    and ``k_map``, ``delta_presence`` or ``population_uniques`` without a population (no sampling fraction,
    population size or weights)."""
    if targets.household_risk is not None and not households:
        raise ParameterError(
            "household_risk needs the household of each record: give the household-id column (--household, "
            "household=...), or measure it with privdash diagnose --targets household_risk=... on the published "
            "table."
        )
    if sampling_fraction is None and not weighted:
        needing = [name for name in ("k_map", "delta_presence", "population_uniques") if getattr(targets, name)]
        if needing:
            raise ParameterError(
                f"{', '.join(needing)} need(s) the population: give a population size or sampling fraction "
                "(--population-size, --sampling-fraction) or sampling weights (--weights)."
            )


def class_population(classes: EquivalenceClasses, sampling_fraction: float | None) -> np.ndarray | None:
    """``F_j`` per class: ``f_j / pi`` with a sampling fraction, else the classes' weight sums (at least ``f_j``),
    else None (nothing known of the population)."""
    sizes = np.asarray(classes.sizes, dtype=np.float64)
    if sampling_fraction is not None:
        return sizes / sampling_fraction
    if classes.weight_sums is not None:
        return np.maximum(np.asarray(classes.weight_sums, dtype=np.float64), sizes)
    return None


def population_violations(
    classes: EquivalenceClasses, targets: PrivacyTargets, sampling_fraction: float | None = None
) -> np.ndarray:
    """Boolean per class: it violates ``k_map`` or ``delta_presence`` (see the module docstring)."""
    bad = np.zeros(classes.n_classes, dtype=bool)
    if targets.k_map is None and targets.delta_presence is None:
        return bad
    big_f = class_population(classes, sampling_fraction)
    if big_f is None:
        raise ParameterError("k_map and delta_presence need the population: a sampling fraction or sampling weights.")
    if targets.k_map is not None:
        bad |= big_f < targets.k_map
    if targets.delta_presence is not None:
        bad |= np.asarray(classes.sizes, dtype=np.float64) / big_f > targets.delta_presence
    return bad


def _individual(classes: EquivalenceClasses, sampling_fraction: float | None) -> IndividualRisk:
    """The individual risk as the diagnosis of the published table measures it (weighted with weights, with ``F_j``
    from the sampling fraction when one is given; else ``1 / f_j``)."""
    if classes.weight_sums is None:
        return individual_risk(classes)
    if sampling_fraction is not None:
        population = population_counts_from_size(classes, sampling_fraction=sampling_fraction)
    else:
        population = population_counts_from_weights(classes)
    return individual_risk(classes, population)


def _member_risk(classes: EquivalenceClasses) -> IndividualRisk:
    """The members' risk of the household risk, as :func:`~privdash.measure.diagnose.diagnose` measures it
    (sdcMicro ``measure_risk(hid=)``): with the sampling weights when the classes carry them, ``1 / f`` without,
    whatever population size is given."""
    return individual_risk(classes)


def _household_prefix(
    individual: IndividualRisk,
    households: Households,
    counts: np.ndarray,
    sizes: np.ndarray,
    bad: np.ndarray,
    value: float,
    room: float,
) -> np.ndarray | None:
    """The classes to remove (beyond ``bad``) so that the household global risk of the rest is at most ``value``: a
    prefix in decreasing individual risk, the least one found by bisection; None when none within ``room`` does."""
    # Rounded, so that classes equally at risk tie whichever way their weights were summed; ties go to the smaller
    # class, then to the class met first in the table.
    risk = np.round(np.asarray(individual.class_risk, dtype=np.float64), 12)
    kept = np.flatnonzero(~bad)
    order = kept[np.lexsort((households.first_row[kept], sizes[kept], -risk[kept]))]
    removed = np.concatenate([[0], np.cumsum(counts[order])])

    def met(m: int) -> bool:
        gone = bad.copy()
        gone[order[:m]] = True
        record_class = np.where(gone[np.maximum(households.klass, 0)] | (households.klass < 0), -1, households.klass)
        found = household_risk(
            individual,
            households.household,
            record_class,
            households.counts,
            n_households=households.n_households,
        )
        n = found.n_records
        return n > 0 and found.expected_reidentifications <= value * n * (1.0 - _MARGIN)

    if met(0):
        return np.zeros(len(bad), dtype=bool)
    # The bisection runs over every prefix that leaves a record published, whatever the room, so that the prefix
    # found is the same with or without a suppression limit (the search and the published table agree).
    high = len(order) - 1
    if high < 1 or not met(high):
        return None
    low = 1
    while low < high:
        middle = (low + high) // 2
        if met(middle):
            high = middle
        else:
            low = middle + 1
    if removed[high] > room:
        return None
    more = np.zeros(len(bad), dtype=bool)
    more[order[:high]] = True
    return more


def _prefix(
    risk: np.ndarray, counts: np.ndarray, sizes: np.ndarray, bad: np.ndarray, value: float, room: float
) -> np.ndarray | None:
    """The classes to remove (beyond ``bad``) so that ``sum n_j r_j / sum n_j`` over the rest is at most ``value``:
    the shortest prefix in decreasing ``r_j``; None when no prefix within ``room`` more records does."""
    kept = np.flatnonzero(~bad)
    order = kept[np.lexsort((sizes[kept], -risk[kept]))]
    weighted = np.concatenate([[0.0], np.cumsum(counts[order] * risk[order])])
    removed = np.concatenate([[0.0], np.cumsum(counts[order].astype(np.float64))])
    total_risk = float(np.dot(counts[kept], risk[kept]))
    total = float(counts[kept].sum())
    left = total - removed
    ok = (total_risk - weighted <= value * left * (1.0 - _MARGIN)) & (left > 0) & (removed <= room)
    if not ok.any():
        return None
    first = int(np.argmax(ok))
    more = np.zeros(len(bad), dtype=bool)
    more[order[:first]] = True
    return more


def _uniques_prefix(
    classes: EquivalenceClasses,
    targets: PrivacyTargets,
    bad: np.ndarray,
    sampling_fraction: float | None,
    room: float,
) -> np.ndarray | None:
    """The sample-unique classes to remove so that the estimated population uniqueness meets the target (None when
    removing them within ``room`` records does not)."""
    target = targets.population_uniques
    assert target is not None
    sizes = np.asarray(classes.sizes, dtype=np.int64)
    kept = np.flatnonzero(~bad)
    singles = kept[sizes[kept] == 1]
    weights = None if classes.weight_sums is None else np.asarray(classes.weight_sums, dtype=np.float64)
    if weights is not None:
        # riskiest first: the smallest weights (F_j); equal weights are interchangeable for the estimate
        singles = singles[np.argsort(np.round(weights[singles], 9), kind="stable")]

    def met(m: int) -> bool:
        keep = np.ones(len(kept), dtype=bool)
        keep[np.isin(kept, singles[:m])] = False
        rest = kept[keep]
        n = int(sizes[rest].sum())
        if n == 0:
            return False
        if sampling_fraction is not None:
            population = n / sampling_fraction
        else:
            assert weights is not None
            population = float(weights[rest].sum())
        estimate = getattr(population_uniqueness_from_sizes(sizes[rest], population_size=population), targets.estimator)
        return bool(estimate.valid and estimate.fraction <= target * (1.0 - _MARGIN))

    if met(0):
        return np.zeros(len(bad), dtype=bool)
    # Bisection over every number of sample uniques, whatever the room, so that the search and the published table
    # agree; then the room (one record per sample unique).
    low, high = 1, len(singles)
    if high < 1 or not met(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if met(middle):
            high = middle
        else:
            low = middle + 1
    if high > room:
        return None
    more = np.zeros(len(bad), dtype=bool)
    more[singles[:high]] = True
    return more


def global_suppression(
    classes: EquivalenceClasses,
    targets: PrivacyTargets,
    bad: np.ndarray,
    limit: int | None = None,
    sampling_fraction: float | None = None,
    households: Households | None = None,
) -> np.ndarray:
    """``bad`` (classes already suppressed) with the classes the global targets need removed too (see the module
    docstring); every class when they cannot be met within ``limit`` suppressed records. ``households`` is needed
    for ``household_risk``."""
    bad = np.asarray(bad, dtype=bool).copy()
    wanted = [
        name
        for name in ("global_risk", "household_risk", "average_risk", "population_uniques")
        if getattr(targets, name)
    ]
    if not wanted or not classes.n_classes:
        return bad
    if targets.household_risk is not None and households is None:
        check_release_targets(targets, weighted=True, sampling_fraction=sampling_fraction, households=False)
    counts = np.asarray(classes.counts, dtype=np.int64)
    sizes = np.asarray(classes.sizes, dtype=np.int64)
    individual = _individual(classes, sampling_fraction) if targets.global_risk else None
    members = _member_risk(classes) if targets.household_risk else None
    risks = {
        "global_risk": None if individual is None else np.asarray(individual.class_risk, dtype=np.float64),
        "average_risk": 1.0 / np.maximum(sizes, 1).astype(np.float64),
    }
    changed = True
    while changed:
        changed = False
        for name in wanted:
            if bad.all():
                return bad
            room = np.inf if limit is None else limit - float(counts[bad].sum())
            if room < 0:
                return bad
            if name == "population_uniques":
                more = _uniques_prefix(classes, targets, bad, sampling_fraction, room)
            elif name == "household_risk":
                assert members is not None and households is not None and targets.household_risk is not None
                more = _household_prefix(members, households, counts, sizes, bad, targets.household_risk, room)
            else:
                risk = risks[name]
                assert risk is not None
                more = _prefix(risk, counts, sizes, bad, float(getattr(targets, name)), room)
            if more is None:
                return np.ones(len(bad), dtype=bool)
            if more.any():
                bad |= more
                changed = True
    return bad
