"""Every engine gives the same diagnosis to the last digit: pandas in memory, and DuckDB over the same file.

The comparison is on ``Diagnosis.to_dict()`` (every number of ``privdash diagnose --json``) and on the per-class
arrays of every model, for the three missing-value policies, on four public datasets read from the files users have.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privdash.data.tables import read_table
from privdash.engines.aggregate import (
    COUNT,
    Engine,
    aggregate_table,
    duckdb_connection,
    resolve_engine,
    sample_rows,
    source_paths,
)
from privdash.errors import ColumnError, DataReadError, ParameterError
from privdash.measure.diagnose import Diagnosis, diagnose

CASES = {
    "adult": ("arx_adult/adult.csv", ["sex", "age", "race", "marital-status", "education"], ["occupation"], None),
    "testdata": (
        "sdcmicro_testdata/testdata.csv",
        ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"],
        ["income"],
        "sampling_weight",
    ),
    "fars": ("arx_fars_subset/fars_subset.csv", ["iage", "irace", "isex", "ihispanic", "istatenum"], ["iinjury"], None),
    "cup": ("arx_cup/cup.csv", ["ZIP", "AGE", "GENDER", "STATE"], ["INCOME"], None),
}


def same(left: Any, right: Any, path: str = "") -> list[str]:
    """Where two JSON-like values differ (floats compared exactly; NaN equals NaN)."""
    if isinstance(left, dict) and isinstance(right, dict):
        keys = set(left) | set(right)
        return [d for key in sorted(keys, key=str) for d in same(left.get(key), right.get(key), f"{path}.{key}")]
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        if len(left) != len(right):
            return [f"{path}: lengths {len(left)} != {len(right)}"]
        return [d for i, (a, b) in enumerate(zip(left, right, strict=True)) for d in same(a, b, f"{path}[{i}]")]
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return []
    return [] if left == right else [f"{path}: {left!r} != {right!r}"]


def per_class(diagnosis: Diagnosis) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": diagnosis.classes.sizes.tolist(), "counts": diagnosis.classes.counts.tolist()}
    for name, models in diagnosis.sensitive_models.items():
        out[name] = models.per_class_table().to_dict(orient="list")
    out["prosecutor"] = diagnosis.risk.prosecutor.class_risk.tolist()
    out["journalist"] = diagnosis.risk.journalist.class_risk.tolist()
    return out


@pytest.mark.parametrize("missing", ["value", "wildcard", "drop"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_duckdb_equals_pandas_to_the_last_digit(data_dir: Path, case: str, missing: str) -> None:
    relative, qis, sensitive, weights = CASES[case]
    path = data_dir / relative
    options = {"sensitive": sensitive, "missing": missing, "weights": weights, "population": 10 * 78_000}
    if weights:
        options.pop("population")
    memory = diagnose(read_table(path), qis, **options, engine="pandas")
    streamed = diagnose(path, qis, **options, engine="duckdb")
    assert memory.engine == "pandas" and streamed.engine == "duckdb"
    left, right = memory.to_dict(), streamed.to_dict()
    left.pop("engine"), right.pop("engine")
    assert same(left, right) == []
    if missing != "wildcard" or case != "cup":  # cup under wildcard: the same, and slower; once is enough
        assert same(per_class(memory), per_class(streamed)) == []


def test_parquet_dataset_in_several_files(data_dir: Path, tmp_path: Path) -> None:
    adult = read_table(data_dir / "arx_adult" / "adult.csv")
    for i, part in enumerate(np.array_split(np.arange(len(adult)), 3)):
        adult.iloc[part].to_parquet(tmp_path / f"part-{i}.parquet", index=False)
    qis = ["sex", "age", "race", "education"]
    memory = diagnose(adult, qis, sensitive=["occupation"])
    lake = diagnose(str(tmp_path / "*.parquet"), qis, sensitive=["occupation"])  # auto: a glob goes to DuckDB
    assert lake.engine == "duckdb" and lake.rows == len(adult)
    left, right = memory.to_dict(), lake.to_dict()
    left.pop("engine"), right.pop("engine")
    assert same(left, right) == []


def test_csv_text_rules_match_the_reader(tmp_path: Path) -> None:
    # Leading zeros stay text; "1" and "1.0" are one number; NA markers and blanks are missing; spaces after the
    # delimiter are dropped; a column with any text stays text.
    path = tmp_path / "t.csv"
    path.write_text("zip;n;m;t\n02134; 1;NA;a\n02134;1.0;;b\n2134;2;-;1\n02134; 1;3;a\n", encoding="utf-8")
    pandas_frame = read_table(path)
    for engine in ("pandas", "duckdb"):
        aggregate = aggregate_table(path, ["zip", "n", "m", "t"], engine=engine)
        frame = aggregate.frame.sort_values(["zip", "n", "t"], na_position="first").reset_index(drop=True)
        assert aggregate.rows == 4
        assert set(frame["zip"]) == set(pandas_frame["zip"]) == {"02134", "2134"}
        assert set(frame["n"].tolist()) == {1.0, 2.0}
        missing_m = frame.loc[frame["m"].isna(), COUNT].sum()
        assert missing_m == pandas_frame["m"].isna().sum() == 2  # "NA" and the empty field
        assert pd.api.types.is_numeric_dtype(frame["n"]) and not pd.api.types.is_numeric_dtype(frame["t"])
    both = [diagnose(path, ["zip", "n"], engine=engine).to_dict() for engine in ("pandas", "duckdb")]
    both[0].pop("engine"), both[1].pop("engine")
    assert same(*both) == []


def test_spaces_around_values_are_removed_by_every_engine(tmp_path: Path) -> None:
    # Before and after a value, quoted or not: one value. Spaces before an opening quote are skipped by the reader,
    # which reads the quoted value; a text engine keeps them with the quotes, so it refuses the file.
    spaced = tmp_path / "spaced.csv"
    spaced.write_text('a,b\n" x",1\nx ,2\n y,3\n"y  ",4\nx,5\n', encoding="utf-8")
    assert read_table(spaced)["a"].tolist() == ["x", "x", "y", "y", "x"]
    counts = [
        aggregate_table(spaced, ["a"], engine=engine).frame.groupby("a")[COUNT].sum().to_dict()
        for engine in ("pandas", "duckdb")
    ]
    assert counts[0] == counts[1] == {"x": 3, "y": 2}
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('a,b\nz,1\n  "z",2\n', encoding="utf-8")
    assert read_table(quoted)["a"].tolist() == ["z", "z"]
    with pytest.raises(DataReadError, match="spaces before an opening quote"):
        aggregate_table(quoted, ["a"], engine="duckdb")
    with pytest.raises(DataReadError, match="engine='pandas'"):
        diagnose(quoted, ["a", "b"], engine="duckdb")
    # Spaces inside a value stay.
    inner = tmp_path / "inner.csv"
    inner.write_text('a,b\n"x y",1\nx,2\n y ,3\ny,4\n', encoding="utf-8")
    counts = [
        aggregate_table(inner, ["a"], engine=engine).frame.groupby("a")[COUNT].sum().to_dict()
        for engine in ("pandas", "duckdb")
    ]
    assert counts[0] == counts[1] == {"x y": 1, "x": 1, "y": 2}


def test_no_records_is_an_error_on_every_engine_and_never_a_pass(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from privdash.targets import PrivacyTargets

    folder = tmp_path / "empty"
    folder.mkdir()
    pq.write_table(pa.table({"age": pa.array([], pa.int64()), "sex": pa.array([], pa.string())}), folder / "p.parquet")
    header = tmp_path / "header.csv"
    header.write_text("age,sex\n", encoding="utf-8")
    frame = pd.DataFrame({"age": pd.Series([], dtype="int64"), "sex": pd.Series([], dtype=object)})
    for source, engine in ((folder, "duckdb"), (header, "duckdb"), (frame, "duckdb"), (frame, "pandas")):
        with pytest.raises(DataReadError, match=r"has columns but no records \(0 rows\)"):
            aggregate_table(source, ["age", "sex"], engine=engine)
        if engine == "duckdb":  # a DataFrame in pandas is diagnosed in memory (below)
            with pytest.raises(DataReadError, match="no records"):
                diagnose(source, ["age", "sex"], engine=engine)
    # In memory a diagnosis of no records (none given, or every one dropped) is made, and fails every target.
    targets = PrivacyTargets(k=5, max_risk=0.5)
    dropped = pd.DataFrame({"age": [None, None], "sex": ["f", "m"]})
    for diagnosis in (diagnose(frame, ["age", "sex"]), diagnose(dropped, ["age"], missing="drop")):
        assert diagnosis.n_records == 0
        verdict = diagnosis.check(targets)
        assert not verdict.passed and verdict.status == "fail"
        assert [check.passed for check in verdict.checks] == [False, True]
        assert "no record is in scope" in verdict.sentence()


def test_typed_parquet_columns_equal_the_pandas_engine(tmp_path: Path) -> None:
    """Decimals that differ in the ninth decimal, bytes, fixed-size bytes, dates, time zones (DuckDB gives UTC), a
    pandas index: the DuckDB aggregate is the pandas engine's, value for value and type for type."""
    import datetime
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    ninth = [decimal.Decimal(text) for text in ("1.000000001", "1.000000002", "1.000000003", "1.000000001", "0")]
    table = pa.table(
        {
            "d": pa.array(ninth, pa.decimal128(38, 9)),
            "whole": pa.array([decimal.Decimal(v) for v in (1, 2, 2, 1, 3)], pa.decimal128(10, 0)),
            "big": pa.array([decimal.Decimal("1" * 30 + str(i % 3)) for i in range(5)], pa.decimal128(38, 0)),
            "b": pa.array([b"\x00\xff", b"ab", b"\xfe", b"ab", b"ab"], pa.binary()),
            "f": pa.array([b"pq", b"rs", b"pq", b"rs", b"rs"], pa.binary(2)),
            "day": pa.array([datetime.date(1899, 12, 31), datetime.date(2020, 1, 1)] * 2 + [None]),
            "moment": pa.array(
                [datetime.datetime(2020, 3, 29, 1, 30), None, datetime.datetime(2020, 3, 29, 1, 30)] * 1
                + [datetime.datetime(1, 1, 1), datetime.datetime(2020, 7, 1)],
                pa.timestamp("us", tz="Europe/Paris"),
            ),
        }
    )
    folder = tmp_path / "lake"
    folder.mkdir()
    pq.write_table(table, folder / "part.parquet")
    columns = list(table.column_names)
    for column in columns:
        expected = aggregate_table(folder / "part.parquet", [column], engine="pandas").frame
        counted = aggregate_table(folder, [column], engine="duckdb").frame
        assert counted.dtypes.to_dict() == expected.dtypes.to_dict(), column
        key = [None if pd.isna(v) else v for v in expected[column]]
        got = dict(zip([None if pd.isna(v) else v for v in counted[column]], counted[COUNT], strict=True))
        assert got == dict(zip(key, expected[COUNT], strict=True)), column
    assert aggregate_table(folder, ["d"], engine="duckdb").frame.shape[0] == 4  # float64 was 2 (1.0 and 0.0)
    big = aggregate_table(folder, ["big"], engine="duckdb").frame
    assert big["big"].dtype != np.float64 and len(big) == 3  # 31 digits: text, exact
    wide = tmp_path / "wide"
    wide.mkdir()
    pq.write_table(
        pa.table({"w": pa.array([decimal.Decimal("9" * 60)], pa.decimal256(60, 0)), "n": [1]}), wide / "p.parquet"
    )
    with pytest.raises(DataReadError, match=r"'w' \(60 digits\)"):
        aggregate_table(wide, ["w"], engine="duckdb")
    assert aggregate_table(wide / "p.parquet", ["w"], engine="pandas").frame["w"].tolist() == ["9" * 60]
    # A named pandas index is a column to every engine.
    indexed = tmp_path / "indexed"
    indexed.mkdir()
    pd.DataFrame({"region": ["n", "s", "n"], "age": [30, 30, 41]}).set_index("region").to_parquet(indexed / "p.parquet")
    assert list(read_table(indexed / "p.parquet").columns) == ["age", "region"]
    for engine, source in (("pandas", indexed / "p.parquet"), ("duckdb", indexed)):
        counts = aggregate_table(source, ["region"], engine=engine).frame.set_index("region")[COUNT].to_dict()
        assert counts == {"n": 2, "s": 1}, engine
    # An unnamed one (row labels of a filtered frame) is not data, to any engine.
    labelled = tmp_path / "labelled"
    labelled.mkdir()
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "x"]}).iloc[[2, 0, 1]].set_index(pd.Index([7, 3, 9]))
    frame.to_parquet(labelled / "p.parquet")
    assert "__index_level_0__" in pq.read_schema(labelled / "p.parquet").names
    assert list(read_table(labelled / "p.parquet").columns) == ["a", "b"]
    assert list(sample_rows(labelled, 5, engine="duckdb").columns) == ["a", "b"]


def test_duckdb_takes_the_header_from_the_first_line(tmp_path: Path) -> None:
    """The header's names as the reader gives them, parsed from the file's first record: repeated, empty, differing
    only in case, or equal to the data rows' values. DuckDB once took them from ``LIMIT 1`` of a parallel scan
    (any row: 2 runs in 8 of a 400-column file failed with "Duplicate named argument") and failed on repeats."""
    from privdash.data.tables import header_names

    path = tmp_path / "clash.csv"
    rows = "".join(f"v2,v2,{i % 3},{i % 2}\n" for i in range(20_000))
    path.write_text("v2,v2,,V2\n" + rows, encoding="utf-8")
    names = ["v2", "v2.1", "Unnamed: 2", "V2"]
    assert header_names(path, "utf-8", ",") == names == list(read_table(path).columns)
    counts = []
    for engine in ("pandas", "duckdb"):
        aggregate = aggregate_table(path, names, engine=engine)
        assert aggregate.rows == 20_000 and len(aggregate.frame) == 6
        counts.append(aggregate.frame.set_index(["Unnamed: 2", "V2"])[COUNT].sort_index().to_dict())
    assert counts[0] == counts[1]
    # A header longer than the first block read is read whole.
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"column_{i}" for i in range(30_000)) + "\n" + ",".join(["1"] * 30_000) + "\n")
    assert header_names(wide, "utf-8", ",")[-1] == "column_29999"
    with pytest.raises(ColumnError, match="is the name of the counts"):
        aggregate_table(pd.DataFrame({COUNT: [1, 2]}), [COUNT], engine="duckdb")


def test_engine_choice_and_errors(tmp_path: Path) -> None:
    small = tmp_path / "small.csv"
    small.write_text("a,b\n1,2\n", encoding="utf-8")
    assert resolve_engine("auto", small).value == "pandas"
    assert resolve_engine("auto", pd.DataFrame({"a": [1]})).value == "pandas"
    with pytest.raises(ParameterError, match="Unknown engine 'spork'"):
        resolve_engine("spork", small)
    with pytest.raises(DataReadError, match="No file matches"):
        source_paths(str(tmp_path / "none-*.parquet"))
    with pytest.raises(DataReadError, match="File not found"):
        diagnose(tmp_path / "missing.parquet", ["a"], engine="duckdb")
    with pytest.raises(ColumnError, match="Unknown column"):
        aggregate_table(small, ["a", "zz"], engine="duckdb")
    with pytest.raises(ParameterError, match="Invalid memory_limit"):
        aggregate_table(small, ["a"], engine="duckdb", memory_limit="lots")
    pd.DataFrame({"a": [1], "b": [2]}).to_parquet(tmp_path / "one.parquet")
    pd.DataFrame({"a": [1], "c": [2]}).to_parquet(tmp_path / "two.parquet")
    with pytest.raises(DataReadError):
        aggregate_table(str(tmp_path / "*.parquet"), ["a", "b"], engine="duckdb")
    table = pd.DataFrame({"a": [1, 1, 2]})
    assert aggregate_table(table, ["a"], engine="duckdb").frame.set_index("a")[COUNT].to_dict() == {1: 2, 2: 1}


def test_missing_markers_are_pandas_own() -> None:
    from pandas._libs.parsers import STR_NA_VALUES

    from privdash.engines.aggregate import PANDAS_NA_VALUES

    assert set(STR_NA_VALUES) == PANDAS_NA_VALUES


@pytest.mark.parametrize("missing", ["value", "drop"])
@pytest.mark.parametrize("case", ["adult", "testdata", "cup"])
def test_qi_combinations_from_the_aggregate_equal_those_of_the_rows(data_dir: Path, case: str, missing: str) -> None:
    """Every subset's classes counted in records from the engine's aggregate (one row per combination)."""
    relative, qis, sensitive, _ = CASES[case]
    path = data_dir / relative
    memory = diagnose(read_table(path), qis, sensitive=sensitive, missing=missing, combinations=True)
    streamed = diagnose(path, qis, sensitive=sensitive, missing=missing, combinations=True, engine="duckdb")
    assert memory.combinations is not None and streamed.combinations is not None
    pd.testing.assert_frame_equal(streamed.combinations.table, memory.combinations.table)
    pd.testing.assert_frame_equal(streamed.combinations.qi_contributions, memory.combinations.qi_contributions)
    assert (streamed.combinations.n_records, streamed.combinations.n_dropped) == (
        memory.combinations.n_records,
        memory.combinations.n_dropped,
    )


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM (VALUES (1::BIGINT, 1::INTEGER, 1.5::DOUBLE, true, 'a', 1::TINYINT, 2::UBIGINT, 1.5::FLOAT), "
        "(NULL, 2, NULL, NULL, NULL, NULL, NULL, NULL)) t(a, b, c, d, e, f, g, h)",
        "SELECT * FROM (VALUES (9223372036854775807::BIGINT, -1::SMALLINT, false, 'x')) t(a, b, c, d)",
        "SELECT range AS n, range::VARCHAR AS s, CASE WHEN range % 3 = 0 THEN NULL ELSE range % 7 END AS m "
        "FROM range(100000)",
    ],
)
def test_results_fetched_through_arrow_equal_duckdbs_own(query: str) -> None:
    import duckdb

    from privdash.engines.aggregate import _fetch_frame

    connection = duckdb.connect()
    pd.testing.assert_frame_equal(_fetch_frame(connection.sql(query)), connection.sql(query).df(), check_exact=True)


def test_duckdb_connections_draw_no_progress_bar() -> None:
    """DuckDB draws a progress bar on standard output once a query runs for 2 s: in ``privdash diagnose --engine
    duckdb --json > out.json`` it made the JSON unreadable."""
    connection = duckdb_connection(None, None, ordered=False)
    try:
        assert connection.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    finally:
        connection.close()


def test_auto_counts_large_parquet_files_with_duckdb_by_their_footer(tmp_path: Path) -> None:
    """A Parquet file's size on disk says little about its size in memory: ``auto`` reads rows x columns from the
    footer. 600,000 rows x 8 columns of three values compress to a few hundred KB but are 4.8M cells."""
    from privdash.constants import AUTO_DUCKDB_BYTES, AUTO_DUCKDB_CELLS

    values = np.array(["alpha", "beta", "gamma"])
    frame = pd.DataFrame({f"q{i}": values[np.arange(600_000) % (3 + i) % 3] for i in range(8)})
    big, small = tmp_path / "big.parquet", tmp_path / "small.parquet"
    frame.to_parquet(big)
    frame.head(1000).to_parquet(small)
    assert big.stat().st_size < AUTO_DUCKDB_BYTES and AUTO_DUCKDB_CELLS < 600_000 * 8
    assert resolve_engine("auto", big) is Engine.DUCKDB
    assert resolve_engine("auto", small) is Engine.PANDAS
    assert resolve_engine("auto", big, max_cells=10**9) is Engine.PANDAS  # anonymize's in-memory limits
    assert resolve_engine("pandas", big) is Engine.PANDAS
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not a parquet file")
    assert resolve_engine("auto", broken) is Engine.PANDAS  # the reader says why it cannot read it
    pd.testing.assert_frame_equal(
        aggregate_table(big, ["q0", "q3"], engine="auto").frame.sort_values(["q0", "q3"]).reset_index(drop=True),
        aggregate_table(big, ["q0", "q3"], engine="pandas").frame.sort_values(["q0", "q3"]).reset_index(drop=True),
        check_dtype=False,
    )
