from __future__ import annotations

from itertools import combinations
from math import comb, factorial
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.data.tables import read_table
from privdash.errors import ColumnError, ParameterError, TooManyQuasiIdentifiersError
from privdash.measure.combinations import (
    DEFAULT_MAX_QUASI_IDENTIFIERS,
    combination_risk,
    minimal_sample_uniques,
    suda_weight,
)

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def hand_table() -> pd.DataFrame:
    return pd.DataFrame({"a": ["x", "x", "x", "y"], "b": [1, 1, 2, 2], "c": ["p", "q", "p", "p"]})


# --- independent implementations -----------------------------------------------------------------------------------


def groupby_sizes(data: pd.DataFrame, subset: tuple[str, ...]) -> pd.Series:
    """Class size of every record over ``subset`` (missing is a value), by a pandas group-by."""
    return data.groupby(list(subset), dropna=False, sort=False)[subset[0]].transform("size")


def groupby_row(data: pd.DataFrame, subset: tuple[str, ...], k_threshold: int) -> dict[str, object]:
    sizes = data.groupby(list(subset), dropna=False, observed=True).size().to_numpy()
    n = len(data)
    return {
        "distinction": len(sizes) / n,
        # no pair of records: ARX reports 0 for the NaN
        "separation": 1 - sum(comb(int(f), 2) for f in sizes) / comb(n, 2) if n > 1 else 0.0,
        "k": int(sizes.min()),
        "classes": len(sizes),
        "sample_uniques": int((sizes == 1).sum()),
        "records_below_k": int(sizes[sizes < k_threshold].sum()),
    }


def arx_separation(class_sizes: np.ndarray) -> float:
    """ARX ``RiskModelAttributes.getAlphaSeparation``: loop over (size, multiplicity) pairs, ascending sizes."""
    sizes, multiplicities = np.unique(class_sizes, return_counts=True)
    n = float(class_sizes.sum())
    total = (n - 1) * n / 2
    separated, left = 0.0, n
    for size, mult in zip(sizes.astype(float), multiplicities.astype(float), strict=True):
        left -= size * mult
        separated += mult * size * left + (mult - 1) * mult * size * size / 2
    return separated / total


def brute_force_msus(data: pd.DataFrame, qis: list[str]) -> dict[int, set[frozenset[str]]]:
    """MSUs by definition: unique on S and not unique on any S minus one QI, for all subsets (itertools)."""
    positions = np.arange(len(data))
    unique_on: dict[frozenset[str], np.ndarray] = {}
    for size in range(1, len(qis) + 1):
        for subset in combinations(qis, size):
            unique_on[frozenset(subset)] = (groupby_sizes(data, subset) == 1).to_numpy()
    found: dict[int, set[frozenset[str]]] = {}
    for names, unique in unique_on.items():
        minimal = unique.copy()
        for name in names:
            rest = names - {name}
            if rest:
                minimal &= ~unique_on[rest]
        for row in positions[minimal]:
            found.setdefault(int(row), set()).add(names)
    return found


# --- hand-computed values -------------------------------------------------------------------------------------------


def test_hand_table_distinction_separation() -> None:
    result = combination_risk(hand_table(), ["c", "b", "a"], k_threshold=2)
    table = result.table
    # ARX order: size, distinction, separation, then "[a, b]" names; QIs inside a subset in data column order.
    assert table["quasi_identifiers"].tolist() == [
        ("a",),
        ("c",),
        ("b",),
        ("a", "b"),
        ("a", "c"),
        ("b", "c"),
        ("a", "b", "c"),
    ]
    assert table["distinction"].tolist() == pytest.approx([0.5, 0.5, 0.5, 0.75, 0.75, 0.75, 1.0])
    assert table["separation"].tolist() == pytest.approx([1 / 2, 1 / 2, 2 / 3, 5 / 6, 5 / 6, 5 / 6, 1.0])
    assert table["k"].tolist() == [1, 1, 2, 1, 1, 1, 1]
    assert table["classes"].tolist() == [2, 2, 2, 3, 3, 3, 4]
    assert table["sample_uniques"].tolist() == [1, 1, 0, 2, 2, 2, 4]
    assert table["records_below_k"].tolist() == [1, 1, 0, 2, 2, 2, 4]
    assert result.quasi_identifiers == ("a", "b", "c") and result.n_records == 4 and result.n_dropped == 0
    assert result.of_size(2)["quasi_identifiers"].tolist() == [("a", "b"), ("a", "c"), ("b", "c")]
    assert result.row(["c", "a"])["classes"] == 3
    contributions = result.qi_contributions.set_index("quasi_identifier")
    assert contributions["sample_uniques_without"].to_dict() == {"a": 2, "b": 2, "c": 2}
    assert contributions["uniques_drop"].to_dict() == {"a": 2, "b": 2, "c": 2}
    assert contributions["uniques_drop_share"].tolist() == pytest.approx([0.5] * 3)
    assert contributions["distinction_drop"].tolist() == pytest.approx([0.25] * 3)
    assert contributions["separation_drop"].tolist() == pytest.approx([1 / 6] * 3)


def test_worked_example_distinction_separation() -> None:
    """peers.md §4: classes (30-39, M) 4, (30-39, F) 3, (40-49, M) 3 over ten records."""
    data = pd.DataFrame({"age": ["30-39"] * 7 + ["40-49"] * 3, "sex": ["M"] * 4 + ["F"] * 3 + ["M"] * 3})
    result = combination_risk(data, ["age", "sex"])
    both = result.row(["age", "sex"])
    assert both["distinction"] == pytest.approx(0.3) and both["separation"] == pytest.approx(33 / 45)
    assert both["k"] == 3 and both["sample_uniques"] == 0 and both["records_below_k"] == 10
    for name in ("age", "sex"):
        assert result.row([name])["separation"] == pytest.approx(21 / 45)
        assert result.row([name])["distinction"] == pytest.approx(0.2)
    # the 7/3 splits of age and sex tie exactly; ARX breaks the tie by name
    assert result.table["quasi_identifiers"].tolist() == [("age",), ("sex",), ("age", "sex")]


def test_hand_table_msus() -> None:
    result = minimal_sample_uniques(hand_table(), ["a", "b", "c"])
    # (x,1,p): only {b,c} picks it out; (x,1,q): c=q; (x,2,p): {a,b}; (y,2,p): a=y.
    assert [result.msus_of(row) for row in range(4)] == [[("b", "c")], [("c",)], [("a", "b")], [("a",)]]
    assert result.unique.tolist() == [True] * 4
    assert result.msu_count.tolist() == [1, 1, 1, 1] and result.smallest_msu.tolist() == [2, 1, 2, 1]
    # d = 3: weight (3 - size)!, so 1-MSUs weigh 2 and 2-MSUs weigh 1.
    assert result.suda_score.tolist() == [1.0, 2.0, 1.0, 2.0]
    assert result.counts_by_size().to_dict("list") == {"size": [1, 2, 3], "msus": [2, 2, 0], "records": [2, 2, 0]}
    contributions = result.attribute_contributions().set_index("quasi_identifier")
    assert contributions["msus"].to_dict() == {"a": 2, "b": 2, "c": 2}
    assert contributions["msu_share"].tolist() == pytest.approx([0.5, 0.5, 0.5])
    # a: {a,b} (1) + {a} (2) = 3 of 6; b: {b,c} + {a,b} = 2 of 6; c: {b,c} + {c} = 3 of 6.
    assert contributions["suda_contribution"].tolist() == pytest.approx([50.0, 100 / 3, 50.0])
    records = result.per_record()
    assert records.loc[0, "msus"] == (("b", "c"),) and records["suda_score"].sum() == 6.0
    assert records.loc[2, "msus"] == (("a", "b"),) and records["msu_count"].tolist() == [1, 1, 1, 1]


def test_record_with_several_msus_and_a_duplicate() -> None:
    data = pd.DataFrame(
        {"a": ["u", "u", "v", "v", "w", "w"], "b": [1, 2, 1, 2, 1, 1], "c": ["s", "t", "t", "s", "s", "s"]}
    )
    result = minimal_sample_uniques(data, ["a", "b", "c"])
    # rows 4 and 5 are identical: never unique, no MSUs.
    assert result.unique.tolist() == [True, True, True, True, False, False]
    # row 1 (u,2,t): {a,b}: (u,2) unique; {a,c}: (u,t) unique; {b,c}: (2,t) unique; no single value is.
    assert result.msus_of(1) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert result.msus_of(4) == [] and result.msu_count[4] == 0 and result.suda_score[4] == 0
    expected = brute_force_msus(data, ["a", "b", "c"])
    for row in range(6):
        assert {frozenset(m) for m in result.msus_of(row)} == expected.get(row, set())


def test_suda_weights_match_sdcmicro() -> None:
    # suda2 g_ab[i] = prod_{j=i+1}^{d-1} (d - j) for an MSU of i + 1 variables.
    for d in range(3, 10):
        for size in range(1, d + 1):
            expected = float(np.prod([d - j for j in range(size, d)]))
            assert suda_weight(size, d) == expected == factorial(d - size)
    # one or two variables are padded to three by suda2
    assert suda_weight(1, 1) == 2.0 and suda_weight(1, 2) == 2.0 and suda_weight(2, 2) == 1.0


# --- agreement with independent implementations ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult_subset(data_dir):
    return read_table(data_dir / "arx_adult" / "adult_subset.csv")


def test_adult_full_numbers_from_source(adult) -> None:
    result = combination_risk(adult, ADULT_QIS, k_threshold=5)
    assert len(result.table) == 255 and result.n_records == 30_162
    four = result.row(["sex", "age", "race", "marital-status"])
    assert (four["classes"], four["sample_uniques"], four["records_below_k"]) == (1690, 543, 1824)
    full = result.table.iloc[-1]
    assert full["size"] == 8 and (full["classes"], full["sample_uniques"]) == (18_109, 14_021)
    contributions = result.qi_contributions
    for _, row in contributions.iterrows():
        rest = [q for q in ADULT_QIS if q != row["quasi_identifier"]]
        without = result.row(rest)
        assert row["sample_uniques_without"] == without["sample_uniques"]
        assert row["uniques_drop"] == 14_021 - without["sample_uniques"]
        assert row["separation_drop"] == pytest.approx(full["separation"] - without["separation"])
    assert contributions["quasi_identifier"].iloc[0] == "age"  # age removes the most uniques
    msus = minimal_sample_uniques(adult, ADULT_QIS)
    assert msus.n_unique == 14_021 and msus.records_without_msu == 0
    assert int((msus.msu_count > 0).sum()) == 14_021


def test_adult_subset_agrees_with_groupby_and_arx(adult_subset) -> None:
    result = combination_risk(adult_subset, ADULT_QIS, k_threshold=3)
    assert len(result.table) == 255
    for _, row in result.table.iterrows():
        subset = row["quasi_identifiers"]
        expected = groupby_row(adult_subset, subset, 3)
        for column, value in expected.items():
            assert row[column] == pytest.approx(value, rel=1e-12), (subset, column)
        sizes = adult_subset.groupby(list(subset)).size().to_numpy()
        assert row["separation"] == pytest.approx(arx_separation(sizes), rel=1e-12)
    # ARX order: size, then distinction, then separation
    keys = list(zip(result.table["size"], result.table["distinction"], result.table["separation"], strict=True))
    assert keys == sorted(keys)


def test_adult_subset_msus_agree_with_brute_force(adult_subset) -> None:
    qis = ["sex", "age", "race", "marital-status", "education", "workclass"]
    result = minimal_sample_uniques(adult_subset, qis)
    expected = brute_force_msus(adult_subset, qis)
    got: dict[int, set[frozenset[str]]] = {}
    for row, subset in zip(result.msus["row"], result.msus["quasi_identifiers"], strict=True):
        got.setdefault(int(row), set()).add(frozenset(subset))
    assert got == expected
    assert result.n_msus == sum(len(v) for v in expected.values())


def test_suda_scores_and_contributions_match_sdcmicro(adult_subset) -> None:
    """Reference numbers from sdcMicro's suda2 C++ routine (src/Suda2.h, original_scores=TRUE) on the first 200
    rows of adult_subset.csv with these 5 key variables (factor codes of the sorted values)."""
    data = adult_subset.iloc[:200]
    result = minimal_sample_uniques(data, ["sex", "age", "race", "marital-status", "education"])
    assert result.n_msus == 300 and result.suda_score.sum() == 1644.0 and (result.suda_score > 0).sum() == 160
    values, counts = np.unique(result.suda_score, return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist(), strict=True)) == {
        0.0: 40, 1.0: 3, 2.0: 11, 3.0: 1, 4.0: 13, 5.0: 1, 6.0: 50, 7.0: 1, 8.0: 16, 10.0: 4, 12.0: 26,
        14.0: 2, 18.0: 12, 20.0: 1, 24.0: 11, 26.0: 2, 28.0: 1, 30.0: 3, 36.0: 1, 38.0: 1,
    }  # fmt: skip
    assert result.suda_score[[1, 5, 7, 8, 9, 10, 11, 13]].tolist() == [6.0, 10.0, 6.0, 2.0, 2.0, 6.0, 18.0, 30.0]
    contributions = result.attribute_contributions()["suda_contribution"].tolist()
    assert contributions == pytest.approx([17.21411192, 80.10948905, 15.51094891, 29.13625304, 50.72992701])


# --- missing values -------------------------------------------------------------------------------------------------


def missing_table() -> pd.DataFrame:
    return pd.DataFrame(
        {"a": ["x", "x", None, "y", "y", None], "b": ["1", "1", "1", "2", None, None], "c": [0, 1, 0, 1, 0, 1]},
        index=[10, 11, 12, 13, 14, 15],
    )


def test_missing_as_value_matches_groupby() -> None:
    data = missing_table()
    result = combination_risk(data, ["a", "b", "c"], k_threshold=2)
    for _, row in result.table.iterrows():
        expected = groupby_row(data, row["quasi_identifiers"], 2)
        for column, value in expected.items():
            assert row[column] == pytest.approx(value), (row["quasi_identifiers"], column)
    assert result.row(["a"])["classes"] == 3  # x, y, missing
    msus = minimal_sample_uniques(data, ["a", "b", "c"])
    expected_msus = brute_force_msus(data.reset_index(drop=True), ["a", "b", "c"])
    for position in range(len(data)):
        assert {frozenset(m) for m in msus.msus_of(position)} == expected_msus.get(position, set())
    # a missing value is a category: row 5 (missing, missing, 1) is unique on each pair, on no single QI
    assert msus.msus_of(5) == [("a", "b"), ("a", "c"), ("b", "c")]
    records = msus.per_record()
    assert list(records.index) == [10, 11, 12, 13, 14, 15]
    assert records.loc[15, "msus"] == (("a", "b"), ("a", "c"), ("b", "c"))


def test_missing_drop_leaves_out_rows_once() -> None:
    data = missing_table()
    result = combination_risk(data, ["a", "b", "c"], missing="drop", k_threshold=2)
    complete = data.dropna().reset_index(drop=True)
    assert result.n_records == 3 and result.n_dropped == 3
    for _, row in result.table.iterrows():
        expected = groupby_row(complete, row["quasi_identifiers"], 2)
        for column, value in expected.items():
            assert row[column] == pytest.approx(value)
    # single QI 'c' is complete in every row, but the rows missing a or b are still left out
    assert result.row(["c"])["classes"] == 2 and result.row(["c"])["k"] == 1
    msus = minimal_sample_uniques(data, ["a", "b", "c"], missing="drop")
    assert msus.n_dropped == 3 and msus.n_records == 3
    # kept rows are input positions 0, 1, 3: (x,1,0), (x,1,1), (y,2,1)
    assert msus.unique.tolist() == [True, True, False, True, False, False]
    assert msus.msus_of(0) == [("c",)] and msus.msus_of(1) == [("a", "c"), ("b", "c")]
    assert msus.msus_of(3) == [("a",), ("b",)]
    assert msus.msu_count[[2, 4, 5]].tolist() == [0, 0, 0]
    assert msus.per_record()["msus"].tolist()[2:] == [(), (("a",), ("b",)), (), ()]


def test_wildcard_is_refused_with_a_reason() -> None:
    for analysis in (combination_risk, minimal_sample_uniques):
        with pytest.raises(ParameterError, match="wildcard"):
            analysis(missing_table(), ["a", "b"], missing="wildcard")
    with pytest.raises(ParameterError, match="Unknown missing-value policy"):
        combination_risk(missing_table(), ["a"], missing="ignore")


# --- caps and bad input ---------------------------------------------------------------------------------------------


def wide_table(columns: int, rows: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({f"q{i}": rng.integers(0, 3, rows) for i in range(columns)})


def test_cap_on_quasi_identifiers() -> None:
    data = wide_table(13)
    qis = list(data.columns)
    for analysis in (combination_risk, minimal_sample_uniques):
        with pytest.raises(TooManyQuasiIdentifiersError) as raised:
            analysis(data, qis)
        message = str(raised.value)
        assert "13 QIs" in message and "8,191 subsets" in message and "max_quasi_identifiers=13" in message
    assert DEFAULT_MAX_QUASI_IDENTIFIERS == 12
    assert len(combination_risk(data, qis[:12]).table) == 4095
    assert len(combination_risk(data, qis, max_quasi_identifiers=13, max_subset_size=2).table) == 13 + 78
    with pytest.raises(TooManyQuasiIdentifiersError, match="3 QIs give 7 subsets"):
        combination_risk(data, qis[:3], max_quasi_identifiers=2)
    wide = wide_table(40, rows=3)
    with pytest.raises(TooManyQuasiIdentifiersError, match="at most 1,048,576 subsets"):
        combination_risk(wide, list(wide.columns), max_quasi_identifiers=40)


def test_max_subset_size() -> None:
    result = combination_risk(hand_table(), ["a", "b", "c"], max_subset_size=2)
    assert result.table["size"].max() == 2 and len(result.table) == 6 and result.max_subset_size == 2
    # contributions still refer to the full set
    assert result.qi_contributions["uniques_drop"].tolist() == [2, 2, 2]
    with pytest.raises(ParameterError, match="max_subset_size=2"):
        result.row(["a", "b", "c"])
    limited = minimal_sample_uniques(hand_table(), ["a", "b", "c"], max_subset_size=1)
    assert limited.msu_count.tolist() == [0, 1, 0, 1] and limited.records_without_msu == 2
    assert limited.counts_by_size().to_dict("list") == {"size": [1], "msus": [2], "records": [2]}
    assert combination_risk(hand_table(), ["a", "b"], max_subset_size=9).max_subset_size == 2
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ParameterError, match="max_subset_size"):
            combination_risk(hand_table(), ["a"], max_subset_size=bad)  # type: ignore[arg-type]


def test_bad_input() -> None:
    with pytest.raises(ColumnError, match="Unknown quasi-identifier: 'ab'"):
        combination_risk(hand_table(), ["ab"])
    with pytest.raises(ColumnError):
        minimal_sample_uniques(hand_table(), [])
    with pytest.raises(ColumnError, match="more than once"):
        combination_risk(hand_table(), ["a", "a"])
    with pytest.raises(ParameterError, match="k_threshold"):
        combination_risk(hand_table(), ["a"], k_threshold=0)
    with pytest.raises(ParameterError, match="DataFrame"):
        combination_risk([[1, 2]], ["a"])  # type: ignore[arg-type]
    duplicated = pd.concat([hand_table(), hand_table()["a"]], axis=1)
    with pytest.raises(ColumnError, match="appears more than once"):
        combination_risk(duplicated, ["a", "b"])
    result = minimal_sample_uniques(hand_table(), ["a"])
    with pytest.raises(ParameterError, match="outside"):
        result.msus_of(4)
    with pytest.raises(ColumnError, match="zz"):
        combination_risk(hand_table(), ["a"]).row(["zz"])


def test_empty_and_single_record_tables() -> None:
    empty = hand_table().iloc[:0]
    result = combination_risk(empty, ["a", "b"])
    assert result.table[["distinction", "separation", "k", "classes", "sample_uniques"]].to_numpy().sum() == 0
    assert minimal_sample_uniques(empty, ["a", "b"]).n_msus == 0
    one = hand_table().iloc[:1]
    single = combination_risk(one, ["a", "b"])
    assert single.table["distinction"].tolist() == [1.0, 1.0, 1.0]
    assert single.table["separation"].tolist() == [0.0, 0.0, 0.0]  # no pair: ARX reports 0
    assert single.table["sample_uniques"].tolist() == [1, 1, 1]
    # the only record is unique on every single QI; the empty set is never an MSU
    assert minimal_sample_uniques(one, ["a", "b"]).msus_of(0) == [("a",), ("b",)]
    all_dropped = combination_risk(missing_table().iloc[[4, 5]], ["a", "b"], missing="drop")
    assert all_dropped.n_records == 0 and all_dropped.n_dropped == 2
    assert all_dropped.table["classes"].tolist() == [0, 0, 0] and all_dropped.table["distinction"].sum() == 0
    assert minimal_sample_uniques(missing_table().iloc[[4, 5]], ["a", "b"], missing="drop").unique.tolist() == [
        False,
        False,
    ]


def test_all_missing_column_and_numeric_column_names() -> None:
    data = pd.DataFrame({0: [None, None, None], 1: [1, 2, 2]})
    result = combination_risk(data, [0, 1])  # type: ignore[list-item]
    assert result.row([0])["classes"] == 1 and result.row([0, 1])["classes"] == 2  # type: ignore[list-item]
    assert minimal_sample_uniques(data, [0, 1]).msus_of(0) == [(1,)]  # type: ignore[list-item]


# --- properties -----------------------------------------------------------------------------------------------------


@st.composite
def small_tables(draw: st.DrawFn) -> pd.DataFrame:
    columns = draw(st.integers(1, 5))
    rows = draw(st.integers(1, 30))
    data = {}
    for i in range(columns):
        cardinality = draw(st.integers(1, 4))
        values = draw(st.lists(st.integers(0, cardinality), min_size=rows, max_size=rows))
        # value == cardinality stands for a missing cell
        data[f"q{i}"] = pd.Series([None if v == cardinality else f"v{v}" for v in values], dtype=object)
    return pd.DataFrame(data)


@settings(max_examples=60, deadline=None)
@given(small_tables())
def test_adding_a_quasi_identifier_is_monotone(data: pd.DataFrame) -> None:
    result = combination_risk(data, list(data.columns))
    records: list[dict[str, Any]] = result.table.to_dict("records")  # type: ignore[assignment]
    by_subset = {frozenset(row["quasi_identifiers"]): row for row in records}
    for subset, row in by_subset.items():
        for name in data.columns:
            if name in subset:
                continue
            bigger = by_subset[subset | {name}]
            assert bigger["distinction"] >= row["distinction"]
            assert bigger["separation"] >= row["separation"] - 1e-15
            assert bigger["k"] <= row["k"]
            assert bigger["sample_uniques"] >= row["sample_uniques"]
    for row in records:
        expected = groupby_row(data, row["quasi_identifiers"], 5)
        assert row["classes"] == expected["classes"] and row["records_below_k"] == expected["records_below_k"]
        assert row["separation"] == pytest.approx(expected["separation"])


@settings(max_examples=60, deadline=None)
@given(small_tables())
def test_msus_are_minimal_unique_and_cover_every_unique_record(data: pd.DataFrame) -> None:
    qis = list(data.columns)
    result = minimal_sample_uniques(data, qis)
    full_unique = (groupby_sizes(data, tuple(qis)) == 1).to_numpy() if len(data) > 1 else np.ones(1, bool)
    assert result.unique.tolist() == full_unique.tolist()
    for row, subset in zip(result.msus["row"], result.msus["quasi_identifiers"], strict=True):
        assert groupby_sizes(data, subset).iloc[row] == 1 or len(data) == 1
        for name in subset:
            rest = tuple(q for q in subset if q != name)
            if rest:
                assert groupby_sizes(data, rest).iloc[row] > 1
    assert ((result.msu_count > 0) == result.unique).all()
    expected = brute_force_msus(data, qis) if len(data) > 1 else {0: {frozenset([q]) for q in qis}}
    for row in range(len(data)):
        assert {frozenset(m) for m in result.msus_of(row)} == expected.get(row, set())
    weights = {s: suda_weight(s, len(qis)) for s in range(1, len(qis) + 1)}
    scores = [sum(weights[len(m)] for m in result.msus_of(row)) for row in range(len(data))]
    assert result.suda_score.tolist() == pytest.approx(scores)


@pytest.mark.parametrize("path", ["bincount", "factorize"])
def test_both_counting_paths_agree_with_groupby(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import privdash.measure.combinations as module

    if path == "factorize":
        monkeypatch.setattr(module, "_BINCOUNT_MIN", 0)
        monkeypatch.setattr(module, "_BINCOUNT_FACTOR", 0)
    else:
        monkeypatch.setattr(module, "_BINCOUNT_MIN", 1 << 40)
    rng = np.random.default_rng(7)
    data = pd.DataFrame({f"q{i}": rng.integers(0, c, 300) for i, c in enumerate([2, 9, 4, 30, 3])})
    data.loc[rng.random(300) < 0.05, "q2"] = np.nan
    result = combination_risk(data, list(data.columns), k_threshold=3)
    records: list[dict[str, Any]] = result.table.to_dict("records")  # type: ignore[assignment]
    for row in records:
        expected = groupby_row(data, row["quasi_identifiers"], 3)
        assert (row["classes"], row["k"], row["sample_uniques"], row["records_below_k"]) == (
            expected["classes"],
            expected["k"],
            expected["sample_uniques"],
            expected["records_below_k"],
        )
    msus = minimal_sample_uniques(data, list(data.columns))
    expected_msus = brute_force_msus(data, list(data.columns))
    got: dict[int, set[frozenset[str]]] = {}
    for row, subset in zip(msus.msus["row"], msus.msus["quasi_identifiers"], strict=True):
        got.setdefault(int(row), set()).add(frozenset(subset))
    assert got == expected_msus
