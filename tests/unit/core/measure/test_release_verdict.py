"""The release targets beyond k in the verdict: global, household and average risk, k-map, delta-presence and
population uniques, against hand-computed values; what is not measured fails with a reason; parsing."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privdash.errors import ParameterError
from privdash.measure.diagnose import diagnose
from privdash.measure.household import household_risk
from privdash.measure.population import population_uniqueness_from_sizes
from privdash.targets import PrivacyTargets, parse_targets

# Three classes of a: sizes 1, 2, 3; weights: 4 | 2, 2 | 3, 3, 3 (F = 4, 4, 9).
TABLE = pd.DataFrame(
    {
        "a": ["x", "y", "y", "z", "z", "z"],
        "w": [4.0, 2.0, 2.0, 3.0, 3.0, 3.0],
        "hh": [1, 1, 2, 2, 3, 3],
    }
)
# Benedetti-Franconi by hand: f=1, p=1/4: (p/(1-p)) ln(1/p) = ln(4)/3; f=2, p=1/2: odds 1, 1 - ln 2;
# f=3, p=1/3: p / (f - (1 - p)) = (1/3) / (7/3) = 1/7.
R1, R2, R3 = math.log(4) / 3, 1 - math.log(2), 1 / 7
WEIGHTED_GLOBAL = (R1 + 2 * R2 + 3 * R3) / 6  # 0.250729...
# sdcMicro's indivRisk (approx) and global risk on the same table: scripts/release_targets_reference.R
R_TOY_GLOBAL = 0.250729197971
R_TESTDATA_GLOBAL = {"sampling_weight": 0.002353340375, "household_weights": 0.008607621333}
# Without weights r = 1/f: (1 + 2 * 1/2 + 3 * 1/3) / 6 = 1/2.
UNWEIGHTED_GLOBAL = 0.5


def check(targets: PrivacyTargets, **options: object):
    return diagnose(TABLE, ["a"], **options).check(targets)  # type: ignore[arg-type]


def one(verdict, name: str):
    (found,) = [c for c in verdict.checks if c.target == name]
    return found


def test_global_risk_weighted_and_not() -> None:
    assert abs(WEIGHTED_GLOBAL - R_TOY_GLOBAL) < 1e-11
    below = check(PrivacyTargets(k=1, global_risk=0.25), weights="w")
    assert one(below, "global_risk").achieved == pytest.approx(WEIGHTED_GLOBAL, rel=1e-12)
    assert not below.passed
    assert check(PrivacyTargets(k=1, global_risk=0.251), weights="w").passed
    unweighted = check(PrivacyTargets(k=1, global_risk=0.5))
    assert one(unweighted, "global_risk").achieved == pytest.approx(UNWEIGHTED_GLOBAL, rel=1e-12)
    assert unweighted.passed  # non-strict: ER / n == 0.5 meets 0.5
    assert not check(PrivacyTargets(k=1, global_risk=0.4999)).passed


@pytest.mark.parametrize("weights", ["sampling_weight", "household_weights"])
def test_global_risk_matches_sdcmicro_on_testdata(data_dir, weights: str) -> None:
    data = pd.read_csv(data_dir / "sdcmicro_testdata" / "testdata.csv")
    qis = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    diagnosis = diagnose(data, qis, weights=weights)
    reference = R_TESTDATA_GLOBAL[weights]
    found = one(diagnosis.check(PrivacyTargets(k=1, global_risk=reference * 1.0001)), "global_risk")
    assert found.passed and found.achieved == pytest.approx(reference, rel=1e-9)
    assert not diagnosis.check(PrivacyTargets(k=1, global_risk=reference * 0.9999)).passed


def test_average_risk_is_the_prosecutor_success_rate() -> None:
    # J / n = 3 / 6
    assert check(PrivacyTargets(k=1, average_risk=0.5)).passed
    failed = check(PrivacyTargets(k=1, average_risk=0.49))
    assert not failed.passed and one(failed, "average_risk").achieved == pytest.approx(0.5)
    assert one(failed, "average_risk").records_failing == 0


def test_k_map_and_delta_presence_with_weights() -> None:
    # F_j = 4, 4, 9; f_j / F_j = 1/4, 1/2, 1/3
    verdict = check(PrivacyTargets(k=1, k_map=4, delta_presence=0.5), weights="w")
    assert verdict.passed
    assert one(verdict, "k_map").achieved == 4.0
    assert one(verdict, "delta_presence").achieved == pytest.approx(0.5)
    failed = check(PrivacyTargets(k=1, k_map=5, delta_presence=0.49), weights="w")
    assert not failed.passed
    assert one(failed, "k_map").records_failing == 3  # the classes of sizes 1 and 2
    assert one(failed, "delta_presence").records_failing == 2
    assert failed.records_at_risk == 3


def test_k_map_with_a_sampling_fraction_and_a_population_table() -> None:
    # pi = 1/2: F_j = 2, 4, 6
    verdict = check(PrivacyTargets(k=1, k_map=3, delta_presence=0.5), sampling_fraction=0.5)
    assert one(verdict, "k_map").records_failing == 1 and one(verdict, "k_map").achieved == 2.0
    assert one(verdict, "delta_presence").passed  # f_j / F_j = pi = 0.5 for every class
    population = pd.DataFrame({"a": ["x"] * 7 + ["y"] * 2 + ["z"] * 3})
    table = check(PrivacyTargets(k=1, k_map=3, delta_presence=0.9), population=population)
    assert one(table, "k_map").records_failing == 2  # F = 7, 2, 3
    assert one(table, "delta_presence").records_failing == 5  # f/F = 1/7, 1, 1


@pytest.mark.parametrize("name", ["k_map", "delta_presence", "population_uniques", "household_risk"])
def test_not_measured_fails_with_the_reason(name: str) -> None:
    value = 2 if name == "k_map" else 0.5
    verdict = check(PrivacyTargets(k=1, **{name: value}))
    found = one(verdict, name)
    assert not verdict.passed and not found.passed
    assert math.isnan(found.achieved) and found.to_dict()["achieved"] is None
    assert "not measured" in found.reason
    expected = {
        "k_map": "needs the population",
        "delta_presence": "needs the population",
        "population_uniques": "needs a population size",
        "household_risk": "no household column",
    }[name]
    assert expected in found.reason


def test_household_risk_when_the_diagnosis_has_it() -> None:
    diagnosis = diagnose(TABLE, ["a"], weights="w")
    assert diagnosis.individual_risk is not None
    classes = diagnosis.classes
    assert classes.record_class is not None
    found = household_risk(diagnosis.individual_risk, TABLE["hh"].to_numpy() - 1, classes.record_class)
    # by hand: households {x, y}, {y, z}, {z, z}
    risk = dict(zip(classes.keys()["a"], diagnosis.individual_risk.class_risk, strict=True))
    x, y, z = risk["x"], risk["y"], risk["z"]
    h1, h2, h3 = 1 - (1 - x) * (1 - y), 1 - (1 - y) * (1 - z), 1 - (1 - z) ** 2
    expected = 2 * (h1 + h2 + h3) / 6
    assert found.global_risk == pytest.approx(expected, rel=1e-12)
    object.__setattr__(diagnosis, "household_risk", found)  # the field another branch adds to Diagnosis
    assert diagnosis.check(PrivacyTargets(k=1, household_risk=expected + 1e-9)).passed
    failed = diagnosis.check(PrivacyTargets(k=1, household_risk=expected - 1e-6))
    assert not failed.passed
    assert one(failed, "household_risk").achieved == pytest.approx(expected, rel=1e-12)


def test_population_uniques_per_estimator(data_dir) -> None:
    data = pd.read_csv(data_dir / "sdcmicro_testdata" / "testdata.csv")
    qis = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    diagnosis = diagnose(data, qis, sampling_fraction=0.05)
    sizes = np.asarray(diagnosis.classes.sizes)
    reference = population_uniqueness_from_sizes(sizes, population_size=len(data) / 0.05)
    for estimator in ("dankar", "pitman", "zayatz", "snb"):
        estimate = getattr(reference, estimator)
        if not estimate.valid:
            verdict = diagnosis.check(
                PrivacyTargets(k=1, population_uniques=0.5, population_uniques_estimator=estimator)
            )
            assert not verdict.passed and "estimator failed" in one(verdict, "population_uniques").reason
            continue
        fraction = estimate.fraction
        assert 0 < fraction < 1
        met = diagnosis.check(PrivacyTargets(k=1, population_uniques=fraction, population_uniques_estimator=estimator))
        assert met.passed and one(met, "population_uniques").achieved == pytest.approx(fraction, rel=1e-12)
        missed = diagnosis.check(
            PrivacyTargets(k=1, population_uniques=fraction * 0.999, population_uniques_estimator=estimator)
        )
        assert not missed.passed


def test_empty_table_is_not_measured() -> None:
    verdict = diagnose(TABLE.iloc[:0], ["a"]).check(PrivacyTargets(k=1, global_risk=0.5, average_risk=0.5))
    assert not verdict.passed
    assert all("no record is in scope" in c.reason for c in verdict.checks if c.target != "k")


def test_parse_every_target() -> None:
    targets = parse_targets(
        "global_risk=0.03,household_risk=0.05,average_risk=0.1,k_map=3,delta_presence=0.5,"
        "population_uniques=0.01,population_uniques_estimator=pitman"
    )
    assert targets.global_risk == 0.03 and targets.household_risk == 0.05 and targets.average_risk == 0.1
    assert targets.k_map == 3 and targets.delta_presence == 0.5 and targets.population_uniques == 0.01
    assert targets.estimator == "pitman" and targets.k == 1
    assert PrivacyTargets.from_dict(targets.to_dict()) == targets
    assert parse_targets("population_uniques=0.01").estimator == "dankar"
    # targets without the new ones serialize as before
    assert set(PrivacyTargets(k=3).to_dict()) == {"k", "l", "t", "sensitive", "t_distance", "max_risk"}


@pytest.mark.parametrize(
    "text",
    [
        "global_rsk=0.1",
        "global_risk=0",
        "global_risk=1.5",
        "average_risk=-0.1",
        "delta_presence=2",
        "population_uniques=0",
        "household_risk=nan",
        "k_map=0",
        "k_map=2.5",
        "population_uniques_estimator=pitman",
        "population_uniques=0.1,population_uniques_estimator=chao",
        "global_risk=0.1,global_risk=0.2",
    ],
)
def test_parse_errors(text: str) -> None:
    with pytest.raises(ParameterError):
        parse_targets(text)
