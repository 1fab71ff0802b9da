from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import equivalence_classes
from privdash.transform.steps import Step, apply_step
from privdash.transform.suppression import (
    _compatible_counts,
    local_suppression,
    record_suppression,
    top_bottom_coding,
)


def worked_example() -> pd.DataFrame:
    """peers.md section 4: classes (30-39, M) of 4, (30-39, F) of 3, (40-49, M) of 3."""
    return pd.DataFrame(
        {
            "age": ["30-39"] * 4 + ["30-39"] * 3 + ["40-49"] * 3,
            "sex": ["M"] * 4 + ["F"] * 3 + ["M"] * 3,
            "diag": ["flu", "flu", "flu", "cancer", "flu", "cancer", "hiv", "hiv", "hiv", "flu"],
        }
    )


# --- top and bottom coding ----------------------------------------------------------------------------------------


def test_top_and_bottom_coding_by_hand() -> None:
    data = pd.DataFrame({"x": [1, 5, 10, 95, 100, 90], "y": list("abcdef")})
    result = top_bottom_coding(data, column="x", top=90, bottom=5)
    assert result.data["x"].tolist() == [5, 5, 10, 90, 90, 90]
    assert result.data["x"].dtype == np.int64
    assert result.data["y"].equals(data["y"])
    assert result.summary["cells_top_coded"] == 2 and result.summary["cells_bottom_coded"] == 1
    assert result.mapping is not None
    assert result.mapping.to_dict("list") == {"column": ["x"] * 3, "original": [1, 95, 100], "published": [5, 90, 90]}
    assert data["x"].tolist() == [1, 5, 10, 95, 100, 90]  # input untouched


def test_quantile_is_resolved_to_an_observed_value() -> None:
    data = pd.DataFrame({"x": [float(v) for v in range(1, 11)] + [np.nan]})
    result = top_bottom_coding(data, column="x", top_quantile=0.8)
    # Inverted empirical CDF: 8 is the smallest value with at least 80 % of the values at or below it.
    assert result.step.params["top"] == 8
    assert result.summary["top_quantile"] == 0.8
    assert result.data["x"].tolist()[:10] == [1, 2, 3, 4, 5, 6, 7, 8, 8, 8]
    assert np.isnan(result.data["x"].iloc[10])
    again = apply_step(data, result.step)  # the recorded step re-applies the same threshold
    assert again.data.equals(result.data)


def test_label_replacement() -> None:
    data = pd.DataFrame({"x": [10, 90, 95, None, 3]})
    result = top_bottom_coding(data, column="x", top=90, bottom=5, replacement="label")
    assert result.data["x"].tolist()[:3] == ["10", ">= 90", ">= 90"]
    assert pd.isna(result.data["x"].iloc[3])
    assert result.data["x"].iloc[4] == "<= 5"
    assert result.summary["cells_top_coded"] == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"column": "s", "top": 1}, ColumnError, "numeric column"),
        ({"column": "x"}, ParameterError, "top or a bottom"),
        ({"column": "x", "top": 1, "top_quantile": 0.5}, ParameterError, "not both"),
        ({"column": "x", "top": 1, "bottom": 2}, ParameterError, "above the top"),
        ({"column": "x", "top_quantile": 1.5}, ParameterError, r"\[0, 1\]"),
        ({"column": "x", "top": float("nan")}, ParameterError, "finite"),
        ({"column": "x", "top": 1, "replacement": "mean"}, ParameterError, "replacement"),
        ({"column": "nope", "top": 1}, ColumnError, "Unknown column"),
    ],
)
def test_top_bottom_errors(kwargs: dict, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        top_bottom_coding(pd.DataFrame({"x": [1, 2, 3], "s": list("abc")}), **kwargs)


# --- record suppression -------------------------------------------------------------------------------------------


def test_record_suppression_on_the_worked_example() -> None:
    data = worked_example()
    # k = 4: both classes of 3 violate (6 records). A budget of 5 rows fits only the first of them.
    partial = record_suppression(data, quasi_identifiers=["age", "sex"], k=4, max_suppression=0.5)
    assert partial.summary["rows_removed"] == 3
    assert partial.summary["records_violating_before"] == 6
    assert partial.summary["records_still_violating"] == 3
    assert partial.summary["target_reached"] is False
    assert partial.summary["k_achieved"] == 3
    assert partial.kept_rows.tolist() == [0, 1, 2, 3, 7, 8, 9]
    assert list(partial.data.index) == [0, 1, 2, 3, 7, 8, 9]
    full = record_suppression(data, quasi_identifiers=["age", "sex"], k=4, max_suppression=0.6)
    assert full.summary["rows_removed"] == 6 and full.summary["target_reached"] is True
    assert equivalence_classes(full.data, ["age", "sex"]).k == 4
    assert full.kept_rows.tolist() == [0, 1, 2, 3]


def test_record_suppression_with_a_predicate() -> None:
    data = worked_example()
    # Records flagged by another model (here: the classes with fewer than 3 distinct diagnoses).
    classes = equivalence_classes(data, ["age", "sex"], sensitive=["diag"])
    assert classes.record_class is not None
    diverse = classes.sensitive["diag"].distinct_values()
    flags = diverse[classes.record_class] < 3
    result = record_suppression(data, quasi_identifiers=["age", "sex"], violating=flags, max_suppression=0.4)
    # Flagged classes: (30-39, M) of 4 and (40-49, M) of 3; the smaller one goes first, the other does not fit.
    assert result.kept_rows.tolist() == [0, 1, 2, 3, 4, 5, 6]
    assert result.summary["target_reached"] is False
    assert result.step.params["k"] is None


def test_record_suppression_wildcard_rounds() -> None:
    # Under wildcard, (a, *) makes (a, 1) and (a, 2) classes of 2. Removing nothing keeps k = 2; with k = 3 the
    # classes of 2 go first, which shrinks (a, *) too, and the next round removes it.
    data = pd.DataFrame({"q": ["a", "a", "a", "b", "b", "b"], "r": [1, 2, None, 5, 5, 5]})
    result = record_suppression(data, quasi_identifiers=["q", "r"], k=3, max_suppression=1.0, missing="wildcard")
    assert result.kept_rows.tolist() == [3, 4, 5]
    assert result.summary["target_reached"] is True


def test_record_suppression_zero_budget_and_errors() -> None:
    data = worked_example()
    result = record_suppression(data, quasi_identifiers=["age", "sex"], k=4, max_suppression=0.0)
    assert result.summary["rows_removed"] == 0 and result.summary["k_achieved"] == 3
    with pytest.raises(ParameterError, match="Give a target"):
        record_suppression(data, quasi_identifiers=["age"], max_suppression=0.1)
    with pytest.raises(ParameterError, match="boolean array"):
        record_suppression(data, quasi_identifiers=["age"], max_suppression=0.1, violating=np.ones(3, bool))
    with pytest.raises(ParameterError, match="max_suppression"):
        record_suppression(data, quasi_identifiers=["age"], k=2, max_suppression=2)


def test_record_suppression_on_adult(adult: pd.DataFrame) -> None:
    qis = ["sex", "age", "race", "marital-status"]
    result = record_suppression(adult, quasi_identifiers=qis, k=5, max_suppression=0.1)
    # data/README: 1,824 records sit in classes smaller than 5; they fit within 10 % of 30,162.
    assert result.summary["rows_removed"] == 1824
    assert equivalence_classes(result.data, qis).k >= 5
    assert result.data.equals(adult.iloc[result.kept_rows])


# --- cell suppression ---------------------------------------------------------------------------------------------


def test_one_blank_cell_can_serve_two_records() -> None:
    data = pd.DataFrame({"q1": ["x", "x"], "q2": [1, 2]})
    result = local_suppression(data, quasi_identifiers=["q1", "q2"], k=2, importance=["q1", "q2"])
    assert result.summary["cells_suppressed"] == 1
    assert result.data["q2"].isna().tolist() == [True, False]
    assert result.data["q2"].dtype == "Int64"
    assert equivalence_classes(result.data, ["q1", "q2"], missing="wildcard").k == 2


@pytest.mark.parametrize(("importance", "blanked"), [(["q1", "q2"], "q2"), (["q2", "q1"], "q1")])
def test_importance_decides_which_cell(importance: list[str], blanked: str) -> None:
    # (a, 2) is unique; blanking either cell fixes it. The less important QI is blanked.
    data = pd.DataFrame({"q1": ["a", "a", "b", "b", "a"], "q2": [1, 1, 2, 2, 2]})
    result = local_suppression(data, quasi_identifiers=["q1", "q2"], k=2, importance=importance)
    assert result.summary["cells_suppressed_by_column"][blanked] == 1
    assert result.summary["cells_suppressed"] == 1
    assert result.data[blanked].isna().tolist() == [False, False, False, False, True]


def test_records_unique_on_everything_by_hand() -> None:
    # Round 1: no single blank helps anyone, so each record loses q2. Round 2: blanking q1 helps; the first two
    # records are blanked and the third already matches both.
    data = pd.DataFrame({"q1": ["a", "b", "c"], "q2": ["1", "2", "3"]})
    result = local_suppression(data, quasi_identifiers=["q1", "q2"], k=3, importance=["q1", "q2"])
    assert result.data["q2"].isna().all()
    assert result.data["q1"].isna().tolist() == [True, True, False]
    assert result.summary["cells_suppressed"] == 5
    assert result.summary["rounds"] == 2
    assert equivalence_classes(result.data, ["q1", "q2"], missing="wildcard").k == 3


def test_default_importance_follows_sdcmicro() -> None:
    data = pd.DataFrame({"many": [1, 2, 3, 4], "few": ["a", "a", "b", "b"]})
    result = local_suppression(data, quasi_identifiers=["many", "few"], k=2)
    assert result.step.params["importance"] == ["few", "many"]
    # In each "few" group one blank "many" cell joins the other record: 2 cells, not 4.
    assert result.summary["cells_suppressed_by_column"] == {"many": 2, "few": 0}
    assert result.data["many"].isna().tolist() == [True, False, True, False]


@pytest.mark.parametrize(
    "qis", [["sex", "age", "race", "marital-status"], ["sex", "age", "race", "education", "workclass"]]
)
def test_cell_suppression_on_adult(adult: pd.DataFrame, qis: list[str]) -> None:
    result = local_suppression(adult, quasi_identifiers=qis, k=5)
    check = equivalence_classes(result.data, qis, missing="wildcard")
    assert check.k >= 5 and result.summary["k_achieved"] == check.k
    blanked = result.data[qis].isna() & adult[qis].notna()
    assert int(blanked.to_numpy().sum()) == result.summary["cells_suppressed"]
    for name in qis:
        present = result.data[name].notna()
        assert (result.data.loc[present, name].astype(str) == adult.loc[present, name].astype(str)).all()
    # Far fewer cells than blanking every QI of every violating record.
    assert result.summary["cells_suppressed"] < equivalence_classes(adult, qis).records_below(5) * len(qis) / 2


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(st.sampled_from("abc"), st.one_of(st.none(), st.integers(0, 3)), st.sampled_from(["x", "y"])),
        min_size=2,
        max_size=40,
    ),
    k=st.integers(2, 4),
)
def test_cell_suppression_properties(rows: list[tuple], k: int) -> None:
    data = pd.DataFrame(rows, columns=["q1", "q2", "q3"])
    data["q2"] = data["q2"].astype("Int64")
    data["other"] = np.arange(len(data))
    k = min(k, len(data))
    result = local_suppression(data, quasi_identifiers=["q1", "q2", "q3"], k=k)
    out = result.data
    assert equivalence_classes(out, ["q1", "q2", "q3"], missing="wildcard").k >= k
    assert out["other"].tolist() == list(range(len(data)))
    for name in ("q1", "q2", "q3"):
        present = out[name].notna()
        assert (out.loc[present, name] == data.loc[present, name]).all()  # only blanks, never new values
        assert (data[name].isna() <= out[name].isna()).all()  # existing gaps stay
    assert result.summary["cells_suppressed"] == int((out.isna() & data.notna()).to_numpy().sum())


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(*[st.one_of(st.none(), st.integers(0, 2))] * 3), min_size=1, max_size=30),
)
def test_compatible_counts_match_wildcard_classes(rows: list[tuple]) -> None:
    data = pd.DataFrame(rows, columns=["a", "b", "c"], dtype="Int64")
    classes = equivalence_classes(data, ["a", "b", "c"], missing="wildcard")
    sizes = _compatible_counts(classes.class_codes, classes.class_codes, classes.counts.astype(float))
    assert sizes.tolist() == classes.sizes.tolist()


def test_cell_suppression_errors_and_step() -> None:
    data = pd.DataFrame({"q1": ["a", "b", "c"], "q2": [1, 2, 3]})
    with pytest.raises(ParameterError, match="fewer than k"):
        local_suppression(data, quasi_identifiers=["q1", "q2"], k=4)
    with pytest.raises(ParameterError, match="every quasi-identifier exactly once"):
        local_suppression(data, quasi_identifiers=["q1", "q2"], k=2, importance=["q1"])
    with pytest.raises(ParameterError, match="at least 2"):
        local_suppression(data, quasi_identifiers=["q1", "q2"], k=1)
    result = apply_step(data, Step("local_suppression", {"quasi_identifiers": ["q1", "q2"], "k": 3}))
    assert equivalence_classes(result.data, ["q1", "q2"], missing="wildcard").k == 3
    assert local_suppression(data.iloc[:0], quasi_identifiers=["q1", "q2"], k=2).data.empty


# --- table-wide risk targets -----------------------------------------------------------------------------------

SEVEN = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


@pytest.fixture(scope="module")
def testdata(data_dir) -> pd.DataFrame:
    from privdash.data.tables import read_table

    return read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")


def test_record_suppression_meets_global_and_household_risk(testdata: pd.DataFrame) -> None:
    from privdash.measure.diagnose import diagnose
    from privdash.targets import PrivacyTargets

    before = diagnose(testdata, SEVEN, weights="sampling_weight", household="ori_hid")
    assert before.individual_risk.global_risk > 0.002 and before.household_risk.global_risk > 0.005
    goals = {"global_risk": 0.002, "household_risk": 0.005}
    result = record_suppression(
        testdata,
        quasi_identifiers=SEVEN,
        max_suppression=0.1,
        risk_targets=goals,
        weights="sampling_weight",
        household="ori_hid",
    )
    assert result.summary["target_reached"] is True and 0 < result.summary["rows_removed"] <= 458
    after = diagnose(result.data, SEVEN, weights="sampling_weight", household="ori_hid")
    verdict = after.check(PrivacyTargets(k=1, **goals))
    assert verdict.passed, verdict.sentence()
    # the riskiest records go first: every record removed is at least as risky as every record kept, by the
    # individual risk of its class in the input (global_risk is met first, household_risk may take more)
    risk = before.individual_risk.class_risk[before.classes.record_class]
    removed = np.setdiff1d(np.arange(len(testdata)), result.kept_rows)
    only_global = record_suppression(
        testdata, quasi_identifiers=SEVEN, max_suppression=0.1, risk_targets={"global_risk": 0.002},
        weights="sampling_weight",
    )  # fmt: skip
    dropped = np.setdiff1d(np.arange(len(testdata)), only_global.kept_rows)
    assert risk[dropped].min() >= risk[only_global.kept_rows].max() - 1e-15
    assert len(removed) >= len(dropped)
    # the step is recorded and re-applied with the same result
    again = apply_step(testdata, result.step)
    assert again.kept_rows.tolist() == result.kept_rows.tolist()


def test_record_suppression_risk_targets_out_of_budget_and_errors(testdata: pd.DataFrame) -> None:
    result = record_suppression(
        testdata, quasi_identifiers=SEVEN, max_suppression=0.001, risk_targets={"global_risk": 0.0005},
        weights="sampling_weight",
    )  # fmt: skip
    assert result.summary["target_reached"] is False and result.summary["rows_removed"] == 0
    with pytest.raises(ParameterError, match="household-id column"):
        record_suppression(testdata, quasi_identifiers=SEVEN, max_suppression=0.1, risk_targets={"household_risk": 0.1})
    with pytest.raises(ParameterError, match="not k_map"):
        record_suppression(testdata, quasi_identifiers=SEVEN, max_suppression=0.1, risk_targets={"k_map": 3})
    with pytest.raises(ParameterError, match="cannot go with"):
        record_suppression(
            testdata, quasi_identifiers=SEVEN, max_suppression=0.1, risk_targets={"global_risk": 0.1},
            violating=np.ones(len(testdata), bool),
        )  # fmt: skip
    with pytest.raises(ColumnError):
        record_suppression(
            testdata, quasi_identifiers=SEVEN, max_suppression=0.1, risk_targets={"global_risk": 0.1}, weights="nope"
        )
