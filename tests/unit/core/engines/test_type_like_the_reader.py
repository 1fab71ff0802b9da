"""The engines' typing of a text aggregate (``type_like_the_reader``) on Arrow buffers, all columns at once, equals
its value-by-value form (``_type_column``: each column through its distinct values as Python objects, the rules of
``infer_numeric_columns``) on random aggregates of numeric text, markers, spaces and missing values."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.engines import common
from privdash.engines.common import CsvText, type_like_the_reader
from privdash.errors import DataReadError

_TEXT = pd.StringDtype("pyarrow", na_value=np.nan)
_CELLS = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=False, width=64).map(lambda x: f"{x:.17g}"),
    st.floats(allow_nan=False, width=64).map(repr),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(lambda x: f"{x:.3f}"),
    st.sampled_from(["", "NA", "null", " 1", "2 ", " x", "02134", "1.0", "0.1", "0.10000000000000001", "1e999", "-0"]),
    st.text(alphabet="ab 1.", min_size=1, max_size=5),
)


def _slow(frame: pd.DataFrame, names: list[str], csv: CsvText | None = None) -> pd.DataFrame:
    out = frame.copy()
    for name in names:
        out[name] = common._type_column(out[name], name, csv)
    return out


@st.composite
def _aggregates(draw: Any) -> pd.DataFrame:
    width = draw(st.integers(1, 4))
    rows = draw(st.integers(1, 40))
    pools = [draw(st.lists(st.one_of(_CELLS, st.none()), min_size=1, max_size=6)) for _ in range(width)]
    columns = {f"c{i}": [draw(st.sampled_from(pool)) for _ in range(rows)] for i, pool in enumerate(pools)}
    frame = pd.DataFrame({name: pd.array(values, dtype=_TEXT) for name, values in columns.items()})
    frame["__privdash_count"] = np.arange(1, rows + 1)
    return frame


@settings(max_examples=300, deadline=None)
@given(_aggregates())
def test_the_typing_on_arrow_equals_the_typing_value_by_value(frame: pd.DataFrame) -> None:
    names = [name for name in frame.columns if name.startswith("c")]
    fast = type_like_the_reader(frame, names)
    slow = _slow(frame, names)
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)


def test_long_float_columns_are_typed_alike() -> None:
    rng = np.random.default_rng(4)
    values = np.char.mod("%.17g", rng.normal(0, 100, 50_000)).astype(object)
    values[::997] = None
    frame = pd.DataFrame({"x": pd.array(values, dtype=_TEXT), "g": pd.array(np.where(values == None, "a", "b"))})  # noqa: E711
    fast = type_like_the_reader(frame, ["x", "g"])
    pd.testing.assert_frame_equal(fast, _slow(frame, ["x", "g"]), check_exact=True)
    assert fast["x"].dtype == np.float64 and fast["x"].isna().sum() == len(values[::997])


def test_object_columns_of_text_are_typed_alike() -> None:
    frame = pd.DataFrame({"a": pd.Series(["1", None, " 2"], dtype=object), "b": pd.Series([1, 2, 3])})
    pd.testing.assert_frame_equal(type_like_the_reader(frame, ["a"]), _slow(frame, ["a"]), check_exact=True)


def test_spaces_before_a_quote_are_refused_as_before(tmp_path: Any) -> None:
    frame = pd.DataFrame({"a": pd.array([' "x"', "y"], dtype=_TEXT), "__privdash_count": [1, 2]})
    csv = CsvText(tmp_path / "t.csv", ",")
    with pytest.raises(DataReadError, match="spaces before an opening quote"):
        type_like_the_reader(frame, ["a"], csv)


def _in_chunks(values: np.ndarray, sizes: list[int]) -> pd.arrays.ArrowStringArray:
    """A text column held as an Arrow chunked array cut at ``sizes`` (an engine's aggregate arrives in batches)."""
    import pyarrow as pa

    bounds = np.cumsum([0, *sizes])
    chunks = [pa.array(values[a:b], type=pa.large_string()) for a, b in itertools.pairwise(bounds)]
    return pd.array(pa.chunked_array(chunks, pa.large_string()), dtype=_TEXT)


@pytest.mark.parametrize("sizes", [[1, 65_535, 3, 70_000, 14_462], [500] * 300 + [1]], ids=["uneven", "hundreds"])
def test_columns_in_many_chunks_are_typed_as_in_one(sizes: list[int]) -> None:
    """Chunks of uneven sizes across the numeric check's steps, and hundreds of chunks (joined before the check):
    floats at 17 digits, integers (one of 19 digits over the limit), a float column whose last value has spaces
    around it (the check's slow path), a text column."""
    rng = np.random.default_rng(11)
    n = 150_001
    floats = np.char.mod("%.17g", rng.normal(0, 100, n)).astype(object)
    integers = rng.integers(-(10**6), 10**6, n).astype(str).astype(object)
    integers[-5] = "9223372036854775808"
    spaced = np.char.mod("%.6f", rng.normal(0, 1, n)).astype(object)
    spaced[-1] = " 1.5 "
    words = np.where(rng.random(n) < 0.5, "a", "b").astype(object)
    columns = {"f": floats, "i": integers, "s": spaced, "w": words}
    chunked = pd.DataFrame({name: _in_chunks(values, sizes) for name, values in columns.items()})
    whole = pd.DataFrame({name: pd.array(values, dtype=_TEXT) for name, values in columns.items()})
    assert chunked["f"].array._pa_array.num_chunks == len(sizes)
    fast = type_like_the_reader(chunked, list(columns))
    pd.testing.assert_frame_equal(fast, type_like_the_reader(whole, list(columns)), check_exact=True)
    assert fast.dtypes.astype(str).tolist() == ["float64", "str", "float64", "str"]
    assert fast["s"].iloc[-1] == 1.5 and fast["i"].iloc[-5] == "9223372036854775808"
