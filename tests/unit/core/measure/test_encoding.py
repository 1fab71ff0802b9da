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


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=-(2**62), max_value=2**62), unique=True, max_size=300), st.booleans())
def test_sorted_factorize_of_distinct_keys_ranks_each_key(values: list[int], repeat: bool) -> None:
    """Distinct keys (every row a group: a long aggregate) and keys with repeats give pandas' ranks and a row of
    each distinct key."""
    from privdash.measure.encoding import _sorted_factorize_rows

    keys = np.array(values + values[:3] if repeat else values, dtype=np.int64)
    ranks, uniques, rows = _sorted_factorize_rows(keys)
    expected_ranks, expected_uniques = pd.factorize(keys, sort=True)
    assert np.array_equal(ranks, expected_ranks) and np.array_equal(uniques, expected_uniques)
    assert np.array_equal(keys[rows], uniques)


def _hashed_encoding(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """The encoding by hashing: pandas' factorize, its categories sorted ascending and the codes remapped."""
    codes, uniques = pd.factorize(column, sort=False, use_na_sentinel=True)
    order = np.argsort(uniques)
    remap = np.empty(len(order) + 1, dtype=np.int64)
    remap[order] = np.arange(len(order))
    remap[-1] = -1
    return remap[codes], pd.Index(uniques[order])


def test_long_numeric_columns_of_distinct_values_encode_by_one_sort_as_by_hashing() -> None:
    from privdash.measure.encoding import _encode_by_sorting

    rng = np.random.default_rng(11)
    n = 100_000  # above the rows from which a column of mostly distinct numbers is sorted
    floats = rng.normal(0, 1e3, n)
    floats[rng.random(n) < 0.05] = np.nan
    floats[:50] = floats[50:100]  # some repeats
    floats[200:203] = [-0.0, -0.0, np.inf]  # zeros of one sign: the category keeps it
    columns = {
        "floats": floats,
        "integers": rng.integers(-(10**12), 10**12, n),
        "float32": rng.normal(size=n).astype(np.float32),
        "unsigned": rng.integers(0, 2**40, n).astype(np.uint64),
        "distinct_with_missing": np.where(rng.random(n) < 0.1, np.nan, rng.permutation(n) * 0.5),
    }
    for name, values in columns.items():
        column = pd.Series(values, name=name)
        assert _encode_by_sorting(column) is not None, name
        encoded = encode_column(column)
        codes, categories = _hashed_encoding(column)
        assert np.array_equal(encoded.codes, codes), name
        assert encoded.categories.equals(categories) and encoded.categories.dtype == categories.dtype, name
        assert np.array_equal(np.signbit(encoded.categories.to_numpy()), np.signbit(categories.to_numpy())), name
        assert encoded.codes.dtype == np.int32  # the narrowest that holds the codes, as hashing gives them
    zeros = encode_column(pd.Series(columns["floats"]))
    zero = zeros.categories[zeros.codes[200]]
    assert zero == 0 and np.signbit(zero)


def test_columns_a_sort_would_encode_otherwise_are_hashed() -> None:
    from privdash.measure.encoding import _encode_by_sorting

    rng = np.random.default_rng(12)
    n = 100_000
    both_zeros = rng.normal(size=n)
    both_zeros[[10, 20]] = [0.0, -0.0]  # one value: its category is the first seen, which a sort does not know
    repeated = rng.integers(0, 100, n).astype(float)  # few values: hashing is cheaper
    for values in (both_zeros, repeated, rng.normal(size=1_000)):
        column = pd.Series(values)
        assert _encode_by_sorting(column) is None
        encoded = encode_column(column)
        codes, categories = _hashed_encoding(column)
        assert np.array_equal(encoded.codes, codes) and encoded.categories.equals(categories)
    zeros = encode_column(pd.Series(both_zeros))
    assert not np.signbit(zeros.categories[zeros.codes[20]])  # 0.0, seen first
    assert encode_column(pd.Series(both_zeros), sort=False).categories[0] == both_zeros[0]  # first-seen order kept


def test_groups_of_a_large_key_space_read_their_codes_off_their_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from privdash.measure import encoding

    sorted_calls: list[int] = []
    sort = encoding._sorted_factorize_rows
    monkeypatch.setattr(encoding, "_sorted_factorize_rows", lambda keys: sorted_calls.append(len(keys)) or sort(keys))
    rng = np.random.default_rng(13)
    n = 150_000
    frame = pd.DataFrame({"a": rng.integers(0, 7, n), "b": rng.normal(size=n).round(5), "c": rng.integers(0, 90, n)})
    frame.loc[rng.random(n) < 0.1, "b"] = np.nan
    encoded = encode_columns(frame, ["a", "b", "c"])
    exclude = rng.random(n) < 0.2
    for mask in (None, exclude):
        grouping = group_rows(encoded, exclude=mask)
        assert sorted_calls.pop() == n - (0 if mask is None else int(mask.sum()))  # a key space too large to count
        kept = grouping.row_group >= 0
        assert (kept == (True if mask is None else ~mask)).all()
        for index, column in enumerate(encoded):
            assert (grouping.group_codes[grouping.row_group[kept], index] == column.codes[kept]).all()
        # groups in lexicographic order of their codes, missing (-1) first
        ordered = np.lexsort(grouping.group_codes.T[::-1])
        assert (ordered == np.arange(grouping.n_groups)).all()
        expected = frame[kept].groupby(["a", "b", "c"], dropna=False).size()
        assert sorted(grouping.sizes.tolist()) == sorted(expected.tolist())
