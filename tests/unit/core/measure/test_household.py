"""Household risk: sdcMicro's own numbers, hand-computed examples, and every engine to the last digit."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privdash.data.contract import DataContract
from privdash.data.tables import read_table
from privdash.errors import ColumnError, DataReadError
from privdash.measure.classes import equivalence_classes
from privdash.measure.diagnose import diagnose
from privdash.measure.household import household_risk_of_records, record_household_risk
from privdash.measure.risk import individual_risk
from tests.unit.core.engines.test_aggregate import same

SEVEN = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
FIVE = ["urbrur", "roof", "walls", "water", "sex"]
#: Record numbers (1-based, as R prints them) whose household risk the reference script prints.
ROWS = (1, 2, 3, 100, 1000, 4580)

# Produced by scripts/sdcmicro_household_reference.R (sdcMicro's indivRisk and measure_riskWORK household part,
# commit cf3251017482bb215f0a9abf4a930f502399fb72) on sdcmicro_testdata/testdata.csv, hid = ori_hid.
REFERENCE = {
    "seven keys, weighted": {
        "keys": SEVEN,
        "weights": "sampling_weight",
        "global_risk_ER": 10.778298918734835,
        "global_risk": 0.0023533403752696146,
        "hier_risk_ER": 51.812927435960688,
        "hier_risk": 0.011312866252393163,
        "highest": 0.22703644677777268,
        "per_record": (
            0.00030757531088920764,
            0.00030757531088920764,
            0.00030757531088920764,
            0.0037625402385303985,
            0.0010809939302527383,
            0.00061326862994126596,
        ),
    },
    "seven keys, unweighted": {
        "keys": SEVEN,
        "weights": None,
        "global_risk_ER": 412.0,
        "global_risk": 0.089956331877729251,
        "hier_risk_ER": 1281.7272510665964,
        "hier_risk": 0.2798531115865931,
        "highest": 1.0,
        "per_record": (
            0.030173489874632198,
            0.030173489874632198,
            0.030173489874632198,
            0.28229605495689036,
            0.099999999999999978,
            0.059197133910216748,
        ),
    },
    "five keys, weighted (measure_risk example)": {
        "keys": FIVE,
        "weights": "sampling_weight",
        "global_risk_ER": 1.5272044885239107,
        "global_risk": 0.00033345076168644336,
        "hier_risk_ER": 7.1770285712528388,
        "hier_risk": 0.0015670368059504014,
        "highest": 0.090869921883861782,
        "per_record": (
            0.00011236241961420923,
            0.00011236241961420923,
            0.00011236241961420923,
            0.00019806217708839835,
            0.00030567664815872586,
            0.00013735162944794599,
        ),
    },
}
RTOL = 1e-9


@pytest.fixture(scope="module")
def testdata(data_dir: Path) -> pd.DataFrame:
    return read_table(data_dir / "sdcmicro_testdata" / "testdata.csv")


@pytest.mark.parametrize("case", sorted(REFERENCE))
def test_household_risk_equals_sdcmicro(testdata: pd.DataFrame, case: str) -> None:
    ref = REFERENCE[case]
    result = diagnose(testdata, ref["keys"], weights=ref["weights"], household="ori_hid")
    households = result.household_risk
    assert households is not None and result.household == "ori_hid"
    assert households.expected_reidentifications == pytest.approx(ref["hier_risk_ER"], rel=RTOL)
    assert households.global_risk == pytest.approx(ref["hier_risk"], rel=RTOL)
    assert households.highest == pytest.approx(ref["highest"], rel=RTOL)
    assert households.n_households == 1000 and households.records_without_household == 0
    assert households.weighted == (ref["weights"] is not None)
    # the members' individual risk is sdcMicro's too (unweighted: 1 / f)
    member = result.individual_risk if ref["weights"] else individual_risk(result.classes)
    assert member is not None
    assert member.expected_reidentifications == pytest.approx(ref["global_risk_ER"], rel=RTOL)
    assert member.global_risk == pytest.approx(ref["global_risk"], rel=RTOL)
    per_record = record_household_risk(households, member, testdata["ori_hid"], result.classes.record_class)
    np.testing.assert_allclose(per_record[[r - 1 for r in ROWS]], ref["per_record"], rtol=RTOL, atol=0)
    assert per_record.sum() == pytest.approx(ref["hier_risk_ER"], rel=RTOL)


def test_household_risk_brute_force_oracle(testdata: pd.DataFrame) -> None:
    """Every record's household risk against a pandas groupby of 1 - prod(1 - r) (an independent computation)."""
    result = diagnose(testdata, SEVEN, weights="sampling_weight", household="ori_hid")
    assert result.household_risk is not None and result.individual_risk is not None
    grouped = testdata.groupby(SEVEN)["sampling_weight"]
    f = grouped.transform("size").to_numpy(dtype=float)
    big_f = grouped.transform("sum").to_numpy()
    p = f / big_f
    r = np.select(
        [f == big_f, f == 1, f == 2],
        [1 / f, p / (1 - p) * np.log(1 / p), p / (1 - p) - (p / (1 - p)) ** 2 * np.log(1 / p)],
        p / (f - (1 - p)),
    )
    frame = pd.DataFrame({"hid": testdata["ori_hid"], "survive": 1 - r})
    expected = 1 - frame.groupby("hid")["survive"].transform("prod").to_numpy()
    got = record_household_risk(
        result.household_risk, result.individual_risk, testdata["ori_hid"], result.classes.record_class
    )
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


# --- hand-computed examples ------------------------------------------------------------------------------------------


def small() -> pd.DataFrame:
    """Classes a (f=1), b (f=2), c (f=4); households 1 = {a, b}, 2 = {b, c}, 3 = {c, c}; one c without a household."""
    return pd.DataFrame(
        {
            "k": ["a", "b", "b", "c", "c", "c", "c"],
            "hid": [1, 1, 2, 2, 3, 3, np.nan],
        }
    ).assign(hid=lambda d: d["hid"].astype("Int64"))


def test_hand_computed_unweighted() -> None:
    result = diagnose(small(), ["k"], household="hid")
    households = result.household_risk
    assert households is not None and not households.weighted
    # r = 1, 1/2, 1/4; household 1 has the unique a: certain to be re-identified
    h1 = 1.0
    h2 = 1 - (1 - 1 / 2) * (1 - 1 / 4)  # 5/8
    h3 = 1 - (1 - 1 / 4) * (1 - 1 / 4)  # 7/16
    alone = 1 / 4
    np.testing.assert_allclose(households.household_risk, [h1, h2, h3, alone], rtol=1e-15)
    assert households.household_risk[0] == 1.0  # exactly
    np.testing.assert_array_equal(households.household_members, [2, 2, 2, 1])
    expected = 2 * h1 + 2 * h2 + 2 * h3 + alone
    assert expected == 4.375
    assert households.expected_reidentifications == pytest.approx(expected, rel=1e-15)
    assert households.global_risk == pytest.approx(expected / 7, rel=1e-15)
    assert households.highest == 1.0
    assert households.records_without_household == 1 and households.n_households == 4
    assert households.records_above(0.6) == 4
    per_record = record_household_risk(
        households, individual_risk(result.classes), small()["hid"], result.classes.record_class
    )
    np.testing.assert_allclose(per_record, [h1, h1, h2, h2, h3, h3, alone], rtol=1e-15)
    out = result.to_dict()
    assert out["household"] == "hid"
    assert out["household_risk"] == {
        "expected_reidentifications": households.expected_reidentifications,
        "global_risk": households.global_risk,
        "highest": 1.0,
        "households": 4,
        "records_without_household": 1,
        "weighted": False,
    }


def test_records_without_household_are_households_of_their_own() -> None:
    frame = pd.DataFrame({"k": ["c", "c", "c"], "hid": [None, None, None]}, dtype=object)
    households = diagnose(frame, ["k"], household="hid").household_risk
    assert households is not None
    # three households of one record each, r = 1/3 each (sdcMicro would leave them out: NA)
    np.testing.assert_allclose(households.household_risk, [1 / 3] * 3, rtol=1e-15)
    assert households.records_without_household == 3
    assert households.expected_reidentifications == pytest.approx(1.0, rel=1e-15)


def test_drop_policy_leaves_out_the_records_in_no_class() -> None:
    frame = pd.DataFrame({"k": ["a", "b", "b", None, "b"], "hid": [1, 1, 2, 2, 3]})
    result = diagnose(frame, ["k"], household="hid", missing="drop")
    households = result.household_risk
    assert households is not None and result.n_records == 4
    # household 2 keeps one member (b, r = 1/3); the dropped record counts nowhere
    np.testing.assert_allclose(households.household_risk, [1.0, 1 / 3, 1 / 3], rtol=1e-15)
    np.testing.assert_array_equal(households.household_members, [2, 1, 1])
    assert households.expected_reidentifications == pytest.approx(2 + 2 / 3, rel=1e-15)
    assert households.global_risk == pytest.approx((2 + 2 / 3) / 4, rel=1e-15)
    per_record = record_household_risk(
        households, individual_risk(result.classes), frame["hid"], result.classes.record_class
    )
    assert math.isnan(per_record[3])
    # a household all of whose records are dropped is no household
    only_dropped = pd.DataFrame({"k": ["a", None], "hid": [1, 2]})
    counted = diagnose(only_dropped, ["k"], household="hid", missing="drop").household_risk
    assert counted is not None and counted.n_households == 1


def test_weighted_hand_computed() -> None:
    # f = 1 with F = 10 (p = 0.1) and f = 2 with F = 10 (p = 0.2); one household of both classes
    frame = pd.DataFrame({"k": ["a", "b", "b"], "w": [10.0, 5.0, 5.0], "hid": ["x", "x", "y"]})
    result = diagnose(frame, ["k"], weights="w", household="hid")
    r_a = (0.1 / 0.9) * np.log(10)
    r_b = 0.2 / 0.8 - (0.2 / 0.8) ** 2 * np.log(5)
    households = result.household_risk
    assert households is not None and households.weighted
    np.testing.assert_allclose(households.household_risk, [1 - (1 - r_a) * (1 - r_b), r_b], rtol=1e-14)


def test_order_of_the_rows_does_not_change_a_digit(testdata: pd.DataFrame) -> None:
    shuffled = testdata.sample(frac=1.0, random_state=3)
    left = diagnose(testdata, SEVEN, weights="sampling_weight", household="ori_hid").household_risk
    right = diagnose(shuffled, SEVEN, weights="sampling_weight", household="ori_hid").household_risk
    assert left is not None and right is not None
    assert left.expected_reidentifications == right.expected_reidentifications
    assert left.highest == right.highest
    np.testing.assert_array_equal(left.household_risk, right.household_risk)


def test_aggregated_rows_give_the_records_numbers() -> None:
    frame = small()
    classes = equivalence_classes(frame, ["k"])
    member = individual_risk(classes)
    records = household_risk_of_records(member, frame["hid"], classes.record_class)
    grouped = frame.assign(cls=classes.record_class).groupby(["hid", "cls"], dropna=False).size().reset_index()
    aggregated = household_risk_of_records(member, grouped["hid"], grouped["cls"].to_numpy(), grouped[0].to_numpy())
    assert records.expected_reidentifications == aggregated.expected_reidentifications
    np.testing.assert_array_equal(records.household_risk, aggregated.household_risk)


# --- bad input -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"household": "k"}, "cannot also be a quasi-identifier"),
        ({"household": "s", "sensitive": ["s"]}, "cannot also be a sensitive attribute"),
        ({"household": "w", "weights": "w"}, "cannot also be a weight column"),
        ({"household": "nope"}, "nope"),
    ],
)
def test_bad_household_column(options: dict, message: str) -> None:
    frame = pd.DataFrame({"k": ["a", "b"], "s": [1, 2], "w": [2.0, 2.0], "hid": [1, 1]})
    with pytest.raises(ColumnError, match=message):
        diagnose(frame, ["k"], **options)


def test_household_of_a_changed_table_is_refused() -> None:
    frame = small()
    result = diagnose(frame, ["k"], household="hid")
    assert result.household_risk is not None
    with pytest.raises(DataReadError, match="household"):
        record_household_risk(
            result.household_risk,
            individual_risk(result.classes),
            frame["hid"].replace({3: 99}),
            result.classes.record_class,
        )


def test_contract_household_is_the_default(testdata: pd.DataFrame) -> None:
    contract = DataContract.for_columns(testdata, quasi_identifiers=FIVE, household="ori_hid")
    result = diagnose(testdata, contract=contract)
    assert result.household == "ori_hid" and result.household_risk is not None
    assert diagnose(testdata, FIVE).household_risk is None
    assert diagnose(testdata, FIVE).to_dict()["household_risk"] is None


# --- engines -------------------------------------------------------------------------------------------------------


def with_gaps(testdata: pd.DataFrame) -> pd.DataFrame:
    """testdata with missing key values and missing household ids, to exercise every policy."""
    frame = testdata.copy()
    frame.loc[frame.index % 37 == 0, "roof"] = np.nan
    frame.loc[frame.index % 53 == 1, "ori_hid"] = np.nan
    return frame


@pytest.mark.parametrize("weights", ["sampling_weight", None])
@pytest.mark.parametrize("missing", ["value", "wildcard", "drop"])
def test_duckdb_equals_pandas_to_the_last_digit(
    testdata: pd.DataFrame, tmp_path: Path, missing: str, weights: str | None
) -> None:
    path = tmp_path / "gaps.csv"
    with_gaps(testdata).to_csv(path, index=False)
    options = {"missing": missing, "weights": weights, "household": "ori_hid", "sensitive": ["income"]}
    memory = diagnose(read_table(path), SEVEN, **options, engine="pandas")
    streamed = diagnose(path, SEVEN, **options, engine="duckdb")
    assert memory.household_risk is not None and streamed.household_risk is not None
    assert memory.household_risk.records_without_household > 0
    left, right = memory.to_dict(), streamed.to_dict()
    left.pop("engine"), right.pop("engine")
    assert same(left, right) == []
    np.testing.assert_array_equal(memory.household_risk.household_risk, streamed.household_risk.household_risk)


def test_member_risk_comes_from_the_weights_whatever_the_population(testdata: pd.DataFrame) -> None:
    plain = diagnose(testdata, FIVE, weights="sampling_weight", household="ori_hid").household_risk
    sized = diagnose(testdata, FIVE, weights="sampling_weight", household="ori_hid", population=10**6).household_risk
    assert plain is not None and sized is not None and sized.weighted
    assert sized.expected_reidentifications == plain.expected_reidentifications


def test_aggregate_rows_know_their_class() -> None:
    from privdash.measure.classes import (
        equivalence_classes_from_aggregate,
        equivalence_classes_from_aggregate_rows,
    )

    aggregate = pd.DataFrame({"k": ["b", "a", None, "b", "c"], "hid": [1, 1, 2, 3, 4], "count": [2, 1, 4, 1, 0]})
    classes, rows = equivalence_classes_from_aggregate_rows(aggregate, ["k"], missing="drop")
    # classes a, b (sorted); the missing k is dropped and the row of zero records is in no class
    assert rows.tolist() == [1, 0, -1, 1, -1]
    assert classes.sizes.tolist() == [1, 3] and classes.n_dropped == 4
    same_classes = equivalence_classes_from_aggregate(aggregate, ["k"], missing="drop")
    assert same_classes.sizes.tolist() == classes.sizes.tolist()
