from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.errors import ContractError
from privdash.measure.encoding import class_sizes, encode_column, encode_columns, group_rows


def test_dtypes_encode_with_missing_as_minus_one() -> None:
    category = encode_column(pd.Series(pd.Categorical(["b", None, "a", "b"]), name="c"))
    assert category.codes.tolist() == [1, -1, 0, 1] and list(category.categories) == ["a", "b"]
    arrow = encode_column(pd.Series(["x", None, "y", "x"], dtype="str", name="s"))
    assert arrow.codes.tolist() == [0, -1, 1, 0] and list(arrow.categories) == ["x", "y"]
    obj = encode_column(pd.Series(["x", None, "y", "x"], dtype=object, name="o"))
    assert obj.codes.tolist() == [0, -1, 1, 0]
    numbers = encode_column(pd.Series([30, 10, np.nan, 20], name="n"))
    assert numbers.codes.tolist() == [2, 0, -1, 1] and list(numbers.categories) == [10, 20, 30]
    assert numbers.has_missing and not encode_column(pd.Series([1, 2], name="m")).has_missing
    assert numbers.decode(np.array([0, -1])).isna().tolist() == [False, True]


def test_sorted_text_and_declared_order() -> None:
    sorted_text = encode_column(pd.Series(["m", "a", "z"], dtype="str", name="t"), sort=True)
    assert list(sorted_text.categories) == ["a", "m", "z"] and sorted_text.codes.tolist() == [1, 0, 2]
    ordered = encode_column(pd.Series(["M", "XS", None, "XL"], name="size"), order=["XS", "S", "M", "L", "XL"])
    assert ordered.codes.tolist() == [2, 0, -1, 4]
    with pytest.raises(ContractError, match="'XXL'"):
        encode_column(pd.Series(["M", "XXL"], name="size"), order=["S", "M"])


def test_categorical_codes_are_not_copied() -> None:
    series = pd.Series(pd.Categorical(np.random.default_rng(0).choice(["a", "b"], 1000)), name="c")
    encoded = encode_column(series)
    assert np.shares_memory(encoded.codes, series.array.codes)


tables = st.integers(1, 4).flatmap(
    lambda width: st.lists(
        st.tuples(*[st.sampled_from(["a", "b", "c", None]) for _ in range(width)]), min_size=1, max_size=60
    )
)


@settings(max_examples=60, deadline=None)
@given(tables)
def test_grouping_matches_pandas(rows: list[tuple]) -> None:
    frame = pd.DataFrame(rows, columns=[f"q{i}" for i in range(len(rows[0]))]).astype(object)
    columns = list(frame.columns)
    encoded = encode_columns(frame, columns)
    grouping = group_rows(encoded)
    expected = frame.groupby(columns, dropna=False).size()
    assert sorted(grouping.sizes.tolist()) == sorted(expected.tolist())
    assert sorted(class_sizes(encoded).tolist()) == sorted(expected.tolist())
    assert grouping.sizes.sum() == len(frame)
    for index, column in enumerate(encoded):
        assert (grouping.group_codes[grouping.row_group, index] == column.codes).all()


def test_large_key_spaces_and_exclusion() -> None:
    rng = np.random.default_rng(5)
    n = 200_000
    frame = pd.DataFrame({f"h{i}": rng.integers(0, 50_000, n) for i in range(6)})
    frame["cat"] = pd.Categorical(rng.choice(["x", "y"], n))
    encoded = encode_columns(frame, list(frame.columns))
    grouping = group_rows(encoded)
    assert grouping.n_groups == len(frame.drop_duplicates())
    small = encode_columns(frame, ["cat"])
    exclude = np.zeros(n, dtype=bool)
    exclude[:10] = True
    excluded = group_rows(small, exclude=exclude)
    assert (excluded.row_group[:10] == -1).all() and excluded.sizes.sum() == n - 10


def test_chunked_counting_matches_bincount() -> None:
    rng = np.random.default_rng(9)
    n = 1_100_003  # more than four chunks (threaded), not a multiple of the chunk size
    frame = pd.DataFrame({c: pd.Categorical(rng.choice(["1", "2", "3"], n)) for c in "ABCD"})
    frame.loc[::97, "B"] = None
    encoded = encode_columns(frame, list(frame.columns))
    expected = frame.groupby(list(frame.columns), dropna=False, observed=True).size().sort_values()
    assert sorted(class_sizes(encoded).tolist()) == expected.tolist()


def test_numeric_categories_sort_ascending_with_zeros_of_both_signs_and_missing_values() -> None:
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.normal(0, 100, 5000), rng.integers(-50, 50, 5000).astype(float), [0.0, -0.0, np.nan]])
    rng.shuffle(values)
    for column in (pd.Series(values, name="x"), pd.Series(np.nan_to_num(values).astype(np.int64), name="n")):
        encoded = encode_column(column)
        categories = encoded.categories.to_numpy()
        assert (np.diff(categories) > 0).all()  # ascending, each number once (0.0 and -0.0 are one)
        expected = np.sort(pd.unique(column.dropna()))
        assert np.array_equal(categories, expected[np.r_[True, np.diff(expected) > 0]])
        decoded = encoded.decode(encoded.codes).to_numpy(dtype=float)
        assert np.array_equal(decoded, column.to_numpy(dtype=float), equal_nan=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-(2**62), max_value=2**62), max_size=300), st.integers(1, 40))
def test_sorted_factorize_is_pandas_sorted_factorize(values: list[int], spread: int) -> None:
    from privdash.measure.encoding import _sorted_factorize

    keys = np.array(values + [v // spread for v in values], dtype=np.int64)
    ranks, uniques = _sorted_factorize(keys)
    expected_ranks, expected_uniques = pd.factorize(keys, sort=True)
    assert np.array_equal(ranks, expected_ranks) and np.array_equal(uniques, expected_uniques)
