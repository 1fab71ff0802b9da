"""Reading only some columns (``read_table(columns=...)``) gives what reading every column and then selecting
those gives: the same values, types and errors, on random files and wide tables, against the Arrow path and the
reference parser (pandas' C tokenizer, cell by cell)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privdash.data.tables import read as tables_read
from privdash.data.tables import read_table, read_table_with_info
from privdash.errors import DataReadError
from tests.unit.core.data.test_tables_arrow import _random_table


def _read(raw: bytes, columns: list[str] | None = None) -> tuple[str, Any]:
    try:
        return ("frame", read_table(raw, filename="table.csv", columns=columns))
    except DataReadError as exc:
        return ("error", str(exc))


def _reference(monkeypatch: pytest.MonkeyPatch, raw: bytes) -> tuple[str, Any]:
    with monkeypatch.context() as patch:
        patch.setattr(tables_read, "_read_text_arrow", lambda *args: None)
        return _read(raw)


def _selected(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return frame[[name for name in frame.columns if name in set(columns)]]


def test_random_files_read_in_part_equal_the_reference_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261127)
    compared = 0
    for _ in range(1_500):
        raw = _random_table(rng)
        reference = _reference(monkeypatch, raw)
        if reference[0] == "error":
            # An error of the whole file is said, the same, whatever columns are asked for.
            assert _read(raw, ["a"]) == reference, raw
            continue
        names = [str(name) for name in reference[1].columns]
        columns = rng.sample(names, rng.randint(1, len(names)))
        chosen = _read(raw, columns)
        assert chosen[0] == "frame", (raw, chosen)
        pd.testing.assert_frame_equal(chosen[1], _selected(reference[1], columns), check_exact=True, obj=repr(raw))
        compared += 1
    assert compared > 500


_CELLS = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(lambda x: f"{x:.17g}"),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.sampled_from(["", "NA", "x", "02134", " y ", "1.0", "0.1", "0.10000000000000001", "1e999", "inf"]),
    st.text(alphabet="abc ", min_size=1, max_size=4),
)


@st.composite
def _wide_tables(draw: Any) -> tuple[bytes, list[str]]:
    width = draw(st.integers(2, 60))
    rows = draw(st.integers(1, 30))
    pools = [draw(st.lists(_CELLS, min_size=1, max_size=4)) for _ in range(width)]
    cells = [[draw(st.sampled_from(pool)) for pool in pools] for _ in range(rows)]
    names = [f"c{i}" for i in range(width)]
    text = ",".join(names) + "\n" + "".join(",".join(row) + "\n" for row in cells)
    columns = draw(st.lists(st.sampled_from(names), min_size=1, max_size=8, unique=True))
    return text.encode(), columns


@settings(max_examples=150, deadline=None)
@given(_wide_tables())
def test_wide_tables_read_in_part_equal_the_reference(case: tuple[bytes, list[str]]) -> None:
    raw, columns = case
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tables_read, "_read_text_arrow", lambda *args: None)
        reference = _read(raw)
    chosen = _read(raw, columns)
    assert chosen[0] == reference[0], (raw, chosen, reference)
    if reference[0] == "error":
        assert chosen[1] == reference[1]
        return
    pd.testing.assert_frame_equal(chosen[1], _selected(reference[1], columns), check_exact=True)


def test_a_wide_file_parses_only_the_chosen_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    n, width = 3_000, 300
    frame = pd.DataFrame(
        {f"v{j}": rng.integers(0, 9, n) if j % 2 else np.round(rng.random(n), 3) for j in range(width)}
    )
    frame.insert(5, "zip", np.array(["02134", "10001"])[rng.integers(0, 2, n)])
    raw = frame.to_csv(index=False).encode()
    converted: list[int] = []
    original = tables_read._read_text_arrow.__globals__["_arrow_strings"]

    def counting(*args: Any) -> Any:
        table = original(*args)
        converted.append(table.num_columns)
        return table

    monkeypatch.setitem(tables_read._read_text_arrow.__globals__, "_arrow_strings", counting)
    columns = ["v7", "zip", "v2"]
    chosen, info = read_table_with_info(raw, filename="wide.csv", columns=columns)
    assert converted == [4]  # the three columns and the last one (its last value is checked for an open quote)
    assert list(chosen.columns) == ["v2", "zip", "v7"]  # the file's order
    whole = read_table(raw, filename="wide.csv")
    pd.testing.assert_frame_equal(chosen, whole[["v2", "zip", "v7"]], check_exact=True)
    assert chosen.dtypes.astype(str).tolist() == ["float64", "str", "int64"]
    assert info.delimiter == ","


def test_an_unknown_name_reads_every_column() -> None:
    raw = b"a,b,c\n1,x,2.5\n2,y,3.5\n"
    frame = read_table(raw, filename="t.csv", columns=["a", "nope"])
    assert list(frame.columns) == ["a", "b", "c"]  # the caller's check names the unknown column


def test_the_shape_checks_are_those_of_the_whole_file() -> None:
    # One column asked of a file of two: not "a single column".
    assert read_table(b"a,b\n1,x\n2,y\n", filename="t.csv", columns=["b"])["b"].tolist() == ["x", "y"]
    # Chosen columns that are all missing while others hold values: read, as reading all and selecting gives.
    frame = read_table(b"a,b,c\n,x,1\nNA,y,2\n", filename="t.csv", columns=["a"])
    assert frame.shape == (2, 1) and frame["a"].isna().all()
    with pytest.raises(DataReadError, match="every value is missing"):
        read_table(b"a,b\nNA,\n,null\n", filename="t.csv", columns=["a"])
    with pytest.raises(DataReadError, match="no data rows"):
        read_table(b"a,b\n", filename="t.csv", columns=["a"])


def test_other_formats_are_read_whole_and_narrowed(tmp_path: Any) -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 1.5]})
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    chosen = read_table(path, columns=["c", "a"])
    pd.testing.assert_frame_equal(chosen, read_table(path)[["a", "c"]])
