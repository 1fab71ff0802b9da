from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privdash.errors import ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.measure.population import (
    PopulationError,
    population_counts_from_sample,
    population_counts_from_size,
    population_counts_from_table,
    population_counts_from_weights,
)
from privdash.measure.risk import (
    individual_risk,
    journalist_risk,
    marketer_risk,
    prosecutor_risk,
    records_at_risk_by_k,
    records_at_risk_curve,
    risk_summary,
)

QIS = ["age", "sex"]


def worked_example() -> pd.DataFrame:
    """peers.md section 4: classes (30-39, M) x4, (30-39, F) x3, (40-49, M) x3."""
    rows = [("30-39", "M")] * 4 + [("30-39", "F")] * 3 + [("40-49", "M")] * 3
    return pd.DataFrame(rows, columns=QIS)


def worked_population(classes):
    population = pd.DataFrame({"age": ["30-39", "30-39", "40-49"], "sex": ["M", "F", "M"], "n": [40, 30, 6]})
    return population_counts_from_table(classes, population, count="n")


# --- the worked example (peers.md section 4) ----------------------------------------------------------------------


def test_worked_example_prosecutor() -> None:
    classes = equivalence_classes(worked_example(), QIS)
    risk = prosecutor_risk(classes, max_risk=0.3)
    assert risk.model == "prosecutor"
    assert risk.highest == pytest.approx(1 / 3, rel=1e-15)
    assert risk.average == pytest.approx(0.30, rel=1e-15)
    assert risk.records_at_risk == pytest.approx(0.60, rel=1e-15)
    assert risk.lowest == 0.25
    assert risk.n_records_at_risk == 6 and risk.n_records == 10
    assert risk.max_risk == 0.3


def test_worked_example_journalist_and_marketer() -> None:
    classes = equivalence_classes(worked_example(), QIS)
    population = worked_population(classes)
    journalist = journalist_risk(classes, population, max_risk=0.1)
    assert journalist.records_at_risk == pytest.approx(0.30, rel=1e-15)
    assert journalist.highest == pytest.approx(1 / 6, rel=1e-15)
    assert journalist.average == pytest.approx(max(3 / 76, 0.07), rel=1e-12)
    assert journalist.average == pytest.approx(0.07, rel=1e-12)
    assert journalist.lowest == pytest.approx(1 / 40)
    marketer = marketer_risk(classes, population, max_risk=0.1)
    assert marketer.average == pytest.approx(0.07, rel=1e-12)
    # the marketer's per-record view is the journalist's
    assert marketer.highest == journalist.highest and marketer.records_at_risk == journalist.records_at_risk


def test_journalist_average_takes_the_larger_of_the_two_terms() -> None:
    # Uniform sampling, F = f / pi: both terms equal pi J / n = 0.1 * 3 / 10.
    classes = equivalence_classes(worked_example(), QIS)
    uniform = population_counts_from_size(classes, sampling_fraction=0.1)
    assert journalist_risk(classes, uniform).average == pytest.approx(0.03)
    assert marketer_risk(classes, uniform).average == pytest.approx(0.03)
    # f = (1, 100), F = (2, 100): records term (1/101)(1/2 + 1) = 0.01485 < classes term J / sum F = 2 / 102.
    frame = pd.DataFrame({"age": ["a"] + ["b"] * 100, "sex": "x"})
    small = equivalence_classes(frame, QIS)
    population = pd.DataFrame({"age": ["a", "b"], "sex": ["x", "x"], "n": [2, 100]})
    counts = population_counts_from_table(small, population, count="n")
    assert journalist_risk(small, counts).average == pytest.approx(2 / 102)
    assert marketer_risk(small, counts).average == pytest.approx(1.5 / 101)


def test_risk_summary_bundles_the_three_models() -> None:
    classes = equivalence_classes(worked_example(), QIS)
    population = worked_population(classes)
    summary = risk_summary(classes, population, max_risk=0.1)
    assert summary.prosecutor.average == pytest.approx(0.3)
    assert summary.journalist.highest == pytest.approx(1 / 6)
    assert summary.marketer.average == pytest.approx(0.07)
    assert summary.population is population and summary.max_risk == 0.1
    assert [m.model for m in summary.models] == ["prosecutor", "journalist", "marketer"]
    default = risk_summary(classes)
    assert default.population.kind == "sample"
    assert default.journalist.average == default.prosecutor.average


# --- hand tables --------------------------------------------------------------------------------------------------


def test_wildcard_hand_table() -> None:
    # patterns: (a, x) n=2, (a, *) n=1, (b, y) n=1. Sizes: (a,x) 3, (a,*) 3, (b,y) 1.
    frame = pd.DataFrame({"age": ["a", "a", "a", "b"], "sex": ["x", "x", None, "y"]})
    classes = equivalence_classes(frame, QIS, missing="wildcard")
    risk = prosecutor_risk(classes, max_risk=0.5)
    # per record: 1/3, 1/3, 1/3, 1 -> mean 0.5; records above 0.5: only the unique one
    assert risk.average == pytest.approx(0.5)
    assert risk.highest == 1.0 and risk.lowest == pytest.approx(1 / 3)
    assert risk.records_at_risk == pytest.approx(0.25)
    assert risk.n_records == 4


def test_drop_policy_leaves_records_out() -> None:
    frame = pd.DataFrame({"age": ["a", "a", None, "b"], "sex": ["x", "x", "x", "y"]})
    classes = equivalence_classes(frame, QIS, missing="drop")
    risk = prosecutor_risk(classes, max_risk=0.5)
    assert risk.n_records == 3
    assert risk.average == pytest.approx((0.5 + 0.5 + 1) / 3)
    assert risk.records_at_risk == pytest.approx(1 / 3)


def test_threshold_comparison_is_strict() -> None:
    classes = equivalence_classes(worked_example(), QIS)
    # risks 1/4 (4 records) and 1/3 (6 records)
    assert prosecutor_risk(classes, max_risk=1 / 3).records_at_risk == 0.0
    assert prosecutor_risk(classes, max_risk=0.25).records_at_risk == pytest.approx(0.6)
    assert prosecutor_risk(classes, max_risk=0.0).records_at_risk == 1.0
    assert prosecutor_risk(classes, max_risk=1.0).records_at_risk == 0.0


def test_empty_table_gives_zeros() -> None:
    frame = pd.DataFrame({"age": [None, None], "sex": ["x", "y"]})
    classes = equivalence_classes(frame, QIS, missing="drop")
    for risk in (prosecutor_risk(classes), journalist_risk(classes), marketer_risk(classes)):
        assert (risk.highest, risk.lowest, risk.average, risk.records_at_risk) == (0.0, 0.0, 0.0, 0.0)
    curve = records_at_risk_by_k(classes)
    assert curve.n_records == 0 and curve.records.tolist() == [0]
    ind = individual_risk(classes)
    assert ind.expected_reidentifications == 0 and ind.global_risk == 0 and ind.highest == 0


@pytest.mark.parametrize("threshold", [-0.1, 1.5, float("nan"), "0.2", True])
def test_bad_threshold(threshold) -> None:
    classes = equivalence_classes(worked_example(), QIS)
    with pytest.raises(ParameterError, match="max_risk"):
        prosecutor_risk(classes, max_risk=threshold)
    with pytest.raises(ParameterError, match="max_risk"):
        risk_summary(classes, max_risk=threshold)


def test_population_for_other_classes_is_rejected() -> None:
    classes = equivalence_classes(worked_example(), QIS)
    other = equivalence_classes(worked_example().iloc[:7], QIS)
    with pytest.raises(ParameterError, match="same equivalence classes"):
        journalist_risk(classes, population_counts_from_sample(other))
    with pytest.raises(ParameterError, match="PopulationCounts"):
        marketer_risk(classes, np.array([40.0, 30.0, 6.0]))  # type: ignore[arg-type]


# --- properties ---------------------------------------------------------------------------------------------------

cell = st.sampled_from(["a", "b", "c", None])
row = st.tuples(cell, st.sampled_from(["x", "y", None]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sample_rows=st.lists(row, min_size=1, max_size=15),
    extra_rows=st.lists(row, max_size=15),
    policy=st.sampled_from(["value", "wildcard", "drop"]),
    threshold=st.floats(0.0, 1.0),
    thresholds=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8),
)
def test_attacker_model_properties(sample_rows, extra_rows, policy, threshold, thresholds) -> None:
    sample = pd.DataFrame(sample_rows, columns=QIS)
    classes = equivalence_classes(sample, QIS, missing=policy)
    if classes.n_records == 0:
        return
    population = population_counts_from_table(classes, pd.DataFrame(sample_rows + extra_rows, columns=QIS))
    prosecutor = prosecutor_risk(classes, max_risk=threshold)
    journalist = journalist_risk(classes, population, max_risk=threshold)
    marketer = marketer_risk(classes, population, max_risk=threshold)
    for risk in (prosecutor, journalist, marketer):
        assert ((risk.class_risk > 0) & (risk.class_risk <= 1)).all()
        assert 0 < risk.lowest <= risk.highest <= 1
        assert 0 < risk.average <= 1
        assert 0 <= risk.records_at_risk <= 1
    assert prosecutor.highest >= prosecutor.average >= prosecutor.lowest
    # the population can only hide records: F_j >= f_j
    assert journalist.highest <= prosecutor.highest
    assert journalist.average <= prosecutor.average + 1e-12
    assert marketer.average <= journalist.average + 1e-12
    # with no population information the journalist is the prosecutor
    same = journalist_risk(classes, None, max_risk=threshold)
    assert same.average == pytest.approx(prosecutor.average, rel=1e-12)
    assert same.records_at_risk == prosecutor.records_at_risk and same.highest == prosecutor.highest
    # records at risk never increase with the threshold, and the curve agrees with the models
    ordered = sorted(thresholds)
    curve = records_at_risk_curve(prosecutor, ordered)
    assert (np.diff(curve.records) <= 0).all()
    for tau, fraction in zip(ordered, curve.fraction, strict=True):
        assert fraction == pytest.approx(prosecutor_risk(classes, max_risk=tau).records_at_risk)
    by_k = records_at_risk_by_k(classes)
    assert (np.diff(by_k.records) >= 0).all()
    for k, records in zip(by_k.x, by_k.records, strict=True):
        assert records == classes.records_below(int(k))


# --- curves -------------------------------------------------------------------------------------------------------


def test_records_at_risk_curve_default_breakpoints() -> None:
    classes = equivalence_classes(worked_example(), QIS)
    curve = records_at_risk_curve(prosecutor_risk(classes))
    np.testing.assert_allclose(curve.x, [0.0, 0.25, 1 / 3])
    assert curve.records.tolist() == [10, 6, 0]
    np.testing.assert_allclose(curve.fraction, [1.0, 0.6, 0.0])
    with pytest.raises(ParameterError, match="NaN"):
        records_at_risk_curve(prosecutor_risk(classes), [0.1, float("nan")])


def test_records_at_risk_by_k() -> None:
    classes = equivalence_classes(worked_example(), QIS)
    curve = records_at_risk_by_k(classes)
    assert curve.x.tolist() == [1, 2, 3, 4, 5]
    assert curve.records.tolist() == [0, 0, 0, 6, 10]
    chosen = records_at_risk_by_k(classes, [4, 2, 10])
    assert chosen.records.tolist() == [6, 0, 10]
    with pytest.raises(ParameterError, match="at least 1"):
        records_at_risk_by_k(classes, [0, 2])
    with pytest.raises(ParameterError, match="whole"):
        records_at_risk_by_k(classes, [2.5])


# --- sdcMicro individual risk -------------------------------------------------------------------------------------

# sdcMicro tests/testthat/test_indivRisk.R: three key variables and a weight, with and without missing keys.
SDC_KEYS = {
    "A": [2, 3, 2, 2, 3, 3, 1, 2],
    "B": [3, 3, 3, 3, 3, 3, 4, 3],
    "C": [1, 3, 1, 2, 1, 1, 1, 1],
}
SDC_WEIGHTS = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0]


def sdc_frame(missing: bool) -> pd.DataFrame:
    frame = pd.DataFrame(SDC_KEYS, dtype="float64").assign(weight=SDC_WEIGHTS)
    if missing:
        frame.loc[7, "A"] = np.nan
        frame.loc[[2, 6], "C"] = np.nan
    return frame


@pytest.mark.parametrize(
    ("missing", "expected"),
    [
        (False, [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883, 0.01877883, 0.03931625, 0.01369863]),
        (
            True,
            [0.013698630, 0.085791288, 0.010554090, 0.032466112, 0.009836066, 0.009836066, 0.039316254, 0.005973716],
        ),
    ],
)
def test_individual_risk_matches_sdcmicro_tests(missing, expected) -> None:
    frame = sdc_frame(missing)
    classes = equivalence_classes(frame, ["A", "B", "C"], missing="wildcard", weights="weight")
    result = individual_risk(classes)
    per_record = result.class_risk[classes.record_class]
    np.testing.assert_allclose(per_record, expected, rtol=2e-7)
    assert result.expected_reidentifications == pytest.approx(sum(expected), rel=1e-6)
    assert result.global_risk == pytest.approx(sum(expected) / 8, rel=1e-6)
    assert result.highest == pytest.approx(max(expected), rel=1e-6)
    assert result.population.kind == "weights"


@pytest.mark.parametrize(
    ("missing", "expected"),
    [
        (False, [1 / 3, 1, 1 / 3, 1, 0.5, 0.5, 1, 1 / 3]),
        (True, [1 / 3, 1, 0.25, 0.5, 1 / 3, 1 / 3, 1, 0.2]),
    ],
)
def test_individual_risk_without_weights_is_one_over_f(missing, expected) -> None:
    classes = equivalence_classes(sdc_frame(missing), ["A", "B", "C"], missing="wildcard")
    result = individual_risk(classes)
    np.testing.assert_allclose(result.class_risk[classes.record_class], expected, rtol=1e-12)
    assert result.records_above(0.4) == sum(value > 0.4 for value in expected)


def test_individual_risk_hand_formulas() -> None:
    # f = 1, 2, 3 with F = 10, 10, 12: p = 0.1, 0.2, 0.25
    frame = pd.DataFrame({"k": ["a", "b", "b", "c", "c", "c"], "w": [10.0, 5, 5, 4, 4, 4]})
    classes = equivalence_classes(frame, ["k"], weights="w")
    result = individual_risk(classes)
    risk = dict(zip(classes.keys()["k"], result.class_risk, strict=True))
    assert risk["a"] == pytest.approx((0.1 / 0.9) * np.log(10))
    assert risk["b"] == pytest.approx(0.2 / 0.8 - (0.2 / 0.8) ** 2 * np.log(5))
    assert risk["c"] == pytest.approx(0.25 / (3 - 0.75))
    assert result.expected_reidentifications == pytest.approx(risk["a"] + 2 * risk["b"] + 3 * risk["c"])
    # F = f (weights of 1) gives 1 / f exactly
    ones = equivalence_classes(frame.assign(w=1.0), ["k"], weights="w")
    np.testing.assert_allclose(individual_risk(ones).class_risk, 1 / ones.sizes)
    # other population sources plug in the same way: uniform sampling with pi = 0.5 gives p = 0.5
    half = individual_risk(classes, population_counts_from_size(classes, sampling_fraction=0.5))
    risk_half = dict(zip(classes.keys()["k"], half.class_risk, strict=True))
    assert risk_half["a"] == pytest.approx(np.log(2))


def test_individual_risk_rejects_light_weights() -> None:
    frame = pd.DataFrame({"k": ["a", "a", "b"], "w": [0.2, 0.3, 4.0]})
    with pytest.raises(PopulationError, match="1 of 2 classes"):
        individual_risk(equivalence_classes(frame, ["k"], weights="w"))


def test_individual_risk_on_sdcmicro_testdata(data_dir) -> None:
    from privdash.data.tables import read_table

    data = read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")
    keys = ["urbrur", "water", "sex", "age"]
    classes = equivalence_classes(data, keys, weights="sampling_weight")
    result = individual_risk(classes)
    # independent per-record computation of sdcMicro's approx formula with pandas
    grouped = data.groupby(keys)["sampling_weight"]
    f = grouped.transform("size").to_numpy(dtype=float)
    big_f = grouped.transform("sum").to_numpy()
    p = f / big_f
    expected = np.select(
        [f == big_f, f == 1, f == 2],
        [1 / f, p / (1 - p) * np.log(1 / p), p / (1 - p) - (p / (1 - p)) ** 2 * np.log(1 / p)],
        p / (f - (1 - p)),
    )
    np.testing.assert_allclose(result.class_risk[classes.record_class], expected, rtol=1e-12)
    assert result.expected_reidentifications == pytest.approx(expected.sum(), rel=1e-12)
    assert result.global_risk == pytest.approx(expected.mean(), rel=1e-12)


# --- Adult --------------------------------------------------------------------------------------------------------


def test_adult_prosecutor_matches_arx(adult) -> None:
    # ARX TestRiskMetrics.testAverageRisk2: success rate of the original Adult with all nine attributes as QIs
    classes = equivalence_classes(adult, list(adult.columns))
    assert prosecutor_risk(classes).average == pytest.approx(0.6465751607983555, rel=1e-15)
    assert prosecutor_risk(classes).highest == 1.0  # ARX testHighestIndividualRisk2


def test_adult_against_plain_pandas(adult) -> None:
    qis = [c for c in adult.columns if c != "salary-class"]
    classes = equivalence_classes(adult, qis)
    size = adult.groupby(qis)[qis[0]].transform("size").to_numpy(dtype=float)
    n = len(adult)
    record_risk = 1 / size
    threshold = 0.2
    prosecutor = prosecutor_risk(classes, max_risk=threshold)
    assert prosecutor.average == pytest.approx(record_risk.mean(), rel=1e-12)
    assert prosecutor.average == pytest.approx(adult.groupby(qis).ngroups / n, rel=1e-12)
    assert prosecutor.highest == record_risk.max() and prosecutor.lowest == record_risk.min()
    assert prosecutor.records_at_risk == pytest.approx((record_risk > threshold).mean(), rel=1e-12)
    # marketer with a population ten times the sample and with sampling weights
    population = population_counts_from_size(classes, sampling_fraction=0.1)
    marketer = marketer_risk(classes, population, max_risk=threshold)
    assert marketer.average == pytest.approx((1 / (size / 0.1)).mean(), rel=1e-12)
    assert marketer.records_at_risk == pytest.approx((1 / (size / 0.1) > threshold).mean(), rel=1e-12)
    weights = np.where(adult["sex"] == "Male", 3.0, 7.0)
    weighted = equivalence_classes(adult.assign(w=weights), qis, weights="w")
    big_f = adult.assign(w=weights).groupby(qis)["w"].transform("sum").to_numpy()
    marketer_w = marketer_risk(weighted, population_counts_from_weights(weighted))
    assert marketer_w.average == pytest.approx((1 / big_f).mean(), rel=1e-12)
    journalist_w = journalist_risk(weighted, population_counts_from_weights(weighted))
    class_term = weighted.n_classes / float(weighted.weight_sums.sum())
    expected = max(class_term, (1 / big_f).mean())
    assert journalist_w.average == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("policy", ["value", "wildcard"])
def test_risk_summary_gives_each_model_what_its_own_function_gives(policy: str) -> None:
    rng = np.random.default_rng(31)
    data = pd.DataFrame({"age": rng.choice(["20-29", "30-39", None], 500), "sex": rng.choice(["M", "F"], 500)})
    classes = equivalence_classes(data, QIS, missing=policy)
    population = population_counts_from_size(classes, sampling_fraction=0.37)
    summary = risk_summary(classes, population, max_risk=0.01)
    for shared, alone in (
        (summary.prosecutor, prosecutor_risk(classes, max_risk=0.01)),
        (summary.journalist, journalist_risk(classes, population, max_risk=0.01)),
        (summary.marketer, marketer_risk(classes, population, max_risk=0.01)),
    ):
        assert shared.model == alone.model
        assert (shared.highest, shared.lowest, shared.average, shared.records_at_risk) == (
            alone.highest,
            alone.lowest,
            alone.average,
            alone.records_at_risk,
        )
        assert np.array_equal(shared.class_risk, alone.class_risk)
        assert np.array_equal(shared.class_counts, alone.class_counts)
    # f = (1, 100), F = (2, 100): the journalist's average is its classes term, larger than the marketer's
    small = equivalence_classes(pd.DataFrame({"age": ["a"] + ["b"] * 100, "sex": "x"}), QIS)
    table = pd.DataFrame({"age": ["a", "b"], "sex": ["x", "x"], "n": [2, 100]})
    summary = risk_summary(small, population_counts_from_table(small, table, count="n"))
    assert summary.journalist.average == pytest.approx(2 / 102) and summary.marketer.average == pytest.approx(1.5 / 101)
