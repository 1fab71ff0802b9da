"""Suppression for the release targets beyond class size: k-map, delta-presence and the global targets.

The least-lossy search (:mod:`dashboard.core.search.lattice`) and the ``generalize`` step's suppression
(:func:`~dashboard.core.transform.generalization.suppressed_classes`) judge a node as published: the classes that
violate a class-level target are removed, then the global targets (:data:`~dashboard.core.targets.GLOBAL_TARGETS`)
are measured on the records left and, while one fails, further classes are removed in decreasing order of their
records' risk until it is met (or the suppression limit is passed: the node then fails). Everything here reads an
:class:`~dashboard.core.measure.classes.EquivalenceClasses` summary; nothing loops over rows or classes.

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
    (:func:`~dashboard.core.measure.risk.individual_risk`: Benedetti-Franconi with ``F_j`` when the classes carry
    weights, ``1 / f_j`` without), which does not change when other classes are removed. Classes are removed in
    decreasing ``r_j`` (ties: the smaller class first) while ``ER / n > global_risk``: the cumulative sums of
    ``n_j r_j`` and ``n_j`` give every prefix at once, and the first prefix that meets the target is taken.
``average_risk``
    the prosecutor average ``(sum_j n_j / f_j) / n`` over the records kept, removed likewise in decreasing ``1 / f_j``.
``population_uniques``
    the estimate of the chosen estimator on the sizes of the classes kept, with ``N' = n' / pi`` (or the sum of the
    weights kept); while it is above the target (or the estimator fails), sample-unique classes are removed: the
    least number of them is found by bisection (with every sample unique removed every estimate is 0).

To keep the diagnosis of the published table on the right side of a non-strict threshold whatever the order of
floating-point sums, a prefix is taken only when it meets the global target with a relative margin of ``1e-9``.
``household_risk`` needs the household of each record, which the class tables do not carry: the search refuses it
(measure it with ``privdash diagnose --targets household_risk=...`` on the published table).
"""

from __future__ import annotations

import numpy as np

from dashboard.core.errors import ParameterError
from dashboard.core.measure.classes import EquivalenceClasses
from dashboard.core.measure.population import (
    population_counts_from_size,
    population_counts_from_weights,
    population_uniqueness_from_sizes,
)
from dashboard.core.measure.risk import individual_risk
from dashboard.core.targets import PrivacyTargets

__all__ = [
    "check_release_targets",
    "class_population",
    "global_suppression",
    "population_violations",
]

#: Relative margin by which a prefix of suppressed classes must meet a global target.
_MARGIN = 1e-9


def check_release_targets(targets: PrivacyTargets, *, weighted: bool, sampling_fraction: float | None) -> None:
    """Raise :class:`ParameterError` for targets the search cannot judge: ``household_risk`` (no household ids in the
    class tables), and ``k_map``, ``delta_presence`` or ``population_uniques`` without a population (no sampling
    fraction, population size or weights)."""
    if targets.household_risk is not None:
        raise ParameterError(
            "The least-lossy search cannot meet household_risk (the class tables do not carry household ids): "
            "anonymize without it, then measure it with privdash diagnose --targets household_risk=... and the "
            "household-id column."
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


def _individual_class_risk(classes: EquivalenceClasses, sampling_fraction: float | None) -> np.ndarray:
    """``r_j`` as the diagnosis of the published table measures it (weighted with weights, else ``1 / f_j``)."""
    if classes.weight_sums is None or not classes.n_classes:
        return 1.0 / np.maximum(np.asarray(classes.sizes, dtype=np.float64), 1.0)
    if sampling_fraction is not None:
        population = population_counts_from_size(classes, sampling_fraction=sampling_fraction)
    else:
        population = population_counts_from_weights(classes)
    return np.asarray(individual_risk(classes, population).class_risk, dtype=np.float64)


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
    low, high = 1, int(min(len(singles), room))
    if high < 1 or not met(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if met(middle):
            high = middle
        else:
            low = middle + 1
    more = np.zeros(len(bad), dtype=bool)
    more[singles[:high]] = True
    return more


def global_suppression(
    classes: EquivalenceClasses,
    targets: PrivacyTargets,
    bad: np.ndarray,
    budget: int | None = None,
    sampling_fraction: float | None = None,
) -> np.ndarray:
    """``bad`` (classes already suppressed) with the classes the global targets need removed too (see the module
    docstring); every class when they cannot be met within ``budget`` suppressed records."""
    bad = np.asarray(bad, dtype=bool).copy()
    wanted = [name for name in ("global_risk", "average_risk", "population_uniques") if getattr(targets, name)]
    if not wanted or not classes.n_classes:
        return bad
    counts = np.asarray(classes.counts, dtype=np.int64)
    sizes = np.asarray(classes.sizes, dtype=np.int64)
    risks = {
        "global_risk": _individual_class_risk(classes, sampling_fraction) if targets.global_risk else None,
        "average_risk": 1.0 / np.maximum(sizes, 1).astype(np.float64),
    }
    changed = True
    while changed:
        changed = False
        for name in wanted:
            if bad.all():
                return bad
            room = np.inf if budget is None else budget - float(counts[bad].sum())
            if room < 0:
                return bad
            if name == "population_uniques":
                more = _uniques_prefix(classes, targets, bad, sampling_fraction, room)
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
