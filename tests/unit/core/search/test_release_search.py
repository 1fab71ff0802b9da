"""The least-lossy search with the release targets beyond k (global risk, average risk, population uniques, k-map,
delta-presence): its result is the least-lossy node whose published table, diagnosed, meets the targets, compared with
a brute-force evaluation of every node of a small lattice (each node published by the generalize step and judged by
the verdict of its diagnosis)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.commands.anonymize import default_hierarchies
from privdash.errors import ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.measure.diagnose import diagnose
from privdash.measure.household import household_risk
from privdash.measure.risk import individual_risk
from privdash.search.lattice import (
    GeneralizationLattice,
    NoSolutionError,
    optimal_generalization,
    suppression_limit,
)
from privdash.targets import PrivacyTargets
from privdash.transform.generalization import generalize, suppressed_classes
from privdash.transform.release_targets import global_suppression, release_verdict

QIS = ["roof", "walls", "water", "relat"]
LIMIT = 0.02


@pytest.fixture(scope="module")
def testdata(data_dir: Path) -> pd.DataFrame:
    """The first 500 records of sdcMicro's testdata: risky enough on these 4 keys for every target to bind."""
    return pd.read_csv(data_dir / "sdcmicro_testdata" / "testdata.csv").iloc[:500]


# (targets, weight column, sampling fraction); household_weights vary (8.3 to 100), sampling_weight is 100 throughout
SCENARIOS = [
    (PrivacyTargets(k=1, global_risk=0.0003), "sampling_weight", None),
    (PrivacyTargets(k=1, global_risk=0.0006), "household_weights", None),
    (PrivacyTargets(k=1, average_risk=0.02), None, None),
    (PrivacyTargets(k=1, population_uniques=1e-4), None, 0.05),
    (PrivacyTargets(k=1, population_uniques=1e-6, population_uniques_estimator="zayatz"), None, 0.05),
    (PrivacyTargets(k=1, population_uniques=0.001, population_uniques_estimator="pitman"), None, 0.3),
    (PrivacyTargets(k=1, k_map=200, average_risk=0.03), None, 0.05),
    (PrivacyTargets(k=2, delta_presence=0.06), "household_weights", None),
    (PrivacyTargets(k=1, population_uniques=1e-4), "household_weights", None),
    (PrivacyTargets(k=1, global_risk=0.002, k_map=100), "household_weights", 0.05),
]


@pytest.mark.parametrize(("targets", "weights", "fraction"), SCENARIOS)
def test_search_is_the_least_lossy_node_meeting_the_targets(
    testdata: pd.DataFrame, targets: PrivacyTargets, weights: str | None, fraction: float | None
) -> None:
    hierarchies = default_hierarchies(testdata, QIS, 2)
    lattice = GeneralizationLattice(
        testdata, hierarchies, quasi_identifiers=QIS, weights=weights, sampling_fraction=fraction
    )
    limit = suppression_limit(LIMIT, len(testdata))
    best_value = np.inf
    satisfied = 0
    for node in lattice.nodes():
        levels = dict(zip(QIS, (int(v) for v in node), strict=True))
        published = generalize(
            testdata,
            levels,
            dict(zip(QIS, lattice.hierarchies, strict=True)),
            suppress=targets,
            quasi_identifiers=QIS,
            weights=weights,
            sampling_fraction=fraction,
        ).data
        removed = len(testdata) - len(published)
        evaluated = lattice.evaluate(levels, targets=targets, max_suppression=LIMIT)
        meets = (
            removed <= limit
            and len(published) > 0
            and diagnose(published, QIS, weights=weights, sampling_fraction=fraction).check(targets).passed
        )
        # the node's judgement in the lattice is that of its published table
        assert evaluated.satisfied == meets, levels
        if meets:
            satisfied += 1
            assert evaluated.suppressed == removed
            best_value = min(best_value, evaluated.value)
    if not satisfied:
        with pytest.raises(NoSolutionError):
            optimal_generalization(
                testdata,
                hierarchies,
                quasi_identifiers=QIS,
                targets=targets,
                weights=weights,
                sampling_fraction=fraction,
            )
        pytest.fail("the scenario should have a solution")
    result = optimal_generalization(
        testdata,
        hierarchies,
        quasi_identifiers=QIS,
        targets=targets,
        weights=weights,
        sampling_fraction=fraction,
        max_suppression=LIMIT,
    )
    assert result.value == pytest.approx(best_value, rel=1e-12, abs=1e-15)
    assert satisfied < lattice.size  # the targets bind: some nodes fail
    verdict = diagnose(result.data, QIS, weights=weights, sampling_fraction=fraction).check(targets)
    assert verdict.passed, verdict.sentence()
    heuristic = optimal_generalization(
        testdata,
        hierarchies,
        quasi_identifiers=QIS,
        targets=targets,
        weights=weights,
        sampling_fraction=fraction,
        search="heuristic",
        max_suppression=LIMIT,
    )
    assert diagnose(heuristic.data, QIS, weights=weights, sampling_fraction=fraction).check(targets).passed


def test_global_risk_suppresses_the_riskiest_classes_first() -> None:
    # sizes 1, 1, 2, 4 (8 records), r = 1/f: ER = 1 + 1 + 1 + 1 = 4, ER/n = 0.5
    data = pd.DataFrame({"a": ["p", "q", "r", "r", "s", "s", "s", "s"]})
    classes = equivalence_classes(data, ["a"])
    sizes = dict(zip(classes.keys()["a"], classes.sizes, strict=True))
    bad = np.zeros(classes.n_classes, dtype=bool)
    # without the two singletons: ER = 2 over 6 records = 1/3; also without r: 1/4
    third = global_suppression(classes, PrivacyTargets(k=1, global_risk=0.34), bad)
    assert sorted(k for k, b in zip(classes.keys()["a"], third, strict=True) if b) == ["p", "q"]
    quarter = global_suppression(classes, PrivacyTargets(k=1, global_risk=0.2501), bad)
    assert sorted(k for k, b in zip(classes.keys()["a"], quarter, strict=True) if b) == ["p", "q", "r"]
    assert not global_suppression(classes, PrivacyTargets(k=1, global_risk=0.5001), bad).any()
    # the limit: 2 records may go, which is not enough for 1/4 -> every class (the node fails)
    assert global_suppression(classes, PrivacyTargets(k=1, global_risk=0.2501), bad, limit=2).all()
    assert not global_suppression(classes, PrivacyTargets(k=1, global_risk=0.34), bad, limit=2).all()
    # average risk: J / n = 4 / 8; without p, q: 2 / 6
    average = suppressed_classes(classes, PrivacyTargets(k=1, average_risk=0.4))
    assert int(np.asarray(classes.sizes)[average].sum()) == 2
    assert sizes["s"] == 4


def test_household_risk_and_missing_population_are_refused(testdata: pd.DataFrame) -> None:
    hierarchies = default_hierarchies(testdata, QIS, 2)
    with pytest.raises(ParameterError, match="household_risk needs the household"):
        optimal_generalization(testdata, hierarchies, quasi_identifiers=QIS, targets=PrivacyTargets(household_risk=0.1))
    needing = (PrivacyTargets(k_map=3), PrivacyTargets(delta_presence=0.5), PrivacyTargets(population_uniques=0.1))
    for targets in needing:
        with pytest.raises(ParameterError, match="need\\(s\\) the population"):
            optimal_generalization(testdata, hierarchies, quasi_identifiers=QIS, targets=targets)


def _household_global_risk(published: pd.DataFrame, weights: str | None) -> float:
    """The household risk of a published table, from its own diagnosis (oracle: the diagnosis's individual risk and
    :func:`household_risk` over the ``ori_hid`` households of its rows)."""
    found = diagnose(published, QIS, weights=weights)
    individual = found.individual_risk or individual_risk(found.classes)
    codes, _ = pd.factorize(published["ori_hid"])
    assert (codes >= 0).all()
    assert found.classes.record_class is not None
    return household_risk(individual, codes, found.classes.record_class).global_risk


@pytest.mark.parametrize(("value", "weights"), [(0.002, "sampling_weight"), (0.15, None)])
def test_household_risk_search_against_every_node(testdata: pd.DataFrame, value: float, weights: str | None) -> None:
    targets = PrivacyTargets(k=1, household_risk=value)
    hierarchies = default_hierarchies(testdata, QIS, 2)
    lattice = GeneralizationLattice(testdata, hierarchies, quasi_identifiers=QIS, weights=weights, household="ori_hid")
    limit = suppression_limit(LIMIT, len(testdata))
    best_value, satisfied = np.inf, 0
    for node in lattice.nodes():
        levels = dict(zip(QIS, (int(v) for v in node), strict=True))
        published = generalize(
            testdata,
            levels,
            dict(zip(QIS, lattice.hierarchies, strict=True)),
            suppress=targets,
            quasi_identifiers=QIS,
            weights=weights,
            household="ori_hid",
        ).data
        removed = len(testdata) - len(published)
        evaluated = lattice.evaluate(levels, targets=targets, max_suppression=LIMIT)
        meets = removed <= limit and len(published) > 0 and _household_global_risk(published, weights) <= value
        assert evaluated.satisfied == meets, levels
        if meets:
            satisfied += 1
            assert evaluated.suppressed == removed
            best_value = min(best_value, evaluated.value)
    assert 0 < satisfied < lattice.size
    result = optimal_generalization(
        testdata,
        hierarchies,
        quasi_identifiers=QIS,
        targets=targets,
        weights=weights,
        household="ori_hid",
        max_suppression=LIMIT,
    )
    assert result.value == pytest.approx(best_value, rel=1e-12, abs=1e-15)
    assert _household_global_risk(result.data, weights) <= value
    verdict = release_verdict(diagnose(result.data, QIS, weights=weights), targets, household=result.data["ori_hid"])
    assert verdict.passed, verdict.sentence()
