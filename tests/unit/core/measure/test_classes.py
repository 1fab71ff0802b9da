from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.errors import ColumnError, ParameterError
from privdash.measure.classes import (
    MISSING_LABEL,
    EquivalenceClasses,
    MissingPolicy,
    class_size_frequencies,
    equivalence_classes,
    equivalence_classes_from_aggregate,
)


def worked_example() -> pd.DataFrame:
    """peers.md §4: ten records, QIs (age_band, sex), SAs diag and income."""
    return pd.DataFrame(
        {
            "age": ["30-39"] * 7 + ["40-49"] * 3,
            "sex": ["M"] * 4 + ["F"] * 3 + ["M"] * 3,
            "diag": ["flu", "flu", "flu", "cancer", "flu", "cancer", "hiv", "hiv", "hiv", "flu"],
            "income": [30, 30, 40, 50, 40, 60, 100, 50, 60, 100],
        }
    )


def test_worked_example_classes() -> None:
    classes = equivalence_classes(worked_example(), ["age", "sex"], sensitive=["diag", "income"])
    assert classes.k == 3 and classes.n_classes == 3 and classes.n_records == 10
    keys = classes.keys().assign(size=classes.sizes).sort_values(["age", "sex"]).reset_index(drop=True)
    assert keys.to_dict("list") == {"age": ["30-39", "30-39", "40-49"], "sex": ["F", "M", "M"], "size": [3, 4, 3]}
    table = classes.size_frequencies()
    assert table.to_dict("list") == {"size": [3, 4], "classes": [2, 1], "records": [6, 4]}
    assert [classes.records_below(k) for k in (2, 3, 4, 5)] == [0, 0, 6, 10]
    assert classes.classes_below(4) == 2 and classes.sample_uniques == 0
    diag = classes.sensitive["diag"]
    assert not diag.ordered and classes.sensitive["income"].ordered
    dense = pd.DataFrame(diag.dense(), columns=list(diag.labels))
    by_class = dense.assign(sex=classes.keys()["sex"], age=classes.keys()["age"]).set_index(["age", "sex"])
    assert by_class.loc[("30-39", "M")].to_dict() == {"flu": 3, "cancer": 1, "hiv": 0}
    assert by_class.loc[("40-49", "M")].to_dict() == {"flu": 1, "cancer": 0, "hiv": 2}
    assert dict(zip(diag.labels, diag.overall, strict=True)) == {"flu": 5, "cancer": 2, "hiv": 3}
    income = classes.sensitive["income"]
    assert list(income.labels) == [30, 40, 50, 60, 100] and income.n_values == 5
    assert (diag.class_totals() == classes.sizes).all()


def test_missing_policies_on_a_hand_table() -> None:
    data = pd.DataFrame({"a": ["x", "x", None, "y", "y", None], "b": ["1", "1", "1", "2", None, None]})
    value = equivalence_classes(data, ["a", "b"])
    assert sorted(value.sizes.tolist()) == [1, 1, 1, 1, 2] and value.k == 1
    drop = equivalence_classes(data, ["a", "b"], missing="drop")
    assert drop.n_dropped == 3 and drop.n_records == 3 and sorted(drop.sizes.tolist()) == [1, 2]
    assert drop.record_sizes().tolist() == [2, 2, 0, 1, 0, 0]
    wildcard = equivalence_classes(data, ["a", "b"], missing="wildcard")
    # row 0 (x,1) matches rows 0, 1, 2 (?,1) and 5 (?,?); row 2 (?,1) matches 0, 1, 2, 4 (y,?) and 5;
    # row 3 (y,2) matches 3, 4, 5; row 4 (y,?) matches 2, 3, 4, 5; row 5 (?,?) matches every row.
    assert wildcard.record_sizes().tolist() == [4, 4, 5, 3, 4, 6]
    assert wildcard.n_records == 6 and wildcard.k == 3
    assert wildcard.size_frequencies()["records"].sum() == 6


def test_missing_sensitive_values_are_a_category() -> None:
    data = pd.DataFrame({"q": ["a", "a", "b"], "s": ["x", None, "x"]})
    dist = equivalence_classes(data, ["q"], sensitive=["s"]).sensitive["s"]
    assert list(dist.labels) == ["x", MISSING_LABEL] and dist.overall.tolist() == [2, 1]


def test_weights_are_summed_per_class() -> None:
    data = pd.DataFrame({"q": ["a", "a", "b"], "w": [10.0, 5.0, 2.5]})
    classes = equivalence_classes(data, ["q"], weights="w")
    assert dict(zip(classes.keys()["q"], classes.weight_sums, strict=True)) == {"a": 15.0, "b": 2.5}
    with pytest.raises(ColumnError, match="positive"):
        equivalence_classes(data.assign(w=[1, 0, 2]), ["q"], weights="w")


def test_input_errors() -> None:
    data = worked_example()
    with pytest.raises(ColumnError, match="did you mean 'age'"):
        equivalence_classes(data, ["agee"])
    with pytest.raises(ColumnError, match="both"):
        equivalence_classes(data, ["age", "diag"], sensitive=["diag"])
    with pytest.raises(ParameterError, match="value, wildcard, drop"):
        equivalence_classes(data, ["age"], missing="ignore")
    with pytest.raises(ColumnError, match="No quasi-identifier"):
        equivalence_classes(data, [])
    assert MissingPolicy.parse("WILDCARD") is MissingPolicy.WILDCARD


def test_aggregate_seam_matches_raw_rows(adult: pd.DataFrame) -> None:
    qis = ["sex", "age", "race", "marital-status"]
    raw = equivalence_classes(adult, qis, sensitive=["occupation"])
    aggregate = adult.groupby([*qis, "occupation"]).size().rename("count").reset_index()
    seam = equivalence_classes_from_aggregate(aggregate, qis, sensitive=["occupation"])
    assert seam.n_classes == raw.n_classes == 1690  # figures from arx_adult/SOURCE.md
    assert raw.sample_uniques == 543 and raw.records_below(5) == 1824
    assert seam.size_frequencies().equals(raw.size_frequencies())
    raw_dist, seam_dist = raw.sensitive["occupation"], seam.sensitive["occupation"]
    raw_table = pd.DataFrame(raw_dist.dense(), columns=raw_dist.labels).assign(**raw.keys())
    seam_table = pd.DataFrame(seam_dist.dense(), columns=seam_dist.labels).assign(**seam.keys())
    order = [*qis, *sorted(raw_dist.labels)]
    pd.testing.assert_frame_equal(
        raw_table[order].sort_values(qis).reset_index(drop=True),
        seam_table[order].sort_values(qis).reset_index(drop=True),
        check_dtype=False,
    )


def test_adult_all_qis_matches_source_figures(adult: pd.DataFrame) -> None:
    qis = [c for c in adult.columns if c != "salary-class"]
    classes = equivalence_classes(adult, qis)
    assert classes.n_classes == 18109 and classes.sample_uniques == 14021
    pd.testing.assert_frame_equal(class_size_frequencies(adult, qis), classes.size_frequencies())


def test_fast_size_table_equals_the_full_summary_under_every_policy() -> None:
    data = pd.DataFrame({"a": ["x", "x", None, "y", "y", None], "b": ["1", "1", "1", "2", None, None]})
    for policy in ("value", "wildcard", "drop"):
        full = equivalence_classes(data, ["a", "b"], missing=policy).size_frequencies()
        pd.testing.assert_frame_equal(class_size_frequencies(data, ["a", "b"], missing=policy), full)


cells = st.sampled_from(["a", "b", None])
rows = st.lists(st.tuples(cells, cells, cells), min_size=1, max_size=40)


def frame_of(records: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(records, columns=["x", "y", "z"]).astype(object)


@settings(max_examples=80, deadline=None)
@given(rows)
def test_sizes_sum_to_rows_and_k_is_the_smallest_class(records: list[tuple]) -> None:
    data = frame_of(records)
    for policy in ("value", "drop"):
        classes = equivalence_classes(data, ["x", "y", "z"], missing=policy)
        assert classes.sizes.sum() + classes.n_dropped == len(data)
        if classes.n_classes:
            assert classes.k == classes.sizes.min()
            assert classes.records_below(classes.k) == 0 and classes.records_below(classes.k + 1) > 0


@settings(max_examples=80, deadline=None)
@given(rows)
def test_adding_a_qi_never_raises_k(records: list[tuple]) -> None:
    data = frame_of(records)
    for policy in ("value", "wildcard"):
        ks = [equivalence_classes(data, list("xyz")[:d], missing=policy).k for d in (1, 2, 3)]
        assert ks[0] >= ks[1] >= ks[2]


@settings(max_examples=80, deadline=None)
@given(rows)
def test_wildcard_matches_brute_force_and_never_lowers_k(records: list[tuple]) -> None:
    data = frame_of(records)
    wildcard = equivalence_classes(data, ["x", "y", "z"], missing="wildcard")
    value = equivalence_classes(data, ["x", "y", "z"], missing="value")
    values = data.to_numpy()
    compatible = np.array(
        [[all(pd.isna(a) or pd.isna(b) or a == b for a, b in zip(r, s, strict=True)) for s in values] for r in values]
    )
    assert wildcard.record_sizes().tolist() == compatible.sum(axis=1).tolist()
    assert wildcard.k >= value.k
    assert (wildcard.record_sizes() >= value.record_sizes()).all()


@pytest.mark.parametrize("seed", range(4))
def test_compatible_counts_equal_the_joined_sums(seed: int) -> None:
    """Integer weights take sorted arrays instead of pandas joins: the same triples as the float path."""
    from privdash.measure.classes import compatible_sums

    rng = np.random.default_rng(seed)
    n_classes, n_qis = 200, 1 + seed
    codes = rng.integers(0, 3 + seed, size=(n_classes, n_qis))
    codes[rng.random(codes.shape) < 0.25] = -1  # wildcards
    codes = np.unique(codes, axis=0)  # class patterns are distinct
    source_class = rng.integers(0, len(codes), 500)
    source_value = rng.integers(0, 4, 500)
    weights = rng.integers(1, 9, 500)
    fast = compatible_sums(codes, source_class, source_value, weights)
    joined = compatible_sums(codes, source_class, source_value, weights.astype(np.float64))
    assert len(fast[0]) == len(joined[0]) > 0
    for got, expected in zip(fast, joined, strict=True):
        assert np.array_equal(got, expected)
    assert fast[2].dtype == np.int64


@pytest.mark.parametrize("policy", ["value", "wildcard", "drop"])
def test_size_table_counts_each_size_and_the_records_of_its_classes(policy: str) -> None:
    rng = np.random.default_rng(21)
    n = 20_000
    data = pd.DataFrame({"a": rng.integers(0, 40, n), "b": rng.choice(["x", "y", "z", None], n)}).astype(object)
    data.loc[rng.random(n) < 0.05, "a"] = None
    classes = equivalence_classes(data, ["a", "b"], missing=policy)
    table = classes.size_frequencies()
    frame = pd.DataFrame({"size": classes.sizes, "records": classes.counts})
    expected = frame.groupby("size").agg(classes=("records", "size"), records=("records", "sum")).reset_index()
    pd.testing.assert_frame_equal(table, expected.astype(np.int64), check_dtype=True)
    assert table["records"].sum() == classes.n_records
    # sizes beyond what a count per size covers take the sort: the same table
    wide = EquivalenceClasses(
        quasi_identifiers=("a",),
        missing_policy=MissingPolicy.VALUE,
        class_codes=np.arange(3).reshape(-1, 1),
        categories=(pd.Index([0, 1, 2]),),
        sizes=np.array([5, 10**9, 5]),
        counts=np.array([5, 10**9, 5]),
    )
    assert wide.size_frequencies().to_dict("list") == {"size": [5, 10**9], "classes": [2, 1], "records": [10, 10**9]}
